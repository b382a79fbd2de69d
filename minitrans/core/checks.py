"""Checking values: the one error type for a configuration value that cannot work, the range
checks every schema and command-line flag shares (one wording: ``key: must be in [low, high],
got value``), and the first line of an error message for one-line reports.

Imports nothing heavy (no torch, no Hydra), so the scripts can check a command line before
anything else loads.
"""

from __future__ import annotations

import argparse
import math


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names the key."""


def check(condition: bool, key: str, problem: str) -> None:
    """A ConfigError ``key: problem`` unless ``condition`` holds."""
    if not condition:
        raise ConfigError(f"{key}: {problem}")


def check_range(
    key: str,
    value: float | None,
    low: float,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
    optional: bool = False,
) -> None:
    """``value`` is a number within the interval (never NaN or infinite); the message names the
    key and the valid range."""
    if value is None and optional:
        return
    problem = range_problem(value, low, high, low_open=low_open, high_open=high_open)
    if problem is not None:
        raise ConfigError(f"{key}: {problem}")


def range_problem(
    value: object, low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = False
) -> str | None:
    """ "must be in [low, high], got value" when ``value`` is not a finite number in the interval."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    inside = (
        is_number
        and math.isfinite(value)
        and (low < value if low_open else low <= value)
        and (value < high if high_open else value <= high)
    )
    if inside:
        return None
    left = f"{'(' if low_open else '['}{_number(low)}"
    right = f"{_number(high)}{')' if high_open or high == math.inf else ']'}"
    got = f"{value}" if is_number or value is None else f"{value!r} (a {type(value).__name__}, not a number)"
    return f"must be in {left}, {right}, got {got}"


def cli_number(kind: type, low: float, high: float = math.inf, *, low_open: bool = False, high_open: bool = False):
    """An argparse ``type=`` that parses an int or float and refuses it outside the interval
    (argparse then prints the flag, the range, and exits with status 2)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None
        problem = range_problem(value, low, high, low_open=low_open, high_open=high_open)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = kind.__name__  # argparse names the type in some messages
    return parse


def _number(value: float) -> str:
    return "inf" if value == math.inf else f"{value:,}".replace(",", "_") if value >= 100_000 else f"{value:g}"


def positive_number(key: str, value: str, words: str, least: float = 0.0, below: str = "") -> float:
    """``value`` read as a positive finite number, else a ConfigError naming ``key`` and the
    ``words`` the key also takes; one less than ``least`` is refused saying what goes wrong ``below``."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    check(math.isfinite(number) and number > 0, key, f"expected {words} or a positive number, got {value!r}")
    check(number >= least, key, f"{value} is less than {least:g}: {below}")
    return number


def first_line(text: object, default: str = "invalid configuration") -> str:
    """The first non-blank line of an error message (or of any text); ``default`` when it has none."""
    return next((line.strip() for line in str(text).splitlines() if line.strip()), default)


__all__ = ["ConfigError", "check", "check_range", "cli_number", "first_line", "range_problem"]
