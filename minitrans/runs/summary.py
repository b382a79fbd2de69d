"""``summary.json``: the record of a finished run, written by the trainer and read by sweeps,
TensorBoard's HPARAMS view and ``compare.py``.

The JSON keys are the README's (``test``, ``valid``, ``test_splits``, ``params``, ``steps``,
``train_seconds``, ``weights``, ``config`` ...), so summaries written before this record
existed still read; a key an older or partial summary lacks takes the default below.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from minitrans.core.textio import JSON_LIMIT, read_bounded
from minitrans.core.utils import write_atomic

SUMMARY_FILE = "summary.json"


@dataclass
class RunSummary:
    name: str = ""  # the run's label (cfg.name, else the model kind)
    model: str = ""  # the model kind: transformer, rnn, rnn_attention
    params: int = 0
    steps: int | None = None  # None only in a partial summary (compare.py shows "–")
    epochs: int = 0
    skipped_steps: int = 0  # steps whose loss or gradient was not finite
    train_seconds: float | None = None
    device: str = ""
    processes: int = 1
    weights: str = ""  # which weights were scored (best validation BLEU, an average, the last)
    valid: dict[str, Any] = field(default_factory=dict)  # loss, bleu, chrf of the scored weights
    test: dict[str, Any] = field(default_factory=dict)  # the first test split's scores (bleu, chrf, by_length ...)
    test_splits: dict[str, dict[str, Any]] = field(default_factory=dict)  # every test split's scores
    data: dict[str, Any] = field(default_factory=dict)  # where each split came from, cleaning counts, held-out pairs
    alignment: dict[str, Any] = field(default_factory=dict)  # aer_*: cross-attention AER on the test split
    config: dict[str, Any] = field(default_factory=dict)  # the resolved configuration

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RunSummary:
        """A summary from its JSON form; keys it does not know are ignored, missing ones default."""
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})

    def write(self, out_dir: str | Path) -> Path:
        path = Path(out_dir) / SUMMARY_FILE
        write_atomic(path, json.dumps(self.to_dict(), indent=2))  # compare.py never sees half of one
        return path

    @classmethod
    def read(cls, path: str | Path) -> RunSummary:
        """Read ``path`` (a summary.json, or a run folder holding one)."""
        path = Path(path)
        if path.is_dir():
            path = path / SUMMARY_FILE
        data = read_bounded(path, JSON_LIMIT)  # a FIFO or /dev/zero as summary.json: ValueError, no hang
        try:
            values = json.loads(data.decode("utf-8"))  # a truncated file: ValueError
        except RecursionError:
            raise ValueError(f"{path} is nested too deeply to be a summary") from None
        if not isinstance(values, dict):
            raise ValueError(f"{path} does not hold a JSON object")
        problem = _type_problem(values)
        if problem is not None:
            raise ValueError(f"{path}: {problem}")
        return cls.from_dict(values)


NUMBER = (int, float, None)
# what each key of summary.json must hold, where present (None: that, or null)
_KINDS = {
    "name": (str,),
    "model": (str,),
    "params": (int,),
    "steps": (int, None),
    "epochs": (int,),
    "skipped_steps": (int,),
    "train_seconds": NUMBER,
    "device": (str,),
    "processes": (int,),
    "weights": (str,),
    **dict.fromkeys(("valid", "test", "test_splits", "data", "alignment", "config"), (dict,)),
}
_SCORES = ("bleu", "chrf", "loss")  # numbers (or null) wherever a split's scores hold them


def _kind_problem(name: str, value: Any, kinds: tuple) -> str | None:
    types = tuple(kind for kind in kinds if kind is not None)
    if (value is None and None in kinds) or (isinstance(value, types) and not isinstance(value, bool)):
        return None  # (JSON true is not a count)
    expected = (
        "a number" if float in kinds else "an integer" if int in kinds else "text" if str in kinds else "an object"
    )
    expected += " or null" if None in kinds else ""
    return f"{name} is {json.dumps(value)[:40]} ({type(value).__name__}), not {expected}"


def _type_problem(values: dict) -> str | None:
    """The first value of a summary that is not of its key's kind (a string BLEU, ``"valid": []``)."""
    for name, kinds in _KINDS.items():
        if name in values and (problem := _kind_problem(name, values[name], kinds)) is not None:
            return problem
    splits = [("valid", values.get("valid")), ("test", values.get("test"))]
    splits += [(f"test_splits.{n}", split) for n, split in (values.get("test_splits") or {}).items()]
    for where, scores in splits:
        if scores is not None and not isinstance(scores, dict):
            return f"{where} is {type(scores).__name__}, not an object"
        for key in _SCORES:
            if scores and key in scores and (problem := _kind_problem(f"{where}.{key}", scores[key], NUMBER)):
                return problem
    return None


def summary_line(summary: RunSummary, out_dir: str | Path) -> str:
    """The one line a finished run prints."""
    test, valid = summary.test, summary.valid
    unseen = test.get("unseen")
    also = f" ({unseen['bleu']:.2f} on the {unseen['sentences']:,} unseen in training)" if unseen else ""
    scored, total = valid.get("sentences"), valid.get("of")
    sample = f" (on {scored:,} of {total:,} sentences)" if scored and total and scored < total else ""
    # a BLEU figure says how it was tokenised, as evaluate.py's does
    how, signature = (
        [f"tokenize {test['bleu_tokenize']}"] if test.get("bleu_tokenize") else [],
        test.get("bleu_signature"),
    )
    if isinstance(signature, str) and "|norm:" in signature:
        how.append("norm:" + signature.rsplit("|norm:", 1)[1])
    scoring = f" [{', '.join(how)}]" if how else ""
    return (
        f"{summary.model} ({summary.params:,} params): test BLEU {test['bleu']:.2f}{also} chrF {test['chrf']:.2f}"
        f"{scoring} | "
        f"valid BLEU {valid['bleu']:.2f}{sample} loss {valid['loss']:.3f} | {summary.steps:,} steps, "
        f"{summary.train_seconds:.0f} s training in {summary.processes} process{'es' if summary.processes > 1 else ''} | {out_dir}"
    )


def warmup_note(summary: RunSummary) -> str | None:
    """A warning for a run whose time budget (``trainer.max_minutes``) ended inside the warm-up:
    its learning rate was still rising and never reached ``trainer.lr``, so its scores say little
    about the schedule it was given. None for any other run."""
    trainer = summary.config.get("trainer") or {}
    minutes, warmup, max_steps = trainer.get("max_minutes"), trainer.get("warmup_steps"), trainer.get("max_steps")
    steps = summary.steps
    if minutes is None or not isinstance(warmup, int) or not isinstance(steps, int):
        return None
    if not steps < warmup or (isinstance(max_steps, int) and steps >= max_steps):  # not the time budget's end
        return None
    return (
        f"the time budget (trainer.max_minutes={minutes}) ended inside the warm-up, after {steps} of "
        f"trainer.warmup_steps={warmup} steps: the learning rate never reached its peak (trainer.lr)"
    )


__all__ = ["SUMMARY_FILE", "RunSummary", "summary_line", "warmup_note"]
