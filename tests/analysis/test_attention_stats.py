"""The per-layer numbers the claims are read by (minitrans/analysis/attention_stats.py): row
entropy, each layer's mean, and the decoder's share of weight on later positions."""

from __future__ import annotations

import json
import math

import pytest
import torch

from minitrans.analysis.attention_stats import attention_entropy, future_share, row_entropy
from minitrans.models.attention import make_causal_mask


def test_a_uniform_row_has_log_l_nats_and_a_one_hot_row_none():
    uniform, one_hot = torch.full((1, 5), 0.2), torch.eye(5)[:1]
    assert float(row_entropy(uniform)) == pytest.approx(math.log(5))
    assert float(row_entropy(one_hot)) == 0.0  # 0 log 0 = 0, not NaN


def test_layer_entropy_averages_heads_and_rows_and_skips_fully_masked_rows():
    weights = torch.stack([torch.full((3, 4), 0.25), torch.eye(4)[:3]])  # (H=2, Lq=3, Lk=4)
    weights[:, 2] = 0.0  # a row with no key
    found = attention_entropy({"cross": [weights], "enc_self": [torch.eye(3)[None]]})
    assert found == pytest.approx({"cross_layer1": math.log(4) / 2, "enc_self_layer1": 0.0})


def test_the_future_share_is_0_under_the_causal_mask_and_known_when_uniform():
    length = 4
    causal = make_causal_mask(length)[0].float()  # (1, T, T)
    assert future_share(causal / causal.sum(-1, keepdim=True)) == 0.0
    uniform = torch.full((2, length, length), 1 / length)
    assert future_share(uniform) == pytest.approx(sum((length - 1 - t) / length for t in range(length)) / length)


@pytest.fixture(scope="module")
def tokenizer():
    from minitrans.data.tokenizer import Tokenizer

    src = ["the man rides a bike .", "a woman reads the book .", "the dog sees a cat ."]
    tgt = ["der Mann fährt Rad .", "eine Frau liest das Buch .", "der Hund sieht eine Katze ."]
    return Tokenizer.train(src, tgt, vocab_size=300)


@pytest.mark.parametrize("causal_mask", [True, False])
def test_measured_over_pairs_the_decoder_looks_ahead_only_without_its_mask(tokenizer, causal_mask):
    from minitrans.analysis.attention_stats import future_card, measure_attention_stats
    from minitrans.core.config import TransformerConfig
    from minitrans.inference.translator import Translator
    from minitrans.models.build import build_model

    torch.manual_seed(0)
    cfg = TransformerConfig(d_model=32, num_heads=2, d_ff=64, num_encoder_layers=1, causal_mask=causal_mask)
    translator = Translator(build_model(cfg, tokenizer).eval(), tokenizer, max_len=64, device=torch.device("cpu"))
    src_ids = translator.encode(["the man reads .", "a dog sees the cat ."])
    tgt_ids = tokenizer.encode_tgt(["der Mann liest .", "ein Hund sieht die Katze ."])
    stats = measure_attention_stats(translator, src_ids, tgt_ids)
    assert set(stats["entropy"]) == {
        "enc_self_layer1",
        "dec_self_layer1",
        "dec_self_layer2",
        "cross_layer1",
        "cross_layer2",
    }
    shares = stats["future_share"].values()
    assert all(share == 0.0 for share in shares) if causal_mask else all(share > 0.1 for share in shares)
    card = future_card(translator, src_ids[0], tgt_ids[0], "pair 0")
    assert "on later words" in card.axes[0].get_title() or any("on later words" in t.get_text() for t in card.texts)


