"""Load a configured corpus as ``datasets`` Datasets and tokenise it (``map``, cached on disk)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import datasets

from minitrans.config import DataConfig
from minitrans.tokenizer import Tokenizer


def load_corpus(cfg: DataConfig) -> datasets.DatasetDict:
    """Every split the corpus has, each a Dataset with string columns ``src`` and ``tgt``."""
    if cfg.name == "generated":
        from minitrans.data.generated import generate_corpus

        if (cfg.src_lang, cfg.tgt_lang) not in (("en", "de"), ("de", "en")):
            raise ValueError(f"the generated corpus is English-German; got {cfg.src_lang}->{cfg.tgt_lang}")
        splits = generate_corpus(
            num_train=cfg.num_train,
            num_valid=cfg.num_valid,
            num_test=cfg.num_test,
            min_words=cfg.min_words,
            max_words=cfg.max_words,
            seed=cfg.corpus_seed,
        )
        src_index = 0 if cfg.src_lang == "en" else 1
        corpus = datasets.DatasetDict(
            {
                name: datasets.Dataset.from_dict(
                    {"src": [pair[src_index] for pair in pairs], "tgt": [pair[1 - src_index] for pair in pairs]}
                )
                for name, pairs in splits.items()
            }
        )
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
        out[name] = dataset.map(
            encode,
            batched=True,
            batch_size=2000,
            cache_file_name=cache_file,
            load_from_cache_file=True,
            desc=f"tokenising {name}" if len(dataset) > 5000 else None,
        ).with_format(None)
    return datasets.DatasetDict(out)
