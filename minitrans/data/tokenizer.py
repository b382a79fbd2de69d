"""SentencePiece subword tokenisation: train on the training split, cache, save, encode, decode.

Ids are fixed across every model: 0 pad, 1 unk, 2 bos, 3 eos. Byte fallback is on, so a
character never seen in training is spelt as UTF-8 byte pieces instead of becoming ``<unk>``.
A joint vocabulary (one model for both languages) is the default; with ``joint=False`` each
language gets its own model. The serialized models travel inside checkpoints, so a checkpoint
alone is enough to translate.

Text keeps its own characters: SentencePiece's default normalisation (``nmt_nfkc``) would
rewrite full-width ``？`` and ``１０`` as ASCII and U+200C (zero-width non-joiner) as a space,
so a model could never write a reference's characters. New models normalise by
:func:`normalization_rules` instead: every whitespace character becomes a space (as cleaning
does), nothing else changes; text is composed to NFC before SentencePiece sees it. On ASCII and
composed Latin text (the generated corpus) this is what ``nmt_nfkc`` did, so its pieces and ids
are unchanged. Models trained before keep the normalisation their proto holds. :func:`model_text` is that
view of a text, the key by which two spellings of one sentence are one sentence.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import tempfile
import unicodedata
import warnings
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

from minitrans.core.textio import MB, read_bounded
from minitrans.core.utils import write_atomic

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
RULES_NAME = "minitrans_whitespace"  # the name a model's proto gives these rules
MODEL_LIMIT = 256 * MB  # a SentencePiece model file (a 32k vocabulary's is under 1 MB)
_SPACES = re.compile(" {2,}")  # a run of spaces in a decoded target


@functools.cache
def _whitespace() -> tuple[int, ...]:
    """The code points other than the space that the rules make a space (all of whitespace is
    in the BMP). Found when first needed, not at import (a scan of the BMP)."""
    return tuple(c for c in range(0x10000) if c != 0x20 and (chr(c).isspace() or unicodedata.category(chr(c)) == "Zs"))


@functools.cache
def normalization_rules() -> str:
    """SentencePiece's rule table (code points in hex, tab, replacement): whitespace other than
    the space becomes a space; every other character is kept (no NFKC, which rewrites full-width
    forms)."""
    return "".join(f"{c:X}\t20\n" for c in _whitespace())


def composed(text: str) -> str:
    """``text`` in Unicode NFC (composed ä, not a + combining diaeresis), as models see it."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


@functools.cache
def _to_space() -> dict[int, int]:
    return dict.fromkeys(_whitespace(), 0x20)


def model_text(text: str) -> str:
    """``text`` as a model trained here reads it: composed (NFC), every whitespace character a
    space, runs of spaces one, none at either end — what SentencePiece segments. Two texts get
    the same token ids exactly when they have the same model text, so this is the key by which
    two spellings of one sentence (composed and decomposed, other spaces) are the same sentence."""
    return " ".join(word for word in composed(text).translate(_to_space()).split(" ") if word)


