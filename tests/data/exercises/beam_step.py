"""Exercise 9 solved, and the usual wrong versions."""


def beam_step(log_probs, scores):
    vocab = log_probs.shape[1]
    new_scores, index = (scores[:, None] + log_probs).view(-1).topk(log_probs.shape[0])
    return new_scores, index // vocab, index % vocab


def _no_scores(log_probs, scores):
    vocab = log_probs.shape[1]
    new_scores, index = log_probs.reshape(-1).topk(log_probs.shape[0])
    return new_scores, index // vocab, index % vocab


def _per_beam(log_probs, scores):
    best, tokens = (scores[:, None] + log_probs).max(dim=1)
    order = best.sort(descending=True).indices
    return best[order], order, tokens[order]


def _flat_index(log_probs, scores):
    beams = log_probs.shape[0]
    new_scores, index = (scores[:, None] + log_probs).view(-1).topk(beams)
    return new_scores, index % beams, index // beams


def _not_sorted(log_probs, scores):
    new_scores, rows, tokens = beam_step(log_probs, scores)
    return new_scores.flip(0), rows.flip(0), tokens.flip(0)


WRONG = {
    "no_scores": {"beam_step": _no_scores},
    "per_beam": {"beam_step": _per_beam},
    "flat_index": {"beam_step": _flat_index},
    "not_sorted": {"beam_step": _not_sorted},
    "returns": {"beam_step": lambda log_probs, scores: beam_step(log_probs, scores)[:2]},
}
