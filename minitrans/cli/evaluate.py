"""What ``scripts/evaluate.py`` does once its options are parsed: load the model and the split
of its own corpus, translate the split (a progress bar counting sentences), score it with
sacrebleu (BLEU, chrF, lower-cased BLEU, BLEU on the sources unseen in training, BLEU by source
length), and write ``{name}.hyp.txt`` and ``{name}.json`` (:func:`~minitrans.runs.run_set.report_name`:
named by everything that changes the figure) into the run's ``eval/`` folder or ``--out``,
printing a summary. It decodes as the run's own test evaluation did (its length penalty and
output ratio) unless told otherwise, and then says so in one ``note:`` line each.

A source cut to the model's ``max_len`` is named as the library returns it
(:meth:`~minitrans.inference.base.BaseTranslator.cut_notes`), numbered as in the split, one
``warning:`` line each. Every problem it can name ends as one ``error: ...`` line and exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from minitrans.core.checkpoint import CheckpointError, CheckpointFolder, resolve_checkpoint
from minitrans.core.decoding_options import DecodingOptions, fill_run_decoding
from minitrans.core.metrics import (
    AS_WRITTEN,
    NORMALIZED,
    SEGMENTING,
    bleu_by_length,
    bleu_tokenizer,
    corpus_scores,
)
from minitrans.core.textio import read_sentences
from minitrans.core.utils import pick_device, write_atomic
from minitrans.data.corpus import load_run_split, seen_in_training
from minitrans.export.ct2_translator import is_exported
from minitrans.export.loading import load_translator
from minitrans.inference.base import BaseTranslator
from minitrans.inference.coverage import check_recorded_split
from minitrans.inference.decoding import best_ids
from minitrans.inference.hf_folder import WEIGHTS, is_hf_export
from minitrans.runs.evaluation import bleu_settings, keeps_cjk_spaces, scores_as_written, unseen_scores
from minitrans.runs.run_set import report_name
from minitrans.runs.significance import RESAMPLES, paired_differences

PROGRESS_CHUNK = 128  # sentences translated between two updates of the progress bar


def translate_with_progress(
    translator: BaseTranslator, sources: list[str], progress: bool, options: DecodingOptions
) -> tuple[list[str], dict[int, str]]:
    """Translate in chunks of :data:`PROGRESS_CHUNK` sentences, counting them on a tqdm bar
    (on stderr; none for a single chunk): a long split shows it is moving. Returns the
    translations and, by position in ``sources``, the note of each source cut to fit the model."""
    hypotheses: list[str] = []
    cut: dict[int, str] = {}
    with tqdm(
        total=len(sources), unit="sent", desc="translate", disable=not progress or len(sources) <= PROGRESS_CHUNK
    ) as bar:
        for start in range(0, len(sources), PROGRESS_CHUNK):
            src_ids = translator.encode(sources[start : start + PROGRESS_CHUNK])
            cut |= {start + i: note for i, note in translator.cut_notes(src_ids).items()}
            hypotheses += [translator.decode(ids) for ids in best_ids(translator.search_encoded(src_ids, options))]
            bar.update(len(src_ids))
    return hypotheses, cut


def seen_sources(config: dict | None, split: str, sources: list[str], data_root) -> list[bool]:
    """Which sources are also training sources (all False when the training split cannot be read)."""
    try:
        train, _, name = load_run_split(config or {}, "train", data_root)
    except (ValueError, OSError, KeyError, TypeError):
        return [False] * len(sources)
    if name == split:
        return [False] * len(sources)
    return seen_in_training(train, sources).tolist()


def load_model_and_split(args: argparse.Namespace) -> tuple[BaseTranslator, Path, list[str], list[str], str]:
    """The translator, the checkpoint file named in the report, and the split's sources,
    references and name; CheckpointError, FileNotFoundError or ValueError saying what is wrong."""
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
    for warning in translator.model_warnings:
        print(f"warning: {warning}", file=sys.stderr)
    sources, references, split = load_run_split(translator.config, args.split, args.data_root)
    check_recorded_split(translator.record, split, sources, references)  # the pairs the run had, or refused
    return translator, checkpoint, sources, references, split


def normalization(as_written: bool) -> str:
    """How both sides were scored, as the signatures end: ``norm:nfc`` or ``norm:none``."""
    return f"norm:{AS_WRITTEN if as_written else NORMALIZED}"


def print_report(report: dict) -> None:
    sentences = report["sentences"]
    print(
        f"{report['split']} ({sentences} sentences, beam {report['beam']}): BLEU {report['bleu']:.2f}  "
        f"chrF {report['chrf']:.2f}  BLEU (lower-cased) {report['bleu_lowercase']:.2f}  "
        f"[tokenize {report['bleu_tokenize']}, {normalization(report.get('as_written', False))}]"
    )
    if "seen_in_train" in report:
        unseen = report.get("unseen")
        rest = (
            f"BLEU {unseen['bleu']:.2f} on the {unseen['sentences']:,} unseen ones"
            if unseen
            else "none is unseen, so none measures translation rather than recall"
        )
        print(f"  {report['seen_in_train']:,} of {sentences:,} sources also occur in training: {rest}")
    for bucket in report["by_length"]:
        print(f"  source {bucket['bucket']:>6} words: BLEU {bucket['bleu']:6.2f}  ({bucket['count']} sentences)")


@dataclass(frozen=True)
class Scored:
    """What a paired test needs of one system: its hypotheses, the references, and how BLEU is
    scored (target language, tokenizer, kept spaces, references as written)."""

    label: str
    hypotheses: list[str]
    references: list[str]
    scoring: tuple[str | None, str, bool, bool]


def scoring_of(translator: BaseTranslator, args: argparse.Namespace) -> tuple[str | None, str, bool, bool]:
    """How this run's BLEU is scored: the target language, the tokenizer's name (--bleu-tokenize,
    else the run's, else the language's), whether pre-segmented CJK keeps its spaces and whether
    the references are scored as written (--score-as-written, else the run's, else as the model
    writes text); ValueError for a --keep-spaces that would change nothing."""
    tgt_lang, tokenize = bleu_settings(translator.run_config)
    tokenize = bleu_tokenizer(tgt_lang, args.bleu_tokenize or tokenize)  # the name the report carries
    if args.keep_spaces and tokenize not in SEGMENTING:
        raise ValueError(
            f"--keep-spaces changes nothing here: it keeps a pre-segmented target's spaces from "
            f"{' or '.join(SEGMENTING)}, and this BLEU is tokenised with {tokenize}, which keeps every space"
        )
    keep = args.keep_spaces or keeps_cjk_spaces(translator.run_config)
    return tgt_lang, tokenize, keep, args.score_as_written or scores_as_written(translator.run_config)


def print_paired(baseline: Scored, system: Scored) -> int:
    """sacrebleu's paired bootstrap of ``system`` against ``baseline`` on one test set, one line
    per metric with the verdict in words; 1 (and one error line) when the test sets differ."""
    if baseline.references != system.references:
        print(
            f"error: no paired test: {system.label} was scored on other references than {baseline.label}",
            file=sys.stderr,
        )
        return 1
    if system.scoring != baseline.scoring:
        print(f"note: both scored as {baseline.label}'s BLEU (tokenize {baseline.scoring[1]})", file=sys.stderr)
    differences = paired_differences(baseline.hypotheses, system.hypotheses, baseline.references, *baseline.scoring)
    print(f"paired bootstrap ({RESAMPLES:,} resamples), {system.label} minus {baseline.label}:")
    for difference in differences:
        print(f"  {difference.line()}")
    return 0


def read_hypotheses(path: str, count: int, split: str) -> list[str]:
    """The lines of a hypothesis file, one per sentence of the split (ValueError otherwise)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"--hypotheses {path}: no such file")
    lines = read_sentences(Path(path).read_bytes(), path)
    if len(lines) != count:
        raise ValueError(f"--hypotheses {path} has {len(lines):,} lines for the {count:,} sentences of {split}")
    return lines


