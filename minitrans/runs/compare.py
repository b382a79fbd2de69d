"""Compare finished runs: a Markdown table, a heads × d_k BLEU heatmap, BLEU by source length.

Reads each run's ``summary.json`` (written by the trainer at the end of a run), so it works
on any set of runs: one sweep folder, several, or single run folders; and the results
``evaluate.py`` left in each run's ``eval/`` folder (``{split}.beam{K}.json``), so a later
beam-search score of a run stands in the table beside its greedy one. A sweep job that was
refused (an impossible combination) or has not finished has a folder without a summary; it
is listed under the table with the reason its log gives.

Files written into the output folder (the sweep folder by default):

    comparison.md       the table, one row per run, BLEU and chrF for every test split
    heads_dk_bleu.png   mean test BLEU over num_heads × d_k, when the Transformer runs vary them
    bleu_by_length.png  test BLEU by source-length bucket, one line per run
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from minitrans.core.config import model_from_dict
from minitrans.runs.summary import SUMMARY_FILE as SUMMARY
from minitrans.runs.summary import RunSummary
from minitrans.runs.viz import model_color

EVAL_DIR = "eval"  # evaluate.py's results: RUN/eval/{split}.beam{K}.json


@dataclass
class Run:
    folder: Path
    summary: RunSummary
    evals: list[dict] = field(default_factory=list)  # evaluate.py's reports, from folder/eval/

    @property
    def job(self) -> str:
        """The folder name: a sweep job's is ``{num}_{overrides}``."""
        return self.folder.name

    @property
    def overrides(self) -> str:
        """What this job changed, from its folder name (empty for a plain run folder)."""
        match = re.match(r"^\d+_(.*)$", self.job)
        return match.group(1) if match else ""

    @property
    def model(self) -> dict:
        return self.summary.config.get("model", {})

    @property
    def kind(self) -> str:
        return self.summary.model or self.model.get("kind", "?")

    @property
    def name(self) -> str:
        return self.summary.name or self.kind

    @property
    def num_heads(self) -> int | None:
        return self.model.get("num_heads") if self.kind == "transformer" else None

    @property
    def d_k(self) -> int | None:
        if self.kind != "transformer":
            return None
        if self.model.get("d_k") is not None:  # recorded by every run since the config derives it
            return self.model["d_k"]
        try:  # an older summary: the config's own derivation, not a copy of it
            return model_from_dict(self.model).d_k
        except (KeyError, TypeError, ValueError):
            return None

    def test(self, split: str | None = None) -> dict:
        """Scores of test split ``split`` (default: the run's first test split)."""
        if split is None:
            return self.summary.test
        return self.summary.test_splits.get(split, {})


@dataclass
class Skipped:
    folder: Path
    reason: str


def _natural_key(path: Path) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", str(path))]


def _skip_reason(folder: Path) -> str:
    for log in sorted(folder.glob("*.log")):
        for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
            if "skipping job" in line:
                return line.split("skipping job", 1)[1].split(": ", 1)[-1].strip()
    return "no summary.json (refused, failed or still running)"


def read_evals(folder: Path) -> list[dict]:
    """``evaluate.py``'s reports in ``folder/eval`` (unreadable files are skipped), in name order."""
    reports = []
    for path in sorted((Path(folder) / EVAL_DIR).glob("*.json")):
        try:
            report = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and {"split", "beam", "bleu"} <= report.keys():
            reports.append(report)
    return reports


def eval_columns(runs: Sequence[Run]) -> list[tuple[str, int]]:
    """Every (split, beam) that evaluate.py scored for some run, in a stable order."""
    found = {(report["split"], int(report["beam"])) for run in runs for report in run.evals}
    return sorted(found)


def _eval_report(run: Run, split: str, beam: int) -> dict:
    """The run's latest report for (split, beam); several with --limit: the most sentences."""
    matches = [r for r in run.evals if r["split"] == split and int(r["beam"]) == beam]
    return max(matches, key=lambda r: r.get("sentences", 0), default={})


def find_runs(paths: Iterable[str | Path]) -> tuple[list[Run], list[Skipped]]:
    """Runs under ``paths`` (run folders or folders holding them, e.g. a sweep), in job
    order, and the sweep jobs that left no summary."""
    runs: dict[Path, Run] = {}
    skipped: dict[Path, Skipped] = {}
    for path in map(Path, paths):
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or folder")
        files = [path] if path.is_file() else ([path / SUMMARY] if (path / SUMMARY).exists() else path.rglob(SUMMARY))
        for file in files:
            try:
                summary = RunSummary.read(file)
            except (ValueError, OSError) as error:  # truncated, damaged, or not UTF-8: skipped with a reason
                skipped[file.parent.resolve()] = Skipped(file.parent, f"unreadable summary.json ({error})")
                continue
            runs[file.parent.resolve()] = Run(file.parent, summary, read_evals(file.parent))
        if path.is_dir():
            for hydra_dir in path.rglob(".hydra"):
                job = hydra_dir.parent
                if not (job / SUMMARY).exists() and job.resolve() not in runs | skipped:
                    skipped[job.resolve()] = Skipped(job, _skip_reason(job))
    order = lambda item: _natural_key(item.folder)
    return sorted(runs.values(), key=order), sorted(skipped.values(), key=order)


