"""The one training step: mixed precision, float32 master weights, the optimizer's kernel."""

import pytest
import torch
from helpers.models import tiny_model

from minitrans.data.batching import collate
from minitrans.training.step import (
    autocast_dtype_for,
    cpu_has_native_bf16,
    load_optimizer_state,
    make_optimizer,
    train_step,
)

VOCAB = 40


def tiny_fast_model():
    """The fast model, which training builds, of width 32, in training mode."""
    return tiny_model(vocab=VOCAB, d_model=32, d_ff=64, implementation="fast").train()


def batches(count=5, seed=0):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        src = [torch.randint(4, VOCAB, (int(n),), generator=gen).tolist() + [2] for n in torch.randint(3, 9, (6,))]
        tgt = [torch.randint(4, VOCAB, (int(n),), generator=gen).tolist() for n in torch.randint(3, 9, (6,))]
        out.append(collate(src, tgt))
    return out


def losses(autocast_dtype):
    model = tiny_fast_model()
    optimizer = make_optimizer(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    seen = []
    for batch in batches():
        loss = train_step(model, optimizer, batch, 1.0 / batch.num_tgt_tokens, 0.1, 1.0, autocast_dtype=autocast_dtype)
        seen.append(float(loss))
    return seen, model, optimizer


def test_bfloat16_autocast_tracks_float32_and_keeps_float32_weights():
    """Five updates under bfloat16 autocast (it runs on the CPU too) give the float32 run's losses
    within 2 % (bfloat16 keeps 8 bits of mantissa: about 0.4 % per rounding), yet not the same
    numbers, so autocast really ran; weights, gradients and Adam's moments stay float32."""
    full, _, _ = losses(None)
    half, model, optimizer = losses(torch.bfloat16)
    assert full != half
    for a, b in zip(full, half):
        assert abs(a - b) <= 0.02 * a
    assert full[-1] < full[0] and half[-1] < half[0]  # both learn
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(s["exp_avg"].dtype == torch.float32 for s in optimizer.state.values())


def test_precision_policy():
    cpu = torch.device("cpu")
    assert autocast_dtype_for("fp32", cpu) is None
    assert autocast_dtype_for("auto", cpu) is None  # the CPU asks for bfloat16 by name
    assert autocast_dtype_for("bf16", cpu) is torch.bfloat16
    with pytest.raises(ValueError, match="precision"):
        autocast_dtype_for("fp16", cpu)


@pytest.mark.parametrize(
    ("avx512_bf16", "amx", "expected"),
    [(False, False, None), (True, False, torch.bfloat16), (False, True, torch.bfloat16)],
)
def test_native_precision_is_bf16_only_on_a_cpu_that_computes_it(monkeypatch, avx512_bf16, amx, expected):
    """``native``: bfloat16 on a CPU with AVX512-BF16 or AMX tiles, float32 where it would be
    emulated (an AVX2 CPU); ``auto`` stays float32 on every CPU."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx)
    assert cpu_has_native_bf16() is (expected is not None)
    assert autocast_dtype_for("native", torch.device("cpu")) is expected
    assert autocast_dtype_for("auto", torch.device("cpu")) is None


def test_adam_runs_its_fused_kernel_and_a_loaded_state_keeps_it():
    model = tiny_fast_model()
    optimizer = make_optimizer(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
    assert optimizer.param_groups[0]["fused"] is True
    old = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))  # an older checkpoint's optimizer
    batch = batches(1)[0]
    train_step(model, old, batch, 1.0 / batch.num_tgt_tokens, 0.1, 1.0)
    load_optimizer_state(optimizer, old.state_dict())
    assert optimizer.param_groups[0]["fused"] is True
    torch.testing.assert_close(optimizer.state_dict()["state"], old.state_dict()["state"])


def gradient_norm(model) -> float:
    return float(
        torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    )


@pytest.mark.parametrize("limit", [0.5, 2.0])
def test_a_gradient_over_the_limit_is_clipped_to_it_and_one_under_it_is_left_alone(limit):
    """The summed (unscaled) loss of a batch has a gradient norm far over 2; the step applies
    the clipped gradient, which stays on the parameters after the update."""
    batch = batches(1)[0]
    unclipped = tiny_fast_model()
    train_step(unclipped, make_optimizer(unclipped.parameters(), lr=1e-3, betas=(0.9, 0.98)), batch, 1.0, 0.1, 1e9)
    raw = gradient_norm(unclipped)
    assert raw > 10 * limit
    model = tiny_fast_model()
    train_step(model, make_optimizer(model.parameters(), lr=1e-3, betas=(0.9, 0.98)), batch, 1.0, 0.1, limit)
    assert gradient_norm(model) == pytest.approx(limit, rel=1e-4)
    small = tiny_fast_model()  # a mean loss's gradient under a limit above it: unchanged
    scale = 1.0 / batch.num_tgt_tokens
    train_step(small, make_optimizer(small.parameters(), lr=1e-3, betas=(0.9, 0.98)), batch, scale, 0.1, 1e9)
    under = gradient_norm(small)
    again = tiny_fast_model()
    train_step(again, make_optimizer(again.parameters(), lr=1e-3, betas=(0.9, 0.98)), batch, scale, 0.1, under * 1.5)
    assert gradient_norm(again) == pytest.approx(under, rel=1e-6)


def test_the_step_takes_no_schedule_and_the_trainer_method_is_not_its_namesake():
    """The schedule is stepped by the trainer's loop (after the ranks agree on the time), so the
    step takes none; the trainer's per-batch method is named for what it does beyond the step
    (sharding, accounting), not after the function it calls."""
    import inspect

    from minitrans.training.trainer import Trainer

    assert "scheduler" not in inspect.signature(train_step).parameters
    assert not hasattr(Trainer, "train_step") and callable(Trainer.train_batch)


def test_the_agreement_term_is_the_symmetric_kl_divergence_over_real_tokens():
    """R-Drop's term against torch's own KL divergence, both ways, on the real target tokens only;
    zero for two identical copies."""
    from minitrans.data.tokenizer import PAD_ID
    from minitrans.training.step import agreement_loss

    torch.manual_seed(0)
    logits = torch.randn(2 * 3, 4, 7)  # (2B, T, V): two copies of a batch of 3
    tgt_out = torch.randint(4, 7, (3, 4))
    tgt_out[0, 2:] = PAD_ID
    p, q = logits.log_softmax(-1).chunk(2)
    real = tgt_out != PAD_ID  # (B, T)
    both_ways = torch.nn.functional.kl_div(q, p, log_target=True, reduction="none").sum(-1)  # KL(p || q)
    both_ways += torch.nn.functional.kl_div(p, q, log_target=True, reduction="none").sum(-1)  # KL(q || p)
    torch.testing.assert_close(agreement_loss(logits, tgt_out), both_ways[real].sum())
    assert both_ways[~real].sum() > 0  # the padding would have counted
    same = torch.cat([logits[:3], logits[:3]])
    assert float(agreement_loss(same, tgt_out)) == pytest.approx(0.0, abs=1e-6)


def test_r_drop_without_dropout_is_the_plain_step():
    """Without dropout the two copies agree, the term is zero and the mean of the copies' losses
    is the batch's own: one R-Drop step moves the weights as one plain step does (plain SGD,
    whose update is the gradient: Adam's first step would blow rounding-sized gradients up to the
    learning rate)."""
    plain, doubled = tiny_fast_model(), tiny_fast_model()
    doubled.load_state_dict(plain.state_dict())
    batch = batches(1)[0]
    results = []
    for model, weight in ((plain, 0.0), (doubled, 4.0)):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        results.append(float(train_step(model, optimizer, batch, 1.0 / batch.num_tgt_tokens, 0.1, 1.0, r_drop=weight)))
    assert results[0] == pytest.approx(results[1], rel=1e-5)
    for a, b in zip(plain.parameters(), doubled.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_r_drop_pulls_the_two_copies_together_and_reports_the_token_loss_alone():
    """With dropout the copies differ: the weight of the term changes the update, not the loss the
    step reports (the same masks drawn, the same token loss)."""
    batch = batches(1)[0]
    reported, weights = [], []
    for weight in (1e-6, 5.0):
        model = tiny_model(vocab=VOCAB, d_model=32, d_ff=64, implementation="fast", dropout=0.3).train()  # seeded alike
        optimizer = make_optimizer(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
        torch.manual_seed(7)
        reported.append(float(train_step(model, optimizer, batch, 1.0 / batch.num_tgt_tokens, 0.1, 1.0, r_drop=weight)))
        weights.append([p.detach().clone() for p in model.parameters()])
    assert reported[0] == pytest.approx(reported[1], rel=1e-6)
    assert any(not torch.allclose(a, b) for a, b in zip(*weights))


@pytest.mark.parametrize("weight", [-0.5, float("nan")])
def test_a_negative_r_drop_weight_is_refused_by_name(weight):
    from minitrans.core.checks import ConfigError
    from minitrans.core.config import TrainerConfig

    with pytest.raises(ConfigError, match="trainer.r_drop"):
        TrainerConfig(r_drop=weight)


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_r_drop_with_the_fast_loss_which_reuses_the_logits_is_r_drop_with_the_notes_loss(dropout):
    """The fast loss overwrites the logits' buffer in place; the agreement term, computed from the
    same logits before it, must still see (and pass gradients through) the logits as they were."""
    from minitrans.models.fast.loss import step_loss
    from minitrans.models.loss import token_loss

    batch = batches(1)[0]
    seen = []
    for loss_fn in (token_loss, step_loss):
        model = tiny_model(vocab=VOCAB, d_model=32, d_ff=64, implementation="fast", dropout=dropout).train()
        torch.manual_seed(3)
        loss = train_step(
            model, torch.optim.SGD(model.parameters(), lr=0.0), batch, 0.1, 0.1, 1e9, loss_fn=loss_fn, r_drop=2.0
        )
        seen.append((float(loss), [p.grad.clone() for p in model.parameters()]))
    assert seen[0][0] == pytest.approx(seen[1][0], rel=1e-5)
    for a, b in zip(seen[0][1], seen[1][1]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