def score_files(args: argparse.Namespace, files: list[str]) -> int:
    """``--hypotheses``: one or two files scored against the run's split (nothing translated,
    nothing written), and for two, the paired test of the second against the first."""
    try:
        translator, _, _, references, split = load_model_and_split(args)
        scoring = scoring_of(translator, args)
        references = references[: args.limit]
        systems = [Scored(path, read_hypotheses(path, len(references), split), references, scoring) for path in files]
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for system in systems:
        scores = corpus_scores(system.hypotheses, references, *scoring)
        print(
            f"{system.label}: {split} ({len(references):,} sentences): BLEU {scores['bleu']:.2f}  "
            f"chrF {scores['chrf']:.2f}  [tokenize {scores['bleu_tokenize']}, {normalization(scoring[3])}]"
        )
    return print_paired(*systems) if len(systems) == 2 else 0


def run(args: argparse.Namespace) -> int:
    """The whole command for parsed options (see ``scripts/evaluate.py``); the exit code. With a
    second run (``args.other``), both are evaluated and the second tested against the first."""
    other, files = getattr(args, "other", None), getattr(args, "hypotheses", None) or []
    problem = None
    if other is not None and files:
        problem = "give a second run or --hypotheses, not both"
    elif other is not None and args.out is not None:
        problem = (
            "--out with a second run would write both reports under one name: leave it out "
            "(each run gets its own eval/)"
        )
    elif other is not None and not Path(other).exists():
        problem = f"{other}: no such file or folder"
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    if files:
        return score_files(args, files)
    code, baseline = evaluate_one(argparse.Namespace(**vars(args)))
    if code or other is None:
        return code
    code, system = evaluate_one(argparse.Namespace(**{**vars(args), "checkpoint": other}))
    return code or print_paired(baseline, system)


