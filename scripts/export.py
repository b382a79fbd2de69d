"""Export a trained Transformer for fast inference outside the training stack:
``python scripts/export.py RUN_OR_CHECKPOINT --to ctranslate2 OUT_DIR [--quantization int8] [--force]``.

OUT_DIR is self-contained (weights, vocabularies, SentencePiece models, the run's configuration);
``scripts/translate.py OUT_DIR`` and ``scripts/evaluate.py OUT_DIR`` use it. Needs the optional
extra: ``pip install 'minitrans[export]'``. Exit status: 0 done, 1 the model cannot be exported
or read (one ``error:`` line), 2 bad arguments.

Thin by design: everything is in ``minitrans.inference.export``.
"""

from __future__ import annotations

import argparse
import sys

from minitrans.core.checkpoint import CheckpointError
from minitrans.inference.export import ENGINES, ExportError, export_ctranslate2

QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16", "float32")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="export.py", description="Export a minitrans Transformer to CTranslate2.")
    parser.add_argument("checkpoint", help="a run folder or a .pt checkpoint")
    parser.add_argument(
        "out_dir",
        help="the folder to write (refused if it exists; --force replaces only an earlier export or an empty folder)",
    )
    parser.add_argument("--to", choices=ENGINES, default="ctranslate2", help="the inference engine (ctranslate2)")
    parser.add_argument(
        "--quantization", choices=QUANTIZATIONS, default=None, help="weight type (default: float32, as trained)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace OUT_DIR when it is an earlier export or empty (never a run folder or the current folder)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        out = export_ctranslate2(args.checkpoint, args.out_dir, args.quantization, args.force)
    except (ExportError, CheckpointError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"exported {args.checkpoint} to {out} (ctranslate2, {args.quantization or 'float32'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
