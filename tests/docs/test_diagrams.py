"""The concepts page's diagrams (docs/diagrams.py) are drawn from minitrans' own modules: each is
drawn, its data is what the module computes, and a change to the module changes the picture."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch
from helpers import REPO

sys.path.insert(0, str(REPO / "docs"))

diagrams = pytest.importorskip("diagrams", reason="the diagrams need matplotlib")

from minitrans.core.config import TransformerConfig  # noqa: E402
from minitrans.models import attention, transformer  # noqa: E402


def pixels(diagram) -> np.ndarray:
    diagram.figure.canvas.draw()
    image = np.asarray(diagram.figure.canvas.buffer_rgba()).copy()
    diagrams.plt.close(diagram.figure)
    return image


def test_every_diagram_is_drawn_into_the_folder_it_is_given_and_nothing_else(tmp_path):
    (tmp_path / "mine.png").write_bytes(b"not the script's")
    paths = diagrams.write_all(tmp_path)
    assert [path.stem for path in paths] == list(diagrams.DIAGRAMS)
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in paths)
    assert (tmp_path / "mine.png").read_bytes() == b"not the script's"
    committed = sorted(path.stem for path in (REPO / "docs" / "diagrams").glob("*.png"))
    assert committed == sorted(diagrams.DIAGRAMS)  # every diagram is committed, and none that is not drawn


def test_a_diagram_is_legible_at_the_page_width():
    smallest = min(value for key, value in diagrams.STYLE.items() if "size" in key)
    assert smallest * diagrams.CONTENT_PX / (72 * diagrams.WIDTH) >= 9  # points -> px as the page shows it
    for name in diagrams.DIAGRAMS:
        diagram = diagrams.draw(name)
        assert diagram.figure.get_figwidth() == diagrams.WIDTH
        texts = [text for text in diagram.figure.findobj(diagrams.matplotlib.text.Text) if text.get_text()]
        assert texts and min(text.get_fontsize() for text in texts) >= 9, name
        diagrams.plt.close(diagram.figure)


def test_the_masks_drawn_are_the_mask_functions_output():
    drawn = diagrams.draw("masks")
    causal = attention.make_causal_mask(len(diagrams.TARGET))[0, 0].numpy()
    assert np.array_equal(drawn.data["causal"], causal)
    padding = attention.make_padding_mask(diagrams.token_ids(diagrams.SOURCE, diagrams.SHORT), 0)[:, 0, 0].numpy()
    assert np.array_equal(drawn.data["padding"], padding) and not padding[1].all()


def test_a_changed_mask_function_changes_the_masks_picture(monkeypatch):
    causal = attention.make_causal_mask(len(diagrams.TARGET))[0, 0].numpy()
    before = pixels(diagrams.draw("masks"))
    # the usual mistake: the mask transposed, the future visible
    monkeypatch.setattr(
        attention, "make_causal_mask", lambda length, device=None: torch.ones(length, length).triu().bool()[None, None]
    )
    after = diagrams.draw("masks")
    assert np.array_equal(after.data["causal"], causal.T)
    assert not np.array_equal(pixels(after), before)


def test_the_position_table_and_the_head_split_are_the_modules_own():
    table = diagrams.draw("positions").data["table"]
    expected = transformer.SinusoidalPositions(TransformerConfig().d_model, len(table)).table.numpy()
    assert np.array_equal(table, expected)
    heads = diagrams.draw("heads").data
    cfg = TransformerConfig()
    assert tuple(heads["q"]) == (1, cfg.num_heads, len(diagrams.SOURCE), cfg.d_k)
    assert heads["split"].shape == (cfg.num_heads, len(diagrams.SOURCE), cfg.d_k)
    assert heads["split"][1, 0, 0] == cfg.d_k  # head 2 starts where head 1's columns end
    assert np.array_equal(heads["merged"][0], np.arange(cfg.num_heads * cfg.d_k))  # the concatenation undoes it


def test_one_heads_weights_are_the_attention_functions_and_rows_sum_to_one():
    data = diagrams.draw("one_head").data
    assert np.allclose(data["weights"].sum(axis=1), 1)
    assert np.allclose(data["out"], data["weights"] @ np.array([[1, 0], [0, 1], [1, 1], [1, 1], [0.5, 1]]))


def test_the_encoder_decoder_is_labelled_from_the_built_models_modules():
    data = diagrams.draw("encoder_decoder").data
    cfg = TransformerConfig()
    assert tuple(data["layers"]) == (cfg.num_encoder_layers, cfg.num_decoder_layers)
    assert list(data["encoder_layers"]) == ["self_attn", "feed_forward"]
    assert list(data["decoder_layers"]) == ["self_attn", "cross_attn", "feed_forward"]  # the three attentions' order


def test_the_fixed_context_is_one_vector_for_every_target_word_and_attentions_is_not():
    data = diagrams.draw("contexts").data
    fixed, attended = data["fixed"], data["attention"]
    assert fixed.shape[0] == attended.shape[0] == len(diagrams.TARGET)
    assert np.array_equal(fixed, np.broadcast_to(fixed[0], fixed.shape))
    assert not np.allclose(attended, attended[0])
    assert data["weights"].shape == (len(diagrams.TARGET), len(diagrams.SOURCE))
    assert np.allclose(data["weights"].sum(axis=1), 1)


def test_the_committed_diagrams_are_drawn_from_todays_code():
    from PIL import Image

    for name in diagrams.DIAGRAMS:
        diagram = diagrams.draw(name)
        diagrams.plt.close(diagram.figure)
        with Image.open(REPO / "docs" / "diagrams" / f"{name}.png") as image:
            committed = json.loads(image.text[diagrams.FINGERPRINT])
        today = diagrams.fingerprint(diagram)
        assert committed.keys() == today.keys(), name
        for key, values in today.items():
            if isinstance(values[0], str):
                assert committed[key] == values, f"docs/diagrams/{name}.png is drawn from older code"
                continue
            assert np.allclose(committed[key], values, rtol=1e-4, atol=1e-6), (
                f"docs/diagrams/{name}.png ({key}) is drawn from older code: run python docs/diagrams.py"
            )


def test_the_fingerprint_tells_a_changed_mask(monkeypatch):
    before = diagrams.fingerprint(diagrams.draw("masks"))
    monkeypatch.setattr(
        attention, "make_causal_mask", lambda length, device=None: torch.ones(length, length).triu().bool()[None, None]
    )
    after = diagrams.fingerprint(diagrams.draw("masks"))
    assert before["causal"][:3] == after["causal"][:3]  # same shape, same count of True
    assert not np.isclose(before["causal"][3], after["causal"][3])
    diagrams.plt.close("all")
