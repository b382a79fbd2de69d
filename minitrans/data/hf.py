"""Any corpus ``datasets`` can load, as a ``DatasetDict`` of ``src``/``tgt`` string columns.

``data.path`` is a Hub id (with ``data.subset``, the configuration name), a local JSON Lines,
JSON, CSV, TSV (``.tsv`` or a tab-separated ``.txt``, with or without a header: see
:mod:`minitrans.data.local_files`) or Parquet file, a folder of such files (one file per
split: train.jsonl, validation.jsonl, ...), or a folder written by ``save_to_disk``. Two
layouts of the pairs: the Hub's nested ``translation: {"de": ..., "en": ...}``, and flat
columns, named by ``data.src_field`` / ``data.tgt_field`` or, when those are unset, by the
language codes (a headerless file: its first two columns). Downloads and Arrow conversions
are cached by ``datasets`` under ``data.cache_dir``/hf.
"""

from __future__ import annotations

import logging
from pathlib import Path

import datasets
import pyarrow as pa

from minitrans.core.checks import ConfigError, first_line
from minitrans.core.config import DataConfig
from minitrans.data.local_files import SUFFIXES, builder_for, diagnose, first_non_string, strip_crlf, suffix

log = logging.getLogger(__name__)
STRING_TYPES = (pa.string(), pa.large_string())


def _load_local(path: Path, cfg: DataConfig, cache_dir: str) -> datasets.DatasetDict:
    if path.is_dir() and ((path / "dataset_dict.json").exists() or (path / "state.json").exists()):
        loaded = datasets.load_from_disk(str(path))
        return loaded if isinstance(loaded, datasets.DatasetDict) else datasets.DatasetDict({"train": loaded})
    if path.is_file():
        files = {"train": [path]}
    else:  # a folder: one split per file stem (train.jsonl, dev.tsv, test.parquet, ...)
        files = {}
        for file in sorted(path.iterdir()):
            if not file.name.startswith(".") and file.is_file() and suffix(file) in SUFFIXES:
                files.setdefault(file.name.split(".")[0], []).append(file)
        if not files:
            raise ConfigError(
                f"data.path: no corpus in {path}: expected {', '.join(SUFFIXES)} files (one per split: "
                "train.jsonl, test.jsonl, ...) or a folder written by save_to_disk; for {split}.{lang} "
                "files use data=parallel data.root=FOLDER"
            )
    out = {}
    for split, group in files.items():
        reader = builder_for(group, cfg, split)
        if reader.note:
            log.info("data.path: %s", reader.note)
        quiet = _quiet_datasets()  # its reader logs the failure too: the one message is ours
        try:
            loaded = datasets.load_dataset(
                reader.builder, data_files={split: [str(f) for f in group]}, cache_dir=cache_dir, **reader.options
            )
            if reader.options.get("lineterminator") == "\n":
                loaded[split] = strip_crlf(loaded[split])
            _check_text(loaded[split], group, cfg)
        except ConfigError:
            raise
        except Exception as error:  # datasets wraps the reader's error: find the file and line
            problem = diagnose(group, reader, error)
            if problem is None:
                raise
            raise ConfigError(f"data.path: {problem}") from None
        finally:
            logging.getLogger("datasets").setLevel(quiet)
        out[split] = loaded[split]
    return datasets.DatasetDict(out)


def _quiet_datasets() -> int:
    logger = logging.getLogger("datasets")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    return level


def _check_text(dataset: datasets.Dataset, files: list[Path], cfg: DataConfig) -> None:
    """Refuse a column the run reads that is not text in every row: ``datasets`` would turn a
    JSON number among strings into a JSON column and quote every sentence of it."""
    names = (cfg.src_field, cfg.tgt_field) if cfg.src_field is not None else (cfg.src_lang, cfg.tgt_lang)
    schema = dataset.data.table.schema
    read = [n for n in names if n in schema.names]
    if "translation" in schema.names and not read:
        read = [f"translation.{lang}" for lang in (cfg.src_lang, cfg.tgt_lang)]
        struct = schema.field("translation").type
        types = {f.name: f.type for f in struct} if pa.types.is_struct(struct) else {}
        kinds = {f"translation.{k}": t for k, t in types.items()}
    else:
        kinds = {n: schema.field(n).type for n in read}
    odd = [n for n in read if n in kinds and kinds[n] not in STRING_TYPES and not pa.types.is_null(kinds[n])]
    if odd:
        where = first_non_string(files, tuple(odd)) or f"{files[0]}: column {odd[0]} holds {kinds[odd[0]]} values"
        raise ConfigError(f"data.path: {where}")
    for name in {n.split(".")[0] for n in read}:
        dataset.data.table.column(name).validate(full=True)  # ArrowInvalid for bytes that are not UTF-8


