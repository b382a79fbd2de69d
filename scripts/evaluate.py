"""Score a trained model on a split of its corpus with sacrebleu:
``python scripts/evaluate.py RUN_OR_CHECKPOINT --split test [--beam 5] [--length-penalty 0.6]``.

The corpus comes from the run's own configuration (stored in the checkpoint): the generated
corpus is regenerated from its seed; a folder of files (data=parallel, Multi30k) or a
``datasets`` corpus (data=hf) is read from --data-root, else the run's data.root / data.path
(Multi30k: else data/multi30k); a split the run held out of training is drawn again exactly.
Reports BLEU (cased, detokenised; sacrebleu's tokenizer for the target language: zh, ja-mecab,
ko-mecab, else 13a, or --bleu-tokenize), chrF and lower-cased
BLEU, and BLEU by source length; writes {split}.beam{K}.hyp.txt and .json into --out, by
default RUN/eval/, where RUN is the run folder (for a .pt file inside RUN/checkpoints/, that
RUN; else the file's folder), and where compare.py finds them. The name says what was scored:
a checkpoint other than best.pt, a length penalty or output ratio other than the default, and
--limit (when it cuts the split) and --bleu-tokenize each add a part
(test.beam5.averaged.lp1.first10.tok13a.json), so
a report is only ever replaced by one of the same thing. A folder written by
scripts/export.py is scored through CTranslate2 and gets its own eval/. A progress bar on
stderr counts the sentences translated (--no-progress hides it). The library (and torch,
sacrebleu) is imported only once the options are parsed: ``--help`` is quick.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from minitrans.core.checks import cli_number
from minitrans.core.config import DEVICES
from minitrans.core.decoding_options import BEAM_RANGE, DecodingOptions, add_decoding_flags
from minitrans.core.textio import plain_truncation_warnings


def run_folder(checkpoint: Path) -> Path:
    folder = checkpoint.parent
    return folder.parent if folder.name == "checkpoints" else folder


def report_name(
    split: str, checkpoint: Path, options: DecodingOptions, limit: int | None, size: int, bleu_tokenize: str | None
) -> str:
    """The file name (without suffix) of a report: the split and beam, then whatever differs
    from a full-split evaluation of best.pt with the default length penalty and output ratio
    and BLEU tokenised as the target language asks (an explicit --bleu-tokenize adds a part)."""
    parts = [split, f"beam{options.beam_size}"]
    if checkpoint.suffix == ".pt" and checkpoint.stem != "best":
        parts.append(checkpoint.stem)
    if options.length_penalty != DecodingOptions.length_penalty:
        parts.append(f"lp{options.length_penalty:g}")
    if options.max_output_ratio != DecodingOptions.max_output_ratio:
        parts.append(f"ratio{options.max_output_ratio:g}")
    if limit is not None and limit < size:
        parts.append(f"first{limit}")
    if bleu_tokenize is not None:
        parts.append(f"tok{bleu_tokenize}")
    return ".".join(parts)


PROGRESS_CHUNK = 128  # sentences translated between two updates of the progress bar


def translate_with_progress(translator, sources: list[str], progress: bool, options: DecodingOptions) -> list[str]:
    """Translate in chunks of :data:`PROGRESS_CHUNK` sentences, counting them on a tqdm bar
    (on stderr; none for a single chunk): a long split shows it is moving."""
    from tqdm.auto import tqdm

    hypotheses: list[str] = []
    with tqdm(
        total=len(sources), unit="sent", desc="translate", disable=not progress or len(sources) <= PROGRESS_CHUNK
    ) as bar:
        for start in range(0, len(sources), PROGRESS_CHUNK):
            chunk = sources[start : start + PROGRESS_CHUNK]
            hypotheses += translator.translate(chunk, options)
            bar.update(len(chunk))
    return hypotheses


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="evaluate.py", description="BLEU and chrF of a checkpoint on a split.")
    parser.add_argument("checkpoint", help="a run folder, a .pt checkpoint or a CTranslate2 export (scripts/export.py)")
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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    args = parser.parse_args(argv)
    if args.bleu_tokenize is not None:  # checked here: sacrebleu is imported only once --help is past
        from minitrans.core.metrics import BLEU_TOKENIZERS

        if args.bleu_tokenize not in BLEU_TOKENIZERS:
            parser.error(
                f"argument --bleu-tokenize: invalid choice: {args.bleu_tokenize!r} (choose from {', '.join(BLEU_TOKENIZERS)})"
            )
    return args


def seen_sources(config: dict | None, split: str, sources: list[str], data_root) -> list[bool]:
    """Which sources are also training sources (all False when the training split cannot be read)."""
    from minitrans.data.corpus import load_run_split, seen_in_training

    try:
        train, _, name = load_run_split(config or {}, "train", data_root)
    except (ValueError, OSError, KeyError, TypeError):
        return [False] * len(sources)
    if name == split:
        return [False] * len(sources)
    return seen_in_training(train, sources).tolist()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets

    datasets.disable_progress_bars()  # preparing a corpus stays quiet, as in train.py
    with plain_truncation_warnings():
        return run(args)


def run(args: argparse.Namespace) -> int:
    from minitrans.core.checkpoint import CheckpointError
    from minitrans.core.checkpoint_folder import resolve_checkpoint
    from minitrans.core.metrics import bleu_by_length, corpus_scores
    from minitrans.core.utils import pick_device, write_atomic
    from minitrans.data.corpus import load_run_split
    from minitrans.inference.coverage import check_recorded_split
    from minitrans.inference.ct2 import is_exported
    from minitrans.inference.hf_folder import WEIGHTS, is_hf_export
    from minitrans.inference.loading import load_translator
    from minitrans.runs.evaluation import bleu_settings, keeps_cjk_spaces, unseen_scores

    try:
        exported = is_exported(args.checkpoint)  # a CTranslate2 export writes into its own eval/
        if is_hf_export(args.checkpoint):  # export.py --to hf: its own eval/ too
            exported, checkpoint = True, Path(args.checkpoint) / WEIGHTS
        else:
            checkpoint = Path(args.checkpoint) / "model.bin" if exported else resolve_checkpoint(args.checkpoint)
        try:
            device = pick_device(args.device)
        except ValueError:
            raise CheckpointError(f"--device {args.device}: no such device on this machine") from None
        translator = load_translator(args.checkpoint if exported else checkpoint, device)
        sources, references, split = load_run_split(translator.config, args.split, args.data_root)
        check_recorded_split(translator.record, split, sources, references)  # the pairs the run had, or refused
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    size = len(sources)
    sources, references = sources[: args.limit], references[: args.limit]
    seen = seen_sources(translator.config, split, sources, args.data_root)
    options = DecodingOptions(
        beam_size=args.beam, length_penalty=args.length_penalty, max_output_ratio=args.max_output_ratio
    )
    hypotheses = translate_with_progress(translator, sources, not args.no_progress, options)
    tgt_lang, tokenize = bleu_settings(translator.run_config)
    tokenize = args.bleu_tokenize or tokenize
    keep = args.keep_spaces or keeps_cjk_spaces(translator.run_config)
    report = {
        "checkpoint": str(checkpoint),
        "split": split,
        "sentences": len(sources),
        "limit": args.limit,
        "beam": args.beam,
        "length_penalty": args.length_penalty,
        "max_output_ratio": args.max_output_ratio,
        **corpus_scores(hypotheses, references, tgt_lang, tokenize, keep),
        **unseen_scores(hypotheses, references, seen, tgt_lang, tokenize, keep),
        "by_length": bleu_by_length(
            sources, hypotheses, references, tgt_lang=tgt_lang, tokenize=tokenize, keep_spaces=keep
        ),
    }
    out_dir = args.out if args.out is not None else run_folder(checkpoint) / "eval"
    name = report_name(split, checkpoint, options, args.limit, size, args.bleu_tokenize)
    hyp_path, json_path = out_dir / f"{name}.hyp.txt", out_dir / f"{name}.json"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(hyp_path, "".join(h + "\n" for h in hypotheses))
        write_atomic(json_path, json.dumps(report, indent=2) + "\n")
    except OSError as error:
        print(f"error: cannot write the results: {error}", file=sys.stderr)
        return 1
    print(
        f"{split} ({len(sources)} sentences, beam {args.beam}): BLEU {report['bleu']:.2f}  chrF {report['chrf']:.2f}"
        f"  BLEU (lower-cased) {report['bleu_lowercase']:.2f}  [tokenize {report['bleu_tokenize']}]"
    )
    if "seen_in_train" in report:
        unseen = report.get("unseen", {"sentences": 0, "bleu": float("nan")})
        print(
            f"  {report['seen_in_train']} of {len(sources)} sources also occur in training: "
            f"BLEU {unseen['bleu']:.2f} on the {unseen['sentences']} unseen ones"
        )
    for bucket in report["by_length"]:
        print(f"  source {bucket['bucket']:>6} words: BLEU {bucket['bleu']:6.2f}  ({bucket['count']} sentences)")
    print(f"wrote {hyp_path} and {json_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
