"""Per-layer attention statistics of a trained run: ``python scripts/attention_stats.py RUN``.

Teacher-forces the references of a split (default valid) and prints, as JSON, each attention
layer's mean row entropy in nats (claim 1 of docs/claims.md: unscaled scores saturate) and the
share of each decoder self-attention layer's weight on later positions (claim 2: 0 with the
causal mask). ``--card PNG`` draws the first pair's decoder head that looks ahead the most.
RUN is a run folder, a ``.pt`` checkpoint or a shareable folder (``export.py --to hf``); a
CTranslate2 export has no attention weights to measure and is refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="attention_stats.py", description="Per-layer attention entropy and look-ahead."
    )
    parser.add_argument("run", help="run folder, checkpoint or shareable folder (export.py --to hf)")
    parser.add_argument("--split", default="valid", help="split whose references are teacher-forced (default valid)")
    parser.add_argument(
        "--limit", type=cli_number(int, 1), default=100, help="first N pairs of the split (default 100)"
    )
    parser.add_argument(
        "--card", type=Path, help="write the first pair's most look-ahead decoder head here (PNG, SVG or PDF)"
    )
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="default: cpu")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from minitrans.analysis.attention_stats import check_outputs, future_card, measure_attention_stats
    from minitrans.core.checkpoint import CheckpointError
    from minitrans.core.utils import pick_device, write_atomic
    from minitrans.data.corpus import load_run_split
    from minitrans.export.loading import load_torch_translator

    try:  # a CTranslate2 export, which keeps no attention weights, is refused by the loader
        translator = load_torch_translator(args.run, pick_device(args.device))
        check_outputs(translator, args.out, args.card)
        sources, references, _ = load_run_split(translator.config, args.split)
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    src_ids = [translator.fit_source(ids) for ids in translator.encode(sources[: args.limit])]
    tgt_ids = [ids[: translator.max_len - 1] for ids in translator.tokenizer.encode_tgt(references[: args.limit])]
    stats = measure_attention_stats(translator, src_ids, tgt_ids)
    if not stats["entropy"]:
        print("error: this model has no attention", file=sys.stderr)
        return 1
    text = json.dumps({"run": str(args.run), "split": args.split, "pairs": len(src_ids), **stats}, indent=2)
    print(text)
    try:
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(args.out, text + "\n")
        if args.card is not None:
            args.card.parent.mkdir(parents=True, exist_ok=True)
            future_card(translator, src_ids[0], tgt_ids[0], f"{args.split} pair 0").savefig(args.card)
            print(f"card: {args.card}", file=sys.stderr)
    except OSError as error:  # the figures are printed above: nothing measured is lost
        print(
            f"error: cannot write {error.filename or args.out or args.card}: {error.strerror or error}", file=sys.stderr
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
