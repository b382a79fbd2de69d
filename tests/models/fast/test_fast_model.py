"""The notes model is the oracle: the fast model (models/fast/) computes what it computes.

Logits, loss and gradients agree within float rounding (atol = rtol = 1e-5: the fast model
sums some products in another order, over packed rows or in another kernel); greedy and beam
output, with and without the cache, are the same token ids; attention weights agree. Dropout
draws from another generator by design (packed random bits), so values are compared in eval
mode or with dropout 0; the fast dropout's statistics are held by tests/models/fast/test_dropout.py.
"""

import pytest
import torch
from helpers.models import tiny_model

from minitrans.core.config import TransformerConfig
from minitrans.core.decoding_options import DecodingOptions
from minitrans.inference.decoding import best_ids, search
from minitrans.models.build import VocabSizes, build_model, training_loss
from minitrans.models.fast.transformer import FastTransformer
from minitrans.models.loss import token_loss
from minitrans.models.transformer import Transformer

PAD, VOCAB = 0, 40
TOL = {"atol": 1e-5, "rtol": 1e-5}
SIZES = {
    "default": {},
    "odd_widths": {"d_model": 24, "num_heads": 3, "d_k": 5, "d_v": 7},  # d_k != d_model / H, d_v != d_k
    "post_norm": {"norm_first": False},
    "one_head": {"num_heads": 1},
}


def twins(**kwargs) -> tuple[Transformer, FastTransformer]:
    """The notes model and the fast model with the same weights (one's state_dict into the other)."""
    fields = {"d_model": 32, "num_heads": 4, "d_ff": 64, "num_encoder_layers": 2, "num_decoder_layers": 2} | kwargs
    notes = tiny_model(vocab=VOCAB, **fields).train()
    fast = tiny_model(vocab=VOCAB, seed=1, **fields | {"implementation": "fast"}).train()
    fast.load_state_dict(notes.state_dict())
    return notes, fast


def batch(padded: bool):
    gen = torch.Generator().manual_seed(1)
    src, tgt_out = torch.randint(4, VOCAB, (3, 7), generator=gen), torch.randint(4, VOCAB, (3, 6), generator=gen)
    if padded:
        src[0, 4:], src[2, 6:], tgt_out[1, 3:] = PAD, PAD, PAD
    tgt_in = torch.cat([torch.full((3, 1), 2), tgt_out[:, :-1]], dim=1)
    return src, tgt_in, tgt_out


def test_both_build_the_same_parameters_under_the_same_names_from_the_same_seed():
    cfg = TransformerConfig(d_model=32, d_ff=64)
    torch.manual_seed(0)
    notes = Transformer(cfg, VOCAB, VOCAB, PAD).state_dict()
    torch.manual_seed(0)
    fast = FastTransformer(cfg, VOCAB, VOCAB, PAD).state_dict()
    assert list(notes) == list(fast)
    assert all(torch.equal(notes[key], fast[key]) for key in notes)


def test_build_model_picks_the_implementation_and_rejects_others():
    sizes = VocabSizes(VOCAB, VOCAB)
    assert type(build_model(TransformerConfig(), sizes)) is FastTransformer  # the default
    assert type(build_model(TransformerConfig(implementation="notes"), sizes)) is Transformer
    with pytest.raises(Exception, match="model.implementation"):
        TransformerConfig(implementation="quick")


@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_logits_loss_and_gradients_agree(size, padded):
    notes, fast = twins(**SIZES[size])
    src, tgt_in, tgt_out = batch(padded)
    results = []
    for model, implementation in ((notes, "notes"), (fast, "fast")):
        model.train()  # dropout 0: training mode computes one function, the fast paths included
        logits = model(src, tgt_in)
        kept = logits.detach().clone()  # before the fast loss overwrites them
        loss = training_loss(TransformerConfig(implementation=implementation))(logits, tgt_out, 0.1)
        loss.backward()
        results.append((kept, loss.detach(), [p.grad for p in model.parameters()]))
    (logits_n, loss_n, grads_n), (logits_f, loss_f, grads_f) = results
    torch.testing.assert_close(logits_f, logits_n, **TOL)
    torch.testing.assert_close(loss_f, loss_n, **TOL)
    for got, want in zip(grads_f, grads_n, strict=True):
        torch.testing.assert_close(got, want, **TOL)


