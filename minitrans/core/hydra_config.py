"""The Hydra side of the configuration: registering the schemas with Hydra's ConfigStore,
turning a composed ``DictConfig`` into the typed :class:`~minitrans.core.config.TrainConfig`, and
checking a command line before Hydra runs it (one ``error:`` line per problem).

:mod:`minitrans.core.config` holds the schemas themselves (every default, every validation) and
imports no Hydra; this module and ``scripts/`` are the only places that do.

``scripts/train.py`` composes the configuration twice per launch: once here, to refuse a bad
command line in one line before torch loads, and once inside ``@hydra.main``, which must
compose for itself (sweeps, launchers, the run folder). Composing takes well under a second,
and Hydra offers no supported way to hand a composed config to ``hydra.main``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import io
import os
import re
from dataclasses import asdict, is_dataclass
from typing import Any

from hydra import compose, initialize_config_dir
from hydra._internal.utils import get_args_parser
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import OverrideType
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from minitrans.core.checks import ConfigError, first_line
from minitrans.core.config import MODEL_SCHEMAS, DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig
from minitrans.core.hydra_sweep import swept_overrides
from minitrans.core.run_folder import claim_new_folder, job_folder_name


def register_configs() -> None:
    """Register the schemas with Hydra's ConfigStore; YAML files extend them by name."""
    if not OmegaConf.has_resolver("new_folder"):  # conf/hydra/default.yaml names new run folders with it

        def new_folder(base: str) -> str:
            return claim_new_folder(base)

        OmegaConf.register_new_resolver("new_folder", new_folder)
    if not OmegaConf.has_resolver("job_folder"):  # a sweep job's folder name, made safe for the filesystem

        def job_folder(name: str) -> str:
            return job_folder_name(name)

        OmegaConf.register_new_resolver("job_folder", job_folder)
    if not OmegaConf.has_resolver("swept_overrides"):  # a sweep job's name: the overrides of what the sweep varies

        def sweep_job_name(*, _root_: Any) -> str:
            return swept_overrides(_root_.hydra)

        OmegaConf.register_new_resolver("swept_overrides", sweep_job_name)
    store = ConfigStore.instance()
    store.store(name="train_schema", node=TrainConfig)
    # Outside the model/data/trainer groups, so they are neither listed nor accepted as choices
    # (model=transformer_schema would train the schema's defaults, not conf/model/transformer.yaml).
    store.store(name="transformer_schema", node=TransformerConfig)
    store.store(name="rnn_schema", node=RNNConfig)
    store.store(name="data_schema", node=DataConfig)
    store.store(name="trainer_schema", node=TrainerConfig)


def to_dataclass(cfg: Any) -> TrainConfig:
    """A composed ``DictConfig`` -> a validated :class:`TrainConfig` (raises ConfigError)."""
    train_cfg = OmegaConf.to_object(cfg)
    _reject_unknown_keys(
        OmegaConf.to_container(cfg, resolve=False), asdict(train_cfg) | {"model": _as_dict(train_cfg.model)}
    )
    if isinstance(train_cfg.model, dict):  # an untyped model node: type it by its kind
        kind = train_cfg.model.get("kind", "transformer")
        if kind not in MODEL_SCHEMAS:
            raise ConfigError(f"model.kind: unknown model {kind!r}; choose one of {sorted(MODEL_SCHEMAS)}")
        train_cfg.model = MODEL_SCHEMAS[kind](**train_cfg.model)
    return train_cfg


def _as_dict(value: Any) -> Any:
    return asdict(value) if is_dataclass(value) else value


def _reject_unknown_keys(given: dict, known: dict, prefix: str = "") -> None:
    """OmegaConf.to_object silently drops keys a schema lacks (e.g. added with ``+key=``)."""
    for key, value in given.items():
        if key not in known:
            raise ConfigError(f"{prefix}{key}: unknown key (the schema has no such field; check for a typo)")
        if isinstance(value, dict) and isinstance(known[key], dict):
            _reject_unknown_keys(value, known[key], f"{prefix}{key}.")


# -- checking a command line before Hydra runs it -------------------------------------------
# Hydra's own command-line parser (what @hydra.main parses sys.argv with) and the exception its
# compose raises for a missing group option are all this check relies on beyond the public
# compose API; tests/core/test_config.py pins both, so a Hydra upgrade that changes them fails there.