def run_labels(runs: Sequence[Run]) -> list[str]:
    """A short label per run: its name (model kind by default), with the sweep overrides
    or the folder name added where names repeat."""
    names = [run.name for run in runs]
    labels = []
    for run, name in zip(runs, names):
        if names.count(name) == 1:
            labels.append(name)
        elif run.overrides:  # "model.d_k=8,model.num_heads=1" -> "d_k=8, num_heads=1"
            short = ", ".join(
                item.split("=", 1)[0].rsplit(".", 1)[-1] + "=" + item.split("=", 1)[-1]
                for item in run.overrides.split(",")
            )
            labels.append(f"{name} ({short})")
        else:
            labels.append(f"{name} ({run.job})")
    return labels


def test_splits(runs: Sequence[Run]) -> list[str]:
    splits: list[str] = []
    for run in runs:
        for name in run.summary.test_splits or ["test"]:
            if name not in splits:
                splits.append(name)
    return splits


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _count(value) -> str:
    """Steps, parameters …: with thousands separators, as 3,000 beside 1,184,208."""
    return f"{value:,}" if isinstance(value, int) else "–"


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def comparison_table(runs: Sequence[Run], skipped: Sequence[Skipped] = ()) -> str:
    """The Markdown table: one row per run, then the jobs that left no summary."""
    splits = test_splits(runs)
    header = ["run", "model", "heads", "d_k", "d_model", "parameters", "steps", "training time", "valid BLEU"]
    for split in splits:
        header += [f"{split} BLEU", f"{split} chrF"]
    evals = eval_columns(runs)
    header += [f"{split} BLEU, beam {beam} (evaluate.py)" for split, beam in evals]
    align = ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]
    align += ["---:"] * (2 * len(splits) + len(evals))
    rows = []
    for run in runs:
        model = run.model
        cells = [
            run.job,
            run.name,
            str(run.num_heads) if run.num_heads else "–",
            str(run.d_k) if run.d_k else "–",
            str(model.get("d_model", "–")),
            _count(run.summary.params),
            _count(run.summary.steps),
            _duration(run.summary.train_seconds),
            _number(run.summary.valid.get("bleu")),
        ]
        for split in splits:
            scores = run.summary.test_splits.get(split) or (run.test() if split == "test" else {})
            cells += [_number(scores.get("bleu")), _number(scores.get("chrf"))]
        for split, beam in evals:
            report = _eval_report(run, split, beam)
            limited = f" (n={report['sentences']:,})" if report.get("limit") else ""
            cells.append(_number(report.get("bleu")) + limited)
        rows.append(cells)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    if skipped:
        lines += ["", "Jobs without a summary:", ""]
        lines += [f"- `{job.folder.name}`: {job.reason}" for job in skipped]
    return "\n".join(lines) + "\n"


def heads_dk_grid(runs: Sequence[Run], split: str | None = None):
    """(heads values, d_k values, mean BLEU grid with NaN where no run, run counts), or None
    when the Transformer runs do not vary num_heads or d_k."""
    cells: dict[tuple[int, int], list[float]] = {}
    for run in runs:
        if run.kind == "transformer" and "bleu" in run.test(split):
            cells.setdefault((run.num_heads, run.d_k), []).append(run.test(split)["bleu"])
    heads = sorted({h for h, _ in cells})
    d_ks = sorted({d for _, d in cells})
    if len(heads) < 2 and len(d_ks) < 2:
        return None
    grid = np.full((len(heads), len(d_ks)), np.nan)
    counts = np.zeros((len(heads), len(d_ks)), dtype=int)
    for (h, d), values in cells.items():
        grid[heads.index(h), d_ks.index(d)] = float(np.mean(values))
        counts[heads.index(h), d_ks.index(d)] = len(values)
    return heads, d_ks, grid, counts


