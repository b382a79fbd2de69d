"""Typed configuration: the dataclass schemas behind ``conf/``, their defaults and validation.

The schemas are the one home of every default: a ``conf/`` group file states only what its
option changes (a model file its ``kind``, the Multi30k file its languages and splits), and
``tests/project/test_compose.py`` refuses a group file that restates a default. Derived values
(``d_k``, ``d_v``, ``d_attention``) are computed here once, in ``__post_init__``, and so are
recorded in every checkpoint's config and in ``summary.json``.

Hydra composes YAML files over these schemas (registered by
:func:`minitrans.core.hydra_config.register_configs`; Hydra's own API is used only there, in
``core.hydra_sweep``, ``bench.data`` and ``scripts/``), so a misspelt key or a wrong type fails at start. Values that are well-typed but
impossible (``num_heads=0``, a dropout of 1.5) are refused by each schema's ``__post_init__``
with a :class:`ConfigError` naming the key. Library code receives these dataclasses, never a
``DictConfig``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from omegaconf import MISSING

from minitrans.core.checks import check, check_range
from minitrans.core.decoding_options import DecodingOptions, check_decoding
from minitrans.core.knob import knob
from minitrans.core.memory import ALLOCATORS
from minitrans.core.model_config import (  # noqa: F401  (the models' schemas, imported from here)
    CROSS_ATTENTION,
    IMPLEMENTATIONS,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_WIDTH,
    POSITIONS,
    TEACHING_SWITCHES,
    RNNConfig,
    TransformerConfig,
    teaching_switches,
)

SCHEDULES = ("inverse_sqrt", "linear", "cosine")  # trainer.schedule; minitrans.training.schedule implements them
FINAL_WEIGHTS = ("best", "last")  # trainer.final_weights; minitrans.training.checkpoints applies it
PRECISIONS = ("auto", "native", "fp32", "bf16")  # trainer.precision; see minitrans.training.step.autocast_dtype_for
DEVICES = ("auto", "cpu", "cuda", "mps")  # trainer.device and the scripts' --device; see core.utils.pick_device


MAX_VOCAB = 1_000_000
MAX_SEED = 2**32 - 1  # NumPy's seeds


@dataclass
class CleanConfig:
    """How the training pairs are cleaned before anything else sees them (evaluation splits are
    never filtered). Every dropped pair is counted by its reason in the log and summary.json."""

    normalize: bool = knob(True, "strip, collapse runs of whitespace, remove control characters")
    drop_empty: bool = knob(True, "a pair with an empty side")
    max_chars: int | None = knob(1000, "a pair with a longer side (characters); null: no limit")
    max_ratio: float | None = knob(
        5.0, "longer side / shorter side, in characters (Han 3, kana/Hangul 2); null: no limit"
    )
    drop_duplicates: bool = knob(False, "an exact repeat of an earlier pair")

    def __post_init__(self) -> None:
        check_range("data.clean.max_chars", self.max_chars, 1, optional=True)
        check_range("data.clean.max_ratio", self.max_ratio, 1, optional=True)


CORPORA = ("generated", "parallel", "multi30k", "hf")


def local_cache_dir() -> str:
    """This machine's cache folder: $MINITRANS_CACHE_DIR, else ~/.cache/minitrans. What a loaded
    checkpoint or shared folder derives is cached here, never where its saved config says."""
    return os.environ.get("MINITRANS_CACHE_DIR", "~/.cache/minitrans")


@dataclass
class DataConfig:
    name: str = knob("generated", "corpus: generated (embedded grammar) | parallel (a folder of files) | multi30k | hf")
    src_lang: str = knob("en", "source language code (a file suffix, or a key of the translation field)")
    tgt_lang: str = knob("de", "target language code")
    root: str | None = knob(
        None, "parallel / multi30k: folder of {split}.{lang}[.gz] files; multi30k: None -> data/multi30k"
    )
    path: str | None = knob(
        None, "hf: a Hub id, or a local JSON Lines / CSV / TSV / Parquet file or folder, or save_to_disk"
    )
    subset: str | None = knob(None, "hf: the Hub dataset's configuration name (e.g. de-en)")
    src_field: str | None = knob(None, "hf: flat column of the source; None -> the translation field, else src_lang")
    tgt_field: str | None = knob(None, "hf: flat column of the target; None -> the translation field, else tgt_lang")
    train_split: str = knob("train", "split to train on")
    valid_split: str = knob("valid", "split for validation loss, BLEU and samples; missing: held out of training")
    test_splits: list[str] = knob(factory=lambda: ["test"], help="scored at the end; first missing: held out")
    num_train: int = knob(30000, "generated corpus: training pairs")
    num_valid: int = knob(
        500, "generated corpus: validation pairs; other corpora: pairs held out when no validation split"
    )
    num_test: int = knob(1000, "generated corpus: test pairs; other corpora: pairs held out when no test split")
    min_words: int = knob(4, "generated corpus: shortest source sentence, in words")
    max_words: int = knob(55, "generated corpus: longest source sentence, in words")
    corpus_seed: int = knob(1234, "generated corpus: its random seed; other corpora: draws the held-out pairs")
    clean: CleanConfig = knob(factory=CleanConfig, help="cleaning of the training pairs (data.clean.*)")
    # tokenizer
    vocab_size: int = knob(2000, "SentencePiece vocabulary size (per language unless joint_vocab)")
    spm_model_type: str = knob("unigram", "sentencepiece: unigram or bpe")
    joint_vocab: bool = knob(True, "one vocabulary for both languages")
    spm_sample: int = knob(200000, "SentencePiece trains on at most this many training pairs (a seeded sample)")
    max_tokens: int = knob(128, "training pairs longer than this (in subwords) are dropped")
    cache_dir: str = knob(
        factory=lambda: local_cache_dir(),
        help="sentencepiece models and tokenised corpora; MINITRANS_CACHE_DIR moves it",
        shown="~/.cache/minitrans or $MINITRANS_CACHE_DIR",
    )

    def __post_init__(self) -> None:
        if isinstance(self.clean, dict):  # rebuilt from a checkpoint's saved config
            self.clean = CleanConfig(**self.clean)
        check(self.name in CORPORA, "data.name", f"unknown corpus {self.name!r}; choose one of {', '.join(CORPORA)}")
        check(
            self.src_lang.casefold() != self.tgt_lang.casefold(),
            "data.tgt_lang",
            f"source and target are both {self.src_lang!r}"
            + ("" if self.src_lang == self.tgt_lang else f" ({self.tgt_lang!r}): language codes ignore case"),
        )
        check(self.name != "parallel" or bool(self.root), "data.root", "data=parallel needs data.root=FOLDER")
        check(self.name != "hf" or bool(self.path), "data.path", "data=hf needs data.path=HUB_ID_OR_LOCAL_PATH")
        check(
            (self.src_field is None) == (self.tgt_field is None),
            "data.src_field",
            "set both data.src_field and data.tgt_field, or neither",
        )
        for key, high in (
            ("num_train", 10_000_000),  # the generated corpus: sentences are drawn one by one
            ("num_valid", 100_000),  # also the pairs held out when a corpus has no validation split
            ("num_test", 100_000),
            ("vocab_size", MAX_VOCAB),
            ("max_tokens", MAX_POSITIONS),
            ("max_words", 1000),
            ("spm_sample", 100_000_000),
        ):
            check_range(f"data.{key}", getattr(self, key), 1, high)
        check_range("data.min_words", self.min_words, 1, self.max_words)
        check_range("data.corpus_seed", self.corpus_seed, 0, MAX_SEED)
        check(self.spm_model_type in ("unigram", "bpe"), "data.spm_model_type", "must be 'unigram' or 'bpe'")
        check(len(self.test_splits) > 0, "data.test_splits", "name at least one test split")


@dataclass
class TrainerConfig:
    max_steps: int = knob(3000, "optimizer steps; the run also stops at max_minutes")
    max_minutes: float | None = knob(
        None, "wall-clock budget for training (not evaluation); a linear or cosine decay then ends with it"
    )
    # For the default run, a few minutes on a 2-core CPU: in a fixed time, smaller batches and so
    # more updates reach a higher BLEU than larger ones, and a small pre-norm model takes a high
    # peak rate.
    batch_tokens: int = knob(2048, "source + target subwords per batch, before padding")
    lr: float = knob(3e-3, "peak learning rate, reached after warmup_steps")
    warmup_steps: int = knob(300, "steps of linear warm-up, then the schedule's decay")
    # linear: the default run scores higher with it than with inverse_sqrt (docs/results.md). With
    # max_minutes, linear and cosine follow the training seconds too, reaching min_lr_ratio at
    # whichever budget ends first (not bitwise repeatable then)
    schedule: str = knob(
        "linear",
        "decay after warm-up: inverse_sqrt | linear | cosine (to min_lr_ratio at max_steps or max_minutes)",
    )
    min_lr_ratio: float = knob(0.0, "floor of the decay, as a fraction of lr")
    betas: list[float] = knob(factory=lambda: [0.9, 0.98], help="Adam's beta1, beta2")
    weight_decay: float = knob(0.0, "Adam's L2 weight decay")
    label_smoothing: float = knob(0.1, "training loss: label-smoothed cross-entropy (0 = plain)")
    src_word_dropout: float = knob(0.0, "word dropout: each training source piece becomes UNK with this chance")
    tgt_word_dropout: float = knob(
        0.0, "word dropout: each piece of the decoder's training input becomes UNK with this chance (labels kept)"
    )
    subword_sampling: float | None = knob(
        None,
        "each epoch, split each training piece into the two pieces BPE merged it from with this chance, and "
        "those again (a BPE-dropout); None = always the best segmentation",
    )
    r_drop: float = knob(
        0.0,
        "R-Drop: each batch runs twice with its own dropout masks, and the loss adds this weight times the two "
        "predictions' symmetric KL divergence (halved, as the token loss is the copies' mean); 0 = off",
    )
    clip_grad_norm: float = knob(1.0, "clip the gradient's global norm to this")
    eval_every: int = knob(500, "steps between validations (each also writes checkpoints/last.pt)")
    checkpoint_every: int | None = knob(None, "steps between checkpoints/last.pt; None -> eval_every")
    eval_sentences: int = knob(200, "validation sentences translated for BLEU at each validation")
    log_every: int = knob(50, "steps between training-loss points in TensorBoard")
    sample_sentences: int = knob(3, "fixed validation sentences shown as translations and attention maps")
    bleu_tokenize: str | None = knob(
        None, "sacrebleu's BLEU tokenizer (13a, zh, ja-mecab, intl, char ...); None -> its choice for data.tgt_lang"
    )
    bleu_keep_spaces: bool = knob(
        False,
        "score a pre-segmented Japanese or Chinese target with its spaces (default: removed before ja-mecab / zh)",
    )
    bleu_as_written: bool = knob(
        False,
        "score the references as written (default: both sides as the model writes text, NFC with its spaces folded)",
    )
    beam_size: int = knob(DecodingOptions.beam_size, "for the final test evaluation; 1 = greedy")
    length_penalty: float = knob(DecodingOptions.length_penalty, "beam search's length normalisation alpha (GNMT)")
    max_output_ratio: float = knob(DecodingOptions.max_output_ratio, "output length limit: ratio * source length + 10")
    average_last: int = knob(1, "average the weights of the last N checkpoints for the final model")
    # last: under a decay that ends with the budget, the last weights score higher than the best
    # validation checkpoint on Multi30k (docs/results.md, Multi30k)
    final_weights: str = knob(
        "best",
        "with average_last 1, the weights the run is judged by and translates with: best (the best"
        " validation BLEU's checkpoint, best.pt) | last (the last step's, last.pt; no best.pt is kept)",
    )
    device: str = knob("auto", "auto | cpu | cuda | mps")
    processes: str = knob("auto", "training processes: auto = 1 per physical core on a CPU, 1 on a GPU; or N")
    num_threads: int | None = knob(
        None, "torch intra-op threads; None -> torch's default (1 per process when processes > 1)"
    )
    allocator: str = knob(
        "system",
        "C allocator of the training processes when there are several: system | auto (tcmalloc, else"
        " jemalloc, where installed, else system) | tcmalloc | jemalloc; the same weights, other speed",
    )
    compile: bool = knob(False, "torch.compile the model")
    precision: str = knob(
        "auto",
        "auto | native | fp32 | bf16: bf16 autocast with float32 weights; auto = bf16 on CUDA, else fp32;"
        " native = bf16 also on a CPU with AVX512-BF16 or AMX",
    )
    max_bad_steps: int = knob(10, "consecutive non-finite steps before training stops")
    resume: bool = knob(True, "continue from the run folder's checkpoints/last.pt if there is one")
    resume_from: str | None = knob(None, "start from this training checkpoint (used when the run folder has none)")
    crash_at_step: int | None = knob(None, "testing aid: SIGKILL the process right after this step", hidden=True)
    progress: bool = knob(True, "tqdm progress bar")

    def __post_init__(self) -> None:
        for key, high in (
            ("max_steps", 10**9),
            ("batch_tokens", 10**8),
            ("warmup_steps", 10**9),
            ("eval_every", 10**9),
            ("checkpoint_every", 10**9),
            ("eval_sentences", 100_000),
            ("log_every", 10**9),
            ("average_last", 1000),
            ("max_bad_steps", 10**6),
            ("crash_at_step", 10**9),
            ("num_threads", 4096),
        ):
            low = 0 if key == "warmup_steps" else 1
            check_range(f"trainer.{key}", getattr(self, key), low, high, optional=key in self._OPTIONAL)
        check_range("trainer.sample_sentences", self.sample_sentences, 0, 1000)
        if self.bleu_tokenize is not None:
            from minitrans.core.metrics import BLEU_TOKENIZERS

            check(
                self.bleu_tokenize in BLEU_TOKENIZERS,
                "trainer.bleu_tokenize",
                f"must be one of {', '.join(BLEU_TOKENIZERS)} (or null: chosen for data.tgt_lang), got {self.bleu_tokenize!r}",
            )
        check_range("trainer.lr", self.lr, 0, low_open=True)
        for key, choices in (
            ("precision", PRECISIONS),
            ("allocator", ALLOCATORS),
            ("final_weights", FINAL_WEIGHTS),
            ("schedule", SCHEDULES),
        ):
            value = getattr(self, key)
            check(value in choices, f"trainer.{key}", f"must be one of {', '.join(choices)}, got {value!r}")
        check_range("trainer.min_lr_ratio", self.min_lr_ratio, 0, 1)
        check_range("trainer.weight_decay", self.weight_decay, 0, 10)
        check_range("trainer.label_smoothing", self.label_smoothing, 0, 1, high_open=True)
        check_range("trainer.r_drop", self.r_drop, 0)
        for key in ("src_word_dropout", "tgt_word_dropout"):
            check_range(f"trainer.{key}", getattr(self, key), 0, 1, high_open=True)
        check_range(
            "trainer.subword_sampling", self.subword_sampling, 0, 1, low_open=True, high_open=True, optional=True
        )
        check_range("trainer.clip_grad_norm", self.clip_grad_norm, 0, low_open=True)
        check_range("trainer.max_minutes", self.max_minutes, 0, low_open=True, optional=True)
        check(len(self.betas) == 2, "trainer.betas", f"need two values in [0, 1), got {self.betas}")
        for beta in self.betas:
            check_range("trainer.betas", beta, 0, 1, high_open=True)
        check_decoding(
            self.beam_size,
            self.length_penalty,
            self.max_output_ratio,
            ("trainer.beam_size", "trainer.length_penalty", "trainer.max_output_ratio"),
        )
        check(self.device in DEVICES, "trainer.device", f"unknown device {self.device!r}")
        self.processes = str(self.processes)
        check(
            self.processes == "auto" or (self.processes.isdigit() and 1 <= int(self.processes) <= 1024),
            "trainer.processes",
            f"must be auto or a number of processes from 1 to 1024, got {self.processes!r}",
        )

    _OPTIONAL = ("checkpoint_every", "crash_at_step", "num_threads")

    def test_decoding(self) -> DecodingOptions:
        """How the final test evaluation decodes."""
        return DecodingOptions(self.beam_size, self.length_penalty, self.max_output_ratio)

    def valid_decoding(self) -> DecodingOptions:
        """How validation decodes during training: greedy, with the same output length limit."""
        return DecodingOptions(max_output_ratio=self.max_output_ratio)


@dataclass
class TrainConfig:
    model: Any = knob(MISSING, "typed by the chosen model/*.yaml, which extends a schema below")
    data: DataConfig = knob(factory=DataConfig, help="the corpus and its tokenizer (group data=...)")
    trainer: TrainerConfig = knob(factory=TrainerConfig, help="the training loop (group trainer=...)")
    seed: int = knob(0, "random seed of initialisation, dropout and batch order")
    name: str | None = knob(None, "a label for the run in summaries and comparisons; None -> model kind")

    def __post_init__(self) -> None:
        check_range("seed", self.seed, 0, MAX_SEED)
        check(
            self.trainer.subword_sampling is None or self.data.spm_model_type == "bpe",
            "trainer.subword_sampling",
            "splits pieces into the two that BPE merged: it needs data.spm_model_type=bpe",
        )


MODEL_SCHEMAS = {"transformer": TransformerConfig, "rnn": RNNConfig, "rnn_attention": RNNConfig}