def _looks_local(name: str) -> bool:
    """A data.path meant as a file or folder (not a Hub id): a path prefix or a file suffix."""
    return name.startswith((".", "/", "~")) or "\\" in name or suffix(Path(name)) in SUFFIXES or name.count("/") > 1


def load_raw(cfg: DataConfig) -> datasets.DatasetDict:
    """The corpus as ``datasets`` gives it, every split, every column."""
    path = Path(cfg.path).expanduser()
    cache_dir = str(Path(cfg.cache_dir).expanduser() / "hf")
    if not path.exists() and _looks_local(cfg.path):
        raise ConfigError(
            f"data.path: no such file or folder: {cfg.path} (from {Path.cwd()}); a Hub dataset is named OWNER/NAME"
        )
    try:
        if path.exists():
            return _load_local(path, cfg, cache_dir)
        return datasets.load_dataset(cfg.path, cfg.subset, cache_dir=cache_dir)
    except ConfigError:
        raise  # already names its key
    except ConnectionError:
        raise ConfigError(
            f"data.path: {cfg.path!r} is not a local file or folder, and the Hugging Face Hub cannot be "
            "reached (offline?); pass a local path instead: data.path=FILE_OR_FOLDER"
        ) from None
    except (datasets.exceptions.DatasetNotFoundError, FileNotFoundError) as error:
        raise ConfigError(f"data.path: {first_line(error, type(error).__name__)}") from None
    except ValueError as error:  # e.g. a missing or unknown configuration name
        message = first_line(error, type(error).__name__)
        key = "data.subset" if "config" in message.lower() else "data.path"
        raise ConfigError(f"{key}: {message}") from None


def to_pairs(dataset: datasets.Dataset, cfg: DataConfig, split: str) -> datasets.Dataset:
    """Just the ``src`` and ``tgt`` strings of a split, in either layout (Arrow operations only)."""
    columns = dataset.column_names
    if cfg.src_field is not None:
        fields = (cfg.src_field, cfg.tgt_field)
        for key, name in zip(("data.src_field", "data.tgt_field"), fields):
            if name not in columns:
                raise ConfigError(f"{key}: split {split!r} has no field {name!r}; its fields are: {', '.join(columns)}")
    elif "translation" in columns:
        feature = dataset.features["translation"]
        languages = list(getattr(feature, "languages", None) or (feature if isinstance(feature, dict) else []))
        for key, lang in (("data.src_lang", cfg.src_lang), ("data.tgt_lang", cfg.tgt_lang)):
            if lang not in languages:
                raise ConfigError(
                    f"{key}: the 'translation' field of split {split!r} has no {lang!r}; "
                    f"it has: {', '.join(map(str, languages)) or 'nothing'}"
                )
        dataset = dataset.select_columns(["translation"]).flatten()
        fields = (f"translation.{cfg.src_lang}", f"translation.{cfg.tgt_lang}")
    elif cfg.src_lang in columns and cfg.tgt_lang in columns:
        fields = (cfg.src_lang, cfg.tgt_lang)
    else:
        raise ConfigError(
            f"data.src_field: split {split!r} has neither a 'translation' field nor columns named "
            f"{cfg.src_lang!r} and {cfg.tgt_lang!r}; its fields are: {', '.join(columns)}; "
            "name the columns with data.src_field=... data.tgt_field=..."
        )
    dataset = dataset.select_columns(list(fields))
    table = (dataset.flatten_indices() if dataset._indices is not None else dataset).data.table
    columns = [table.column(name).cast(pa.string()).fill_null("") for name in fields]
    for name, column in zip(fields, columns):
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as error:  # e.g. invalid UTF-8 that a reader let through
            raise ConfigError(
                f"data.path: split {split!r}, column {name}: {error}; re-encode the file as UTF-8"
            ) from None
    return datasets.Dataset(datasets.table.InMemoryTable(pa.table({"src": columns[0], "tgt": columns[1]})))


def load_hf(cfg: DataConfig) -> tuple[datasets.DatasetDict, list[str]]:
    """Every split as src/tgt pairs, and an identity of the loaded data (``datasets``'
    fingerprints) for caching what is derived from it."""
    raw = load_raw(cfg)
    pairs = datasets.DatasetDict({split: to_pairs(dataset, cfg, split) for split, dataset in raw.items()})
    return pairs, [f"{split}:{getattr(dataset, '_fingerprint', '')}" for split, dataset in sorted(raw.items())]