def plot_heads_dk(runs: Sequence[Run], path: str | Path, split: str | None = None) -> Path | None:
    """Heatmap of test BLEU over num_heads (rows) × d_k (columns); None if they do not vary.
    Empty cells are combinations with no finished run (e.g. refused)."""
    found = heads_dk_grid(runs, split)
    if found is None:
        return None
    heads, d_ks, grid, counts = found
    fig = Figure(figsize=(1.3 * len(d_ks) + 2.4, 0.8 * len(heads) + 1.6), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    finite = grid[np.isfinite(grid)]
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")  # grey: no finished run
    image = ax.imshow(
        np.ma.masked_invalid(grid),
        cmap=cmap,
        vmin=finite.min(),
        vmax=max(finite.max(), finite.min() + 1e-6),
        aspect="auto",
    )
    middle = (finite.min() + finite.max()) / 2
    for i in range(len(heads)):
        for j in range(len(d_ks)):
            value = grid[i, j]
            text = "–" if np.isnan(value) else f"{value:.1f}" + (f"\n(n={counts[i, j]})" if counts[i, j] > 1 else "")
            color = "black" if np.isnan(value) or value > middle else "white"
            ax.text(j, i, text, ha="center", va="center", color=color, fontsize=10)
    ax.set_xticks(range(len(d_ks)), [str(d) for d in d_ks])
    ax.set_yticks(range(len(heads)), [str(h) for h in heads])
    ax.set_xlabel("d_k (per-head key width)")
    ax.set_ylabel("num_heads")
    ax.set_title(f"{split or test_splits(runs)[0]} BLEU by heads × d_k", fontsize=11)
    fig.colorbar(image, ax=ax, label="BLEU", shrink=0.9)
    path = Path(path)
    fig.savefig(path)
    return path


def _bucket_order(label: str) -> int:
    return int(re.match(r"\d+", label).group()) if re.match(r"\d+", label) else 10**9


MARKERS = "osD^v<>pPX*h"
LINESTYLES = ("-", "--", ":", "-.")


def line_styles(kinds: Sequence[str]) -> list[tuple[str, str, str]]:
    """(colour, marker, line style) per run. Runs of several model kinds: the colour is the
    kind's fixed colour (:data:`minitrans.runs.viz.MODEL_COLORS`, the same in every plot), and
    marker and line style tell runs of one kind apart. Runs of one kind (a sweep): the colour
    tells the runs apart."""
    if len(set(kinds)) > 1:
        seen: dict[str, int] = {}
        styles = []
        for index, kind in enumerate(kinds):
            n = seen[kind] = seen.get(kind, -1) + 1
            styles.append((model_color(kind, index), MARKERS[n % len(MARKERS)], LINESTYLES[n % len(LINESTYLES)]))
        return styles
    colors = matplotlib.colormaps["tab10" if len(kinds) <= 10 else "tab20"].colors
    return [
        (matplotlib.colors.to_hex(colors[i % len(colors)]), MARKERS[i % len(MARKERS)], "-") for i in range(len(kinds))
    ]


def plot_bleu_by_length(
    runs: Sequence[Run], path: str | Path, split: str | None = None, title: str | None = None
) -> Path | None:
    """Test BLEU by source-length bucket, one line per run (in the spirit of Bahdanau et al.,
    2015, Figure 2); None if no run has per-bucket scores or all sentences share one bucket."""
    series = [(label, run.test(split).get("by_length") or [], run.kind) for run, label in zip(runs, run_labels(runs))]
    series = [(label, buckets, kind) for label, buckets, kind in series if buckets]
    if not series:
        return None
    labels = sorted({b["bucket"] for _, buckets, _ in series for b in buckets}, key=_bucket_order)
    if len(labels) < 2:
        return None
    counts = {}
    for _, buckets, _ in series:
        for b in buckets:
            counts.setdefault(b["bucket"], set()).add(b["count"])
    ticks = [f"{label}\n(n={counts[label].pop()})" if len(counts[label]) == 1 else label for label in labels]
    fig = Figure(figsize=(7.5 if len(series) <= 8 else 10, 4.5), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for (label, buckets, _), (color, marker, style) in zip(series, line_styles([kind for _, _, kind in series])):
        by_label = {b["bucket"]: b["bleu"] for b in buckets}
        ax.plot(
            [i for i, name in enumerate(labels) if name in by_label],
            [by_label[name] for name in labels if name in by_label],
            marker=marker,
            linestyle=style,
            color=color,
            label=label,
        )
    ax.set_xticks(range(len(labels)), ticks)
    ax.set_xlabel("source sentence length (words)")
    ax.set_ylabel("BLEU")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"{split or test_splits(runs)[0]} BLEU by source length", fontsize=11)
    if len(series) <= 8:
        ax.legend(fontsize=8)
    else:
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    path = Path(path)
    fig.savefig(path)
    return path


@dataclass
class Comparison:
    table: str
    files: list[Path]
    runs: list[Run]
    skipped: list[Skipped]
    notes: list[str]


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
    table = comparison_table(runs, skipped)
    files = [out_dir / "comparison.md"]
    files[0].write_text(table, encoding="utf-8")
    notes = []
    for name, plot, why_not in (
        ("heads_dk_bleu.png", plot_heads_dk, "the Transformer runs do not vary num_heads or d_k"),
        ("bleu_by_length.png", plot_bleu_by_length, "the test sentences fall into fewer than two length buckets"),
    ):
        (out_dir / name).unlink(missing_ok=True)  # never leave a stale plot of an earlier comparison
        made = plot(runs, out_dir / name, split)
        if made is not None:
            files.append(made)
        else:
            notes.append(f"no {name}: {why_not}")
    return Comparison(table, files, runs, skipped, notes)


def _common_parent(paths: Sequence[Path]) -> Path:
    folders = [str((p if p.is_dir() else p.parent).resolve()) for p in paths]
    return Path(os.path.commonpath(folders))


__all__ = [
    "Comparison",
    "Run",
    "Skipped",
    "compare",
    "comparison_table",
    "eval_columns",
    "find_runs",
    "heads_dk_grid",
    "line_styles",
    "plot_bleu_by_length",
    "plot_heads_dk",
    "read_evals",
    "run_labels",
]
