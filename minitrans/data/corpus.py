"""The configured corpus, ready to train on: loaded, its training pairs cleaned, missing
validation / test splits held out, all cached on disk (its tokenisation: minitrans.data.tokenize).

    generated   the embedded grammar (minitrans.data.generated)
    parallel    a folder of {split}.{lang}[.gz] files (minitrans.data.parallel); multi30k is its preset
    hf          anything ``datasets.load_dataset`` reads (minitrans.data.hf)

The prepared corpus is cached under ``data.cache_dir``/corpora, keyed by the source (file
sizes and times, ``datasets`` fingerprints, or the generator's settings and code) and every
setting that shapes it; a second start memory-maps it. Problems with the data raise a
:class:`~minitrans.core.config.ConfigError` naming the key to change.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from minitrans.core.config import ConfigError, DataConfig
from minitrans.data.cleaning import clean_pairs, emptied_message
from minitrans.data.token_ids import save_atomically

log = logging.getLogger(__name__)

PIPELINE_VERSION = 1  # bump when preparation changes what it produces from the same inputs
VALID_ALIASES = ("valid", "validation", "val", "dev")  # tried in order when data.valid_split is absent
TEST_ALIASES = ("test",)
# settings that shape the tokenisation, not the prepared corpus
TOKENIZER_KEYS = ("cache_dir", "vocab_size", "spm_model_type", "joint_vocab", "spm_sample", "max_tokens")


@dataclass
class PreparedCorpus:
    splits: datasets.DatasetDict  # train, valid and test splits under their configured names
    report: dict  # what was read, cleaned and held out (logged, and kept in summary.json)
    key: str  # identifies the content: the cache key of everything derived from it


def prepare_corpus(cfg: DataConfig) -> PreparedCorpus:
    raw_hf, identity = None, None
    if cfg.name == "hf":
        from minitrans.data.hf import load_hf

        raw_hf, identity = load_hf(cfg)
        available, halves = list(raw_hf), {}
    elif cfg.name == "generated":
        available, halves = ["train", "valid", "test"], {}
    else:
        from minitrans.data.parallel import available_splits, corpus_files, half_splits, missing_pair_message

        root = _root(cfg)
        try:
            files = corpus_files(root, _hint(cfg), cfg.src_lang, cfg.tgt_lang)
        except FileNotFoundError as error:
            raise ConfigError(f"data.root: {error}") from None
        present = sorted({lang for _, lang in files})
        absent = [lang for lang in (cfg.src_lang, cfg.tgt_lang) if lang not in present]
        if absent:  # no file of the language: the language is wrong, unless there is no corpus file at all
            key = "data.root" if len(absent) == 2 else "data.src_lang" if cfg.src_lang in absent else "data.tgt_lang"
            hint = f". {_hint(cfg)}" if cfg.name == "multi30k" else ""
            raise ConfigError(f"{key}: {missing_pair_message(root, cfg.src_lang, cfg.tgt_lang)}{hint}")
        available, halves = (
            available_splits(root, cfg.src_lang, cfg.tgt_lang),
            half_splits(root, cfg.src_lang, cfg.tgt_lang),
        )
    roles = _resolve_splits(cfg, available, halves)
    identity = identity or _identity(cfg, roles)
    settings = {k: v for k, v in asdict(cfg).items() if k not in TOKENIZER_KEYS}
    key = hashlib.sha256(json.dumps([PIPELINE_VERSION, identity, settings], sort_keys=True).encode()).hexdigest()[:16]
    folder = Path(cfg.cache_dir).expanduser() / "corpora" / key
    if (folder / "report.json").exists():
        try:
            report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
            return PreparedCorpus(datasets.load_from_disk(str(folder / "splits")), report, key)
        except Exception as error:  # a damaged cache entry (the errors of json and pyarrow vary): rebuild it
            warnings.warn(f"rebuilding the damaged cache {folder} ({type(error).__name__})", stacklevel=2)
            shutil.rmtree(folder, ignore_errors=True)

    sources = sorted({source for source in roles.values() if source is not None})
    raw = raw_hf if raw_hf is not None else _load(cfg, sources)
    splits, report = _clean_and_hold_out(cfg, raw, roles)
    report = {"corpus": cfg.name, "source": _describe_source(cfg), **report}

    def write(tmp: Path) -> None:
        splits.save_to_disk(str(tmp / "splits"))
        (tmp / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")

    save_atomically(folder, write)
    return PreparedCorpus(datasets.load_from_disk(str(folder / "splits")), report, key)


def load_corpus(cfg: DataConfig) -> datasets.DatasetDict:
    """The prepared train, valid and test splits (string columns ``src`` and ``tgt``)."""
    return prepare_corpus(cfg).splits


# -- which split plays which part -----------------------------------------------------------
def _resolve_splits(cfg: DataConfig, available: list[str], halves: dict) -> dict[str, str | None]:
    """{configured split name: the corpus split it is read from, or None to hold it out}."""

    def present(name: str) -> bool:
        if name in halves:
            path, lang = halves[name]
            raise ConfigError(f"data.root: split {name!r} has {path} but no {name}.{lang} (or .gz) beside it")
        return name in available

    listing = ", ".join(available) or "none"
    if not present(cfg.train_split):
        raise ConfigError(f"data.train_split: the corpus has no split {cfg.train_split!r} (it has: {listing})")
    roles: dict[str, str | None] = {cfg.train_split: cfg.train_split}
    if present(cfg.valid_split):
        roles[cfg.valid_split] = cfg.valid_split
    else:
        roles[cfg.valid_split] = next((a for a in VALID_ALIASES if a != cfg.train_split and present(a)), None)
    for i, name in enumerate(cfg.test_splits):
        if present(name):
            roles[name] = name
        elif i == 0:
            roles[name] = next((a for a in TEST_ALIASES if present(a)), None)
        else:
            raise ConfigError(f"data.test_splits: the corpus has no split {name!r} (it has: {listing})")
    return roles


# -- loading ------------------------------------------------------------------------------
def _root(cfg: DataConfig) -> Path:
    if cfg.name == "multi30k" and not cfg.root:
        from minitrans.data.multi30k import DEFAULT_ROOT

        return DEFAULT_ROOT
    return Path(cfg.root).expanduser()


def _hint(cfg: DataConfig) -> str:
    if cfg.name != "multi30k":
        return ""
    from minitrans.data.multi30k import prepare_hint

    return prepare_hint(_root(cfg))


def _identity(cfg: DataConfig, roles: dict[str, str | None]) -> list:
    if cfg.name == "generated":
        source = (Path(__file__).parent / "generated.py").read_bytes()
        return ["generated", hashlib.sha256(source).hexdigest()]
    from minitrans.data.parallel import split_paths

    root = _root(cfg).resolve()
    out = [str(root)]
    for split in sorted({s for s in roles.values() if s}):
        for path in split_paths(root, cfg.src_lang, cfg.tgt_lang, split):  # every layout's names
            stat = path.stat()
            out.append([path.name, stat.st_size, stat.st_mtime_ns])
    return out


def _load(cfg: DataConfig, splits: list[str]) -> datasets.DatasetDict:
    if cfg.name == "generated":
        return _generated(cfg)
    from minitrans.data.parallel import load_parallel

    try:
        return load_parallel(_root(cfg), cfg.src_lang, cfg.tgt_lang, splits, hint=_hint(cfg))
    except (FileNotFoundError, ValueError) as error:
        raise ConfigError(f"data.root: {error}") from None


def _describe_source(cfg: DataConfig) -> str:
    if cfg.name == "generated":
        return f"generated (seed {cfg.corpus_seed})"
    if cfg.name == "hf":
        return cfg.path + (f" ({cfg.subset})" if cfg.subset else "")
    return str(_root(cfg))


def _generated(cfg: DataConfig, with_train: bool = True) -> datasets.DatasetDict:
    """The embedded corpus, regenerated from its seed and sizes (the training split, the
    slowest to draw, can be skipped: the other splits do not depend on it)."""
    from minitrans.data.generated import generate_corpus

    if (cfg.src_lang, cfg.tgt_lang) not in (("en", "de"), ("de", "en")):
        raise ConfigError(f"data.src_lang: the generated corpus is English-German; got {cfg.src_lang}->{cfg.tgt_lang}")
    splits = generate_corpus(
        num_train=cfg.num_train if with_train else 0,
        num_valid=cfg.num_valid,
        num_test=cfg.num_test,
        min_words=cfg.min_words,
        max_words=cfg.max_words,
        seed=cfg.corpus_seed,
    )
    src = 0 if cfg.src_lang == "en" else 1
    return datasets.DatasetDict(
        {
            name: datasets.Dataset.from_dict({"src": [p[src] for p in pairs], "tgt": [p[1 - src] for p in pairs]})
            for name, pairs in splits.items()
        }
    )


# -- cleaning and held-out splits -----------------------------------------------------------
def _as_dataset(table: pa.Table) -> datasets.Dataset:
    return datasets.Dataset(datasets.table.InMemoryTable(table))


def arrow_table(dataset: datasets.Dataset) -> pa.Table:
    """The dataset's rows as one Arrow table (its index mapping, if any, applied)."""
    return (dataset.flatten_indices() if dataset._indices is not None else dataset).data.table


