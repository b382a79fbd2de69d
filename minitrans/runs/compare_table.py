"""The Markdown table of ``compare.py``: one row per run (size, steps, training time, valid
and test scores, a column per ``evaluate.py`` result, and, where some run measured its
attention against gold alignments, the best cross-attention head's AER and each layer's), then
the jobs that left no summary."""

from __future__ import annotations

import math
from collections.abc import Sequence

from minitrans.runs.run_set import Run, Skipped, report_key, test_splits


def eval_columns(runs: Sequence[Run]) -> list[str]:
    """Every kind of evaluate.py report some run has (:func:`report_key`: split, beam, checkpoint,
    length penalty, output ratio, BLEU tokenizer, kept spaces), in a stable order: one column each,
    so that no column mixes figures made differently."""
    return sorted({report_key(report) for run in runs for report in run.evals})


def _eval_report(run: Run, key: str) -> dict:
    """The run's report of that kind; several with --limit: the most sentences."""
    matches = [r for r in run.evals if report_key(r) == key]
    return max(matches, key=lambda r: r.get("sentences", 0), default={})


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def _count(value) -> str:
    """Steps, parameters …: with thousands separators, as 3,000 beside 1,184,208."""
    return f"{value:,}" if isinstance(value, int) else "–"


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def has_alignment(runs: Sequence[Run]) -> bool:
    """Whether some run's summary holds an alignment record (the AER columns are shown)."""
    return any(run.summary.alignment for run in runs)


def alignment_cells(run: Run) -> list[str]:
    """The best head's AER with its layer and head (counted from 1, as every table and picture
    counts them; summary.json keeps Python's indices) and each layer's heads averaged; the
    fixed-context RNN has no attention to measure."""
    record = run.summary.alignment
    if not record:
        return ["no attention", "–"] if run.kind == "rnn" else ["–", "–"]
    layer, head = record.get("aer_best_layer"), record.get("aer_best_head")
    where = f"L{layer + 1} H{head + 1}" if isinstance(layer, int) and isinstance(head, int) else "L? H?"
    best = f"{_number(record.get('aer_best'), 3)} ({where})"
    by_layer = " / ".join(_number(value, 3) for value in record.get("aer_by_layer", [])) or "–"
    return [best, by_layer]


def comparison_table(runs: Sequence[Run], skipped: Sequence[Skipped] = ()) -> str:
    """The Markdown table: one row per run, then the jobs that left no summary."""
    splits = test_splits(runs)
    header = ["run", "model", "heads", "d_k", "d_model", "parameters", "steps", "training time", "valid BLEU"]
    for split in splits:
        header += [f"{split} BLEU", f"{split} chrF"]
    evals = eval_columns(runs)
    header += [f"BLEU of evaluate.py's {key}" for key in evals]  # the report's own name: what it measured
    align = ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]
    align += ["---:"] * (2 * len(splits) + len(evals))
    show_alignment = has_alignment(runs)
    if show_alignment:
        header += ["best head AER (layer, head)", "AER by layer"]
        align += ["---:", "---:"]
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
        for key in evals:
            report = _eval_report(run, key)
            limited = f" (n={report['sentences']:,})" if report.get("limit") else ""
            cells.append(_number(report.get("bleu")) + limited)
        if show_alignment:
            cells += alignment_cells(run)
        rows.append(cells)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n" + skipped_list(skipped)


def skipped_list(skipped: Sequence[Skipped]) -> str:
    """The jobs that left no summary, each with its reason, under the table(s)."""
    if not skipped:
        return ""
    return (
        "\n".join(["", "Jobs without a summary:", "", *[f"- `{job.folder.name}`: {job.reason}" for job in skipped]])
        + "\n"
    )


__all__ = ["alignment_cells", "comparison_table", "eval_columns", "has_alignment", "skipped_list"]
