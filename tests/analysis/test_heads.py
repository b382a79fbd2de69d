"""Tests for head importance by ablation (minitrans/analysis/heads.py)."""

from __future__ import annotations

import pytest
import torch
from helpers import REPO
from helpers.models import tiny_model

from minitrans.analysis.heads import ablate_heads, all_heads, attention_layers, head_label, masked_heads
from minitrans.models.attention import merge_heads, scaled_dot_product_attention
from minitrans.models.transformer import Transformer

PAD = 0


def tiny_transformer() -> Transformer:
    """Two layers a side of four heads each: heads to list, mask and ablate in every kind."""
    return tiny_model(vocab=30, num_heads=4, num_encoder_layers=2, num_decoder_layers=2)


def outputs(model) -> torch.Tensor:
    src = torch.tensor([[5, 6, 7, 8, 3], [9, 10, 3, PAD, PAD]])
    tgt_in = torch.tensor([[2, 11, 12, 13], [2, 14, 15, PAD]])
    with torch.no_grad():
        return model(src, tgt_in)


def test_every_head_of_every_kind_is_listed():
    model = tiny_transformer()
    assert set(attention_layers(model)) == {"enc_self", "dec_self", "cross"}
    assert len(all_heads(model)) == 3 * 2 * 4


def test_masking_a_head_whose_output_projection_slice_is_zero_changes_nothing():
    model = tiny_transformer()
    module = attention_layers(model)["cross"][1]
    with torch.no_grad():
        module.out_proj.weight[:, 2 * module.d_v : 3 * module.d_v] = 0.0
    before = outputs(model)
    with masked_heads(model, [("cross", 1, 2)]):
        assert torch.equal(outputs(model), before)


def test_masking_every_head_of_a_layer_changes_the_output_and_restores_it_after():
    model = tiny_transformer()
    weights = {name: p.clone() for name, p in model.state_dict().items()}
    before = outputs(model)
    for kind in ("enc_self", "dec_self", "cross"):
        with masked_heads(model, [(kind, 0, head) for head in range(4)]):
            assert not torch.allclose(outputs(model), before)
    assert all(torch.equal(p, weights[name]) for name, p in model.state_dict().items())
    assert torch.equal(outputs(model), before)


def test_masking_one_head_equals_zeroing_its_slice_before_the_projection():
    model = tiny_transformer()
    module = attention_layers(model)["enc_self"][0]
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        q, k, v = module.project_qkv(x)
        v[:, 1] = 0.0  # head 1's values: its output slice is then zero
        expected = module.out_proj(merge_heads(scaled_dot_product_attention(q, k, v)[0]))
        with masked_heads(model, [("enc_self", 0, 1)]):
            got, _ = module(x)
    torch.testing.assert_close(got, expected)


def test_greedy_masking_goes_from_least_to_most_important():
    model = tiny_transformer()
    heads = all_heads(model)[:3]
    cost = {heads[0]: 3.0, heads[1]: 1.0, heads[2]: 2.0}
    masked_now: list = []

    def measure():
        # which heads are masked: those whose first output column is all zero
        layers = attention_layers(model)
        masked_now[:] = [h for h in heads if not layers[h[0]][h[1]].out_proj.weight[:, h[2] * 4].any()]
        return {"loss": 10.0 + sum(cost[h] for h in masked_now), "bleu": 50.0 - len(masked_now)}

    ablation = ablate_heads(model, measure, heads=heads)
    assert ablation.baseline == {"loss": 10.0, "bleu": 50.0}
    assert ablation.deltas("loss") == cost
    assert [head for head, _ in ablation.cumulative] == [heads[1], heads[2], heads[0]]
    assert [scores["loss"] for _, scores in ablation.cumulative] == [11.0, 13.0, 16.0]
    assert len(ablation.grid("enc_self", "loss")) == 1 and "masked" in ablation.table()


def test_a_model_without_heads_has_none():
    assert all_heads(torch.nn.GRU(4, 4)) == []


