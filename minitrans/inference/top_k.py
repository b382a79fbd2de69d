"""The k largest values of each row of a wide matrix, faster than ``torch.topk`` on the CPU.

Shape legend: n rows, m columns, B group size, G = m / B groups.

The searches take, at every step, the best words of each decoder row (greedy: k = 1 of V) or of
each sentence (beam search: 2K of its K·V extensions). ``torch.topk`` on the CPU walks each row
one element at a time, which is slow on such wide rows (docs/translating.md). The m columns of a row fall into G groups (column j into group
j mod G), whose largest values one vectorised pass finds. A group whose largest value is not among the k largest
group maxima holds none of the k largest values of its row: the k groups ahead of it each hold a
value at least as large as any of its own. So ``torch.topk`` then searches only the k best
groups' B·k values.

The values are exactly ``torch.topk``'s, in the same (descending) order; among equal values the
indices may be others than ``torch.topk`` would give (it promises no order among them either).
"""

from __future__ import annotations

from torch import Tensor

GROUP_SIZES = (10, 8, 16, 5)  # B, the first that divides m; 10 first: the fastest at the vocabularies measured


def top_k(x: Tensor, k: int) -> tuple[Tensor, Tensor]:
    """x (n, m) -> (values, indices), each (n, k): the k largest values of each row, largest first."""
    n, m = x.shape
    size = next((b for b in GROUP_SIZES if m % b == 0 and m // b >= 8 * k), None)
    if size is None or x.device.type != "cpu" or not x.is_contiguous():
        return x.topk(k, dim=1)
    groups = m // size
    strips = x.view(n, size, groups)  # (n, B, G): column j at [j // G, j % G]
    best_groups = strips.amax(dim=1).topk(k, dim=1).indices  # (n, k)
    candidates = strips.gather(2, best_groups[:, None, :].expand(-1, size, -1))  # (n, B, k)
    values, at = candidates.view(n, size * k).topk(k, dim=1)  # (n, k): at = b·k + i
    return values, (at // k) * groups + best_groups.gather(1, at % k)  # column b·G + group


__all__ = ["top_k"]
