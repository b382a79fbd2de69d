"""Decoding options, one spelling for the library and the command line: beam size, length
penalty and output length, with the ranges the trainer's ``trainer.beam_size`` ... keys and the
scripts' ``--beam`` ... flags share."""

from __future__ import annotations

from dataclasses import dataclass

from minitrans.core.checks import check_range, cli_number
from minitrans.core.knob import knob

# Decoding options, shared by the trainer's final evaluation and the scripts' flags.
BEAM_RANGE = (1, 100)  # wider beams cost memory (beam x vocabulary scores per step) and rarely help
LENGTH_PENALTY_RANGE = (0.0, 5.0)  # GNMT's alpha; 0 = none
MAX_OUTPUT_RATIO_RANGE = (0.0, 100.0)  # output tokens <= ratio * source length + 10; ratio > 0


def check_decoding(beam: int, length_penalty: float, max_output_ratio: float, keys: tuple[str, str, str]) -> None:
    """Decoding options (beam size, length penalty, output length ratio), each in its range;
    ``keys`` names them in the error (config keys or command-line flags)."""
    check_range(keys[0], beam, *BEAM_RANGE)
    check_range(keys[1], length_penalty, *LENGTH_PENALTY_RANGE)
    check_range(keys[2], max_output_ratio, *MAX_OUTPUT_RATIO_RANGE, low_open=True)


@dataclass(frozen=True)
class DecodingOptions:
    """How to turn a source into a translation; one spelling of each option for the library
    (Translator, evaluation, the trainer's test evaluation). The command-line tools map their
    flags (``--beam``, ``--length-penalty`` ...) onto these fields."""

    beam_size: int = knob(1, "1 = greedy search")
    length_penalty: float = knob(0.6, "GNMT's alpha: scores are divided by ((5 + length) / 6) ** length_penalty")
    max_output_ratio: float = knob(1.5, "at most ratio * source length + 10 output tokens")
    max_output_len: int | None = knob(None, "a cap on every output; None -> the model's max_len - 1")
    use_cache: bool = knob(True, "False recomputes every prefix (slow; for checking)")
    # not trainer.batch_tokens, which counts the source and target tokens of a training batch
    batch_hyp_tokens: int = knob(6000, "decoding batches: about beam_size * sentences * longest source <= this")

    def __post_init__(self) -> None:
        check_decoding(
            self.beam_size,
            self.length_penalty,
            self.max_output_ratio,
            ("beam_size", "length_penalty", "max_output_ratio"),
        )


# The decoding settings a run records (trainer.*) and its own test evaluation used, with the words a note names them by
RUN_SETTINGS = {"length_penalty": "length penalty", "max_output_ratio": "output ratio"}


def run_settings(run_config) -> dict[str, float]:
    """The run's own decoding settings (``trainer.length_penalty``, ``trainer.max_output_ratio``:
    what its test evaluation used; a recipe may tune them, e.g. Multi30k's), else DecodingOptions'
    defaults. ``run_config``: the run's TrainConfig, or None for a model that carries none."""
    if run_config is None:
        return {key: getattr(DecodingOptions, key) for key in RUN_SETTINGS}
    return {key: getattr(run_config.trainer, key) for key in RUN_SETTINGS}


def run_decoding(run_config, **told) -> tuple[dict[str, float], list[str]]:
    """The decoding settings a tool uses: each one it was told (``length_penalty=1.0``; None =
    not told), else the run's own (:func:`run_settings`); and one note for each told setting
    that differs from the run's own, so that no tool decodes otherwise without saying so."""
    own = run_settings(run_config)
    unknown = told.keys() - own.keys()
    if unknown:
        raise TypeError(f"not a run's decoding setting: {', '.join(sorted(unknown))}")
    settings = {key: told[key] if told.get(key) is not None else value for key, value in own.items()}
    notes = [
        f"decoding with {RUN_SETTINGS[key]} {settings[key]:g}, not the run's own {own[key]:g} (trainer.{key})"
        for key in own
        if run_config is not None and told.get(key) is not None and settings[key] != own[key]
    ]
    return settings, notes


def fill_run_decoding(args, run_config) -> list[str]:
    """Set ``args.length_penalty`` and ``args.max_output_ratio`` (parsed by :func:`add_decoding_flags`,
    None when not given) to what :func:`run_decoding` decides; its notes."""
    settings, notes = run_decoding(run_config, **{key: getattr(args, key) for key in RUN_SETTINGS})
    for key, value in settings.items():
        setattr(args, key, value)
    return notes


def run_length_penalty(flag: float | None, run_config) -> float:
    """``--length-penalty`` when given, else the run's own (:func:`run_settings`)."""
    return run_decoding(run_config, length_penalty=flag)[0]["length_penalty"]


def add_decoding_flags(parser) -> None:
    """The command-line tools' --length-penalty and --max-output-ratio, None when not given (then
    :func:`fill_run_decoding` takes the run's own), in the shared ranges (translate.py and
    evaluate.py take them alike)."""
    parser.add_argument(
        "--length-penalty",
        type=cli_number(float, *LENGTH_PENALTY_RANGE),
        default=None,
        help="beam search's alpha (default: the run's own, trainer.length_penalty, with which its test"
        f" was scored; {DecodingOptions.length_penalty} for a model without one)",
    )
    parser.add_argument(
        "--max-output-ratio",
        type=cli_number(float, *MAX_OUTPUT_RATIO_RANGE, low_open=True),
        default=None,
        help="output tokens <= ratio * source + 10 (default: the run's own, trainer.max_output_ratio;"
        f" {DecodingOptions.max_output_ratio} for a model without one)",
    )
