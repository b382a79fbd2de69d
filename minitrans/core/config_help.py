"""``train.py --help`` and the configuration reference: every key, its default and one line of
help, read from the schemas themselves.

The help text lives in one place, the field's own metadata (``knob(128, "width of ...")``, see
:mod:`minitrans.core.knob`, in the schemas of :mod:`minitrans.core.config`), so a field added to a
schema appears here without touching this file. :func:`config_reference` is the structured form
(the documentation's reference is generated from it); :func:`train_help` is the text
``train.py --help`` prints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from minitrans.core.config import CleanConfig, DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig


@dataclass(frozen=True)
class ConfigKey:
    key: str  # as typed on the command line: model.d_model
    default: str  # as typed on the command line: 128, null, [0.9,0.98]
    help: str


def schema_keys(prefix: str, schema: type, only: set[str] | None = None) -> list[ConfigKey]:
    """The keys of one schema with their defaults and help, testing aids left out."""
    keys = []
    for field in dataclasses.fields(schema):
        if field.metadata.get("hidden") or (only is not None and field.name not in only):
            continue
        keys.append(ConfigKey(f"{prefix}{field.name}", _default(field), field.metadata.get("help", "")))
    return keys


def _default(field: dataclasses.Field) -> str:
    if field.metadata.get("shown"):
        return field.metadata["shown"]
    value = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ",".join(str(item) for item in value) + "]"
    return str(value)


def config_reference() -> list[tuple[str, list[ConfigKey]]]:
    """Every key of the training configuration, grouped by schema: ``[(title, keys), ...]``."""
    return [
        ("model=transformer (the default)", schema_keys("model.", TransformerConfig)),
        ("model=rnn | model=rnn_attention", schema_keys("model.", RNNConfig)),
        ("data", [key for key in schema_keys("data.", DataConfig) if key.key != "data.clean"]),
        ("data.clean (training pairs only)", schema_keys("data.clean.", CleanConfig)),
        ("trainer", schema_keys("trainer.", TrainerConfig)),
        ("run", schema_keys("", TrainConfig, {"seed", "name"})),
    ]


def help_text(width: int = 34) -> str:
    """Every key as ``key=default   help``, one line each, grouped by schema."""
    out = []
    for title, keys in config_reference():
        out.append(f"{title}:")
        out += [f"  {f'{key.key}={key.default}':<{width}} {key.help}".rstrip() for key in keys]
        out.append("")
    return "\n".join(out)


def config_groups(config_dir: str | Path) -> dict[str, list[str]]:
    """The configuration groups of ``conf/`` and their options (Hydra's own groups left out)."""
    folder = Path(config_dir)
    return {
        group.name: sorted(path.stem for path in group.glob("*.yaml"))
        for group in sorted(folder.iterdir())
        if group.is_dir() and group.name != "hydra"
    }


def train_help(config_dir: str | Path) -> str:
    """What ``train.py --help`` prints: usage, the groups and their options, every key with its
    default and help. Written without Hydra (which takes seconds to list its groups for its own
    help), so it is instant; ``--hydra-help`` still shows Hydra's own flags."""
    groups = "\n".join(f"  {group}: {', '.join(options)}" for group, options in config_groups(config_dir).items())
    return (
        "Train a sequence-to-sequence model: python scripts/train.py [group=option ...] [key=value ...]\n"
        "A sweep: -m key=a,b,c. A bad key or value ends with one 'error:' line and exit status 2.\n\n"
        f"== Configuration groups == (group=option)\n\n{groups}\n\n"
        "== Keys == (key=default: the schema's default; a group file (model=rnn, data=multi30k ...) may "
        "change some: add --cfg job to see the values)\n\n"
        f"{help_text()}\n"
        "Hydra's own flags (-m, --cfg, --multirun, hydra.run.dir=...): --hydra-help"
    )


__all__ = ["ConfigKey", "config_groups", "config_reference", "help_text", "schema_keys", "train_help"]
