"""Greedy and beam search for every model family: cached decoding equals full recomputation,
beam size 1 equals greedy, beam search with a beam wide enough to hold everything equals
exhaustive search, finished hypotheses are kept, search stops early when it can, limits hold."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F
from helpers.models import tiny_model

from minitrans.core.decoding_options import DecodingOptions
from minitrans.data.batching import collate
from minitrans.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from minitrans.inference import decoding
from minitrans.inference.decoding import MAX_OUTPUT_LEN, best_ids, length_normalizer, output_limits, search
from minitrans.models.interface import Seq2SeqModel

VOCAB = 20
# The sizes these tests were written for, over the tiny ones: the Transformer's former defaults
# (3 + 3 layers, separate source and target embeddings) and two-layer RNNs.
SIZES = {
    "transformer": dict(num_encoder_layers=3, num_decoder_layers=3, max_len=64, share_embeddings=False),
    "rnn": dict(num_layers=2),
    "rnn_attention": dict(num_layers=2),
}
FAMILIES = ["transformer", "rnn", "rnn_attention"]


def options(**fields) -> DecodingOptions:
    """DecodingOptions; a negative length penalty, outside the range the command line allows but
    one the search handles, is set past the options' own check."""
    alpha = fields.get("length_penalty", 0.6)
    chosen = DecodingOptions(**{**fields, "length_penalty": max(alpha, 0.0)})
    object.__setattr__(chosen, "length_penalty", alpha)
    return chosen


def decode(model: Seq2SeqModel, src: torch.Tensor, **fields) -> list[list[int]]:
    """The best ids of each sentence, by the one decoding entry point."""
    return best_ids(search(model, src, options(**fields)))


@torch.no_grad()
def beam_search(model: Seq2SeqModel, src: torch.Tensor, nbest: int = 1, **fields) -> list[list[decoding.Hypothesis]]:
    """Beam search itself, even at beam size 1 (where :func:`search` runs greedy search)."""
    chosen = options(**fields)
    limits = output_limits(src, chosen.max_output_ratio, chosen.max_output_len or MAX_OUTPUT_LEN)
    return decoding._beam_search(model, src, limits, chosen, nbest)


def reversal_pairs(count: int, generator: torch.Generator) -> list[tuple[list[int], list[int]]]:
    """Source: 1-7 random tokens + EOS; target: the same tokens reversed."""
    pairs = []
    for _ in range(count):
        length = int(torch.randint(1, 8, (1,), generator=generator))
        tokens = torch.randint(4, VOCAB, (length,), generator=generator).tolist()
        pairs.append(([*tokens, EOS_ID], tokens[::-1]))
    return pairs


