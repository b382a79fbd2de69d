"""Exercise 5 solved, and the usual wrong versions."""

import torch


def sinusoidal_positions(length, d_model, start=0, exponent=2.0, own_frequency=False, swap=False, halves=False):
    pos = torch.arange(start, start + length, dtype=torch.float)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float)  # (D/2,)
    angle = pos / 10000 ** (exponent / 2 * two_i / d_model)  # (L, D/2)
    odd_angle = pos / 10000 ** ((two_i + 1) / d_model) if own_frequency else angle
    sin, cos = angle.sin(), odd_angle.cos()
    if swap:
        sin, cos = angle.cos(), odd_angle.sin()
    if halves:
        return torch.cat([sin, cos], dim=1)
    table = torch.zeros(length, d_model)
    table[:, 0::2], table[:, 1::2] = sin, cos
    return table


def wrong(**how):
    return {"sinusoidal_positions": lambda length, d_model: sinusoidal_positions(length, d_model, **how)}


WRONG = {
    "sin_cos_swapped": wrong(swap=True),
    "halves": wrong(halves=True),
    "odd_own_frequency": wrong(own_frequency=True),
    "exponent_without_two": wrong(exponent=1.0),
    "positions_from_one": wrong(start=1),
    "positions_transposed": {"sinusoidal_positions": lambda length, d_model: sinusoidal_positions(length, d_model).T},
}