def model_texts(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """:func:`model_text` of each string of an Arrow column (a null stays null). Most text is
    composed already and spaced as cleaning leaves it: only the rest is rewritten."""
    texts = pa.array([None if text is None else composed(text) for text in column.to_pylist()], pa.string())
    others = "".join(f"\\x{{{c:x}}}" for c in _whitespace())
    if not pc.any(pc.match_substring_regex(texts, f"[{others}]|  |^ | $")).as_py():
        return texts
    return pc.utf8_trim(pc.replace_substring_regex(texts, f"[ {others}]+", " "), " ")


def _train_model(texts: Sequence[str], vocab_size: int, model_type: str) -> bytes:
    """Train one SentencePiece model in memory and return its serialized proto."""
    # Every character and the 256 byte pieces need a slot; a smaller request is raised to that.
    smallest = 4 + 256 + len(set().union(*map(set, texts)))
    if vocab_size < smallest:
        warnings.warn(
            f"vocab_size={vocab_size} cannot hold the corpus' characters and byte pieces; using {smallest}",
            stacklevel=3,
        )
        vocab_size = smallest
    model = io.BytesIO()
    with tempfile.TemporaryDirectory() as folder:  # the trainer reads its rules from a file
        rules = Path(folder) / "rules.tsv"
        rules.write_text(normalization_rules(), encoding="utf-8")
        _train(map(composed, texts), model, vocab_size, model_type, str(rules))
    # the proto records the rules file's (temporary) path: name the rules instead, so that the
    # same corpus always gives the same bytes
    proto = model_pb2.ModelProto.FromString(model.getvalue())
    proto.normalizer_spec.ClearField("normalization_rule_tsv")
    proto.normalizer_spec.name = RULES_NAME
    return proto.SerializeToString()


def _train(texts, model: io.BytesIO, vocab_size: int, model_type: str, rules: str) -> None:
    spm.SentencePieceTrainer.train(
        sentence_iterator=texts,
        model_writer=model,
        normalization_rule_tsv=rules,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=1.0,
        byte_fallback=True,
        hard_vocab_limit=False,  # a small corpus may not support the requested size
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        num_threads=os.cpu_count() or 1,
        minloglevel=2,
    )


class Tokenizer:
    """Source and target SentencePiece processors (the same one for a joint vocabulary)."""

    pad_id, unk_id, bos_id, eos_id = PAD_ID, UNK_ID, BOS_ID, EOS_ID

    def __init__(self, src_proto: bytes, tgt_proto: bytes | None = None) -> None:
        self.src_proto, self.tgt_proto = src_proto, tgt_proto or src_proto
        self.src = spm.SentencePieceProcessor(model_proto=self.src_proto)
        self.tgt = (
            self.src
            if tgt_proto is None or tgt_proto == src_proto
            else spm.SentencePieceProcessor(model_proto=self.tgt_proto)
        )

    @property
    def is_joint(self) -> bool:
        return self.src is self.tgt

    @property
    def src_vocab_size(self) -> int:
        return self.src.get_piece_size()

    @property
    def tgt_vocab_size(self) -> int:
        return self.tgt.get_piece_size()

    # -- building -----------------------------------------------------------------------
    @classmethod
    def train(
        cls,
        src_texts: Sequence[str],
        tgt_texts: Sequence[str],
        vocab_size: int,
        model_type: str = "unigram",
        joint: bool = True,
        cache_dir: str | Path | None = None,
    ) -> Tokenizer:
        """Train on the training split, or load the cached model trained on the same corpus
        with the same settings (the cache key is a fingerprint of both)."""
        # Each side's count, then every text's byte length before its bytes: no separator a
        # sentence could hold, so a row with a newline and two rows never share a cache entry.
        fingerprint = hashlib.sha256(f"{vocab_size}|{model_type}|{joint}|v3".encode())
        for texts in (src_texts, tgt_texts):
            fingerprint.update(len(texts).to_bytes(8, "little"))
            for text in texts:
                data = text.encode("utf-8", "surrogatepass")
                fingerprint.update(len(data).to_bytes(8, "little") + data)
        cache = Path(cache_dir).expanduser() / "spm" / fingerprint.hexdigest()[:16] if cache_dir else None
        if cache is not None and (cache / "src.model").exists():
            try:
                return cls.load(cache)
            except (RuntimeError, OSError) as error:  # a damaged cache entry is rebuilt, not fatal
                warnings.warn(f"rebuilding the damaged tokenizer cache {cache} ({type(error).__name__})", stacklevel=2)
        if joint:
            tokenizer = cls(_train_model([*src_texts, *tgt_texts], vocab_size, model_type))
        else:
            tokenizer = cls(
                _train_model(src_texts, vocab_size, model_type), _train_model(tgt_texts, vocab_size, model_type)
            )
        if cache is not None:
            tokenizer.save(cache)
        return tokenizer

    def save(self, folder: str | Path) -> None:
        """Write src.model (and tgt.model if separate) atomically into ``folder``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        files = (
            {"src.model": self.src_proto}
            if self.is_joint
            else {"src.model": self.src_proto, "tgt.model": self.tgt_proto}
        )
        for name, proto in files.items():
            write_atomic(folder / name, proto)

    @classmethod
    def load(cls, folder: str | Path) -> Tokenizer:
        folder = Path(folder)
        tgt = folder / "tgt.model"
        src = read_bounded(folder / "src.model", MODEL_LIMIT)  # a shared folder's: regular and bounded
        return cls(src, read_bounded(tgt, MODEL_LIMIT) if tgt.exists() else None)

    def to_state(self) -> dict:
        return {"src": self.src_proto, "tgt": None if self.is_joint else self.tgt_proto}

    @classmethod
    def from_state(cls, state: dict) -> Tokenizer:
        return cls(state["src"], state.get("tgt"))

    # -- using --------------------------------------------------------------------------
    def encode_src(self, texts: Sequence[str]) -> list[list[int]]:
        """Source sentences -> ids ending in EOS (so even an empty line has one token)."""
        return self.src.encode(list(map(composed, texts)), add_eos=True)

    def encode_tgt(self, texts: Sequence[str]) -> list[list[int]]:
        """Target sentences -> ids without BOS/EOS (batching adds them)."""
        return self.tgt.encode(list(map(composed, texts)))

    def decode_tgt(self, ids: Sequence[int]) -> str:
        """Target ids -> text, stopping at the first EOS and skipping BOS/padding.

        A word-start piece that stands alone (``▁`` followed by another ``▁…`` piece, or last)
        decodes to a space of its own; training text never holds two spaces in a row nor one at
        the end (the normaliser removes them), so neither does a translation."""
        out = []
        for token in ids:
            if token == EOS_ID:
                break
            if token not in (PAD_ID, BOS_ID):
                out.append(int(token))
        return _SPACES.sub(" ", self.tgt.decode(out)).strip(" ")

    def src_pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.src.id_to_piece(int(i)) for i in ids]

    def tgt_pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.tgt.id_to_piece(int(i)) for i in ids]


__all__ = ["BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", "Tokenizer"]
