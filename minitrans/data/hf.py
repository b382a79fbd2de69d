"""Any corpus ``datasets`` can load, as a ``DatasetDict`` of ``src``/``tgt`` string columns.

``data.path`` is a Hub id (with ``data.subset``, the configuration name), a local JSON Lines,
JSON, CSV, TSV or Parquet file, a folder of such files (one file per split: train.jsonl,
validation.jsonl, ...), or a folder written by ``save_to_disk``. Two layouts of the pairs:
the Hub's nested ``translation: {"de": ..., "en": ...}``, and flat columns, named by
``data.src_field`` / ``data.tgt_field`` or, when those are unset, by the language codes.
Downloads and Arrow conversions are cached by ``datasets`` under ``data.cache_dir``/hf.
"""

from __future__ import annotations

from pathlib import Path

import datasets
import pyarrow as pa

from minitrans.core.config import ConfigError, DataConfig

# file suffix -> (datasets builder, its options)
BUILDERS = {
    ".jsonl": ("json", {}),
    ".json": ("json", {}),
    ".csv": ("csv", {}),
    ".tsv": ("csv", {"delimiter": "\t", "quoting": 3}),  # 3: csv.QUOTE_NONE, text may hold quotes
    ".parquet": ("parquet", {}),
}


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for ending in (".gz", ".bz2", ".xz", ".zst"):
        name = name.removesuffix(ending)
    return Path(name).suffix


def _load_local(path: Path, cache_dir: str) -> datasets.DatasetDict:
    if path.is_dir() and ((path / "dataset_dict.json").exists() or (path / "state.json").exists()):
        loaded = datasets.load_from_disk(str(path))
        return loaded if isinstance(loaded, datasets.DatasetDict) else datasets.DatasetDict({"train": loaded})
    if path.is_file():
        files = {"train": [path]}
    else:  # a folder: one split per file stem (train.jsonl, dev.tsv, test.parquet, ...)
        files = {}
        for file in sorted(path.iterdir()):
            if not file.name.startswith(".") and _suffix(file) in BUILDERS:
                files.setdefault(file.name.split(".")[0], []).append(file)
        if not files:
            raise ConfigError(
                f"data.path: no corpus in {path}: expected .jsonl, .json, .csv, .tsv or .parquet files "
                "(one per split) or a folder written by save_to_disk"
            )
    suffixes = {_suffix(f) for group in files.values() for f in group}
    if len(suffixes) != 1 or (suffix := suffixes.pop()) not in BUILDERS:
        raise ConfigError(
            f"data.path: {path}: cannot tell the format ({', '.join(sorted(suffixes)) or 'no suffix'}); "
            f"use one of {', '.join(BUILDERS)}"
        )
    builder, options = BUILDERS[suffix]
    data_files = {split: [str(f) for f in group] for split, group in files.items()}
    return datasets.load_dataset(builder, data_files=data_files, cache_dir=cache_dir, **options)


def load_raw(cfg: DataConfig) -> datasets.DatasetDict:
    """The corpus as ``datasets`` gives it, every split, every column."""
    path = Path(cfg.path).expanduser()
    cache_dir = str(Path(cfg.cache_dir).expanduser() / "hf")
    try:
        if path.exists():
            return _load_local(path, cache_dir)
        return datasets.load_dataset(cfg.path, cfg.subset, cache_dir=cache_dir)
    except ConnectionError:
        raise ConfigError(
            f"data.path: {cfg.path!r} is not a local file or folder, and the Hugging Face Hub cannot be "
            "reached (offline?); pass a local path instead: data.path=FILE_OR_FOLDER"
        ) from None
    except (datasets.exceptions.DatasetNotFoundError, FileNotFoundError) as error:
        raise ConfigError(f"data.path: {str(error).splitlines()[0]}") from None
    except ValueError as error:  # e.g. a missing or unknown configuration name
        message = str(error).splitlines()[0]
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
    return datasets.Dataset(datasets.table.InMemoryTable(pa.table({"src": columns[0], "tgt": columns[1]})))


def load_hf(cfg: DataConfig) -> tuple[datasets.DatasetDict, list[str]]:
    """Every split as src/tgt pairs, and an identity of the loaded data (``datasets``'
    fingerprints) for caching what is derived from it."""
    raw = load_raw(cfg)
    pairs = datasets.DatasetDict({split: to_pairs(dataset, cfg, split) for split, dataset in raw.items()})
    return pairs, [f"{split}:{getattr(dataset, '_fingerprint', '')}" for split, dataset in sorted(raw.items())]
