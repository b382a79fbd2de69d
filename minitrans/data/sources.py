"""Where a corpus comes from, behind one small protocol, chosen once from ``data.name``:

    generated   the embedded grammar (minitrans.data.generated), regenerated from its seed
    parallel    a folder of {split}.{lang}[.gz] files (minitrans.data.parallel); multi30k is
                its preset (a default folder, and a hint that says how to fill it)
    hf          anything ``datasets.load_dataset`` reads (minitrans.data.hf)

A source says which splits it has, identifies its content cheaply (for the cache key of the
prepared corpus) and loads splits as ``src``/``tgt`` pairs. Which split plays which part
(:func:`resolve_splits`) is decided here once, for training and for evaluation alike.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

import datasets

from minitrans.core.checks import ConfigError
from minitrans.core.config import DataConfig
from minitrans.data.digest import files_digest
from minitrans.data.generated import generate_corpus
from minitrans.data.hf import load_hf
from minitrans.data.multi30k import DEFAULT_ROOT, prepare_hint
from minitrans.data.parallel import (
    available_splits,
    corpus_files,
    half_splits,
    load_parallel,
    missing_pair_message,
    split_paths,
)

VALID_ALIASES = ("valid", "validation", "val", "dev")  # tried in order when data.valid_split is absent
TEST_ALIASES = ("test",)


class CorpusSource(Protocol):
    root_key: str | None  # the data.* key a --data-root replaces (None: nothing to replace)
    is_random_order: bool  # its splits come in a random order (drawn), not a file's (perhaps sorted)

    def describe(self) -> str:
        """Where the data comes from, in a few words (the report's ``source``)."""

    def available(self) -> list[str]:
        """Every split the corpus has for the language pair (raises ConfigError when none)."""

    def halves(self) -> dict[str, tuple[Path, str]]:
        """{split: (the file present, the language missing)}: splits with one side only."""

    def identity(self, splits: list[str]) -> list:
        """Cheap identity of the named splits' content: part of the prepared corpus's cache key."""

    def load(self, splits: list[str]) -> datasets.DatasetDict:
        """The named splits as ``src``/``tgt`` string pairs."""

    def identity_now(self, splits: list[str]) -> list | None:
        """:meth:`identity` computed afresh from the files as they are now, to compare with the
        one taken before :meth:`load` (None where nothing can change meanwhile)."""


def corpus_source(cfg: DataConfig) -> CorpusSource:
    """The configured corpus's source (``data.name`` is read here and nowhere else)."""
    if cfg.name == "generated":
        return GeneratedSource(cfg)
    if cfg.name == "hf":
        return HfSource(cfg)
    if cfg.name == "multi30k":
        root = Path(cfg.root).expanduser() if cfg.root else DEFAULT_ROOT
        return ParallelSource(cfg, root, prepare_hint(root))
    return ParallelSource(cfg, Path(cfg.root).expanduser())


def resolve_splits(cfg: DataConfig, source: CorpusSource) -> dict[str, str | None]:
    """{configured split name: the corpus split it is read from, or None to hold it out}."""
    check_split_names(cfg)
    available, halves = source.available(), source.halves()

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


def check_split_names(cfg: DataConfig) -> None:
    """Refuse, before any work, a validation or test split that is the training split."""
    if cfg.valid_split == cfg.train_split:
        raise ConfigError(
            f"data.valid_split: {cfg.valid_split!r} is the training split; validation needs pairs the model "
            "does not train on: name another split, or one the corpus lacks to hold pairs out (data.valid_split=valid)"
        )
    if cfg.train_split in cfg.test_splits:
        raise ConfigError(
            f"data.test_splits: {cfg.train_split!r} is the training split; a test needs pairs the model does not "
            "train on: name other splits, or one the corpus lacks to hold pairs out (data.test_splits=[test])"
        )
    if cfg.valid_split in cfg.test_splits:
        raise ConfigError(
            f"data.valid_split: {cfg.valid_split!r} is also in data.test_splits: the best checkpoint would be "
            "chosen on the test pairs; name another split (data.valid_split=valid)"
        )
    twice = sorted({name for name in cfg.test_splits if cfg.test_splits.count(name) > 1})
    if twice:
        raise ConfigError(f"data.test_splits: {', '.join(map(repr, twice))} named twice; name each split once")


# -- the embedded grammar ---------------------------------------------------------------------
@dataclass
class GeneratedSource:
    cfg: DataConfig
    root_key = None
    is_random_order = True  # each split drawn by its own seeded generator

    def describe(self) -> str:
        return f"generated (seed {self.cfg.corpus_seed})"

    def available(self) -> list[str]:
        return ["train", "valid", "test"]

    def halves(self) -> dict:
        return {}

    def identity(self, splits: list[str]) -> list:
        # the generator's code (its module and the minitrans.data modules it draws on) and,
        # through the settings in the cache key, its seed and sizes
        return ["generated", _code_digest("minitrans.data.generated")]

    def identity_now(self, splits: list[str]) -> None:
        return None

    def load(self, splits: list[str]) -> datasets.DatasetDict:
        """The embedded corpus, regenerated from its seed and sizes (the training split, the
        slowest to draw, only when asked for: the other splits do not depend on it)."""
        cfg = self.cfg
        if (cfg.src_lang, cfg.tgt_lang) not in (("en", "de"), ("de", "en")):
            raise ConfigError(
                f"data.src_lang: the generated corpus is English-German; got {cfg.src_lang}->{cfg.tgt_lang}"
            )
        try:
            generated = generate_corpus(
                num_train=cfg.num_train if "train" in splits else 0,
                num_valid=cfg.num_valid,
                num_test=cfg.num_test,
                min_words=cfg.min_words,
                max_words=cfg.max_words,
                seed=cfg.corpus_seed,
            )
        except RuntimeError as error:  # the grammar cannot give that many distinct pairs of those lengths
            raise ConfigError(
                f"data.min_words: {error} of {cfg.min_words} to {cfg.max_words} words from the grammar; "
                "lower data.min_words / data.max_words, or ask for fewer pairs"
            ) from None
        src = 0 if cfg.src_lang == "en" else 1
        return datasets.DatasetDict(
            {
                name: datasets.Dataset.from_dict({"src": [p[src] for p in pairs], "tgt": [p[1 - src] for p in pairs]})
                for name, pairs in generated.items()
                if name in splits
            }
        )


def _code_digest(module_name: str) -> str:
    """A digest of a module's source and of every ``minitrans.data`` module it uses, found
    through its globals (so that splitting the module keeps its data-producing code covered)."""
    __import__(module_name)
    seen, todo, digest = set(), [module_name], hashlib.sha256()
    while todo:
        name = todo.pop()
        module = sys.modules.get(name)
        if name in seen or module is None or not getattr(module, "__file__", None):
            continue
        seen.add(name)
        for value in vars(module).values():
            used = value.__name__ if isinstance(value, type(sys)) else getattr(value, "__module__", None)
            if isinstance(used, str) and used.startswith("minitrans.data.") and used not in seen:
                todo.append(used)
    for name in sorted(seen):
        digest.update(name.encode() + b"\0" + Path(sys.modules[name].__file__).read_bytes())
    return digest.hexdigest()


# -- a folder of {split}.{lang} files ---------------------------------------------------------
@dataclass
class ParallelSource:
    cfg: DataConfig
    root: Path
    hint: str = ""  # how to get the files (multi30k)
    root_key = "root"
    is_random_order = False

    def describe(self) -> str:
        return str(self.root)

    def available(self) -> list[str]:
        cfg = self.cfg
        try:
            files = corpus_files(self.root, self.hint, cfg.src_lang, cfg.tgt_lang)
        except FileNotFoundError as error:
            raise ConfigError(f"data.root: {error}") from None
        present = sorted({lang for _, lang in files})
        absent = [lang for lang in (cfg.src_lang, cfg.tgt_lang) if lang not in present]
        if absent:  # no file of the language: the language is wrong, unless there is no corpus file at all
            key = "data.root" if len(absent) == 2 else "data.src_lang" if cfg.src_lang in absent else "data.tgt_lang"
            message = missing_pair_message(self.root, cfg.src_lang, cfg.tgt_lang)
            raise ConfigError(f"{key}: {message}{f'. {self.hint}' if self.hint else ''}")
        return available_splits(self.root, cfg.src_lang, cfg.tgt_lang)

    def halves(self) -> dict[str, tuple[Path, str]]:
        return half_splits(self.root, self.cfg.src_lang, self.cfg.tgt_lang)

    def identity(self, splits: list[str]) -> list:
        root = self.root.resolve()
        paths = [
            path for split in sorted(splits) for path in split_paths(root, self.cfg.src_lang, self.cfg.tgt_lang, split)
        ]
        return [str(root), files_digest(paths, root)]  # every layout's names; their content, not their times

    def identity_now(self, splits: list[str]) -> list:
        return self.identity(splits)

    def load(self, splits: list[str]) -> datasets.DatasetDict:
        try:
            return load_parallel(self.root, self.cfg.src_lang, self.cfg.tgt_lang, splits, hint=self.hint)
        except (FileNotFoundError, ValueError) as error:
            raise ConfigError(f"data.root: {error}") from None


# -- anything ``datasets`` loads --------------------------------------------------------------
@dataclass
class HfSource:
    cfg: DataConfig
    _loaded: tuple | None = field(default=None, repr=False)  # (pairs, fingerprints): loaded once
    _content: str | None = field(default=None, repr=False)  # the digest of a local path's files
    root_key = "path"
    is_random_order = False

    def _local_digest(self) -> str | None:
        """The content digest of a local file or folder (None for a Hub id)."""
        path = Path(self.cfg.path).expanduser()
        if self._content is None and path.exists():
            files = [path] if path.is_file() else [f for f in sorted(path.rglob("*")) if f.is_file()]
            hidden = [f for f in files if any(part.startswith(".") for part in f.relative_to(path.parent).parts)]
            self._content = files_digest([f for f in files if f not in hidden], path.parent)
        return self._content

    def _load_all(self) -> tuple[datasets.DatasetDict, list[str]]:
        if self._loaded is None:
            cfg, content = self.cfg, self._local_digest()
            if content is not None:  # datasets keys its conversion of local files by their times: key it by content
                cfg = replace(cfg, cache_dir=str(self._conversion_cache(content)))
            self._loaded = load_hf(cfg)
        return self._loaded

    def _conversion_cache(self, content: str) -> Path:
        return Path(self.cfg.cache_dir).expanduser() / "hf" / f"content-{content[:16]}"

    def describe(self) -> str:
        return self.cfg.path + (f" ({self.cfg.subset})" if self.cfg.subset else "")

    def available(self) -> list[str]:
        return list(self._load_all()[0])

    def halves(self) -> dict:
        return {}

    def identity(self, splits: list[str]) -> list:
        content = self._local_digest()
        if content is None:
            return self._load_all()[1]  # a Hub dataset: datasets' fingerprints of its revision
        return [str(Path(self.cfg.path).expanduser().resolve()), content]

    def load(self, splits: list[str]) -> datasets.DatasetDict:
        return self._load_all()[0]

    def identity_now(self, splits: list[str]) -> list | None:
        if self._content is None:  # a Hub dataset: its revision's fingerprints do not change
            return None
        before, self._content = self._content, None
        now = self.identity(splits)
        if self._content != before:  # read again; datasets' conversion was keyed by the digest taken before
            shutil.rmtree(self._conversion_cache(before), ignore_errors=True)
            self._loaded = None
        return now