def test_heads_script_writes_alignment_and_ablation_of_a_generated_corpus_run(tmp_path, capsys):
    import importlib.util
    import json

    from helpers.checkpoints import build_cased_checkpoint

    from minitrans.core.config import DataConfig

    run = tmp_path / "run"
    build_cased_checkpoint(run / "checkpoints" / "last.pt", DataConfig(num_train=50, num_valid=10, num_test=12))
    spec = importlib.util.spec_from_file_location("heads_script", REPO / "scripts" / "heads.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(run), "--split", "test", "--limit", "4", "--bleu-limit", "0"]) == 0
    aer = json.loads((run / "heads" / "aer.json").read_text())
    assert aer["aer_sentences"] == 4 and 0.0 <= aer["aer_best"] <= 1.0 and len(aer["aer_by_head"]) == 1
    ablation = json.loads((run / "heads" / "ablation.json").read_text())
    assert len(ablation["heads_delta"]) == 3 * 1 * 2 and len(ablation["heads_cumulative"]) == 6
    assert all((run / "heads" / name).stat().st_size > 0 for name in ("aer.png", "ablation_loss.png", "ablation.txt"))
    printed = capsys.readouterr().out
    assert "best head: layer 1" in printed
    roles = json.loads((run / "heads" / "roles.json").read_text())
    assert len(roles["heads"]) == 6 and {"previous", "next", "delta_loss", "roles"} <= set(roles["heads"][0])
    assert "aer" in roles["heads"][-1] and roles["thresholds"]["previous"] == 0.5
    self_heads = [row for row in roles["heads"] if not row["head"].startswith("cross")]
    assert self_heads and all(0.0 < row["subject"] < 1.0 for row in self_heads)  # an untrained model spreads it
    assert "subject" not in roles["heads"][-1] and "subject role: " in printed


def test_a_split_without_gold_alignments_reports_no_aer_and_keeps_the_real_one(tmp_path, capsys):
    """Gold exists only for valid and test: --split train measures no pair, whose AER is
    undefined (not 0.000), names no best head, and leaves the real aer.json as it was."""
    import importlib.util

    from helpers.checkpoints import build_cased_checkpoint as build_checkpoint

    from minitrans.core.config import DataConfig

    run = tmp_path / "run"
    build_checkpoint(run / "checkpoints" / "last.pt", DataConfig(num_train=50, num_valid=10, num_test=12))
    spec = importlib.util.spec_from_file_location("heads_script", REPO / "scripts" / "heads.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    quick = ["--limit", "4", "--bleu-limit", "0", "--no-ablation"]
    assert script.main([str(run), "--split", "test", *quick]) == 0
    real = (run / "heads" / "aer.json").read_bytes()
    capsys.readouterr()
    assert script.main([str(run), "--split", "train", *quick]) == 0
    out = capsys.readouterr().out
    assert "alignment: no pair of split 'train' has a gold alignment" in out
    assert "best head" not in out and "AER of each" not in out
    assert (run / "heads" / "aer.json").read_bytes() == real


@pytest.mark.parametrize(
    "args, message",
    [
        (["--out", "{run}/notes.txt"], "error: --out {run}/notes.txt: a file of that name exists; name a folder"),
        (["--split", "nosuch"], "error: no split 'nosuch' in generated (seed 1234); it has: train, valid, test"),
    ],
)
def test_an_impossible_out_folder_or_split_is_one_error_line(tmp_path, capsys, args, message):
    import importlib.util

    from helpers.checkpoints import build_cased_checkpoint as build_checkpoint

    from minitrans.core.config import DataConfig

    run = tmp_path / "run"
    build_checkpoint(run / "checkpoints" / "last.pt", DataConfig(num_train=50, num_valid=10, num_test=12))
    (run / "notes.txt").write_text("mine")
    spec = importlib.util.spec_from_file_location("heads_script", REPO / "scripts" / "heads.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(run), *[arg.format(run=run) for arg in args], "--bleu-limit", "0"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(message.format(run=run))
    assert (run / "notes.txt").read_text() == "mine"


def test_the_fixed_context_rnn_is_told_there_is_nothing_to_measure(tmp_path, capsys):
    """heads.py said it "wrote the results" and wrote nothing (issue 33, item 15): it says
    plainly that there is nothing to measure, writes no folder and exits 1."""
    from helpers.checkpoints import build_checkpoint
    from helpers.scripts import load_script

    from minitrans.core.config import DataConfig

    run = tmp_path / "run"
    build_checkpoint(
        run / "checkpoints" / "last.pt", kind="rnn", data=DataConfig(num_train=50, num_valid=10, num_test=12)
    )
    assert load_script("heads").main([str(run), "--split", "test", "--limit", "4", "--bleu-limit", "0"]) == 1
    captured = capsys.readouterr()
    assert "wrote the results" not in captured.out
    assert captured.err.splitlines() == [
        f"error: {run} holds the fixed-context RNN (model=rnn), which has no attention: "
        "there is nothing for heads.py to measure"
    ]
    assert not (run / "heads").exists()


def test_what_a_person_reads_counts_layers_and_heads_from_one():
    from minitrans.cli.heads import grid_text

    assert head_label("cross", 0, 2) == "cross L1 H3"
    assert grid_text([[0.5, 0.25], [0.125, 1.0]]).splitlines() == [
        "layer      H1     H2",
        "L1      0.500  0.250",
        "L2      0.125  1.000",
    ]


def test_heads_py_refuses_a_ctranslate2_export_saying_what_it_needs(tmp_path, capsys):
    from helpers.scripts import load_script

    (tmp_path / "minitrans.json").write_text("{}")  # what marks a CTranslate2 export
    assert load_script("heads").main([str(tmp_path)]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: ") and "is a CTranslate2 export, which has no PyTorch model" in line
