"""A set of finished runs, as ``compare.py`` finds them: each run's ``summary.json`` (written by
the trainer at the end of a run) and the results ``evaluate.py`` left in its ``eval/`` folder
(named by :func:`report_name`, ``test.beam5.lp0.6.ratio1.5.tok13a.json``); sweep jobs that left
no summary, with the reason their log gives; a short label per run; and the language pair of
each, so that runs of different pairs are never compared as if they were one experiment."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from minitrans.core.decoding_options import DecodingOptions
from minitrans.core.metrics import SEGMENTING
from minitrans.core.saved_config import model_from_dict
from minitrans.core.textio import read_json
from minitrans.runs.summary import SUMMARY_FILE as SUMMARY  # noqa: F401 (compare.py names it)
from minitrans.runs.summary import RunSummary

EVAL_DIR = "eval"  # evaluate.py's results: RUN/eval/{report_name}.json


def report_name(
    split: str,
    beam: int,
    checkpoint: str | Path,
    length_penalty: float,
    max_output_ratio: float,
    bleu_tokenize: str,
    keep_spaces: bool = False,
    first: int | None = None,
    as_written: bool = False,
) -> str:
    """The name (without suffix) of an evaluate.py report, from everything that changes its
    figure, so that a report is only ever replaced by one of the same thing and compare.py's
    column can say which it shows: the split, the beam, a checkpoint other than best.pt, the
    length penalty (beam search only: it cannot change a greedy choice), the output ratio, BLEU's
    tokenizer, ``spaces`` where a segmenting tokenizer scored the target with its spaces,
    ``written`` for references scored as written, and ``first{N}`` for a cut split:
    ``test.beam5.averaged.lp1.ratio1.5.tok13a.first10``."""
    parts = [split, f"beam{beam}"]
    checkpoint = Path(checkpoint)
    if checkpoint.suffix == ".pt" and checkpoint.stem != "best":
        parts.append(checkpoint.stem)
    if beam > 1:
        parts.append(f"lp{length_penalty:g}")
    parts += [f"ratio{max_output_ratio:g}", f"tok{bleu_tokenize}"]
    if keep_spaces and bleu_tokenize in SEGMENTING:
        parts.append("spaces")
    if as_written:
        parts.append("written")
    if first is not None:
        parts.append(f"first{first}")
    return ".".join(parts)


def report_key(report: dict) -> str:
    """What a report measured, as :func:`report_name` writes it without the ``first{N}`` of a cut
    split (a cut and a whole split of one evaluation share a column); a report written before a
    field was recorded takes the value evaluate.py then used (one without ``as_written`` counts as
    scored as the model writes text, which differs from as written only on references holding a
    character NFC rewrites)."""
    return report_name(
        str(report["split"]),
        int(report["beam"]),
        str(report.get("checkpoint", "best.pt")),
        float(report.get("length_penalty", DecodingOptions.length_penalty)),
        float(report.get("max_output_ratio", DecodingOptions.max_output_ratio)),
        str(report.get("bleu_tokenize", "13a")),
        bool(report.get("keep_spaces", False)),
        as_written=bool(report.get("as_written", False)),
    )


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
    def pair(self) -> str:
        """The language pair, ``en→de``; ``?`` where the summary does not say."""
        data = self.summary.config.get("data", {})
        return f"{data.get('src_lang', '?')}→{data.get('tgt_lang', '?')}" if data else "?"

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
            report = read_json(path)  # regular and bounded: a FIFO is skipped, not waited on
        except (OSError, ValueError):
            continue
        if isinstance(report, dict) and {"split", "beam", "bleu"} <= report.keys():
            reports.append(report)
    return reports


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


def by_pair(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """The runs of each language pair, pairs in order of first appearance."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.pair, []).append(run)
    return groups


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


__all__ = [
    "EVAL_DIR",
    "Run",
    "Skipped",
    "by_pair",
    "find_runs",
    "read_evals",
    "report_key",
    "report_name",
    "run_labels",
    "test_splits",
]
