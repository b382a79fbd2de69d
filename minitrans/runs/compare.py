"""Compare finished runs: a Markdown table, a heads × d_k BLEU heatmap, BLEU against heads at a
fixed h·d_k, BLEU by source length, and an Optuna search's best trial as a command line.

Works on any set of runs (one sweep folder, several, or single run folders): the runs are
found by :mod:`minitrans.runs.run_set`, the table is :mod:`minitrans.runs.compare_table`'s,
the figures :mod:`minitrans.runs.compare_plots`'. Runs of different language pairs are never
mixed: each pair gets its own table section and its own figures.

Files written into the output folder (the sweep folder by default; with several language
pairs, each figure once per pair, ``heads_dk_bleu.en-de.png``):

    comparison.md           the table, one row per run, BLEU and chrF for every test split
    heads_dk_bleu.png       mean test BLEU over num_heads × d_k with parameter counts, when they vary
    heads_matched_bleu.png  test BLEU by number of heads at a fixed h·d_k, when runs share one
    bleu_by_length.png      test BLEU by source-length bucket, one line per run
    learning_curves.png     validation loss and BLEU by step, one line per run (compare_curves)

Under the table, each run's test translations (``translations/{split}.hyp.txt``, which its test
BLEU scored) are set against the first run's of its language pair by sacrebleu's paired
bootstrap (:mod:`minitrans.runs.significance`): the BLEU and chrF difference, its 95 % interval,
its p-value, and whether it is larger than chance.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from minitrans.core.hydra_sweep import OPTUNA_RESULTS, best_trial_folder, job_overrides, train_command
from minitrans.core.metrics import bleu_tokenizer
from minitrans.data.corpus import load_run_split
from minitrans.runs.compare_curves import plot_learning_curves
from minitrans.runs.compare_plots import (
    heads_dk_grid,
    line_styles,
    plot_bleu_by_length,
    plot_heads_dk,
    plot_matched_heads,
)
from minitrans.runs.compare_table import comparison_table, eval_columns, skipped_list
from minitrans.runs.run_set import SUMMARY, Run, Skipped, by_pair, find_runs, read_evals, run_labels
from minitrans.runs.significance import RESAMPLES, paired_differences

TRANSLATIONS = "translations"  # the trainer's hypotheses of every test split: RUN/translations/{split}.hyp.txt

PLOTS = (
    ("heads_dk_bleu", plot_heads_dk, "the Transformer runs do not vary num_heads or d_k"),
    ("heads_matched_bleu", plot_matched_heads, "no two head counts share an h·d_k"),
    ("bleu_by_length", plot_bleu_by_length, "the test sentences fall into fewer than two length buckets"),
    ("learning_curves", plot_learning_curves, "no run logged two validations"),
)


@dataclass
class Comparison:
    table: str
    files: list[Path]
    runs: list[Run]
    skipped: list[Skipped]
    notes: list[str]


def best_trial(sweep: Path, runs: Sequence[Run]) -> tuple[Run, str] | None:
    """The best trial of the Optuna search in ``sweep`` (its ``optimization_results.yaml``) and
    the one ``python scripts/train.py …`` command line that trains it again; None without one.
    A trial whose overrides are not found: the run of the best validation BLEU."""
    if not (sweep / OPTUNA_RESULTS).is_file():
        return None
    trials = [run for run in runs if sweep.resolve() in run.folder.resolve().parents]
    folder = best_trial_folder(sweep)
    matching = [run for run in trials if folder is not None and run.folder.resolve() == folder.resolve()]
    ranked = matching or sorted(trials, key=lambda run: -run.summary.valid.get("bleu", float("-inf")))
    if not ranked or (overrides := job_overrides(ranked[0].folder)) is None:
        return None
    return ranked[0], train_command(overrides)


@functools.lru_cache(maxsize=8)
def _references(data: str, split: str) -> tuple[tuple[str, ...], str]:
    """A split's references and name for a run's ``data`` config (JSON): a sweep's runs share
    one corpus, read once."""
    _, references, name = load_run_split({"data": json.loads(data)}, split)
    return tuple(references), name


def _test_set(run: Run, split: str | None) -> tuple[str, list[str], list[str], tuple] | str:
    """The run's test split name, references, translations and BLEU settings (target language,
    tokenizer, kept spaces); or why they cannot be read."""
    name = split or next(iter(run.summary.test_splits), "test")
    path = run.folder / TRANSLATIONS / f"{name}.hyp.txt"
    if not path.is_file():
        return f"no {TRANSLATIONS}/{name}.hyp.txt"
    try:
        references, name = _references(json.dumps(run.summary.config.get("data", {}), sort_keys=True), name)
        references = list(references)
        hypotheses = path.read_text(encoding="utf-8").split("\n")[:-1]  # one line each, as the trainer wrote them
    except (ValueError, OSError, KeyError, TypeError) as error:
        return f"its test split cannot be read ({str(error).splitlines()[0] if str(error) else type(error).__name__})"
    if len(hypotheses) != len(references):
        return f"{path} has {len(hypotheses):,} lines for {len(references):,} references"
    data, trainer = run.summary.config.get("data", {}), run.summary.config.get("trainer", {})
    scoring = (
        data.get("tgt_lang"),
        bleu_tokenizer(data.get("tgt_lang"), trainer.get("bleu_tokenize")),
        bool(trainer.get("bleu_keep_spaces", False)),
        bool(trainer.get("bleu_as_written", False)),
    )
    return name, references, hypotheses, scoring


def paired_tests(runs: Sequence[Run], split: str | None = None) -> tuple[str, list[str]]:
    """Each run's test translations against the first run's (runs of one language pair): a
    Markdown section of sacrebleu's paired bootstrap (difference, 95 % interval, p-value, verdict)
    and the notes on runs that cannot be paired; empty for a single run."""
    if len(runs) < 2 or not any((run.folder / TRANSLATIONS).is_dir() for run in runs):
        return "", []  # summaries without the runs' translations (copied alone, or written by hand)
    labels = run_labels(runs)
    base = _test_set(runs[0], split)
    if isinstance(base, str):
        return "", [f"no paired test against {labels[0]}: {base}"]
    name, references, baseline, scoring = base
    lines, notes = [], []
    for run, label in zip(runs[1:], labels[1:]):
        found = _test_set(run, split)
        if isinstance(found, str):
            notes.append(f"no paired test of {label}: {found}")
        elif found[1] != references:
            notes.append(f"no paired test of {label}: its {found[0]} split is not {labels[0]}'s {name}")
        elif found[3] != scoring:
            notes.append(
                f"no paired test of {label}: its BLEU is scored as {found[3][1:]}, {labels[0]}'s as {scoring[1:]}"
            )
        else:
            differences = paired_differences(baseline, found[2], references, *scoring)
            lines += [f"- `{label}`:", *(f"  - {difference.line()}" for difference in differences)]
    if not lines:
        return "", notes
    head = (
        f"\nPaired bootstrap against `{labels[0]}` (sacrebleu, {RESAMPLES:,} resamples, {name}: "
        f"{len(references):,} sentences; each run minus `{labels[0]}`):\n\n"
    )
    return head + "\n".join(lines) + "\n", notes


def _pair_suffix(pair: str) -> str:
    return "." + pair.replace("→", "-").replace("/", "_").replace("?", "unknown")


def compare(paths: Sequence[str | Path], out_dir: str | Path | None = None, split: str | None = None) -> Comparison:
    """Find the runs, write comparison.md and the plots into ``out_dir`` (default: the one
    folder given, or the folder the given paths share)."""
    runs, skipped = find_runs(paths)
    if not runs:
        without = f" ({len(skipped)} job(s) without a summary)" if skipped else ""
        raise FileNotFoundError(f"no {SUMMARY} under {', '.join(map(str, paths))}{without}")
    if out_dir is None:
        given = [Path(p) for p in paths]
        out_dir = given[0] if len(given) == 1 and given[0].is_dir() else Path(_common_parent(given))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = by_pair(runs)
    notes = []
    if len(groups) > 1:
        notes.append(
            f"runs of {len(groups)} language pairs ({', '.join(groups)}): "
            "a table section and figures for each pair, no comparison across them"
        )
        table = "\n".join(f"## {pair}\n\n{comparison_table(group)}" for pair, group in groups.items())
        table += skipped_list(skipped)
    else:
        table = comparison_table(runs, skipped)
    for pair, group in groups.items():
        section, paired_notes = paired_tests(group, split)
        table += (
            section.replace("\nPaired bootstrap", f"\nPaired bootstrap ({pair})", 1) if len(groups) > 1 else section
        )
        notes += paired_notes
    for path in dict.fromkeys(Path(p) for p in paths if Path(p).is_dir()):  # each folder once, in order
        if (found := best_trial(path, runs)) is not None:
            run, command = found
            line = f"best trial: {run.job} (valid BLEU {run.summary.valid.get('bleu', float('nan')):.2f}): {command}"
            notes.append(line)
            table += f"\nBest trial of the Optuna search in {path.name}: `{run.job}`\n\n    {command}\n"
    files = [out_dir / "comparison.md"]
    files[0].write_text(table, encoding="utf-8")
    for stem, plot, why_not in PLOTS:
        for stale in out_dir.glob(f"{stem}*.png"):  # never leave a stale plot of an earlier comparison
            stale.unlink()
        for pair, group in groups.items():
            suffix = _pair_suffix(pair) if len(groups) > 1 else ""
            made = plot(group, out_dir / f"{stem}{suffix}.png", split)
            if made is not None:
                files.append(made)
            elif stem != "learning_curves" and (
                stem != "heads_matched_bleu" or heads_dk_grid(group, split) is not None
            ):
                notes.append(f"no {stem}{suffix}.png: {why_not}")
    return Comparison(table, files, runs, skipped, notes)


def _common_parent(paths: Sequence[Path]) -> Path:
    folders = [str((p if p.is_dir() else p.parent).resolve()) for p in paths]
    return Path(os.path.commonpath(folders))


__all__ = [
    "Comparison",
    "Run",
    "Skipped",
    "best_trial",
    "compare",
    "comparison_table",
    "eval_columns",
    "find_runs",
    "heads_dk_grid",
    "job_overrides",
    "line_styles",
    "paired_tests",
    "plot_bleu_by_length",
    "plot_heads_dk",
    "plot_matched_heads",
    "read_evals",
    "run_labels",
]
