"""Export a trained model outside the training stack:

    python scripts/export.py RUN_OR_CHECKPOINT OUT_DIR --to ctranslate2 [--quantization int8] [--force]
    python scripts/export.py RUN_OR_CHECKPOINT OUT_DIR --to hf [--license mit] [--push-to-hub OWNER/NAME]

``--to ctranslate2`` (the default): a Transformer for fast inference with CTranslate2 (the optional
extra: ``pip install 'minitrans[export]'``). ``--to hf``: a folder to share, in the Hugging Face
Hub's layout: ``model.safetensors`` (no pickle), ``config.json``, the SentencePiece model(s), the
training-data record and a model card ``README.md``; ``--push-to-hub`` uploads it with
``huggingface_hub`` (logged in with ``huggingface-cli login`` or ``HF_TOKEN``). Either folder is
self-contained: ``scripts/translate.py OUT_DIR`` and ``scripts/evaluate.py OUT_DIR`` use it.
Exit status: 0 done, 1 the model cannot be exported, read or uploaded (one ``error:`` line),
2 bad arguments.

Thin by design: everything is in ``minitrans.export.ct2_export`` and ``minitrans.export.hf_export``.
"""

from __future__ import annotations

import argparse
import re
import sys

from minitrans.core.checkpoint import CheckpointError
from minitrans.export.ct2_export import ENGINES, ExportError, export_ctranslate2
from minitrans.export.hf_export import export_hf, push_to_hub

_HUB_NAME = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"  # the Hub's rule for an owner or a name
HUB_REPO_ID = re.compile(rf"(?!.*(?:\.\.|--))(?:{_HUB_NAME}/)?{_HUB_NAME}")
QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16", "float32")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="export.py", description="Export a minitrans model to CTranslate2, or as a folder to share (--to hf)."
    )
    parser.add_argument("checkpoint", help="a run folder or a .pt checkpoint")
    parser.add_argument(
        "out_dir",
        help="the folder to write (refused if it exists; --force replaces only an earlier export or an empty folder)",
    )
    parser.add_argument(
        "--to",
        choices=ENGINES,
        default="ctranslate2",
        help="ctranslate2 (the engine's folder, default) or hf (safetensors, config.json, model card)",
    )
    parser.add_argument(
        "--quantization", choices=QUANTIZATIONS, default=None, help="weight type (default: float32, as trained)"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace OUT_DIR when it is an earlier export or empty (never a run folder or the current folder)",
    )
    parser.add_argument("--license", default="mit", help="--to hf: the model card's license (default: mit)")
    parser.add_argument(
        "--push-to-hub", metavar="OWNER/NAME", help="--to hf: upload the folder to this Hub model repository"
    )
    parser.add_argument("--private", action="store_true", help="--push-to-hub: create the repository private")
    args = parser.parse_args(argv)
    if args.to != "hf" and (args.push_to_hub or args.private):
        parser.error("--push-to-hub and --private go with --to hf")
    if args.push_to_hub is not None and not HUB_REPO_ID.fullmatch(args.push_to_hub):
        parser.error(  # before anything is exported: huggingface_hub would refuse it only at the upload
            f"--push-to-hub {args.push_to_hub!r}: not a Hub repository id (OWNER/NAME or NAME: letters, digits, "
            "'-', '_', '.'; no '..' or '--'; at most 96 characters each)"
        )
    if args.to == "hf" and args.quantization:
        parser.error("--quantization goes with --to ctranslate2 (--to hf keeps the trained weights)")
    return args


def push(folder, args: argparse.Namespace) -> int:
    """Upload the exported folder; huggingface_hub's errors (not logged in, no such repository,
    offline: OSError subclasses all) become one line."""
    try:
        url = push_to_hub(folder, args.push_to_hub, private=args.private)
    except (ExportError, OSError) as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"error: --push-to-hub {args.push_to_hub}: {reason} (the folder is exported: {folder})", file=sys.stderr)
        return 1
    print(f"uploaded {folder} to {args.push_to_hub}: {url}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.to == "hf":
            out, _ = export_hf(args.checkpoint, args.out_dir, args.force, args.license)
        else:
            out = export_ctranslate2(args.checkpoint, args.out_dir, args.quantization, args.force)
    except (ExportError, CheckpointError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.to == "hf":
        print(f"exported {args.checkpoint} to {out} (hf: model.safetensors, config.json, README.md)")
        return push(out, args) if args.push_to_hub else 0
    print(f"exported {args.checkpoint} to {out} (ctranslate2, {args.quantization or 'float32'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
