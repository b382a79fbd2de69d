"""Attention heatmaps: panels per head, token labels on the right axes, one 0-1 colour scale,
sizes that follow the sentence, PNG files, and the axes of a real model's maps."""

from __future__ import annotations

import pytest
import torch
from helpers.models import tiny_model
from matplotlib.figure import Figure

from minitrans.analysis.viz import (
    CARD_FONT,
    CARD_INCHES,
    CARD_MAX_LABELS,
    MODEL_COLORS,
    _card_font,
    _card_title,
    attention_card,
    attention_card_images,
    attention_cards,
    figure_to_array,
    model_color,
    save_attention_png,
)
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.translator import Translator, sentence_tokens

SRC = ["▁Ein", "▁Mann", "▁fähr", "t", "▁Rad", ".", "</s>"]
TGT_IN = ["<s>", "▁A", "▁man", "▁ride", "s", "▁a", "▁bike", "."]
TGT_OUT = [*TGT_IN[1:], "</s>"]


def random_maps(heads: int, rows: int, cols: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(heads, rows, cols, generator=gen).softmax(-1)  # (H, Lq, Lk)


def heatmap_axes(fig: Figure):
    """The panels that draw a heatmap (the colour bar's axes draw none)."""
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def tick_labels(axis) -> list[str]:
    return [label.get_text() for label in axis.get_ticklabels()]


def test_tokens_that_look_like_markup_are_printed_literally():
    tokens = ["▁$5", "<0xE2>", "a_b", "x" * 40]
    fig = attention_card(random_maps(1, 4, 4)[0], tokens, tokens, "odd tokens")
    figure_to_array(fig)  # "$" would start mathtext and fail to parse
    labels = tick_labels(heatmap_axes(fig)[0].xaxis)
    assert labels[:3] == [r"▁\$5", "<0xE2>", "a_b"] and labels[3].endswith("…")


def test_one_card_per_kind_layer_and_head_with_the_axes_of_each_kind():
    attention = {
        "enc_self": [random_maps(2, len(SRC), len(SRC)) for _ in range(2)],
        "dec_self": [random_maps(2, len(TGT_IN), len(TGT_IN)) for _ in range(2)],
        "cross": [random_maps(2, len(TGT_OUT), len(SRC)) for _ in range(2)],
    }
    cards = attention_cards(attention, SRC, TGT_IN, TGT_OUT)
    assert sorted(cards) == sorted(f"{k}/layer{n}/head{h}" for k in attention for n in (1, 2) for h in (1, 2))
    expected = {"enc_self": (SRC, SRC), "dec_self": (TGT_IN, TGT_IN), "cross": (TGT_OUT, SRC)}
    for key, fig in cards.items():
        rows, cols = expected[key.split("/")[0]]
        (panel,) = heatmap_axes(fig)
        assert len(panel.get_yticks()) <= len(rows) and len(panel.get_xticks()) <= len(cols)
        assert f"layer {key.split('/')[1][-1]}/2" in fig._suptitle.get_text()
    assert attention_cards({}, SRC, TGT_IN, TGT_OUT) == {}


@pytest.mark.parametrize("length", [7, 45])  # 45 tokens: every 3rd labelled, a smaller font
def test_card_images_are_the_cards_drawn_pixel_for_pixel(length):
    """The fast path (the frame drawn once per kind, each head blitted onto it) against the
    plain one (a figure per card, drawn whole): every pixel equal, for short and long sentences
    and for titles that wrap differently (head 9 of 12 against head 10 of 12)."""
    src = [f"▁w{i}" for i in range(length - 1)] + ["</s>"]
    tgt_in = ["<s>", *(f"▁v{i}" for i in range(length - 2))]
    tgt_out = [*tgt_in[1:], "</s>"]
    attention = {
        "enc_self": [random_maps(2, len(src), len(src), seed) for seed in range(2)],
        "cross": [random_maps(12, len(tgt_out), len(src), 7)],
    }
    font = _card_font(tgt_out, src)  # a prefix that puts "head 9/12" on one line, "head 10/12" on two
    prefix = next(
        p
        for p in ("x" * n + " · " for n in range(1, 40))
        if "\n" not in _card_title(p + "cross · layer 1/1 · head 9/12", font)
        and "\n" in _card_title(p + "cross · layer 1/1 · head 10/12", font)
    )
    images = attention_card_images(attention, src, tgt_in, tgt_out, prefix)
    cards = attention_cards(attention, src, tgt_in, tgt_out, prefix)
    assert list(images) == list(cards)
    for key, fig in cards.items():
        expected = figure_to_array(fig)
        assert images[key].shape == expected.shape and (images[key] == expected).all(), key
    assert attention_card_images({}, src, tgt_in, tgt_out) == {}


def test_save_png_puts_every_layer_and_head_of_cross_attention_in_one_file(tmp_path):
    attention = {
        "enc_self": [random_maps(3, len(SRC), len(SRC))],
        "cross": [random_maps(3, len(TGT_OUT), len(SRC), seed) for seed in range(2)],
    }
    written = save_attention_png(attention, SRC, TGT_IN, TGT_OUT, tmp_path / "out" / "attention.png")
    assert written == [tmp_path / "out" / "attention.png"]
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert save_attention_png({}, SRC, TGT_IN, TGT_OUT, tmp_path / "none.png") == []
    assert not (tmp_path / "none.png").exists()


def test_cards_have_one_shape_whatever_the_sentence_and_kind():
    attention = {
        "enc_self": [random_maps(4, len(SRC), len(SRC)) for _ in range(2)],
        "dec_self": [random_maps(4, len(TGT_IN), len(TGT_IN)) for _ in range(2)],
        "cross": [random_maps(4, len(TGT_OUT), len(SRC)) for _ in range(2)],
    }
    cards = attention_cards(attention, SRC, TGT_IN, TGT_OUT, "sample 0 · ")
    assert sorted(cards) == sorted(f"{k}/layer{n}/head{h}" for k in attention for n in (1, 2) for h in (1, 2, 3, 4))
    tokens = [f"▁w{i}" for i in range(70)]
    long = attention_card(random_maps(1, 70, 70)[0], tokens, tokens, "a long sentence")
    shapes = {figure_to_array(fig).shape for fig in [*cards.values(), long]}
    assert shapes == {(round(CARD_INCHES * 100), round(CARD_INCHES * 100), 3)}
    card = cards["cross/layer2/head3"]
    (panel,) = heatmap_axes(card)
    assert panel.images[0].get_clim() == (0.0, 1.0)
    assert tick_labels(panel.yaxis) == TGT_OUT and tick_labels(panel.xaxis) == SRC
    assert "layer 2/2" in card._suptitle.get_text() and "head 3/4" in card._suptitle.get_text()
    assert all(label.get_fontsize() >= CARD_FONT for label in panel.xaxis.get_ticklabels())


def test_a_long_sentence_labels_every_kth_token_at_a_readable_size():
    tokens = [f"▁w{i}" for i in range(70)]
    (panel,) = heatmap_axes(attention_card(random_maps(1, 70, 70)[0], tokens, tokens, "long"))
    labels = tick_labels(panel.xaxis)
    assert 1 < len(labels) <= CARD_MAX_LABELS
    positions = [tokens.index(label) for label in labels]  # every k-th token, from the first
    assert positions[0] == 0 and len({b - a for a, b in zip(positions, positions[1:])}) == 1
    assert all(label.get_fontsize() >= CARD_FONT - 1 for label in panel.yaxis.get_ticklabels())
    with pytest.raises(ValueError, match="does not match"):
        attention_card(random_maps(1, 3, 4)[0], ["a", "b", "c"], ["a", "b", "c"], "wrong")


def test_each_model_kind_has_one_colour_in_every_plot():
    assert len(set(MODEL_COLORS.values())) == len(MODEL_COLORS) == 3
    assert model_color("transformer", 5) == model_color("transformer", 0) == MODEL_COLORS["transformer"]
    assert model_color("other", 0) not in MODEL_COLORS.values()


@pytest.fixture(scope="module")
def tokenizer():
    sentences = ["the man rides a bike .", "a woman reads the book .", "der Mann fährt Rad .", "eine Frau liest ."] * 5
    return Tokenizer.train(sentences[:10], sentences[10:], vocab_size=300)


def test_a_models_maps_match_the_token_axes(tokenizer):
    model = tiny_model(vocab=tokenizer, num_decoder_layers=2, max_len=64, share_embeddings=False).train()
    translator = Translator(model, tokenizer, max_len=64, device=torch.device("cpu"))
    src_ids = translator.encode(["the man reads ."])[0]
    tgt_ids = tokenizer.encode_tgt(["der Mann liest ."])[0]
    src_tokens, tgt_in_tokens, tgt_out_tokens = sentence_tokens(tokenizer, src_ids, tgt_ids)
    assert src_tokens[-1] == "</s>" and tgt_in_tokens[0] == "<s>" and tgt_out_tokens[-1] == "</s>"
    assert tgt_in_tokens[1:] == tgt_out_tokens[:-1]
    cards = attention_cards(translator.attention_maps(src_ids, tgt_ids), src_tokens, tgt_in_tokens, tgt_out_tokens)
    layers = sorted({key.rsplit("/", 1)[0] for key in cards})
    assert layers == ["cross/layer1", "cross/layer2", "dec_self/layer1", "dec_self/layer2", "enc_self/layer1"]


def test_a_cards_title_names_its_heads_role_and_the_fast_cards_draw_it_the_same():
    src, tgt_in = ["▁a", "▁b", "▁c", "</s>"], ["<s>", "▁x", "▁y"]
    tgt_out = [*tgt_in[1:], "</s>"]
    attention = {"enc_self": [random_maps(2, len(src), len(src), 0)]}
    roles = {"enc_self": [["previous-token", ""]]}
    cards = attention_cards(attention, src, tgt_in, tgt_out, "sample 0 · ", roles=roles)
    titles = {key: fig._suptitle.get_text().replace("\n", " ") for key, fig in cards.items()}
    assert titles == {
        "enc_self/layer1/head1": "sample 0 · encoder self · layer 1/1 · head 1/2 · previous-token",
        "enc_self/layer1/head2": "sample 0 · encoder self · layer 1/1 · head 2/2",
    }
    images = attention_card_images(attention, src, tgt_in, tgt_out, "sample 0 · ", roles=roles)
    for key, fig in cards.items():
        assert (images[key] == figure_to_array(fig)).all(), key
