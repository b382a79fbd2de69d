"""The configured corpus, ready to train on: loaded from its source (minitrans.data.sources:
the embedded grammar, a folder of parallel files, Multi30k, anything ``datasets`` reads), its
training pairs cleaned, missing validation / test splits held out, all cached on disk (its
tokenisation: minitrans.data.tokenize).

The prepared corpus is cached under ``data.cache_dir``/corpora, keyed by the source (a
digest of every byte of local files, a Hub dataset's ``datasets`` fingerprints, or the
generator's code) and every setting that shapes it; a second start memory-maps it. Local files
are digested again once read: a file that changed meanwhile is read again, so pairs are cached
only under the key of the bytes they were read from. Problems with the data raise a
:class:`~minitrans.core.checks.ConfigError` naming the key to change.
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

from minitrans.core.checks import ConfigError, first_line
from minitrans.core.config import DataConfig
from minitrans.core.saved_config import config_from_dict
from minitrans.data.cleaning import clean_pairs, emptied_message, normalize_text
from minitrans.data.digest import pairs_digest
from minitrans.data.sources import corpus_source, resolve_splits
from minitrans.data.token_ids import remove_partial_folders, save_atomically
from minitrans.data.tokenizer import model_texts

log = logging.getLogger(__name__)

# bump when preparation changes what it produces from the same inputs (2: script-weighted length
# ratio; 3: held out by source sentence; 4: sources compared as the model reads them)
PIPELINE_VERSION = 4
# settings that shape the tokenisation, not the prepared corpus
TOKENIZER_KEYS = ("cache_dir", "vocab_size", "spm_model_type", "joint_vocab", "spm_sample", "max_tokens")


@dataclass
class PreparedCorpus:
    splits: datasets.DatasetDict  # train, valid and test splits under their configured names
    report: dict  # what was read, cleaned and held out (logged, and kept in summary.json)
    key: str  # identifies the content: the cache key of everything derived from it


READS = 3  # reads of local files that change while they are read, before giving up


def prepare_corpus(cfg: DataConfig) -> PreparedCorpus:
    source = corpus_source(cfg)
    roles = resolve_splits(cfg, source)
    sources = sorted({name for name in roles.values() if name is not None})
    settings = {k: v for k, v in asdict(cfg).items() if k not in TOKENIZER_KEYS}
    identity = source.identity(sources)
    for _ in range(READS):
        key = hashlib.sha256(json.dumps([PIPELINE_VERSION, identity, settings], sort_keys=True).encode()).hexdigest()
        key = key[:16]
        folder = Path(cfg.cache_dir).expanduser() / "corpora" / key
        cached = _cached(folder, key)
        if cached is not None:
            return cached
        raw = source.load(sources)
        now = source.identity_now(sources)
        if now in (None, identity):  # the pairs read are those of the key
            break
        identity = now  # changed while read: read again, keyed by what the files hold now
    else:
        raise ConfigError(
            f"data.{source.root_key}: {source.describe()} changed each time it was read ({READS} reads); "
            "nothing was cached: run again once its files no longer change"
        )
    splits, report = _clean_and_hold_out(cfg, raw, roles)
    # the splits whose order is a random draw (held out, or drawn by the grammar): any first N of
    # them is a fair sample; others are in their file's order (perhaps sorted by length)
    drawn = [name for name, source_split in roles.items() if source_split is None or source.is_random_order]
    report["in_random_order"] = [name for name in drawn if name != cfg.train_split]
    report = {"corpus": cfg.name, "source": source.describe(), **report}

    def write(tmp: Path) -> None:
        splits.save_to_disk(str(tmp / "splits"))
        (tmp / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")

    save_atomically(folder, write)
    return PreparedCorpus(datasets.load_from_disk(str(folder / "splits")), report, key)


def _cached(folder: Path, key: str) -> PreparedCorpus | None:
    """The prepared corpus cached in ``folder``, or None (a damaged entry is removed)."""
    for partial in remove_partial_folders(folder.parent):
        log.info("removed %s, left by a run killed while it saved a corpus", partial)
    if not (folder / "report.json").exists():
        return None
    try:
        report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        splits = datasets.load_from_disk(str(folder / "splits"))
        # a damaged file of the same size loads: its content must still match its digest
        if {name: pairs_digest(split) for name, split in splits.items()} != report["digests"]:
            raise ValueError("content does not match its digest")
        return PreparedCorpus(splits, report, key)
    except Exception as error:  # a damaged cache entry (the errors of json and pyarrow vary): rebuild it
        warnings.warn(f"rebuilding the damaged cache {folder} ({type(error).__name__})", stacklevel=3)
        shutil.rmtree(folder, ignore_errors=True)
    return None


def load_corpus(cfg: DataConfig) -> datasets.DatasetDict:
    """The prepared train, valid and test splits (string columns ``src`` and ``tgt``)."""
    return prepare_corpus(cfg).splits


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
            out[name] = train.take(order[start : start + sizes[name]])  # a seeded random sample, in random order
            start += sizes[name]
        rest = train.take(np.sort(order[start:]))
        # held out by source sentence: a corpus may give one source several translations (Tatoeba
        # does), and a model that trained on one of them reproduces it for the held-out other, so
        # every training pair whose source is held out leaves training (a repeated pair among
        # them). Sources compare as the model reads them: a decomposed "ä" or another space gives
        # the same token ids, so it is the same source
        held_sources = pa.concat_arrays([model_texts(out[name].column("src")) for name in held])
        held_pairs = pa.concat_arrays([_pair_keys(out[name]) for name in held])
        same_source = pc.is_in(model_texts(rest.column("src")), value_set=held_sources)
        same_pair = int(pc.sum(pc.is_in(_pair_keys(rest), value_set=held_pairs)).as_py() or 0)
        train = rest.filter(pc.invert(same_source))
        if len(train) == 0:
            raise ConfigError(
                f"data.num_valid: holding out {' + '.join(map(str, sizes.values()))} pairs for "
                f"{' and '.join(held)} leaves no training pair: all {len(rest):,} others translate a held-out "
                "source; give the corpus more sources, or its own validation and test files"
            )
        info = {
            "seed": cfg.corpus_seed,
            "pairs": sizes,
            "by": "source sentence",
            "repeats_removed_from_train": same_pair,  # the same pair again
            "translations_removed_from_train": len(rest) - len(train) - same_pair,  # its source, another target
        }
    splits = {cfg.train_split: train}
    for name, source in roles.items():
        if name != cfg.train_split:
            splits[name] = out[name] if source is None else without_bom(arrow_table(raw[source]))
    report = {
        "splits": {
            name: {
                "pairs": len(table),
                "from": "held out of training" if roles.get(name, name) is None else roles.get(name, name),
                **({} if name == cfg.train_split else {"sources_in_train": int(seen_in_training(train, table).sum())}),
            }
            for name, table in splits.items()
        },
        "cleaning": cleaning,
        "held_out": info,
        "digests": {name: pairs_digest(table) for name, table in splits.items()},  # what a checkpoint records
    }
    return datasets.DatasetDict({name: _as_dataset(table) for name, table in splits.items()}), report


def without_bom(table: pa.Table) -> pa.Table:
    """Evaluation pairs are not cleaned, but a byte-order mark (a file's first line) is never text."""
    return pa.table({name: pc.replace_substring_regex(table.column(name), "^\ufeff", "") for name in ("src", "tgt")})


def seen_in_training(train: pa.Table | datasets.Dataset, split: pa.Table | datasets.Dataset | list[str]) -> np.ndarray:
    """For each pair of ``split`` (or each source sentence in a list), whether its source
    sentence, normalised as cleaning does and read as the model reads it, is the source of a training pair (with this or
    another translation): a model may have learnt its translation by heart."""

    def sources(pairs) -> pa.Array:
        if isinstance(pairs, list):
            return pa.array(pairs, pa.string())
        return (arrow_table(pairs) if isinstance(pairs, datasets.Dataset) else pairs).column("src").combine_chunks()

    known = pc.unique(model_texts(normalize_text(sources(train))))
    return pc.is_in(model_texts(normalize_text(sources(split))), value_set=known).to_numpy(zero_copy_only=False)


def _pair_keys(table: pa.Table) -> pa.Array:
    """Each pair as the model reads it (:func:`~minitrans.data.tokenizer.model_texts`), one string."""
    src, tgt = model_texts(table.column("src")), model_texts(table.column("tgt"))
    return pc.binary_join_element_wise(src, tgt, "\x00")


def describe(report: dict) -> list[str]:
    """The report as log lines: where the data came from, what cleaning dropped, what was held out."""
    lines = [f"corpus {report['corpus']}: {report['source']}"]
    clean = report["cleaning"]
    dropped = ", ".join(f"{reason} {n:,}" for reason, n in clean["dropped"].items() if n) or "none"
    lines.append(
        f"cleaning: {clean['pairs']:,} training pairs read, {clean['normalized']:,} normalised, "
        f"dropped: {dropped}; {clean['kept']:,} kept"
    )
    for reason, pairs in clean.get("examples", {}).items():  # which rule dropped what
        lines.append(f"  {reason}, e.g. " + "; ".join(f"{src!r} -> {tgt!r}" for src, tgt in pairs))
    for name, split in report["splits"].items():
        lines.append(f"split {name}: {split['pairs']:,} pairs (from {split['from']})")
    held = report.get("held_out")
    if held:
        other = held.get("translations_removed_from_train")
        lines.append(
            f"held out of training by {held.get('by', 'pair')} (seed {held['seed']}): "
            + ", ".join(f"{name} {n:,}" for name, n in held["pairs"].items())
            + f"; removed from training: {held['repeats_removed_from_train']:,} repeats of held-out pairs"
            + ("" if other is None else f", {other:,} other translations of held-out sources")
        )
    return lines


def overlap_warnings(report: dict) -> list[str]:
    """One line for each evaluation split whose sources also occur in training."""
    return [
        f"split {name}: {split['sources_in_train']:,} of {split['pairs']:,} source sentences also occur in "
        "training (with this or another translation): a model may repeat what it learnt for them; BLEU on "
        "the unseen ones is reported beside the whole"
        for name, split in report["splits"].items()
        if split.get("sources_in_train")
    ]


# -- one split by name (evaluate.py, the benchmark) -------------------------------------------
def load_split(cfg: DataConfig, split: str, root: str | Path | None = None) -> tuple[list[str], list[str], str]:
    """Sources and references of one split: any split name the corpus has, or "train",
    "valid" / "val" and "test" for the configured training, validation and first test split
    (held-out splits included: they are drawn again exactly). ``root`` replaces the run's
    ``data.root`` (``data.path`` for data=hf). Returns (sources, references, the split's name)."""
    aliases = {"train": cfg.train_split, "valid": cfg.valid_split, "val": cfg.valid_split, "test": cfg.test_splits[0]}
    source = corpus_source(cfg)
    if root is not None and source.root_key is not None:
        cfg = replace(cfg, **{source.root_key: str(root)})
        source = corpus_source(cfg)
    available = source.available()
    name = split if split in available else aliases.get(split, split)
    read_from = name if name in available else None
    if name == cfg.train_split or (read_from is None and name in (cfg.valid_split, cfg.test_splits[0])):
        read_from = resolve_splits(cfg, source).get(name)
        if name == cfg.train_split or read_from is None:  # cleaned, or held out: drawn again exactly
            pairs = prepare_corpus(cfg).splits[name]
            return list(pairs["src"]), list(pairs["tgt"]), name
    if read_from is None:
        raise ValueError(f"no split {split!r} in {source.describe()}; it has: {', '.join(available) or 'none'}")
    pairs = without_bom(arrow_table(source.load([read_from])[read_from]))
    return pairs.column("src").to_pylist(), pairs.column("tgt").to_pylist(), name


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
        data = config_from_dict(config).data
    except (KeyError, TypeError, ValueError) as error:  # e.g. a key this version does not know
        reason = first_line(error, type(error).__name__)
        raise ValueError(f"the checkpoint's data config is unusable: {reason}") from None
    try:
        sources, references, name = load_split(data, split, data_root)
        if not sources:  # sacrebleu has nothing to score: say so rather than fail inside it
            raise ValueError(
                f"split {name!r} of {data_root or data.root or data.path} has no sentence pairs (empty files?)"
            )
        return sources, references, name
    except (ValueError, OSError) as error:
        key, where = ("data.path", data.path) if data.name == "hf" else ("data.root", data.root)
        # a relative path (not a Hub id, nor the generated corpus's no root at all)
        is_path = bool(where) and (data.name != "hf" or where.startswith(".") or bool(Path(where).suffix))
        if data_root is not None or not is_path or Path(where).expanduser().is_absolute() or Path(where).exists():
            raise
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(
            f"{reason} (the run's {key}={where} is relative: read from {Path.cwd()}); run from the folder it "
            "trained in, or pass --data-root DIR"
        ) from None