# -- scripts/attention_stats.py, as the claims' commands run it -------------------------------
@pytest.fixture(autouse=True)
def _private_cache(monkeypatch, tmp_path):
    """A loaded model derives its corpus in this machine's cache: the test's own, not the user's."""
    monkeypatch.setenv("MINITRANS_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A Transformer run folder and an attention RNN's checkpoint, both of a small generated
    corpus (regenerated from its seed when the script reads the split), and the Transformer's
    shareable folder."""
    from helpers.checkpoints import build_checkpoint

    from minitrans.core.config import DataConfig
    from minitrans.export.hf_export import export_hf

    root = tmp_path_factory.mktemp("attention-stats")
    data = DataConfig(name="generated", num_train=40, num_valid=6, num_test=6, cache_dir=str(root / "cache"))
    run = root / "run"
    build_checkpoint(run / "checkpoints" / "best.pt", data=data)
    (run / "summary.json").write_text('{"steps": 1}\n')
    rnn = build_checkpoint(root / "rnn" / "checkpoints" / "best.pt", kind="rnn_attention", data=data)
    shared, _ = export_hf(run, root / "shared")
    return run, rnn, shared


def stats_main(*args, capsys) -> tuple[int, str, str]:
    from helpers.scripts import load_script

    capsys.readouterr()  # what came before (a corpus prepared for a fixture) is not the script's
    code = load_script("attention_stats").main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_the_script_measures_a_run_and_its_shared_folder_alike(runs, tmp_path, capsys):
    run, _, shared = runs
    code, out, err = stats_main(run, "--limit", 3, "--out", tmp_path / "new" / "stats.json", capsys=capsys)
    assert code == 0, err
    measured = json.loads(out)
    assert measured["pairs"] == 3 and set(measured["future_share"]) == {"dec_self_layer1", "dec_self_layer2"}
    assert json.loads((tmp_path / "new" / "stats.json").read_text()) == measured  # the missing folder made
    code, out, err = stats_main(shared, "--limit", 3, "--card", tmp_path / "cards" / "card.png", capsys=capsys)
    assert code == 0, err
    assert json.loads(out)["entropy"] == pytest.approx(measured["entropy"])
    assert (tmp_path / "cards" / "card.png").stat().st_size > 0
    # an earlier result is ours to replace
    assert stats_main(run, "--limit", 1, "--out", tmp_path / "new" / "stats.json", capsys=capsys)[0] == 0


def test_a_ctranslate2_export_is_refused_in_one_line(runs, tmp_path, capsys):
    pytest.importorskip("ctranslate2")
    from minitrans.export.ct2_export import export_ctranslate2

    run, _, _ = runs
    folder = export_ctranslate2(run, tmp_path / "ct2")
    code, out, err = stats_main(folder, capsys=capsys)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and err.startswith("error: ") and "CTranslate2 export" in err


def test_bad_outputs_are_refused_before_anything_is_measured_and_nothing_is_replaced(runs, tmp_path, capsys):
    run, rnn, _ = runs
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"mine": 1}\n')
    kept = {path: path.read_bytes() for path in (run / "summary.json", run / "checkpoints" / "best.pt", foreign)}
    for args, message in (
        (["--out", tmp_path], "is a folder"),
        (["--card", tmp_path], "is a folder"),
        (["--out", run / "summary.json"], "would replace a file of a run"),
        (["--out", run / "checkpoints" / "best.pt"], "would replace a file of a run"),
        (["--card", run / "checkpoints" / "best.pt"], "would replace a file of a run"),
        (["--out", foreign], "not an earlier attention_stats.py result"),
        (["--out", run / "summary.json" / "stats.json"], "summary.json is a file, not a folder"),
        (["--card", tmp_path / "card.txt"], ".png, .svg or .pdf"),
        (["--out", tmp_path / "x.png", "--card", tmp_path / "x.png"], "name one file"),
    ):
        code, out, err = stats_main(run, *args, capsys=capsys)
        assert (code, out) == (1, ""), args
        assert err.count("\n") == 1 and err.startswith("error: ") and message in err, (args, err)
    assert {path: path.read_bytes() for path in kept} == kept
    code, out, err = stats_main(rnn, "--card", tmp_path / "rnn.png", capsys=capsys)
    assert (code, out) == (1, "") and "decoder's self-attention" in err and err.count("\n") == 1
    assert not (tmp_path / "rnn.png").exists()
