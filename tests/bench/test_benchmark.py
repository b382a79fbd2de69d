"""The training benchmark: its FLOP count, its torch.nn.Transformer twin, a quick run's JSON."""

import json
import statistics
from dataclasses import replace
from pathlib import Path
from unittest import mock

import pytest
import torch
from helpers.twins import copy_weights_into_twin
from torch import nn

from minitrans.bench import steps
from minitrans.bench import training as bench
from minitrans.bench.measure import training_flops
from minitrans.bench.reference import TorchTransformer, build
from minitrans.bench.training import SIZES
from minitrans.core.config import TransformerConfig


def linear_weights(model: nn.Module) -> int:
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, nn.Linear))


@pytest.mark.parametrize(
    "size",
    [
        SIZES["tiny"],
        TransformerConfig(d_model=48, num_heads=3, d_ff=80, num_encoder_layers=2, num_decoder_layers=3),
    ],
)
def test_flops_are_six_times_matmul_weights_times_tokens_plus_attention(size):
    vocab, batch, length = 50, 4, 9
    model = build("minitrans", vocab, replace(size, dropout=0.0))
    attention_macs = 2 * batch * size.d_model * length**2 * (size.num_encoder_layers + 2 * size.num_decoder_layers)
    expected = 6 * (batch * length * linear_weights(model) + attention_macs)
    assert training_flops(size, vocab, batch, length, length) == expected


@pytest.mark.parametrize("norm_first", [True, False])
def test_torch_twin_has_the_same_parameters_and_output_shape(norm_first):
    size = replace(SIZES["tiny"], dropout=0.1, norm_first=norm_first)
    ours = build("minitrans", 40, size)
    twin = build("torch", 40, size)
    assert isinstance(twin, TorchTransformer)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    # nn.Transformer always ends both stacks in a LayerNorm; post-norm minitrans does not.
    assert count(twin) - count(ours) == (0 if norm_first else 4 * size.d_model)
    src = torch.tensor([[5, 6, 7, 0], [5, 6, 7, 8]])
    tgt = torch.tensor([[2, 9, 9], [2, 9, 0]])
    assert twin(src, tgt).shape == ours(src, tgt).shape == (2, 3, 40)


@pytest.mark.slow  # each model's memory is measured in a subprocess
def test_quick_run_writes_sane_json(tmp_path, capsys, small_run):
    out_path = tmp_path / "bench.json"
    argv = ["--sizes", "tiny", "--quick", "--data", "synthetic", "--vocab-size", "300", "--batch-tokens", "600"]
    bench.main([*argv, "--threads", "1", "--json", str(out_path), "--checkpoint", str(small_run)])
    report = capsys.readouterr().out
    assert "minitrans" in report and "torch" in report and "padding fraction" in report
    out = json.loads(out_path.read_text())
    assert set(out) >= {"machine", "data", "settings", "sizes", "decoding"}
    assert out["machine"]["threads"] == 1
    machine = out["machine"]  # which CPU and which of its instruction sets the kernels used
    assert machine["cpu_isa"].startswith(torch.backends.cpu.get_cpu_capability()) and machine["cpu_model"]
    assert f"CPU: {machine['cpu_model']}, torch's CPU kernels built for {machine['cpu_isa']}" in report
    data = out["data"]
    for key in ("padding_fraction", "source_padding_fraction", "target_padding_fraction"):
        assert 0.0 <= data[key] < 0.5
    assert min(data["source_padding_fraction"], data["target_padding_fraction"]) <= data["padding_fraction"]
    (size,) = out["sizes"]
    assert size["size"] == "tiny" and size["config"]["d_model"] == SIZES["tiny"].d_model
    assert 0.0 <= size["padding_fraction"] < 0.5
    batch_tokens = size["target_tokens_per_pass"]
    for name in ("minitrans", "torch"):  # every figure follows from the timings and the FLOP count
        seconds = statistics.median(size["seconds"][name])
        assert size["tokens_per_second"][name] == pytest.approx(batch_tokens / seconds)
        assert size["flops_per_second"][name] == pytest.approx(size["flops_per_pass"] / seconds)
        assert size["mfu"][name] == pytest.approx(
            size["flops_per_second"][name] / out["machine"]["matmul_flops_per_second"]
        )
        memory = size["peak_memory"][name]
        assert memory["training_mib"] == pytest.approx(memory["peak_mib"] - memory["before_mib"])
    ratio = size["ratio_vs_torch"]["minitrans"]
    expected = [theirs / ours for ours, theirs in zip(size["seconds"]["minitrans"], size["seconds"]["torch"])]
    assert ratio["per_repeat"] == pytest.approx(expected) and ratio["median"] == pytest.approx(
        statistics.median(expected)
    )
    decoding = out["decoding"]  # --checkpoint: the decoding benchmark on the run's own test split
    assert (decoding["split"], decoding["sentences"]) == ("test", 3)
    assert [row["beam"] for row in decoding["results"]] == [1, 5] and all(r["identical"] for r in decoding["results"])


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    """A tiny untrained model whose config names a generated corpus of 3 test sentences."""
    from helpers.checkpoints import build_checkpoint

    from minitrans.core.config import DataConfig

    folder = tmp_path_factory.mktemp("bench_run")
    data = DataConfig(num_train=20, num_valid=4, num_test=3, min_words=3, max_words=6)
    build_checkpoint(folder / "checkpoints" / "best.pt", data=data)
    return folder


