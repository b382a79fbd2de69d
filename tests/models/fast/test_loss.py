"""The training loss against PyTorch's own label-smoothed cross-entropy (the oracle)."""

import pytest
import torch
import torch.nn.functional as F

from minitrans.data.tokenizer import PAD_ID
from minitrans.models.fast.loss import token_loss


def reference(logits, tgt_out, label_smoothing):
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),
        tgt_out.reshape(-1),
        ignore_index=PAD_ID,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


def batch(seed=0, shape=(5, 7), vocab=11):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(*shape, vocab, generator=gen) * 3
    tgt_out = torch.randint(1, vocab, shape, generator=gen)
    tgt_out[0, 4:] = PAD_ID  # padded rows, and a whole sentence of padding
    tgt_out[3, :] = PAD_ID
    return logits, tgt_out


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1, 0.3])
def test_equal_to_pytorch_cross_entropy_values_and_gradients(label_smoothing):
    logits, tgt_out = batch()
    ours, theirs = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    loss, expected = token_loss(ours, tgt_out, label_smoothing), reference(theirs, tgt_out, label_smoothing)
    torch.testing.assert_close(loss, expected)
    (loss * 0.37).backward()  # a scale on the way back, as the trainer's 1 / tokens
    (expected * 0.37).backward()
    torch.testing.assert_close(ours.grad, theirs.grad)
    assert ours.grad[3].abs().max() == 0  # padding gets no gradient


def test_padding_positions_do_not_count():
    logits, tgt_out = batch(1)
    changed = logits.clone()
    changed[tgt_out == PAD_ID] = torch.randn_like(changed[tgt_out == PAD_ID]) * 50
    torch.testing.assert_close(token_loss(changed, tgt_out, 0.1), token_loss(logits, tgt_out, 0.1))


def test_bfloat16_logits_give_a_float32_loss_and_bfloat16_gradients():
    logits, tgt_out = batch(2)
    low = logits.bfloat16().requires_grad_()
    loss = token_loss(low, tgt_out, 0.1)
    assert loss.dtype == torch.float32 and low.grad is None
    loss.backward()
    assert low.grad.dtype == torch.bfloat16
    torch.testing.assert_close(loss, reference(low.detach(), tgt_out, 0.1))


def test_no_gradient_needed_under_no_grad():
    logits, tgt_out = batch(3)
    with torch.no_grad():
        torch.testing.assert_close(token_loss(logits, tgt_out, 0.1), reference(logits, tgt_out, 0.1))


def test_a_second_backward_is_refused_not_wrong():
    logits, tgt_out = batch(4)
    logits.requires_grad_()
    loss = token_loss(logits, tgt_out, 0.1)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="twice"):
        loss.backward()
