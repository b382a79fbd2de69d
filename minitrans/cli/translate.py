"""What ``scripts/translate.py`` does once its options are parsed: read the input lines (the
arguments, ``--input FILE``, a pipe, else an interactive prompt), translate them through the
line path (:func:`~minitrans.inference.lines.translate_lines`: sentence splitting, the
lower-casing notice, unseen words) in chunks counted on a progress bar, print each line's notes
as ``warning:`` lines on stderr (over many lines, one summary line per kind of warning), and write
the output lines in the format asked for. ``--score-reference`` scores given translations
instead; ``--info`` describes the model.

``--attention`` translates through the same path, then draws the maps of the sentences it
translated: the drawing is handed in by the caller (``draw``, e.g.
:func:`minitrans.analysis.viz.save_line_attention`), since figures sit in a layer above this one.

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

from tqdm.auto import tqdm

from minitrans.core.checkpoint import CheckpointError, resolve_checkpoint
from minitrans.core.decoding_options import DecodingOptions, fill_run_decoding
from minitrans.core.protected import output_problem
from minitrans.core.textio import InputError, numbered_path, read_sentences
from minitrans.core.utils import pick_device, write_atomic
from minitrans.export.loading import load_translator
from minitrans.inference.base import BaseTranslator
from minitrans.inference.coverage import language_name
from minitrans.inference.lines import LineResult, score_lines, translate_lines
from minitrans.inference.model_card import model_card
from minitrans.inference.translator import require_model

SUMMARY_LINES = 10  # more input lines than this: warnings summarised, not repeated line by line
SUMMARY_NAMED = 20  # words, characters or line numbers a summary names before "and N more"
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
    results = []
    with tqdm(
        total=len(sentences), unit="line", desc="translate", disable=None if len(sentences) > PROGRESS_CHUNK else True
    ) as bar:
        for start in range(0, len(sentences), PROGRESS_CHUNK):
            chunk = sentences[start : start + PROGRESS_CHUNK]
            results += translate_line_results(translator, chunk, args, options)
            bar.update(len(chunk))
    return results


def _listed(items: Sequence[object]) -> str:
    """The first :data:`SUMMARY_NAMED` items, then how many more there are."""
    shown = ", ".join(map(str, items[:SUMMARY_NAMED]))
    return shown + (f", and {len(items) - SUMMARY_NAMED} more" if len(items) > SUMMARY_NAMED else "")


def report_warnings(results: list[LineResult]) -> None:
    """Each line's warnings on stderr; for more than :data:`SUMMARY_LINES` lines, one line per
    warning instead: a note (a cut sentence or translation) with the lines it concerns, and each
    kind of coverage warning with the lines holding it and what it names (word -> the number of
    lines naming it). Nothing a short input would be told is left out."""
    if len(results) <= SUMMARY_LINES:
        for number, result in enumerate(results, 1):
            print_warnings(result.warnings, f"line {number}: ")
        return
    total = len(results)
    by_note: dict[str, list[int]] = {}
    kinds: dict[str, tuple[str, list[int], Counter[str]]] = {}  # kind -> (label, lines, item counts)
    for number, result in enumerate(results, 1):
        for note in dict.fromkeys(result.notes):
            by_note.setdefault(note, []).append(number)
        named: dict[str, dict[str, None]] = {}  # kind -> its items in this line, each once
        for notice in result.notices:
            named.setdefault(notice.kind, {}).update(dict.fromkeys(notice.items))
            kinds.setdefault(notice.kind, (notice.label, [], Counter()))
        for kind, items in named.items():
            kinds[kind][1].append(number)
            kinds[kind][2].update(list(items))
    for note, numbers in by_note.items():
        where = f"line {numbers[0]}" if len(numbers) == 1 else f"{len(numbers)} of {total} lines ({_listed(numbers)})"
        print_warnings([note], f"{where}: ")
    for kind, (label, numbers, counts) in kinds.items():
        if counts:
            named_items = _listed([f"{item} ({count})" for item, count in counts.most_common()])
            print_warnings([f"{len(numbers)} of {total} lines {kind} ({label}, lines): {named_items}"])
        else:
            where = "" if len(numbers) == total else f": lines {_listed(numbers)}"
            print_warnings([f"{len(numbers)} of {total} lines {kind}{where}"])


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


def _stdin_descriptor() -> int | None:
    try:
        return sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # closed, or replaced by an object without one
        return None


def attention_path(path: str) -> Path:
    """The file ``--attention PATH`` names, as it will be written (and printed): without a
    suffix, a PNG (matplotlib would add ``.png`` itself); a folder or a format matplotlib cannot
    write is refused (InputError) before anything is translated."""
    from matplotlib.backend_bases import FigureCanvasBase  # only when pictures are asked for

    found = Path(path)
    if found.is_dir():
        raise InputError(f"--attention {path}: it is a folder; give a file name inside it (e.g. {found / 'attn.png'})")
    if not found.suffix:
        return found.with_name(found.name + ".png")
    formats = FigureCanvasBase.get_supported_filetypes()
    if found.suffix[1:].lower() not in formats:
        raise InputError(f"--attention {path}: cannot draw {found.suffix} files; end it in one of {', '.join(formats)}")
    return found


def check_outputs(args: argparse.Namespace) -> None:
    """Refuse, before anything is read or written, an ``-o`` or ``--attention`` path that is one
    of the command's inputs, a checkpoint or a file of a run's record
    (:func:`~minitrans.core.protected.output_problem`). Raises InputError, one line."""
    inputs = [(args.checkpoint, "the model translated with")]
    try:  # a run folder: the checkpoint it translates with (a hard link to it elsewhere is it too)
        inputs.append((resolve_checkpoint(args.checkpoint), "the model translated with"))
    except (CheckpointError, OSError):
        pass  # an export's folder, or nothing there: its own check names it
    if args.input and args.input != "-":
        inputs.append((args.input, "the input"))
    elif not args.sentences and not args.info:
        descriptor = _stdin_descriptor()  # translate.py RUN -o f < f
        if descriptor is not None:
            inputs.append((descriptor, "the input"))
    if args.score_reference:
        inputs.append((args.score_reference, "the translations to score"))
    for flag, path in (("-o", args.output), ("--attention", args.attention)):
        problem = output_problem(path, inputs, flag) if path else None
        if problem is not None:
            raise InputError(problem)


def run(args: argparse.Namespace, draw: Draw | None = None) -> int:
    """The whole command for parsed options (see ``scripts/translate.py``); the exit code.
    ``draw`` draws the maps that ``--attention`` asks for."""
    if args.attention and draw is None:
        raise ValueError("--attention needs a function that draws the maps")
    try:
        if args.attention:
            args.attention = attention_path(args.attention)
        check_outputs(args)
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
        print_warnings(translator.model_warnings)
        for note in fill_run_decoding(args, translator.run_config):  # the run's own, unless told otherwise
            print(f"note: {note}", file=sys.stderr)
        options = decoding_options(args)
        if args.keep_case:
            translator.keep_case()
        if args.info:
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
    "SUMMARY_NAMED",
    "interactive",
    "read_input",
    "report_warnings",
    "run",
    "translate_all",
    "translate_with_progress",
]