def test_the_fast_loss_in_place_equals_the_notes_loss():
    """The training step's fast loss (logits overwritten) against F.cross_entropy."""
    notes, fast = twins()
    src, tgt_in, tgt_out = batch(True)
    expected = token_loss(notes(src, tgt_in), tgt_out, 0.1)
    got = training_loss(TransformerConfig())(fast(src, tgt_in), tgt_out, 0.1)
    torch.testing.assert_close(got, expected, **TOL)


@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_attention_weights_agree(size, padded):
    notes, fast = twins(**SIZES[size])
    src, tgt_in, _ = batch(padded)
    maps = []
    for model in (notes.eval(), fast.eval()):
        enc, enc_maps = model.encode(src, need_weights=True)
        _, dec_maps = model.decode(enc, tgt_in, need_weights=True)
        cache, steps = model.init_cache(enc), []
        for t in range(tgt_in.shape[1]):
            _, cache, step_maps = model.step(enc, tgt_in[:, t], cache, need_weights=True)
            steps.append(step_maps)
        maps.append((enc_maps | dec_maps, steps))
    (full_n, steps_n), (full_f, steps_f) = maps
    for kind in ("enc_self", "dec_self", "cross"):
        for got, want in zip(full_f[kind], full_n[kind], strict=True):
            torch.testing.assert_close(got, want, **TOL)
    for got, want in zip(steps_f, steps_n, strict=True):
        for kind in ("dec_self", "cross"):
            for a, b in zip(got[kind], want[kind], strict=True):
                torch.testing.assert_close(a, b, **TOL)


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no_cache"])
@pytest.mark.parametrize("beam", [1, 3], ids=["greedy", "beam3"])
@pytest.mark.parametrize("size", list(SIZES), ids=list(SIZES))
def test_greedy_and_beam_outputs_are_the_same_ids(size, beam, use_cache):
    notes, fast = twins(**SIZES[size])
    # a little training, so outputs are not one repeated token
    src, tgt_in, tgt_out = batch(True)
    optimizer = torch.optim.Adam(notes.parameters(), lr=1e-2)
    for _ in range(20):
        optimizer.zero_grad()
        token_loss(notes(src, tgt_in), tgt_out).backward()
        optimizer.step()
    fast.load_state_dict(notes.state_dict())
    options = DecodingOptions(beam_size=beam, use_cache=use_cache, max_output_len=12)
    with torch.no_grad():
        for probe in (src, batch(False)[0]):
            outputs = [best_ids(search(model.eval(), probe, options)) for model in (notes, fast)]
            assert outputs[0] == outputs[1]


def test_decoding_steps_on_the_cpu_take_the_written_out_path_and_match_the_notes(monkeypatch):
    """A step's few queries (one per row) skip PyTorch's fused kernel, which costs up to twice
    the two small products there; the logits stay the notes model's."""
    import minitrans.models.fast.attention as attention

    notes, fast = twins()
    src, tgt_in, _ = batch(True)
    with torch.no_grad():
        enc, _ = notes.eval().encode(src)
        want = notes.step(enc, tgt_in[:, 0], notes.init_cache(enc))[0]

        def refuse(*args, **kwargs):
            raise AssertionError("the fused kernel was called for a decoding step")

        monkeypatch.setattr(attention, "fused_attention", refuse)
        enc, _ = fast.eval().encode(src)
        got = fast.step(enc, tgt_in[:, 0], fast.init_cache(enc))[0]
    torch.testing.assert_close(got, want, **TOL)
    with pytest.raises(AssertionError, match="fused kernel"):  # training still takes it
        fast.train()(src, tgt_in)
