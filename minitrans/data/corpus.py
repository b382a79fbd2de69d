"""Load a configured corpus as ``datasets`` Datasets and tokenise it (``map``, cached on disk)."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import datasets

from minitrans.config import DataConfig
from minitrans.tokenizer import Tokenizer


def load_corpus(cfg: DataConfig) -> datasets.DatasetDict:
    """Every split the corpus has, each a Dataset with string columns ``src`` and ``tgt``."""
    if cfg.name == "generated":
        corpus = _generated(cfg)
    else:
        from minitrans.data.multi30k import DEFAULT_ROOT, load_multi30k

        corpus = load_multi30k(cfg.root or DEFAULT_ROOT, cfg.src_lang, cfg.tgt_lang)
    needed = [cfg.train_split, cfg.valid_split, *cfg.test_splits]
    missing = [name for name in needed if name not in corpus]
    if missing:
        raise ValueError(f"corpus {cfg.name!r} has no split(s) {missing}; it has {sorted(corpus)}")
    for name in needed:
        if len(corpus[name]) == 0:
            raise ValueError(f"split {name!r} of corpus {cfg.name!r} is empty")
    return corpus


def _generated(cfg: DataConfig, with_train: bool = True) -> datasets.DatasetDict:
    """The embedded corpus, regenerated from its seed and sizes (the training split, the
    slowest to draw, can be skipped: the other splits do not depend on it)."""
    from minitrans.data.generated import generate_corpus

    if (cfg.src_lang, cfg.tgt_lang) not in (("en", "de"), ("de", "en")):
        raise ValueError(f"the generated corpus is English-German; got {cfg.src_lang}->{cfg.tgt_lang}")
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


def load_split(cfg: DataConfig, split: str, root: str | Path | None = None) -> tuple[list[str], list[str], str]:
    """Sources and references of one split: any split name the corpus has, or "train",
    "valid" / "val" and "test" for the configured training, validation and first test split.
    Multi30k is read from ``root``, else ``cfg.root``, else data/multi30k. Returns (sources,
    references, the split's real name)."""
    aliases = {"train": cfg.train_split, "valid": cfg.valid_split, "val": cfg.valid_split, "test": cfg.test_splits[0]}
    if cfg.name == "multi30k":
        from minitrans.data.multi30k import DEFAULT_ROOT, available_splits, load_multi30k

        folder = Path(root or cfg.root or DEFAULT_ROOT)
        name = split if split in available_splits(folder, cfg.src_lang, cfg.tgt_lang) else aliases.get(split, split)
        pairs = load_multi30k(folder, cfg.src_lang, cfg.tgt_lang, splits=[name])[name]
    else:
        name = aliases.get(split, split)
        if name not in ("train", "valid", "test"):
            raise ValueError(f"the generated corpus has splits train, valid and test, not {split!r}")
        pairs = _generated(cfg, with_train=name == "train")[name]
    return list(pairs["src"]), list(pairs["tgt"]), name


def load_run_split(
    config: dict, split: str = "test", data_root: str | Path | None = None
) -> tuple[list[str], list[str], str]:
    """Source and reference sentences of a split of the corpus a run was trained on, read from
    the run's configuration (a checkpoint's ``config``, e.g. ``Translator.config``): the
    generated corpus is regenerated from its seed and sizes; Multi30k is read from
    ``data_root``, else the run's ``data.root``, else ``data/multi30k``. "train", "valid" and
    "test" also name the run's own train, validation and first test split (e.g. "test" is
    test_2016_flickr for Multi30k). Returns (sources, references, split name)."""
    try:
        data = DataConfig(**config["data"])
    except (KeyError, TypeError, ValueError) as error:  # e.g. a key this version does not know
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise ValueError(f"the checkpoint's data config is unusable: {reason}") from None
    return load_split(data, split, data_root)


def _fingerprint(dataset: datasets.Dataset, tokenizer: Tokenizer) -> str:
    digest = hashlib.sha256(tokenizer.src_proto + tokenizer.tgt_proto)
    for src, tgt in zip(dataset["src"], dataset["tgt"]):
        digest.update(f"{src}\t{tgt}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def tokenize_corpus(
    corpus: datasets.DatasetDict, tokenizer: Tokenizer, cache_dir: str | Path | None = None
) -> datasets.DatasetDict:
    """Add ``src_ids`` / ``tgt_ids`` columns with ``Dataset.map``; cached by content and tokenizer."""

    def encode(batch):
        return {"src_ids": tokenizer.encode_src(batch["src"]), "tgt_ids": tokenizer.encode_tgt(batch["tgt"])}

    out = {}
    for name, dataset in corpus.items():
        cache_file = None
        if cache_dir is not None:
            folder = Path(cache_dir).expanduser() / "tokenized"
            folder.mkdir(parents=True, exist_ok=True)
            cache_file = str(folder / f"{_fingerprint(dataset, tokenizer)}.arrow")
        options = {"batched": True, "batch_size": 2000, "desc": f"tokenising {name}" if len(dataset) > 5000 else None}
        try:
            out[name] = dataset.map(encode, cache_file_name=cache_file, load_from_cache_file=True, **options)
        except Exception as error:  # a damaged cache file (pyarrow's errors vary): tokenise again
            if cache_file is None or not Path(cache_file).exists():
                raise
            warnings.warn(f"rebuilding the damaged cache {cache_file} ({type(error).__name__})", stacklevel=2)
            Path(cache_file).unlink()
            out[name] = dataset.map(encode, cache_file_name=cache_file, load_from_cache_file=False, **options)
        out[name] = out[name].with_format(None)
    return datasets.DatasetDict(out)
