"""Score a trained model on a split of its corpus with sacrebleu:
``python scripts/evaluate.py RUN_OR_CHECKPOINT [OTHER] --split test [--beam 5] [--length-penalty 0.6]``.

The corpus comes from the run's own configuration (stored in the checkpoint): the generated
corpus is regenerated from its seed; a folder of files (data=parallel, Multi30k) or a
``datasets`` corpus (data=hf) is read from --data-root, else the run's data.root / data.path
(Multi30k: else data/multi30k); a split the run held out of training is drawn again exactly.
Reports BLEU (cased, detokenised; sacrebleu's tokenizer for the target language: zh, ja-mecab,
ko-mecab, else 13a, or --bleu-tokenize), chrF and lower-cased
BLEU, and BLEU by source length, both sides as the model writes text (NFC, whitespace folded:
a reference's U+037E is the ``;`` the model writes; ``norm:nfc`` in the signatures) unless
--score-as-written. It decodes as the run's own test evaluation did (its
trainer.length_penalty and trainer.max_output_ratio) unless --length-penalty or
--max-output-ratio say otherwise, and then says so in a ``note:`` line. Writes NAME.hyp.txt and
NAME.json into --out, by default RUN/eval/, where RUN is the run folder (for a .pt file inside
RUN/checkpoints/, that RUN; else the file's folder), and where compare.py finds them. NAME says
everything that changes the figure: the split, the beam, a checkpoint other than best.pt, the
length penalty (beam search only), the output ratio, BLEU's tokenizer, ``spaces`` for
--keep-spaces, ``written`` for --score-as-written, and --limit when it cuts the split (test.beam5.averaged.lp1.ratio1.5.tok13a.first10),
so a report is only ever replaced by one of the same thing. Given a second model (OTHER), both
are evaluated on the first's split, and sacrebleu's paired bootstrap gives the BLEU and chrF
difference (second minus first), its 95 % interval, its p-value and whether it is larger than
chance; ``--hypotheses A.txt B.txt`` does the same for two files of translations of the split. A folder written by
scripts/export.py is scored through CTranslate2 and gets its own eval/. A progress bar on
stderr counts the sentences translated (--no-progress hides it). Thin by design: the options
are parsed here, the command is :mod:`minitrans.cli.evaluate`. The library (and torch,
sacrebleu) is imported only once the options are parsed: ``--help`` is quick.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES
from minitrans.core.decoding_options import BEAM_RANGE, add_decoding_flags
from minitrans.core.textio import plain_truncation_warnings


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="evaluate.py", description="BLEU and chrF of a checkpoint on a split.")
    parser.add_argument("checkpoint", help="a run folder, a .pt checkpoint or a CTranslate2 export (scripts/export.py)")
    parser.add_argument(
        "other",
        nargs="?",
        help="a second model, evaluated on the same split: then sacrebleu's paired bootstrap says whether "
        "its BLEU and chrF differ from the first's by more than chance",
    )
    parser.add_argument(
        "--hypotheses",
        nargs="+",
        metavar="FILE",
        help="score one or two files of translations (one line per sentence of the split) instead of "
        "translating; two get the paired bootstrap of the second against the first; nothing is written",
    )
    parser.add_argument(
        "--split", default="test", help="split name; train/valid/test name the run's own (default test)"
    )
    parser.add_argument(
        "-b", "--beam", type=cli_number(int, *BEAM_RANGE), default=1, help="beam size; 1 = greedy (default)"
    )
    add_decoding_flags(parser)  # --length-penalty, --max-output-ratio
    parser.add_argument(
        "--data-root", help="the corpus' folder or file (default: the run's data.root, or data.path for data=hf)"
    )
    parser.add_argument(
        "--limit", type=cli_number(int, 1), default=None, help="only the first N sentences of the split"
    )
    parser.add_argument("--device", default="auto", choices=DEVICES, help="default: auto")
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for the hypotheses and the JSON report (default: RUN/eval)"
    )
    parser.add_argument(
        "--bleu-tokenize",
        metavar="NAME",
        help="sacrebleu's BLEU tokenizer, one of its names (13a, intl, char, zh, ja-mecab, ko-mecab, flores200, "
        "...; default: the run's trainer.bleu_tokenize, else sacrebleu's choice for the target language: zh, "
        "ja-mecab, ko-mecab, else 13a)",
    )
    parser.add_argument(
        "--keep-spaces",
        action="store_true",
        help="score a pre-segmented Japanese or Chinese target with its spaces (default: the run's "
        "trainer.bleu_keep_spaces, else removed before ja-mecab / zh tokenise it)",
    )
    parser.add_argument(
        "--score-as-written",
        action="store_true",
        help="score the references as written (default: the run's trainer.bleu_as_written, else both sides "
        "as the model writes text: NFC, whitespace folded; the signatures end in norm:nfc or norm:none)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    if args.hypotheses is not None and len(args.hypotheses) > 2:
        parser.error(f"argument --hypotheses: one or two files, got {len(args.hypotheses)}")
    if args.bleu_tokenize is not None:  # checked here: sacrebleu is imported only once --help is past
        from minitrans.core.metrics import BLEU_TOKENIZERS

        if args.bleu_tokenize not in BLEU_TOKENIZERS:
            parser.error(
                f"argument --bleu-tokenize: invalid choice: {args.bleu_tokenize!r} (choose from {', '.join(BLEU_TOKENIZERS)})"
            )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets

    from minitrans.cli.evaluate import run

    datasets.disable_progress_bars()  # preparing a corpus stays quiet, as in train.py
    with plain_truncation_warnings():  # any warning left (a damaged cache rebuilt): one plain line
        return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