def _clean_and_hold_out(cfg: DataConfig, raw: datasets.DatasetDict, roles: dict[str, str | None]):
    if len(raw[cfg.train_split]) == 0:
        raise ConfigError(f"data.train_split: split {cfg.train_split!r} of corpus {cfg.name!r} is empty")
    train, cleaning = clean_pairs(arrow_table(raw[cfg.train_split]), cfg.clean)
    if len(train) == 0:
        raise ConfigError(f"data.clean: {emptied_message(cleaning, cfg.clean)}")
    held = [name for name, source in roles.items() if source is None]
    sizes = {name: cfg.num_valid if name == cfg.valid_split else cfg.num_test for name in held}
    out, info = {}, {}
    if held:
        if sum(sizes.values()) >= len(train):
            raise ConfigError(
                f"data.num_valid: cannot hold out {' + '.join(map(str, sizes.values()))} pairs for "
                f"{' and '.join(held)} from {len(train):,} training pairs; lower data.num_valid / data.num_test"
            )
        order = np.random.default_rng(cfg.corpus_seed).permutation(len(train))
        start = 0
        for name in held:
            out[name] = train.take(np.sort(order[start : start + sizes[name]]))
            start += sizes[name]
        rest = train.take(np.sort(order[start:]))
        # the held-out pairs are disjoint from training by position; a repeat of one elsewhere
        # in the corpus would still leak it into training, so repeats leave training too
        held_keys = pa.concat_arrays([_pair_keys(out[name]) for name in held])
        repeats = pc.is_in(_pair_keys(rest), value_set=held_keys)
        train = rest.filter(pc.invert(repeats))
        info = {"seed": cfg.corpus_seed, "pairs": sizes, "repeats_removed_from_train": len(rest) - len(train)}
    splits = {cfg.train_split: train}
    for name, source in roles.items():
        if name != cfg.train_split:
            splits[name] = out[name] if source is None else arrow_table(raw[source])
    report = {
        "splits": {
            name: {
                "pairs": len(table),
                "from": "held out of training" if roles.get(name, name) is None else roles.get(name, name),
            }
            for name, table in splits.items()
        },
        "cleaning": cleaning,
        "held_out": info,
    }
    return datasets.DatasetDict({name: _as_dataset(table) for name, table in splits.items()}), report