def test_decoding_figures_come_from_the_decoding_benchmark_on_the_runs_own_corpus(small_run):
    """The real --checkpoint path: checkpoint, the run's corpus, both decoding paths timed."""
    figures = bench.decoding_figures(str(small_run), torch.device("cpu"))
    assert figures["checkpoint"] == str(small_run) and figures["device"] == "cpu"
    assert (figures["split"], figures["sentences"]) == ("test", 3)
    for row in figures["results"]:
        assert row["identical"] and row["speedup"] == pytest.approx(row["uncached_s"] / row["cached_s"])


def test_benchmark_steps_with_the_trainers_step_and_loss(monkeypatch):
    """The benchmark times minitrans.training.step with the trainer's loss (models.build.training_loss):
    a poisoned loss there reaches the benchmark's step, so there is no second copy to drift."""
    import minitrans.models.build as build_module
    import minitrans.training.step as step_module
    from minitrans.data.batching import collate

    torch.manual_seed(0)
    model = build("minitrans", 40, SIZES["tiny"])
    before = [p.detach().clone() for p in model.parameters()]
    calls = []
    real_training_loss = build_module.training_loss

    def counted_loss(cfg):
        def counted(*args):
            calls.append(args[2])
            return real_training_loss(cfg)(*args) * float("nan")  # non-finite: the step skips the update

        return counted

    monkeypatch.setattr(steps, "training_loss", counted_loss)
    steps.step_for("minitrans", model, torch.device("cpu"))(collate([[5, 6, 3]], [[7, 8]]))
    assert step_module.train_step is steps.train_step
    assert calls == [steps.LABEL_SMOOTHING]
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


@pytest.mark.parametrize("norm_first", [True, False])
def test_torch_twin_computes_the_same_function_given_the_same_weights(norm_first):
    """The benchmark's reference is the same model, not just one of the same size."""
    torch.manual_seed(9)
    size = TransformerConfig(
        d_model=16, num_heads=2, d_ff=32, num_encoder_layers=2, num_decoder_layers=2, dropout=0.0, norm_first=norm_first
    )
    ours = build("minitrans", 40, size).eval()
    twin = build("torch", 40, size).eval()
    src = torch.tensor([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9]])
    tgt = torch.tensor([[2, 9, 11, 12], [2, 9, 13, 4]])
    assert not torch.allclose(twin(src, tgt), ours(src, tgt), atol=1e-3)  # different weights, different outputs
    copy_weights_into_twin(ours, twin)
    with torch.no_grad():
        torch.testing.assert_close(twin(src, tgt), ours(src, tgt), atol=1e-5, rtol=1e-5)


def test_the_benchmarked_models_drop_out_at_the_rate_they_are_timed_with():
    """Both benchmarks time the recipe's dropout in every place of our model: attention weights,
    feed-forward and residuals (a model without attention dropout takes another kernel)."""
    from minitrans.bench import speed_measures

    assert speed_measures.MULTI30K_SIZE.attention_dropout == speed_measures.MULTI30K_SIZE.ff_dropout == 0.2
    captured = {}

    def build_and_stop(name, vocab, size):
        captured[name] = build(name, vocab, size)
        raise StopIteration

    with mock.patch("minitrans.bench.training.build", build_and_stop), pytest.raises(StopIteration):
        bench.benchmark_size("tiny", SIZES["tiny"], [], 40, {"dropout": 0.1, "norm_first": True}, torch.device("cpu"))
    rates = {m.p for m in captured["minitrans"].modules() if isinstance(m, nn.Dropout)}
    assert rates == {0.1}


def test_each_speed_measure_is_turned_off_and_back_on_and_decodes_the_same(small_run, capsys):
    """python -m minitrans.bench.speed_measures: a line per measure of each workload, the
    decoding measures changing no output, and every measure back on afterwards."""
    from minitrans.bench import speed_measures

    assert (
        speed_measures.main(
            [
                "--workloads",
                "default,beam5",
                "--checkpoint",
                str(small_run),
                "--repeats",
                "1",
                "--batches",
                "1",
                "--sentences",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    step_lines = out.split("beam 5")[0]
    for measure in ("fused attention kernel", "packed_tokens", "the loss in fewer passes"):
        assert measure in step_lines
    first_step_line = next(line for line in step_lines.splitlines() if line.startswith("  "))
    assert first_step_line.strip().startswith(speed_measures.AA)  # the yardstick comes first
    decoding_lines = [line for line in out.split("beam 5")[1].splitlines() if "outputs differ" in line]
    assert len(decoding_lines) == 5 and all("(0 outputs differ)" in line for line in decoding_lines)
    assert decoding_lines[0].strip().startswith(speed_measures.AA)
    model = build("minitrans", 40, SIZES["tiny"])
    attentions = [m for m in model.modules() if hasattr(m, "use_fused")]
    assert attentions  # the fast model's attention modules carry the switch
    with speed_measures.fused_off(model):
        assert not any(m.use_fused for m in attentions)
    assert all(m.use_fused and "use_fused" not in vars(m) for m in attentions)  # the class's again
    before = [type(m) for m in model.modules()]
    with speed_measures.classes_reverted(model, {type(model): nn.Module}):
        assert type(model) is nn.Module
    assert [type(m) for m in model.modules()] == before