def evaluate_one(args: argparse.Namespace) -> tuple[int, Scored | None]:
    """One model's evaluation and report; the exit code, and what a paired test needs."""
    try:
        translator, checkpoint, sources, references, split = load_model_and_split(args)
        tgt_lang, tokenize, keep, written = scoring_of(translator, args)
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1, None
    for note in fill_run_decoding(args, translator.run_config):  # the run's own decoding, unless told otherwise
        print(f"note: {note}", file=sys.stderr)
    size = len(sources)
    sources, references = sources[: args.limit], references[: args.limit]
    seen = seen_sources(translator.config, split, sources, args.data_root)
    options = DecodingOptions(
        beam_size=args.beam, length_penalty=args.length_penalty, max_output_ratio=args.max_output_ratio
    )
    hypotheses, cut = translate_with_progress(translator, sources, not args.no_progress, options)
    for i, note in cut.items():
        print(f"warning: sentence {i + 1} has {note}", file=sys.stderr)
    report = {
        "checkpoint": str(checkpoint),
        "split": split,
        "sentences": len(sources),
        "limit": args.limit,
        "beam": args.beam,
        "length_penalty": args.length_penalty,
        "max_output_ratio": args.max_output_ratio,
        "keep_spaces": keep,
        "as_written": written,
        **corpus_scores(hypotheses, references, tgt_lang, tokenize, keep, written),
        **unseen_scores(hypotheses, references, seen, tgt_lang, tokenize, keep, written),
        "by_length": bleu_by_length(
            sources, hypotheses, references, tgt_lang=tgt_lang, tokenize=tokenize, keep_spaces=keep, as_written=written
        ),
    }
    out_dir = args.out if args.out is not None else CheckpointFolder.run_folder_of(checkpoint) / "eval"
    name = report_name(
        split,
        args.beam,
        checkpoint,
        args.length_penalty,
        args.max_output_ratio,
        report["bleu_tokenize"],
        keep,
        args.limit if args.limit is not None and args.limit < size else None,
        written,
    )
    hyp_path, json_path = out_dir / f"{name}.hyp.txt", out_dir / f"{name}.json"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(hyp_path, "".join(h + "\n" for h in hypotheses))
        write_atomic(json_path, json.dumps(report, indent=2) + "\n")
    except OSError as error:
        print(f"error: cannot write the results: {error}", file=sys.stderr)
        return 1, None
    print_report(report)
    print(f"wrote {hyp_path} and {json_path}")
    return 0, Scored(str(args.checkpoint), hypotheses, references, (tgt_lang, tokenize, keep, written))


__all__ = [
    "PROGRESS_CHUNK",
    "Scored",
    "print_paired",
    "print_report",
    "run",
    "score_files",
    "seen_sources",
    "translate_with_progress",
]