@pytest.fixture(scope="module", params=FAMILIES)
def trained(request) -> Seq2SeqModel:
    """A tiny model given a few steps on a reversal task: it ends sentences at varied lengths
    and is still unsure of its words, so searches differ and beams matter."""
    model = tiny_model(request.param, VOCAB, **SIZES[request.param]).train()
    generator = torch.Generator().manual_seed(0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(25):
        batch = collate(*zip(*reversal_pairs(16, generator)))
        logits = model(batch.src, batch.tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


@pytest.fixture(scope="module")
def src() -> torch.Tensor:
    pairs = reversal_pairs(8, torch.Generator().manual_seed(5))
    return collate([s for s, _ in pairs], [[] for _ in pairs]).src  # (8, S), right-padded


def test_trained_models_end_sentences_at_varied_lengths(trained, src):
    lengths = {len(ids) for ids in decode(trained, src)}
    assert len(lengths) > 1 and max(lengths) < int(output_limits(src, 1.5, 255).min())


@pytest.mark.parametrize("beam", [1, 3, 5])
def test_cached_decoding_equals_full_recomputation(trained, src, beam):
    cached = decode(trained, src, beam_size=beam, use_cache=True)
    full = decode(trained, src, beam_size=beam, use_cache=False)
    assert cached == full


@pytest.mark.parametrize("alpha", [0.0, 0.6, 1.5])
def test_beam_size_one_is_greedy(trained, src, alpha):
    assert best_ids(beam_search(trained, src, beam_size=1, length_penalty=alpha)) == decode(trained, src)


@pytest.mark.parametrize("beam", [1, 4])
def test_a_sentence_decodes_the_same_alone_and_in_a_batch(trained, src, beam):
    together = decode(trained, src, beam_size=beam)
    for row in range(src.shape[0]):
        length = int((src[row] != PAD_ID).sum())
        assert decode(trained, src[row : row + 1, :length], beam_size=beam) == [together[row]]


def never_ending(model: Seq2SeqModel) -> Seq2SeqModel:
    """The model with EOS made (nearly) impossible: its searches can only stop at the limit."""
    output = model.output if hasattr(model, "output") else model.decoder.output
    with torch.no_grad():
        output.bias[EOS_ID] = -1e4
    return model.eval()


def test_a_model_that_never_ends_runs_exactly_to_each_sentences_limit(src):
    limits = output_limits(src, 0.5, 12).tolist()
    assert len(set(limits)) > 1  # the limits differ by sentence: each must be honoured
    for family in FAMILIES:
        model = never_ending(tiny_model(family, VOCAB, **SIZES[family]))
        for beam in (1, 3):
            for use_cache in (True, False):
                outputs = decode(
                    model, src, beam_size=beam, max_output_ratio=0.5, max_output_len=12, use_cache=use_cache
                )
                assert [len(ids) for ids in outputs] == limits, (family, beam, use_cache)
                assert all(token not in (PAD_ID, BOS_ID, EOS_ID) for ids in outputs for token in ids)


def test_output_limits():
    src = torch.tensor([[5, 6, 7, EOS_ID], [5, EOS_ID, PAD_ID, PAD_ID]])
    assert output_limits(src, 1.5, 255).tolist() == [16, 13]
    assert output_limits(src, 1.5, 14).tolist() == [14, 13]
    assert output_limits(src, 0.0, 1).tolist() == [1, 1]


# -- beam search against exhaustive search ---------------------------------------------------
@torch.no_grad()
def sequence_score(model, src_row, ids, ends_with_eos, alpha):
    """Length-normalised log-probability of one complete hypothesis, by teacher forcing, with
    the searches' conventions (PAD and BOS are never generated)."""
    enc, _ = model.encode(src_row)
    tgt_in = torch.tensor([[BOS_ID, *ids]])
    logits, _ = model.decode(enc, tgt_in)
    logits[..., [PAD_ID, BOS_ID]] = float("-inf")
    log_probs = logits.log_softmax(dim=-1)[0]  # (T, V)
    targets = [*ids, EOS_ID] if ends_with_eos else ids
    total = sum(float(log_probs[t, token]) for t, token in enumerate(targets))
    return total / length_normalizer(len(targets), alpha)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_a_beam_that_holds_every_hypothesis_finds_the_exact_best(family, alpha):
    vocab, limit = 7, 3  # output tokens: UNK, 4, 5, 6 (and EOS)
    model = tiny_model(family, vocab, **SIZES[family])
    words = [UNK_ID, 4, 5, 6]
    src = torch.tensor([[4, 6, 5, EOS_ID], [5, EOS_ID, PAD_ID, PAD_ID]])
    for row in range(2):
        row_src = src[row : row + 1, : int((src[row] != PAD_ID).sum())]
        complete = [(list(ids), True) for n in range(limit) for ids in itertools.product(words, repeat=n)]
        complete += [(list(ids), False) for ids in itertools.product(words, repeat=limit)]  # cut at the limit
        scored = [(sequence_score(model, row_src, ids, eos, alpha), ids) for ids, eos in complete]
        best = max(scored)[1]
        width = len(words) ** (limit - 1) * (len(words) + 1)  # every candidate of the last step
        found = decode(model, row_src, beam_size=width, length_penalty=alpha, max_output_len=limit)
        assert found == [best]
        # ... and its n best are the n best of all, in order, each with its teacher-forced score
        (nbest,) = search(model, row_src, options(beam_size=width, length_penalty=alpha, max_output_len=limit), nbest=4)
        ranked = sorted(scored, key=lambda pair: -pair[0])[:4]
        assert [hyp.ids for hyp in nbest] == [ids for _, ids in ranked]
        assert [hyp.score for hyp in nbest] == pytest.approx([score for score, _ in ranked], abs=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_nbest_lists_are_distinct_ranked_and_scored_as_teacher_forcing_scores_them(trained, src, alpha):
    found = search(trained, src, options(beam_size=5, length_penalty=alpha), nbest=3)
    assert best_ids(found) == decode(trained, src, beam_size=5, length_penalty=alpha)
    for row, hyps in enumerate(found):
        assert len(hyps) == 3
        assert len({tuple(hyp.ids) for hyp in hyps}) == 3
        assert [hyp.score for hyp in hyps] == sorted((hyp.score for hyp in hyps), reverse=True)
        row_src = src[row : row + 1, : int((src[row] != PAD_ID).sum())]
        for hyp in hyps:
            expected = sequence_score(trained, row_src, hyp.ids, hyp.is_finished, alpha)
            assert hyp.score == pytest.approx(expected, abs=1e-4)
            assert hyp.log_prob == pytest.approx(hyp.score * length_normalizer(hyp.num_generated, alpha), abs=1e-4)


def test_greedy_scores_are_the_teacher_forced_scores_and_beam_one_reports_the_same(trained, src):
    greedy = search(trained, src, options(length_penalty=0.6))
    beam_one = beam_search(trained, src, beam_size=1, length_penalty=0.6)
    for row, ((hyp,), (beamed,)) in enumerate(zip(greedy, beam_one)):
        row_src = src[row : row + 1, : int((src[row] != PAD_ID).sum())]
        assert hyp.score == pytest.approx(sequence_score(trained, row_src, hyp.ids, hyp.is_finished, 0.6), abs=1e-4)
        assert (beamed.ids, beamed.is_finished) == (hyp.ids, hyp.is_finished)
        assert beamed.score == pytest.approx(hyp.score, abs=1e-5)


def test_nbest_must_fit_the_beam(src):
    model = tiny_model("rnn", VOCAB, **SIZES["rnn"])
    with pytest.raises(ValueError, match="nbest"):
        search(model, src, options(beam_size=2), nbest=3)
    with pytest.raises(ValueError, match="nbest"):
        search(model, src, options(beam_size=1), nbest=2)


# -- a scripted model: stopping and finished hypotheses --------------------------------------
class ScriptedModel(Seq2SeqModel):
    """Next-token probabilities looked up by the output prefix (a tuple of ids); counts calls.
    A prefix missing from the script continues with word 7 and rarely ends."""

    DEFAULT = {7: 0.9, EOS_ID: 0.1}

    def __init__(self, script: dict[tuple, dict[int, float]], vocab: int = 8) -> None:
        super().__init__()
        self.pad_id, self.vocab, self.script, self.calls = PAD_ID, vocab, script, 0

    def encode(self, src, need_weights=False):
        return {"src": src}, {}

    def _logits(self, prefixes: torch.Tensor) -> torch.Tensor:
        rows = []
        for prefix in prefixes.tolist():  # each starts with BOS
            row = torch.full((self.vocab,), -1e4)
            for token, prob in self.script.get(tuple(prefix[1:]), self.DEFAULT).items():
                row[token] = torch.tensor(prob).log()
            rows.append(row)
        return torch.stack(rows)  # (B, V)

    def init_cache(self, enc):
        return {"prefix": torch.empty(enc["src"].shape[0], 0, dtype=torch.long)}

    def step(self, enc, tokens, cache, need_weights=False):
        self.calls += 1
        prefix = torch.cat([cache["prefix"], tokens[:, None]], dim=1)
        return self._logits(prefix), {"prefix": prefix}, {}

    def decode(self, enc, tgt_in, need_weights=False):
        self.calls += 1
        return torch.stack([self._logits(tgt_in[:, : t + 1]) for t in range(tgt_in.shape[1])], dim=1), {}


SRC = torch.tensor([[4, 4, 4, EOS_ID]])


def test_beam_finds_a_likelier_sentence_than_greedy():
    model = ScriptedModel({(): {4: 0.5, 5: 0.4, EOS_ID: 0.1}, (4,): {6: 0.3, 7: 0.3, EOS_ID: 0.4}, (5,): {EOS_ID: 0.9}})
    assert decode(model, SRC) == [[4]]  # p = 0.2
    for use_cache in (True, False):
        assert decode(model, SRC, beam_size=2, length_penalty=0.0, use_cache=use_cache) == [[5]]  # p = 0.36


@pytest.mark.parametrize("use_cache", [True, False])
def test_search_stops_as_soon_as_no_open_beam_can_beat_the_best_finished(use_cache):
    model = ScriptedModel({(): {EOS_ID: 0.4, 4: 0.35, 5: 0.25}})
    assert decode(model, SRC, beam_size=3, length_penalty=0.0, use_cache=use_cache) == [[]]
    assert model.calls == 1  # log 0.35 can only fall: the empty sentence (0.4) has won


@pytest.mark.parametrize("eos_after_4, expected", [(0.9, []), (0.99, [4])])
def test_an_early_finished_hypothesis_is_kept_until_a_better_one_ends(eos_after_4, expected):
    # alpha = 1 favours longer sentences, so the search goes on after the empty sentence ends;
    # [4] + EOS (p = 0.35 * eos_after_4) beats it after length normalisation only for 0.99.
    model = ScriptedModel({(): {EOS_ID: 0.4, 4: 0.35, 5: 0.25}, (4,): {EOS_ID: eos_after_4, 6: 1 - eos_after_4}})
    assert decode(model, SRC, beam_size=2, length_penalty=1.0) == [expected]


def test_a_length_reward_keeps_the_search_going_to_the_limit_where_open_beams_end():
    # The empty sentence ends first (p = 0.6); alpha = 3 rewards length enough that the open
    # beam [4, 7, 7, 7] (p = 0.2, no EOS) wins when the limit of 4 tokens ends it.
    model = ScriptedModel({(): {EOS_ID: 0.6, 4: 0.4}})
    model.DEFAULT = {7: 0.8, 6: 0.15, EOS_ID: 0.05}
    assert decode(model, SRC, beam_size=2, length_penalty=3.0, max_output_len=4) == [[4, 7, 7, 7]]
    assert model.calls == 4


def test_pad_and_bos_are_never_generated():
    model = ScriptedModel({(): {PAD_ID: 0.5, BOS_ID: 0.3, 4: 0.15, EOS_ID: 0.05}, (4,): {PAD_ID: 0.9, EOS_ID: 0.1}})
    assert decode(model, SRC) == [[4]]
    assert decode(model, SRC, beam_size=2) == [[4]]


def test_beam_size_must_be_positive():
    with pytest.raises(ValueError, match="beam_size"):
        DecodingOptions(beam_size=0)


def test_length_penalty_is_gnmts_formula():
    """Wu et al. (2016): lp(Y) = (5 + |Y|)^alpha / (5 + 1)^alpha; it sets the reported scores."""
    for length in (1, 2, 7, 40):
        for alpha in (0.0, 0.6, 1.0, 2.5):
            assert length_normalizer(length, alpha) == pytest.approx((5 + length) ** alpha / 6**alpha, rel=1e-12)


def test_the_search_goes_on_while_a_longer_sentence_could_still_win_at_alpha_one():
    # After one step the empty sentence has ended (p = 0.6, score log 0.6 = -0.51); the open
    # beam [4] has log 0.4 = -0.92, which beats -0.51 only if normalised as a sentence of up to
    # 8 tokens (-0.92 / (13/6) = -0.42), not of 2 (-0.92 / (7/6) = -0.79). Going on finds
    # [4, 7 x 7] (-0.99 / (13/6) = -0.46 > -0.51); stopping early would return [].
    model = ScriptedModel({(): {EOS_ID: 0.6, 4: 0.4}})
    model.DEFAULT = {7: 0.99, 6: 0.009, EOS_ID: 0.001}  # EOS never among the top K: no early end
    for use_cache in (True, False):
        assert decode(model, SRC, beam_size=2, length_penalty=1.0, max_output_len=8, use_cache=use_cache) == [
            [4] + [7] * 7
        ]


def test_a_negative_alphas_bound_uses_the_shortest_length_an_open_beam_can_reach():
    # alpha = -1 favours short sentences: lp(L) = 6 / (5 + L). After one step the empty sentence
    # has ended (log 0.42 = -0.868); the open beam [4] (log 0.48) can still end at length 2,
    # where it scores at best 7/6 · log 0.48 = -0.856: the search must go on, and [4] + EOS wins.
    model = ScriptedModel({(): {EOS_ID: 0.42, 4: 0.48, 5: 0.10}, (4,): {EOS_ID: 0.999, 6: 0.001}})
    assert decode(model, SRC, beam_size=2, length_penalty=-1.0) == [[4]]