def _pair_keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(table.column("src"), table.column("tgt"), "\x00").combine_chunks()


def describe(report: dict) -> list[str]:
    """The report as log lines: where the data came from, what cleaning dropped, what was held out."""
    lines = [f"corpus {report['corpus']}: {report['source']}"]
    clean = report["cleaning"]
    dropped = ", ".join(f"{reason} {n:,}" for reason, n in clean["dropped"].items() if n) or "none"
    lines.append(
        f"cleaning: {clean['pairs']:,} training pairs read, {clean['normalized']:,} normalised, "
        f"dropped: {dropped}; {clean['kept']:,} kept"
    )
    for name, split in report["splits"].items():
        lines.append(f"split {name}: {split['pairs']:,} pairs (from {split['from']})")
    held = report.get("held_out")
    if held:
        lines.append(
            f"held out of training (seed {held['seed']}): "
            + ", ".join(f"{name} {n:,}" for name, n in held["pairs"].items())
            + f"; {held['repeats_removed_from_train']:,} repeats of held-out pairs removed from training"
        )
    return lines


# -- one split by name (evaluate.py, the benchmark) -------------------------------------------
def load_split(cfg: DataConfig, split: str, root: str | Path | None = None) -> tuple[list[str], list[str], str]:
    """Sources and references of one split: any split name the corpus has, or "train",
    "valid" / "val" and "test" for the configured training, validation and first test split
    (held-out splits included: they are drawn again exactly). ``root`` replaces the run's
    ``data.root`` (``data.path`` for data=hf). Returns (sources, references, the split's name)."""
    aliases = {"train": cfg.train_split, "valid": cfg.valid_split, "val": cfg.valid_split, "test": cfg.test_splits[0]}
    if cfg.name == "generated":
        name = aliases.get(split, split)
        if name not in ("train", "valid", "test"):
            raise ValueError(f"the generated corpus has splits train, valid and test, not {split!r}")
        pairs = _generated(cfg, with_train=name == "train")[name]
        return list(pairs["src"]), list(pairs["tgt"]), name
    if root is not None:
        cfg = replace(cfg, path=str(root)) if cfg.name == "hf" else replace(cfg, root=str(root))
    if cfg.name == "hf":
        from minitrans.data.hf import load_hf

        raw, _ = load_hf(cfg)
        available, halves = list(raw), {}
    else:
        from minitrans.data.parallel import available_splits, half_splits

        raw, root = None, _root(cfg)
        available, halves = (
            available_splits(root, cfg.src_lang, cfg.tgt_lang),
            half_splits(root, cfg.src_lang, cfg.tgt_lang),
        )
    name = split if split in available else aliases.get(split, split)
    source = name if name in available else None
    if name == cfg.train_split or (source is None and name in (cfg.valid_split, cfg.test_splits[0])):
        roles = _resolve_splits(cfg, available, halves)
        source = roles.get(name)
        if name == cfg.train_split or source is None:  # cleaned, or held out: drawn again exactly
            pairs = prepare_corpus(cfg).splits[name]
            return list(pairs["src"]), list(pairs["tgt"]), name
    if source is None:
        raise ValueError(f"no split {split!r} in {_describe_source(cfg)}; it has: {', '.join(available) or 'none'}")
    pairs = raw[source] if raw is not None else _load(cfg, [source])[source]
    return list(pairs["src"]), list(pairs["tgt"]), name


def load_run_split(
    config: dict, split: str = "test", data_root: str | Path | None = None
) -> tuple[list[str], list[str], str]:
    """Source and reference sentences of a split of the corpus a run was trained on, read from
    the run's configuration (a checkpoint's ``config``, e.g. ``Translator.config``): the
    generated corpus is regenerated from its seed and sizes; other corpora are read from
    ``data_root``, else the run's ``data.root`` (``data.path`` for data=hf; Multi30k: else
    ``data/multi30k``), held-out splits drawn again exactly. "train", "valid" and "test"
    also name the run's own train, validation and first test split (e.g. "test" is
    test_2016_flickr for Multi30k). Returns (sources, references, split name)."""
    try:
        data = DataConfig(**config["data"])
    except (KeyError, TypeError, ValueError) as error:  # e.g. a key this version does not know
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"the checkpoint's data config is unusable: {reason}") from None
    return load_split(data, split, data_root)
