"""Translate with a trained model: ``python scripts/translate.py RUN_OR_CHECKPOINT [SENTENCE ...]``.

Sentences come from the arguments, else ``--input FILE`` ("-" for stdin), else stdin when it is
piped, else an interactive prompt. One output line per input line, in order. RUN_OR_CHECKPOINT
is a .pt file or a run folder (its checkpoints/averaged.pt, else best.pt, else last.pt), or a folder
written by scripts/export.py, which CTranslate2 then translates with (same flags; no attention maps).

Thin by design: reading and writing text here, everything else in ``minitrans.translate``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# Idle OpenMP threads sleep rather than spin: spinning threads slow a busy 2-core machine 10x.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from minitrans.checkpoint import CheckpointError
from minitrans.config import BEAM_RANGE, LENGTH_PENALTY_RANGE, MAX_OUTPUT_RATIO_RANGE, MAX_POSITIONS, cli_number
from minitrans.ct2 import load_translator
from minitrans.translate import (
    InputError,
    Translator,
    numbered_path,
    plain_truncation_warnings,
    read_sentences,
    translate_with_attention,
)
from minitrans.utils import pick_device


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="translate.py", description="Translate sentences with a minitrans checkpoint (one line in, one line out)."
    )
    parser.add_argument("checkpoint", help="a run folder, a .pt checkpoint or a CTranslate2 export (scripts/export.py)")
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: --input, stdin or a prompt)")
    parser.add_argument("-i", "--input", help="read sentences from this UTF-8 file, one per line ('-' for stdin)")
    parser.add_argument("-o", "--output", help="write translations to this file (default: stdout)")
    parser.add_argument(
        "-b", "--beam", type=cli_number(int, *BEAM_RANGE), default=1, help="beam size; 1 = greedy (default)"
    )
    parser.add_argument(
        "--length-penalty",
        type=cli_number(float, *LENGTH_PENALTY_RANGE),
        default=0.6,
        help="beam search's alpha (default 0.6)",
    )
    parser.add_argument(
        "--max-output-ratio",
        type=cli_number(float, *MAX_OUTPUT_RATIO_RANGE, low_open=True),
        default=1.5,
        help="output tokens <= ratio * source + 10",
    )
    parser.add_argument(
        "--max-output-len",
        type=cli_number(int, 1, MAX_POSITIONS),
        default=None,
        help="most output subwords (default: the model's)",
    )
    parser.add_argument("--attention", help="save cross-attention PNGs here (numbered when several sentences)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"], help="default: auto")
    parser.add_argument("--no-cache", action="store_true", help="recompute every prefix (slow; for checking)")
    args = parser.parse_args(argv)
    if args.sentences and args.input:
        parser.error("give sentences as arguments or with --input, not both")
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
    if args.input == "-" or not sys.stdin.isatty():
        return read_sentences(sys.stdin.buffer.read(), "stdin")
    return None


def interactive(translator: Translator, args: argparse.Namespace, options: dict) -> None:
    print(f"minitrans: translating with {args.checkpoint}; an empty line or Ctrl-D quits.", file=sys.stderr)
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
            (text,), written = translate_with_attention(translator, [line], path, **options)
            print(text)
            for written_path in written:
                print(f"attention: {written_path}", file=sys.stderr)
        else:
            print(translator.translate([line], **options)[0])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with plain_truncation_warnings():
        return run(args)


def run(args: argparse.Namespace) -> int:
    options = {
        "beam": args.beam,
        "length_penalty": args.length_penalty,
        "max_output_ratio": args.max_output_ratio,
        "max_output_len": args.max_output_len,
        "use_cache": not args.no_cache,
    }
    try:
        if args.output and not Path(args.output).resolve().parent.is_dir():
            raise InputError(f"cannot write {args.output}: no such folder")
        sentences = read_input(args)
        try:
            device = pick_device(args.device)
        except ValueError:
            raise InputError(f"--device {args.device}: no such device on this machine") from None
        translator = load_translator(args.checkpoint, device)  # a CTranslate2 export or a checkpoint
        if sentences is None:
            interactive(translator, args, options)
            return 0
        if args.attention:
            outputs, written = translate_with_attention(translator, sentences, args.attention, **options)
            for path in written:
                print(f"attention: {path}", file=sys.stderr)
        else:
            outputs = translator.translate(sentences, **options)
        text = "".join(line + "\n" for line in outputs)
        if args.output:
            Path(args.output).write_text(text, encoding="utf-8")
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
