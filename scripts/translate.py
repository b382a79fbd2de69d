"""Translate with a trained model: ``python scripts/translate.py RUN_OR_CHECKPOINT [SENTENCE ...]``.

Sentences come from the arguments, else ``--input FILE`` ("-" for stdin), else stdin when it is
piped, else an interactive prompt. One output line per input line, in order (``--nbest K``: K
lines per input line; ``--format jsonl``: one JSON object per input line). A line holding
several sentences is split, each translated, and the results joined on one line
(``--no-split`` turns it off). Words the model never saw in training (or never in that case),
input far longer than its training sources and translations cut by the output limit are named
on stderr.
``--score-reference FILE`` scores given translations instead; ``--info`` describes the model.
RUN_OR_CHECKPOINT is a .pt file or a run folder (its checkpoints/averaged.pt, else best.pt,
else last.pt), or a folder written by scripts/export.py, which CTranslate2 then translates with
(same flags; no attention maps, no forced scoring).

Many input lines (``--input FILE``) get one progress bar on stderr (on a terminal) and one
summary line per kind of warning (the lines it concerns; word or character -> lines), instead
of a warning per line.

Thin by design: the options are parsed here, the command is
:mod:`minitrans.cli.translate` (the maps of ``--attention`` drawn by
:func:`minitrans.analysis.viz.save_line_attention`). The library (and torch) is imported only once
the options are parsed: ``--help`` is quick.
"""

from __future__ import annotations

import argparse

from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES, MAX_POSITIONS
from minitrans.core.decoding_options import BEAM_RANGE, add_decoding_flags
from minitrans.core.textio import plain_truncation_warnings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="translate.py", description="Translate sentences with a minitrans checkpoint (one line in, one line out)."
    )
    parser.add_argument("checkpoint", help="a run folder, a .pt checkpoint or a CTranslate2 export (scripts/export.py)")
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: --input, stdin or a prompt)")
    parser.add_argument("-i", "--input", help="read sentences from this UTF-8 file, one per line ('-' for stdin)")
    parser.add_argument("-o", "--output", help="write translations to this file (default: stdout)")
    parser.add_argument(
        "-b", "--beam", type=cli_number(int, *BEAM_RANGE), default=None, help="beam size; 1 = greedy (default: --nbest)"
    )
    parser.add_argument(
        "-n", "--nbest", type=cli_number(int, *BEAM_RANGE), default=1, help="hypotheses per line, best first (<= beam)"
    )
    parser.add_argument(
        "--scores", action="store_true", help="text output: 'SCORE<tab>translation' (log-prob / length penalty)"
    )
    parser.add_argument(
        "--format", choices=["text", "jsonl"], default="text", help="jsonl: one JSON object per input line"
    )
    parser.add_argument("--no-split", action="store_true", help="translate each line as one sentence")
    parser.add_argument(
        "--score-reference", metavar="FILE", help="score the translations in FILE (one per input line) instead"
    )
    parser.add_argument(
        "--keep-case",
        action="store_true",
        help="translate the input as given, even when the model trained on lower-case sources only "
        "(default: then it is lower-cased, with a notice)",
    )
    parser.add_argument("--info", action="store_true", help="describe the model (languages, corpus, BLEU) and exit")
    add_decoding_flags(parser)  # --length-penalty, --max-output-ratio
    parser.add_argument(
        "--max-output-len",
        type=cli_number(int, 1, MAX_POSITIONS),
        default=None,
        help="most output subwords (default: the model's)",
    )
    parser.add_argument(
        "--attention", help="save cross-attention PNGs here (one per sentence; numbered by line, then sentence)"
    )
    parser.add_argument("--device", default="auto", choices=DEVICES, help="default: auto")
    parser.add_argument("--no-cache", action="store_true", help="recompute every prefix (slow; for checking)")
    args = parser.parse_intermixed_args(argv)  # sentences may follow the options
    if args.sentences and args.input:
        parser.error("give sentences as arguments or with --input, not both")
    for flag in ("input", "output", "score_reference", "attention"):  # "" would be silently ignored
        if getattr(args, flag) == "":
            parser.error(f"--{flag.replace('_', '-')}: an empty file name")
    if args.beam is None:
        args.beam = args.nbest
    if args.nbest > args.beam:
        parser.error(f"--nbest {args.nbest} needs --beam {args.nbest} or more (got --beam {args.beam})")
    if args.attention and (args.nbest > 1 or args.format != "text" or args.score_reference or args.scores):
        parser.error(
            "--attention draws the best translation only: not with --nbest, --scores, --format or --score-reference"
        )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from minitrans.cli.translate import run

    draw = None
    if args.attention:  # matplotlib only when a picture is asked for
        from minitrans.analysis.viz import save_line_attention as draw
    with plain_truncation_warnings():  # any warning left (a damaged cache rebuilt): one plain line
        return run(args, draw)


if __name__ == "__main__":
    raise SystemExit(main())
