"""Attention images draw tokens of any script, and language names come from langcodes."""

from __future__ import annotations

import warnings

import matplotlib
import pytest
import torch

from minitrans.analysis import fonts
from minitrans.analysis.viz import attention_card, save_attention_png
from minitrans.inference.coverage import language_name

TOKENS = {
    "Chinese": ["▁恭喜", "你们", "！"],
    "Japanese": ["▁ひらがな", "カタカナ", "漢字"],
    "Korean": ["▁한국어", "입니다"],
    "Cyrillic": ["▁Привет", "мир"],
    "Greek": ["▁Καλημέρα", "κόσμε"],
    "Arabic": ["▁مرحبا", "بالعالم"],
}


def glyph_warnings(draw) -> list[str]:
    """matplotlib's 'Glyph ... missing from font' warnings while ``draw`` runs (our filter off)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        draw()
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


@pytest.mark.parametrize("script", list(TOKENS))
def test_a_card_draws_every_script_without_a_missing_glyph(script, tmp_path):
    tokens = TOKENS[script]
    card = attention_card(torch.rand(len(tokens), 2), tokens, ["▁the", "▁dog"], f"{script}: {' '.join(tokens)}")
    cross = {"cross": [torch.rand(2, 2, len(tokens))]}  # the PNG grid of translate.py --attention
    grid = lambda: save_attention_png(cross, tokens, ["<s>", "▁the"], ["▁the", "▁dog"], tmp_path / "grid.png")
    assert glyph_warnings(lambda: (card.savefig(tmp_path / "card.png"), grid())) == []


def test_with_dejavu_alone_chinese_tokens_are_boxes(tmp_path):
    """The check above can fail: the same card drawn with matplotlib's default font alone."""
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        from matplotlib.figure import Figure

        fig = Figure()
        fig.add_subplot().set_title("".join(TOKENS["Chinese"]))
    assert glyph_warnings(lambda: fig.savefig(tmp_path / "boxes.png"))


def test_a_cjk_font_is_found_or_shipped():
    families = fonts.font_families()
    assert families[0] == "DejaVu Sans" and len(families) == 2 and families[1] in fonts.CJK_FAMILIES
    assert fonts.missing_glyphs(["".join(t) for t in TOKENS.values()]) == ""


def test_a_glyph_no_font_has_is_said_once(monkeypatch):
    monkeypatch.setattr(fonts, "_warned", set())
    hieroglyph = "\U00013000"  # Egyptian hieroglyph A001: in none of these fonts
    assert fonts.missing_glyphs(["a" + hieroglyph, hieroglyph]) == hieroglyph
    with pytest.warns(UserWarning, match="no font here draws") as caught:
        fonts.warn_missing_glyphs([hieroglyph])
        fonts.warn_missing_glyphs([hieroglyph])
    assert len([w for w in caught if "no font here draws" in str(w.message)]) == 1


@pytest.mark.parametrize(
    ("code", "name"),
    [("en", "English"), ("zh", "Chinese"), ("ja", "Japanese"), ("ar", "Arabic"), ("pt-BR", "Portuguese (Brazil)")],
)
def test_language_names_come_from_langcodes(code, name):
    assert language_name(code) == name


@pytest.mark.parametrize("code", ["xx", "?", "", "und"])
def test_a_code_that_names_no_language_is_shown_as_is(code):
    assert language_name(code) == code
