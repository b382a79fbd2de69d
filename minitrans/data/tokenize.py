"""Token ids of a prepared corpus's splits, cached on disk by content and tokenizer:
evaluation splits as ``src_ids`` / ``tgt_ids`` columns (``Dataset.map``), the training split as
compact memory-mapped arrays (:class:`~minitrans.data.token_ids.TokenIds`). A damaged cache
entry is rebuilt with a warning."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path

import datasets
import pyarrow.compute as pc

from minitrans.data.corpus import arrow_table
from minitrans.data.digest import pairs_digest
from minitrans.data.token_ids import TokenIds, remove_partial_folders, save_atomically
from minitrans.data.tokenizer import Tokenizer


def _fingerprint(dataset: datasets.Dataset, tokenizer: Tokenizer) -> str:
    """The cache key of a split's ids: its pairs (an unambiguous encoding) and the tokenizer."""
    models = hashlib.sha256(tokenizer.src_proto).digest() + hashlib.sha256(tokenizer.tgt_proto).digest()
    return pairs_digest(dataset, prefix=models)[:16]


def tokenize_corpus(
    corpus: datasets.DatasetDict, tokenizer: Tokenizer, cache_dir: str | Path | None = None
) -> datasets.DatasetDict:
    """Add ``src_ids`` / ``tgt_ids`` columns with ``Dataset.map``; cached by content and tokenizer.
    For evaluation splits; a training split takes :func:`tokenize_pairs`."""

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
            _check_ids(out[name], len(dataset), tokenizer)
        except Exception as error:  # a damaged cache file (pyarrow's errors vary): tokenise again
            if cache_file is None or not Path(cache_file).exists():
                raise
            warnings.warn(f"rebuilding the damaged cache {cache_file} ({type(error).__name__})", stacklevel=2)
            Path(cache_file).unlink()
            out[name] = dataset.map(encode, cache_file_name=cache_file, load_from_cache_file=False, **options)
        out[name] = out[name].with_format(None)
    return datasets.DatasetDict(out)


def _check_ids(dataset: datasets.Dataset, count: int, tokenizer: Tokenizer) -> None:
    """Raise unless a tokenised split (perhaps read from a cache file) is whole: ``count`` rows,
    valid Arrow buffers, ids inside the vocabulary (a damaged file of the right size loads)."""
    table = arrow_table(dataset)
    table.validate(full=True)
    if len(table) != count:
        raise ValueError("the cached split has another number of rows")
    for column, size in (("src_ids", tokenizer.src_vocab_size), ("tgt_ids", tokenizer.tgt_vocab_size)):
        low, high = pc.min_max(pc.list_flatten(table.column(column))).values()
        if low.is_valid and not (0 <= low.as_py() and high.as_py() < size):
            raise ValueError("ids outside the vocabulary")


def tokenize_pairs(
    dataset: datasets.Dataset, tokenizer: Tokenizer, cache_dir: str | Path, key: str, chunk: int = 50000
) -> tuple[TokenIds, TokenIds]:
    """Source and target ids of a (large) split, compact and memory-mapped from the cache;
    ``key`` identifies the split's content (``PreparedCorpus.key``)."""
    digest = hashlib.sha256(tokenizer.src_proto + tokenizer.tgt_proto).hexdigest()[:16]
    folder = Path(cache_dir).expanduser() / "ids" / f"{key}-{digest}"
    remove_partial_folders(folder.parent)  # left by runs killed while saving
    if (folder / "tgt.offsets.npy").exists():
        try:
            src, tgt = TokenIds.load(folder, "src"), TokenIds.load(folder, "tgt")
            src.check(len(dataset), tokenizer.src_vocab_size)
            tgt.check(len(dataset), tokenizer.tgt_vocab_size)
            return src, tgt
        except Exception as error:  # a damaged cache entry: tokenise again
            warnings.warn(f"rebuilding the damaged cache {folder} ({type(error).__name__})", stacklevel=2)
            shutil.rmtree(folder, ignore_errors=True)
    table = arrow_table(dataset)

    def chunks(column: str):
        for start in range(0, len(table), chunk):
            yield table.column(column).slice(start, chunk).to_pylist()

    src = TokenIds.encode(chunks("src"), tokenizer.encode_src)
    tgt = TokenIds.encode(chunks("tgt"), tokenizer.encode_tgt)
    save_atomically(folder, lambda tmp: (src.save(tmp, "src"), tgt.save(tmp, "tgt")))
    return TokenIds.load(folder, "src"), TokenIds.load(folder, "tgt")
