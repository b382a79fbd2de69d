"""Translate with a trained model: ``python scripts/translate.py RUN_OR_CHECKPOINT [SENTENCE ...]``.

Sentences come from the arguments, else ``--input FILE`` ("-" for stdin), else stdin when it is
piped, else an interactive prompt. One output line per input line, in order (``--nbest K``: K
lines per input line; ``--format jsonl``: one JSON object per input line). A line holding
several sentences is split, each translated, and the results joined on one line
(``--no-split`` turns it off). Words the model never saw in training are named on stderr.
``--score-reference FILE`` scores given translations instead; ``--info`` describes the model.
RUN_OR_CHECKPOINT is a .pt file or a run folder (its checkpoints/averaged.pt, else best.pt,
else last.pt), or a folder written by scripts/export.py, which CTranslate2 then translates with
(same flags; no attention maps, no forced scoring).

Many input lines (``--input FILE``) get one progress bar on stderr (on a terminal) and one
summary of the words never seen in training (word -> lines), instead of a warning per line.

Thin by design: reading and writing text here, everything else in ``minitrans.inference``.
The library (and torch) is imported only once the options are parsed: ``--help`` is quick.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES, MAX_POSITIONS
from minitrans.core.decoding_options import BEAM_RANGE, DecodingOptions, add_decoding_flags
from minitrans.core.textio import InputError, numbered_path, plain_truncation_warnings, read_sentences

if TYPE_CHECKING:
    from minitrans.inference.base import BaseTranslator
    from minitrans.inference.lines import LineResult

SUMMARY_LINES = 10  # more input lines than this: unseen words summarised, not named line by line
PROGRESS_CHUNK = 64  # lines translated between two updates of the progress bar


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
    parser.add_argument("--attention", help="save cross-attention PNGs here (numbered when several sentences)")
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


def read_input(args: argparse.Namespace) -> list[str] | None:
    """The sentences to translate, or None for the interactive prompt."""
    if args.sentences:
        return args.sentences
    if args.input and args.input != "-":
        try:
            return read_sentences(Path(args.input).read_bytes(), args.input)
        except OSError as error:
            raise InputError(f"cannot read {args.input}: {error.strerror or error}") from None
    if sys.stdin is None:  # started with stdin closed (<&-)
        raise InputError("stdin is closed; give sentences as arguments or with --input FILE")
    if args.input == "-" or not sys.stdin.isatty():
        return read_sentences(sys.stdin.buffer.read(), "stdin")
    return None


def print_warnings(result_warnings: list[str], where: str = "") -> None:
    for message in result_warnings:
        print(f"warning: {where}{message}", file=sys.stderr)


def interactive(translator: BaseTranslator, args: argparse.Namespace, options: DecodingOptions) -> None:
    try:
        import readline  # noqa: F401  (line editing and history for input(), where the platform has it)
    except ImportError:
        pass
    from minitrans.inference.coverage import language_name
    from minitrans.inference.lines import translate_lines
    from minitrans.inference.translator import require_model
    from minitrans.runs.viz import translate_with_attention

    if args.attention:
        require_model(translator, "drawing attention maps")
    src, tgt = translator.source_language or "?", translator.target_language or "?"
    pair = f"{language_name(src)} → {language_name(tgt)}"
    print(
        f"minitrans: {pair}, translating with {args.checkpoint} (--info says what it knows); "
        "an empty line or Ctrl-D quits.",
        file=sys.stderr,
    )
    if translator.record is None:
        print(f"warning: {NO_RECORD}", file=sys.stderr)
    number = 0
    while True:
        try:
            line = input("> ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return
        if not line.strip():
            return
        number += 1
        if args.attention:
            path = numbered_path(args.attention, number, count=2)  # always numbered: more may follow
            (text,), written = translate_with_attention(translator, [line], path, options)
            print_warnings(translator.record.warnings(line) if translator.record is not None else [])
            print(text)
            for written_path in written:
                print(f"attention: {written_path}", file=sys.stderr)
        else:
            (result,) = translate_lines(
                translator, [line], options, nbest=args.nbest, split=not args.no_split, align=args.format == "jsonl"
            )
            print_warnings(result.warnings)
            if args.format == "jsonl":
                print(json.dumps(result.to_json(), ensure_ascii=False))
            else:
                print("\n".join(result.text_lines(args.nbest, args.scores)))


NO_RECORD = "this checkpoint holds no record of its training data (it predates them): unseen words cannot be named"


def translate_with_progress(
    translator: BaseTranslator, sentences: list[str], args: argparse.Namespace, options: DecodingOptions
) -> list[LineResult]:
    """:func:`translate_lines` in chunks of :data:`PROGRESS_CHUNK` lines, counted on one tqdm
    bar on stderr (tqdm hides it when stderr is not a terminal, and for a single chunk)."""
    from tqdm.auto import tqdm

    from minitrans.inference.lines import translate_lines

    results = []
    with tqdm(
        total=len(sentences), unit="line", desc="translate", disable=None if len(sentences) > PROGRESS_CHUNK else True
    ) as bar:
        for start in range(0, len(sentences), PROGRESS_CHUNK):
            chunk = sentences[start : start + PROGRESS_CHUNK]
            results += translate_lines(
                translator, chunk, options, nbest=args.nbest, split=not args.no_split, align=args.format == "jsonl"
            )
            bar.update(len(chunk))
    return results


def report_warnings(results: list[LineResult]) -> None:
    """Each line's warnings on stderr; for more than :data:`SUMMARY_LINES` lines, the unseen
    words as one summary (word -> the number of lines holding it), the other warnings by line."""
    if len(results) <= SUMMARY_LINES:
        for number, result in enumerate(results, 1):
            print_warnings(result.warnings, f"line {number}: ")
        return
    for number, result in enumerate(results, 1):
        print_warnings(result.notes, f"line {number}: ")
    counts = Counter(word for result in results for word in result.unseen_words or [])
    if counts:
        lines = sum(bool(result.unseen_words) for result in results)
        shown = ", ".join(f"{word} ({count})" for word, count in counts.most_common(20))
        more = f", and {len(counts) - 20} more" if len(counts) > 20 else ""
        print(
            f"warning: {lines} of {len(results)} lines hold words never seen in training (word, lines): {shown}{more}",
            file=sys.stderr,
        )


def translate_all(
    translator: BaseTranslator, sentences: list[str], args: argparse.Namespace, options: DecodingOptions
) -> list[str]:
    """The output lines for the input lines (warnings go to stderr)."""
    from minitrans.inference.lines import score_lines

    if args.score_reference:
        references = read_sentences(Path(args.score_reference).read_bytes(), args.score_reference)
        if len(references) != len(sentences):
            raise InputError(f"{args.score_reference} has {len(references)} lines but the input has {len(sentences)}")
        scored = score_lines(translator, sentences, references, options.length_penalty)
        for number, result in enumerate(scored, 1):
            print_warnings(result.warnings, f"line {number}: ")
        if args.format == "jsonl":
            return [json.dumps(result.to_json(), ensure_ascii=False) for result in scored]
        return [
            f"{r.score:.4f}\t{r.log_prob:.4f}\t"
            + " ".join(f"{p}={lp:.3f}" for p, lp in zip(r.pieces, r.piece_log_probs))
            for r in scored
        ]
    if args.attention:
        from minitrans.inference.translator import require_model
        from minitrans.runs.viz import translate_with_attention

        require_model(translator, "drawing attention maps")
        outputs, written = translate_with_attention(translator, sentences, args.attention, options)
        for number, line in enumerate(sentences, 1):
            print_warnings(
                translator.record.warnings(line) if translator.record is not None else [], f"line {number}: "
            )
        for path in written:
            print(f"attention: {path}", file=sys.stderr)
        return outputs
    results = translate_with_progress(translator, sentences, args, options)
    report_warnings(results)
    if args.format == "jsonl":
        return [json.dumps(result.to_json(), ensure_ascii=False) for result in results]
    return [line for result in results for line in result.text_lines(args.nbest, args.scores)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with plain_truncation_warnings():
        return run(args)


def run(args: argparse.Namespace) -> int:
    from minitrans.core.checkpoint import CheckpointError
    from minitrans.core.utils import pick_device, write_atomic
    from minitrans.inference.loading import load_translator

    options = DecodingOptions(
        beam_size=args.beam,
        length_penalty=args.length_penalty,
        max_output_ratio=args.max_output_ratio,
        max_output_len=args.max_output_len,
        use_cache=not args.no_cache,
    )
    try:
        if args.output and Path(args.output).is_dir():
            raise InputError(f"cannot write {args.output}: it is a folder; give a file name inside it")
        if args.output and not Path(args.output).resolve().parent.is_dir():
            raise InputError(f"cannot write {args.output}: no such folder")
        sentences = None if args.info else read_input(args)
        if args.score_reference and sentences is None:
            raise InputError("--score-reference needs the source lines (as arguments, --input or piped)")
        if args.score_reference and not Path(args.score_reference).is_file():
            raise InputError(f"cannot read {args.score_reference}: no such file")
        try:
            device = pick_device(args.device)
        except ValueError:
            raise InputError(f"--device {args.device}: no such device on this machine") from None
        translator = load_translator(args.checkpoint, device)  # a CTranslate2 export or a checkpoint
        if args.keep_case:
            translator.keep_case()
        if args.info:
            from minitrans.inference.model_card import model_card

            print(model_card(translator, args.checkpoint))
            return 0
        if sentences is None:
            interactive(translator, args, options)
            return 0
        if translator.record is None:
            print(f"warning: {NO_RECORD}", file=sys.stderr)
        outputs = translate_all(translator, sentences, args, options)
        text = "".join(line + "\n" for line in outputs)
        if args.output:  # a temporary file renamed over it: a full disk never leaves half a file
            write_atomic(args.output, text)
        else:
            sys.stdout.buffer.write(text.encode("utf-8"))
            sys.stdout.flush()
    except (CheckpointError, InputError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader went away (e.g. | head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
