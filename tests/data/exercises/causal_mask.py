"""Exercise 2 solved, and the usual wrong versions."""

import torch


def causal_mask(length):
    return torch.ones(length, length, dtype=torch.bool).tril()[None, None]


WRONG = {
    "causal_inverted": {"causal_mask": lambda n: torch.ones(n, n, dtype=torch.bool).triu(1)[None, None]},
    "causal_transposed": {"causal_mask": lambda n: torch.ones(n, n, dtype=torch.bool).triu()[None, None]},
    "diagonal_excluded": {"causal_mask": lambda n: torch.ones(n, n, dtype=torch.bool).tril(-1)[None, None]},
    "one_ahead": {"causal_mask": lambda n: torch.ones(n, n, dtype=torch.bool).tril(1)[None, None]},
    "no_broadcast_dims": {"causal_mask": lambda n: causal_mask(n)[0, 0]},
    "not_bool": {"causal_mask": lambda n: causal_mask(n).float()},
    "additive_mask": {
        "causal_mask": lambda n: torch.zeros(1, 1, n, n).masked_fill(~causal_mask(n), float("-inf")),
    },
    "not_written": {"causal_mask": lambda n: (_ for _ in ()).throw(NotImplementedError)},
}
