"""What ``scripts/translate.py`` does once its options are parsed: read the input lines (the
arguments, ``--input FILE``, a pipe, else an interactive prompt), translate them through the
line path (:func:`~minitrans.inference.lines.translate_lines`: sentence splitting, the
lower-casing notice, unseen words) in chunks counted on a progress bar, print each line's notes
as ``warning:`` lines on stderr (over many lines, the unseen words as one summary), and write
the output lines in the format asked for. ``--score-reference`` scores given translations
instead; ``--info`` describes the model.

``--attention`` translates through the same path, then draws the maps of the sentences it
translated: the drawing is handed in by the caller (``draw``, e.g.
:func:`minitrans.runs.viz.save_line_attention`), since figures sit in a layer above this one.

Every problem it can name ends as one ``error: ...`` line and exit code 1; the notes the
library returns are printed here, never raised as Python warnings.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from minitrans.core.checkpoint import CheckpointError
from minitrans.core.decoding_options import DecodingOptions, fill_run_decoding
from minitrans.core.textio import InputError, numbered_path, read_sentences
from minitrans.core.utils import pick_device, write_atomic
from minitrans.inference.base import BaseTranslator
from minitrans.inference.lines import LineResult, score_lines, translate_lines
from minitrans.inference.loading import load_translator
from minitrans.inference.translator import require_model

SUMMARY_LINES = 10  # more input lines than this: unseen words summarised, not named line by line
PROGRESS_CHUNK = 64  # lines translated between two updates of the progress bar
NO_RECORD = "this checkpoint holds no record of its training data (it predates them): unseen words cannot be named"

# draws the attention maps of translated lines at a path: (files written, notes for the user)
Draw = Callable[[BaseTranslator, Sequence[LineResult], Path], tuple[list[Path], list[str]]]


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


def draw_attention(draw: Draw, translator: BaseTranslator, results: Sequence[LineResult], path: str | Path) -> None:
    """The maps of the translated lines drawn at ``path``, each file written named on stderr."""
    written, notes = draw(require_model(translator, "drawing attention maps"), results, Path(path))
    print_warnings(notes)
    for written_path in written:
        print(f"attention: {written_path}", file=sys.stderr)


def translate_line_results(
    translator: BaseTranslator, lines: list[str], args: argparse.Namespace, options: DecodingOptions
) -> list[LineResult]:
    """The line path with the command line's choices: ``--nbest``, ``--no-split``, and alignments
    only for JSON output."""
    split, align = not args.no_split, args.format == "jsonl"
    return translate_lines(translator, lines, options, nbest=args.nbest, split=split, align=align)


def output_lines(results: list[LineResult], args: argparse.Namespace) -> list[str]:
    if args.format == "jsonl":
        return [json.dumps(result.to_json(), ensure_ascii=False) for result in results]
    return [line for result in results for line in result.text_lines(args.nbest, args.scores)]


def interactive(
    translator: BaseTranslator, args: argparse.Namespace, options: DecodingOptions, draw: Draw | None = None
) -> None:
    try:
        import readline  # noqa: F401  (line editing and history for input(), where the platform has it)
    except ImportError:
        pass
    from minitrans.inference.coverage import language_name

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
        (result,) = translate_line_results(translator, [line], args, options)
        print_warnings(result.warnings)
        print("\n".join(output_lines([result], args)))
        if args.attention:  # always numbered: more may follow
            draw_attention(draw, translator, [result], numbered_path(args.attention, number, count=2))


def translate_with_progress(
    translator: BaseTranslator, sentences: list[str], args: argparse.Namespace, options: DecodingOptions
) -> list[LineResult]:
    """:func:`translate_lines` in chunks of :data:`PROGRESS_CHUNK` lines, counted on one tqdm
    bar on stderr (tqdm hides it when stderr is not a terminal, and for a single chunk)."""
    from tqdm.auto import tqdm

    results = []
    with tqdm(
        total=len(sentences), unit="line", desc="translate", disable=None if len(sentences) > PROGRESS_CHUNK else True
    ) as bar:
        for start in range(0, len(sentences), PROGRESS_CHUNK):
            chunk = sentences[start : start + PROGRESS_CHUNK]
            results += translate_line_results(translator, chunk, args, options)
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


def score_references(translator: BaseTranslator, sentences: list[str], args: argparse.Namespace) -> list[str]:
    """``--score-reference FILE``: the output lines of the given translations, scored."""
    references = read_sentences(Path(args.score_reference).read_bytes(), args.score_reference)
    if len(references) != len(sentences):
        raise InputError(f"{args.score_reference} has {len(references)} lines but the input has {len(sentences)}")
    scored = score_lines(translator, sentences, references, args.length_penalty)
    for number, result in enumerate(scored, 1):
        print_warnings(result.warnings, f"line {number}: ")
    if args.format == "jsonl":
        return [json.dumps(result.to_json(), ensure_ascii=False) for result in scored]
    return [result.text_line() for result in scored]


def translate_all(
    translator: BaseTranslator,
    sentences: list[str],
    args: argparse.Namespace,
    options: DecodingOptions,
    draw: Draw | None = None,
) -> list[str]:
    """The output lines for the input lines (warnings go to stderr); with ``--attention``, the
    maps of what was translated drawn by ``draw``."""
    if args.score_reference:
        return score_references(translator, sentences, args)
    if args.attention:
        require_model(translator, "drawing attention maps")  # refused before anything is translated
    results = translate_with_progress(translator, sentences, args, options)
    report_warnings(results)
    if args.attention:
        draw_attention(draw, translator, results, args.attention)
    return output_lines(results, args)


def decoding_options(args: argparse.Namespace) -> DecodingOptions:
    return DecodingOptions(
        beam_size=args.beam,
        length_penalty=args.length_penalty,
        max_output_ratio=args.max_output_ratio,
        max_output_len=args.max_output_len,
        use_cache=not args.no_cache,
    )


def run(args: argparse.Namespace, draw: Draw | None = None) -> int:
    """The whole command for parsed options (see ``scripts/translate.py``); the exit code.
    ``draw`` draws the maps that ``--attention`` asks for."""
    if args.attention and draw is None:
        raise ValueError("--attention needs a function that draws the maps")
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
        for note in fill_run_decoding(args, translator.run_config):  # the run's own, unless told otherwise
            print(f"note: {note}", file=sys.stderr)
        options = decoding_options(args)
        if args.keep_case:
            translator.keep_case()
        if args.info:
            from minitrans.inference.model_card import model_card

            print(model_card(translator, args.checkpoint))
            return 0
        if sentences is None:
            interactive(translator, args, options, draw)
            return 0
        if translator.record is None:
            print(f"warning: {NO_RECORD}", file=sys.stderr)
        outputs = translate_all(translator, sentences, args, options, draw)
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


__all__ = [
    "NO_RECORD",
    "PROGRESS_CHUNK",
    "SUMMARY_LINES",
    "interactive",
    "read_input",
    "report_warnings",
    "run",
    "translate_all",
    "translate_with_progress",
]