def parse_hydra_command_line(args: list[str]):
    """``args`` as ``@hydra.main`` reads them (overrides, --config-name, --config-dir, -m ...);
    None when Hydra's parser refuses them (Hydra then says why in its own words)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            return get_args_parser().parse_args(args)
    except SystemExit:
        return None


def named_run_dir(args: list[str], key: str | None = None) -> tuple[str, str] | None:
    """The folder a command line gives Hydra for ``key`` (``hydra.run.dir``; by default
    ``hydra.sweep.dir`` for a sweep), as ``(key, folder)``, or None when it names none. Read by
    Hydra's own parsers, so every spelling Hydra takes counts: ``++hydra.run.dir=X``, a quoted
    ``hydra.run.dir="X"`` (the folder ``X``), ``hydra.run={dir:X}``, ``hydra={run:{dir:X}}``;
    the last one wins, as in Hydra. A spelling Hydra refuses (``+hydra.run.dir=X``: the key
    exists) names nothing: Hydra says why, before it writes anything."""
    parsed = parse_hydra_command_line(args)
    if parsed is None:
        return None
    try:
        overrides = OverridesParser.create().parse_overrides(parsed.overrides)
    except Exception:  # a syntax error: Hydra reports it in its own words
        return None
    if key is None:
        is_sweep = parsed.multirun or any(
            o.key_or_group == "hydra.mode" and not o.is_sweep_override() and str(o.value()) == "MULTIRUN"
            for o in overrides
        )
        key = "hydra.sweep.dir" if is_sweep else "hydra.run.dir"
    target, found = key.split("."), None
    for override in overrides:
        path = override.key_or_group.split(".")
        if path != target[: len(path)] or override.package or override.type == OverrideType.ADD:
            continue
        if override.type == OverrideType.DEL or override.is_sweep_override():
            found = None  # Hydra refuses both for the run folder; nothing to hold
            continue
        value = override.value()
        for part in target[len(path) :]:  # into a dict value: hydra.run={dir:X}
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, dict | list) or (value is None and len(path) == len(target)):
            found = None
        elif value is not None:
            found = str(value)
    return None if found is None else (key, found)


def _explain(error: BaseException, key: str | None) -> str:
    """One line naming the key and the problem, from Hydra's / OmegaConf's exception chain."""
    cause = error
    while (cause.__cause__ or cause.__context__) is not None and not isinstance(cause, OmegaConfBaseException):
        cause = cause.__cause__ or cause.__context__
    source = re.match(r"In '([^']+)'", str(error))  # the YAML file Hydra was reading, if any
    where = f", set in {source.group(1)}.yaml" if source and "/" in source.group(1) else ""
    if isinstance(cause, OmegaConfBaseException):
        full_key = getattr(cause, "full_key", None) or key or "config"
        message = first_line(getattr(cause, "msg", None) or cause)
        object_type = getattr(cause, "object_type", None)
        bad_key = getattr(cause, "key", None)
        if "not in" in message and dataclasses.is_dataclass(object_type) and bad_key is not None:
            names = [f.name for f in dataclasses.fields(object_type)]
            close = difflib.get_close_matches(str(bad_key), names, n=1)
            hint = f"; did you mean {'.'.join([*full_key.split('.')[:-1], close[0]])!r}?" if close else ""
            if object_type is RNNConfig and str(bad_key) in {f.name for f in dataclasses.fields(TransformerConfig)}:
                hint = "; a Transformer key (model=transformer): the RNN models have no such field"
            return f"{full_key}: unknown key (not in {object_type.__name__}){where}{hint}"
        return f"{full_key}: {message}{where}"
    return f"{key + ': ' if key else ''}{first_line(error)}"


def _compose(config_dir: str, config_name: str, plain: list[str], search_path: list[str]):
    """The configuration ``plain`` overrides compose to, or a one-line description of why not."""
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=config_dir, version_base="1.3"):
            return compose(config_name=config_name, overrides=plain + search_path)
    except MissingConfigException as error:  # a group option that does not exist (model=typo, experiment=typo)
        group, _, option = str(error.missing_cfg_file).rpartition("/")
        available = ", ".join(error.options or []) or "none"
        return f"{group or 'config'}: no config {option!r} (available: {available})"
    except Exception as error:
        key = None
        for line in plain:
            if f"'{line.split('=')[0].lstrip('+~')}" in str(error) or line.split("=")[0].lstrip("+~") in str(error):
                key = line.split("=")[0].lstrip("+~")
        return _explain(error, key)
    finally:
        GlobalHydra.instance().clear()


def check_command_line(args: list[str], config_dir: str, config_name: str = "train") -> str | None:
    """Compose the configuration a command line asks for, as Hydra will, and return a
    one-line description of the first problem (unknown key, wrong type, impossible value,
    a config group option that does not exist, a typo inside a YAML file), or None.
    ``--config-dir`` / ``--config-name`` are honoured. In a sweep (``-m``) every value of each
    swept key is composed (beside the first values of the others) for keys and types only, and
    a problem names its job's value: an impossible combination is refused later, by its own job."""
    register_configs()
    parsed_args = parse_hydra_command_line(args)
    if parsed_args is None:
        return None
    given, is_multirun = parsed_args.overrides, parsed_args.multirun
    config_name = parsed_args.config_name or config_name
    extra_dir = parsed_args.config_dir
    overrides = [arg for arg in given if not arg.lstrip("+~").startswith("hydra")]
    search_path = [arg for arg in given if arg.lstrip("+~").startswith("hydra.searchpath")]
    if extra_dir and not search_path:  # what --config-dir does, in the compose API's words
        search_path = [f"hydra.searchpath=[file://{os.path.abspath(extra_dir)}]"]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as error:  # Hydra will report syntax errors in its own words
        return first_line(error)
    plain, swept = [], []  # the command line with each sweep at its first value; the other values
    for override in parsed:
        if override.is_sweep_override():
            values = list(override.sweep_string_iterator())
            if not values:
                continue
            plain.append(f"{override.get_key_element()}={values[0]}")
            swept += [(len(plain) - 1, f"{override.get_key_element()}={value}") for value in values[1:]]
        else:
            plain.append(override.input_line)
    cfg = _compose(config_dir, config_name, plain, search_path)
    if isinstance(cfg, str):
        return cfg
    # Hydra composes every job before it runs any, and one it cannot compose stops the whole
    # sweep in many lines: each other value is composed here too, beside the first of the rest
    for position, job in swept:
        problem = _compose(config_dir, config_name, [*plain[:position], job, *plain[position + 1 :]], search_path)
        if isinstance(problem, str):
            return f"sweep job {job}: {problem}"
    if is_multirun:
        return None
    try:
        to_dataclass(cfg)
    except ConfigError as error:
        return str(error)
    except Exception as error:
        return _explain(error, None)
    return None
