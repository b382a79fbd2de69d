"""Exercise 6 solved, and the usual wrong versions."""


def residual_block(x, sublayer, norm):
    return x + sublayer(norm(x))


WRONG = {
    "no_residual": {"residual_block": lambda x, sublayer, norm: sublayer(norm(x))},
    "post_norm": {"residual_block": lambda x, sublayer, norm: norm(x + sublayer(x))},
    "norm_output": {"residual_block": lambda x, sublayer, norm: x + norm(sublayer(x))},
    "normalised_residual": {"residual_block": lambda x, sublayer, norm: norm(x) + sublayer(norm(x))},
    "norm_twice": {"residual_block": lambda x, sublayer, norm: norm(x + sublayer(norm(x)))},
    "no_norm": {"residual_block": lambda x, sublayer, norm: x + sublayer(x)},
}
