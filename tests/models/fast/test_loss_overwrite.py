"""token_loss(overwrite_logits=True), the training step's form: the log-probabilities and then the
gradient live in the logits' own buffer; values and gradients stay those of F.cross_entropy."""

import pytest
import torch
import torch.nn.functional as F

from minitrans.data.tokenizer import PAD_ID
from minitrans.models.fast.loss import token_loss


def _layer_and_targets(seed=0, rows=37, width=12, vocab=50):
    gen = torch.Generator().manual_seed(seed)
    hidden = torch.randn(rows, width, generator=gen)
    weight, bias = torch.randn(vocab, width, generator=gen), torch.randn(vocab, generator=gen)
    target = torch.randint(1, vocab, (rows,), generator=gen)
    target[::5] = PAD_ID
    return hidden, weight, bias, target


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_overwriting_gives_pytorchs_loss_and_gradients_and_reuses_the_logits_buffer(label_smoothing):
    hidden, weight, bias, target = _layer_and_targets()
    grads = []
    for overwrite in (False, True):
        h, w, b = (t.clone().requires_grad_() for t in (hidden, weight, bias))
        logits = F.linear(h, w, b)  # (N, V), not a leaf: what a model returns
        before = logits.detach().clone()
        loss = token_loss(logits[None], target[None], label_smoothing, overwrite_logits=overwrite)
        expected = F.cross_entropy(
            before, target, ignore_index=PAD_ID, label_smoothing=label_smoothing, reduction="sum"
        )
        torch.testing.assert_close(loss, expected)
        changed = not torch.equal(logits.detach(), before)
        assert changed == overwrite
        if overwrite:  # the buffer now holds the log-probabilities
            torch.testing.assert_close(logits.detach(), torch.log_softmax(before, -1))
        (loss * 0.5).backward()
        grads.append([h.grad, w.grad, b.grad])
    for ours, plain in zip(*grads):
        torch.testing.assert_close(ours, plain)


def test_leaf_and_bfloat16_logits_are_left_alone():
    hidden, weight, bias, target = _layer_and_targets(1)
    leaf = F.linear(hidden, weight, bias).requires_grad_()
    kept = leaf.detach().clone()
    token_loss(leaf[None], target[None], 0.1, overwrite_logits=True).backward()
    assert torch.equal(leaf.detach(), kept)
    half = F.linear(hidden, weight, bias).bfloat16().requires_grad_().clone()
    kept = half.detach().clone()
    token_loss(half[None], target[None], 0.1, overwrite_logits=True)
    assert torch.equal(half.detach(), kept)


def test_logits_saved_by_their_own_layer_make_backward_fail_loudly():
    """If the op that made the logits keeps its output for backward (exp does), overwriting them
    is caught by autograd's version check instead of giving wrong gradients."""
    hidden, weight, bias, target = _layer_and_targets(2)
    logits = torch.exp(F.linear(hidden.requires_grad_(), weight, bias) * 0.1)
    loss = token_loss(logits[None], target[None], 0.1, overwrite_logits=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_only_an_explicit_request_overwrites_the_logits():
    hidden, weight, bias, target = _layer_and_targets(3)
    for overwrite in (False, True, False):
        logits = F.linear(hidden.clone().requires_grad_(), weight, bias)
        before = logits.detach().clone()
        token_loss(logits[None], target[None], 0.1, **({"overwrite_logits": True} if overwrite else {}))
        assert torch.equal(logits.detach(), before) != overwrite


def _bf16_step(hidden, weight, bias, target, overwrite):
    h, w, b = (t.clone().requires_grad_() for t in (hidden, weight, bias))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = F.linear(h, w, b)  # (N, V) bfloat16, as under the training step's autocast
        loss = token_loss(logits[None], target[None], 0.1, overwrite_logits=overwrite)
    loss.backward()
    return loss, logits, [h.grad, w.grad, b.grad]


def test_spent_bf16_logits_borrow_the_workspace_and_keep_loss_and_gradients_bitwise():
    """Under bfloat16 autocast the float32 log-probabilities live in one workspace kept from step
    to step (no fresh (N, V) array to fault in), and the gradient in the logits' own buffer."""
    from minitrans.models.fast.loss import WORKSPACE

    hidden, weight, bias, target = _layer_and_targets(4)
    plain_loss, plain_logits, plain_grads = _bf16_step(hidden, weight, bias, target, overwrite=False)
    buffers = set()
    for _ in range(2):
        loss, logits, grads = _bf16_step(hidden, weight, bias, target, overwrite=True)
        assert torch.equal(loss, plain_loss)
        for ours, plain in zip(grads, plain_grads):
            assert torch.equal(ours, plain)
        assert not torch.equal(logits.detach(), plain_logits.detach())  # they hold the gradient now
        assert not WORKSPACE.lent
        buffers.add(WORKSPACE.buffer.data_ptr())
    assert len(buffers) == 1  # the second step reused the first one's workspace


def test_a_second_loss_while_the_workspace_is_lent_gets_its_own_array():
    from minitrans.models.fast.loss import WORKSPACE

    hidden, weight, bias, target = _layer_and_targets(5)
    _, _, plain_grads = _bf16_step(hidden, weight, bias, target, overwrite=False)
    h, w, b = (t.clone().requires_grad_() for t in (hidden, weight, bias))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        first = token_loss(F.linear(h, w, b)[None], target[None], 0.1, overwrite_logits=True)
        assert WORKSPACE.lent
        second = token_loss(F.linear(h, w, b)[None], target[None], 0.1, overwrite_logits=True)
    torch.testing.assert_close(first, second, rtol=0, atol=0)
    (first + second).backward()  # both backward passes run; the sum's gradient is twice one
    for ours, plain in zip((h.grad, w.grad, b.grad), plain_grads):
        torch.testing.assert_close(ours, 2 * plain)
    assert not WORKSPACE.lent
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):  # no backward to wait for
        token_loss(F.linear(hidden, weight, bias)[None], target[None], 0.1, overwrite_logits=True)
    assert not WORKSPACE.lent
    with torch.autocast("cpu", dtype=torch.bfloat16):  # a graph dropped unused gives it back too
        dropped = token_loss(F.linear(h, w, b)[None], target[None], 0.1, overwrite_logits=True)
    assert WORKSPACE.lent
    del dropped
    assert not WORKSPACE.lent
