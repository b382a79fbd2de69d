"""Forced scoring: the teacher-forced log-probability of a model's own output is the score its
search reported, for every model family; hard alignments name real source pieces."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from helpers.models import tiny_model

from minitrans.core.decoding_options import DecodingOptions
from minitrans.data.batching import collate
from minitrans.data.tokenizer import EOS_ID, PAD_ID
from minitrans.inference.decoding import search
from minitrans.inference.scoring import force_decode, hard_alignment
from minitrans.models.interface import Seq2SeqModel
from minitrans.models.rnn import FixedContextRNN

VOCAB = 20
# The sizes these tests were written for, over the tiny ones: the Transformer's former defaults
# (3 + 3 layers, separate source and target embeddings) and one-layer RNNs.
SIZES = {
    "transformer": dict(num_encoder_layers=3, num_decoder_layers=3, max_len=64, share_embeddings=False),
    "rnn": dict(num_layers=1),
    "rnn_attention": dict(num_layers=1),
}


def reversal_batch(count: int, generator: torch.Generator):
    pairs = []
    for _ in range(count):
        tokens = torch.randint(4, VOCAB, (int(torch.randint(1, 8, (1,), generator=generator)),), generator=generator)
        pairs.append(([*tokens.tolist(), EOS_ID], tokens.tolist()[::-1]))
    return collate(*zip(*pairs))


@pytest.fixture(scope="module", params=["transformer", "rnn", "rnn_attention"])
def trained(request) -> Seq2SeqModel:
    """A tiny model, a few steps into a reversal task: unsure enough that searches differ."""
    model = tiny_model(request.param, VOCAB, **SIZES[request.param]).train()
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(20):
        batch = reversal_batch(16, generator)
        loss = F.cross_entropy(model(batch.src, batch.tgt_in).flatten(0, 1), batch.tgt_out.flatten(), ignore_index=0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@pytest.fixture(scope="module")
def src() -> torch.Tensor:
    return reversal_batch(6, torch.Generator().manual_seed(3)).src  # (6, S)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_forced_score_of_the_greedy_output_is_the_score_greedy_reported(trained, src, alpha):
    found = [hyps[0] for hyps in search(trained, src, DecodingOptions(length_penalty=alpha))]
    forced = force_decode(trained, src, [h.ids for h in found], alpha, [h.is_finished for h in found])
    for hyp, scored in zip(found, forced):
        assert scored.score == pytest.approx(hyp.score, abs=1e-5)
        assert scored.log_prob == pytest.approx(hyp.log_prob, abs=1e-5)
        assert len(scored.token_log_probs) == hyp.num_generated
        assert all(value <= 0 for value in scored.token_log_probs)


def test_forced_scores_of_every_nbest_hypothesis_are_the_scores_the_beam_reported(trained, src):
    found = search(trained, src, DecodingOptions(beam_size=4, length_penalty=0.6), nbest=3)
    rows = [row for row, hyps in enumerate(found) for _ in hyps]
    hyps = [hyp for sentence in found for hyp in sentence]
    forced = force_decode(trained, src[rows], [h.ids for h in hyps], 0.6, [h.is_finished for h in hyps])
    assert [f.score for f in forced] == pytest.approx([h.score for h in hyps], abs=1e-5)


def test_alignments_name_a_real_source_piece_for_every_target_piece(trained, src):
    found = [hyps[0] for hyps in search(trained, src)]
    forced = force_decode(trained, src, [h.ids for h in found])
    for row, (hyp, scored) in enumerate(zip(found, forced)):
        if isinstance(trained, FixedContextRNN):
            assert scored.alignment is None  # one context vector for every word: nothing to align
            continue
        pieces = int(((src[row] != PAD_ID) & (src[row] != EOS_ID)).sum())
        assert len(scored.alignment) == len(hyp.ids)
        assert all(0 <= index < pieces for index in scored.alignment)


def test_a_less_likely_translation_scores_lower_and_scores_are_per_piece(trained, src):
    ((found,),) = search(trained, src[:1], DecodingOptions(length_penalty=0.0))
    other = [4 if token != 4 else 5 for token in found.ids] or [4]
    best, worse = force_decode(trained, src[:1].repeat(2, 1), [found.ids, other], 0.0, [True, True])
    assert worse.log_prob < best.log_prob or not found.is_finished
    assert sum(worse.token_log_probs) == pytest.approx(worse.log_prob)


def test_hard_alignment_averages_heads_and_never_picks_eos_or_padding():
    src = torch.tensor([[7, 8, 9, EOS_ID], [7, EOS_ID, PAD_ID, PAD_ID]])
    cross = torch.zeros(2, 2, 3, 4)  # (B, H, T, S)
    cross[0, 0, 0, 1], cross[0, 1, 0, 2] = 0.6, 0.5  # head 0 prefers 1, head 1 prefers 2: mean picks 1
    cross[0, 1, 1, 2] = 1.0
    cross[0, :, 2, 3] = 1.0  # all weight on EOS: the likeliest real piece is chosen instead
    cross[0, :, 2, 0] = 0.1
    cross[1, :, :, 2] = 1.0  # padding is never chosen
    assert hard_alignment(cross, src).tolist() == [[1, 2, 0], [0, 0, 0]]
