"""Which attention heads align words and which matter: ``python scripts/heads.py RUN [--split valid]``.

Alignment (runs with the embedded corpus, which has gold word alignments): by teacher forcing
the references of a split, the AER of every cross-attention head and of each layer's heads
averaged (Och & Ney; lower is better), with the best head named. Importance (any Transformer
run): each head masked alone (its columns of the output projection zeroed), then heads masked
cumulatively from the least important, with the change in validation loss and greedy BLEU.
Roles: each head's previous-/next-token share of self-attention weight, its subject share (the
weight a verb puts on its subject across a relative clause, on --subject-pairs sentences the
run's grammar generates with their gold links; embedded corpus only) and its AER, beside its
ablation cost, with the role named where a score passes its stated threshold.
Writes aer.json, aer.png, ablation.json, ablation.txt, ablation.png, roles.json and roles.txt
into --out (default RUN/heads/) and prints the tables. The fixed-context RNN (model=rnn) has no
attention to measure: one error line, exit 1, nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES
from minitrans.core.textio import plain_truncation_warnings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="heads.py", description="AER and ablation importance of attention heads.")
    parser.add_argument("run", help="a run folder or a .pt checkpoint")
    parser.add_argument("--split", default="valid", help="split to measure on (default valid; AER: valid or test)")
    parser.add_argument("--limit", type=cli_number(int, 1), default=None, help="only the first N pairs of the split")
    parser.add_argument(
        "--bleu-limit", type=cli_number(int, 0), default=200, help="pairs translated per BLEU (0: no BLEU; default 200)"
    )
    parser.add_argument("--batch-tokens", type=cli_number(int, 1), default=4096, help="tokens per loss batch")
    parser.add_argument(
        "--subject-pairs",
        type=cli_number(int, 0),
        default=200,
        help="generated pairs scoring the verb-to-subject role (0: none; default 200)",
    )
    parser.add_argument("--no-ablation", action="store_true", help="only the alignment measure")
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="default: cpu")
    parser.add_argument("--out", type=Path, default=None, help="folder for the results (default: RUN/heads)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets

    from minitrans.cli.heads import run

    datasets.disable_progress_bars()
    with plain_truncation_warnings():
        return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
