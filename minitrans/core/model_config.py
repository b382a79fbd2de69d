"""The models' typed configuration: the Transformer's and the RNN baselines' schemas, their
bounds, and the teaching switches (docs/claims.md) a Transformer's configuration may set.

Part of :mod:`minitrans.core.config`, which composes them into a run's ``TrainConfig`` and from
which the rest of the project imports them; each schema's ``__post_init__`` refuses an
impossible value with a :class:`~minitrans.core.checks.ConfigError` naming the key.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from minitrans.core.checks import check, check_range, positive_number
from minitrans.core.knob import knob

# Upper bounds on sizes: far beyond anything this project trains, small enough that a value
# read from an untrusted checkpoint cannot make a tensor bigger than memory by itself.
MAX_WIDTH = 16384  # d_model, d_ff, d_k, d_v, RNN widths
MAX_LAYERS = 128
MAX_POSITIONS = 65536  # model.max_len; the position table is max_len x d_model floats


IMPLEMENTATIONS = ("fast", "notes")  # model.implementation: the notes model made fast, or alone
POSITIONS = ("sinusoidal", "learned", "none")  # model.positions
CROSS_ATTENTION = ("attention", "fixed_mean")  # model.cross_attention


@dataclass
class TransformerConfig:
    kind: str = knob("transformer", "which model: transformer (model=rnn / rnn_attention pick the baselines)")
    d_model: int = knob(128, "width of the embeddings and of every layer's input and output")
    num_heads: int = knob(4, "attention heads per layer")
    d_k: int | None = knob(None, "per-head key/query width; None -> d_model // num_heads (then recorded)")
    d_v: int | None = knob(None, "per-head value width; None -> d_k (then recorded)")
    d_ff: int = knob(512, "width of the feed-forward layer inside each block")
    num_encoder_layers: int = knob(2, "encoder blocks")
    num_decoder_layers: int = knob(2, "decoder blocks")
    # 0 for the default run: the generated corpus is noise-free and seen only three times, and without
    # dropout attention takes PyTorch's fused kernel on the CPU too (README, the default run)
    dropout: float = knob(0.0, "dropout on embeddings, attention weights and sub-layer outputs")
    attention_dropout: float | None = knob(
        None, "dropout on the attention weights alone; None -> model.dropout (then recorded)"
    )
    ff_dropout: float | None = knob(
        None, "dropout inside the feed-forward, after its ReLU; None -> model.dropout (then recorded)"
    )
    norm_first: bool = knob(True, "pre-norm; False gives the original post-norm")
    max_len: int = knob(256, "positions the model can take, source or target")
    share_embeddings: bool = knob(True, "one embedding table for source and target (needs a joint vocabulary)")
    tie_output: bool = knob(True, "output projection shares the target embedding")
    implementation: str = knob(
        "fast",
        "fast: the notes model (models/transformer.py) made fast from outside by models/fast/ (make_fast); "
        "notes: the notes model alone; the same modules and parameters, so checkpoints load into either",
    )
    # Teaching switches (docs/claims.md): each takes away one piece the notes give a reason for.
    # Both implementations honour every one of them; the RNN schemas have none of them.
    attention_scale: str = knob(
        "sqrt_dk", "the scores' divisor: sqrt_dk (QKᵀ/√Dk), none (raw QKᵀ), or a number N ≥ 1e-6 (QKᵀ/N)"
    )
    causal_mask: bool = knob(True, "false removes the decoder's causal mask: it sees the future (warns; teaching)")
    positions: str = knob("sinusoidal", "sinusoidal | learned (a trained table) | none (no order information)")
    cross_attention: str = knob(
        "attention", "attention | fixed_mean: weights fixed uniform over real source tokens (one context per sentence)"
    )

    def __post_init__(self) -> None:
        check(self.kind == "transformer", "model.kind", f"expected 'transformer', got {self.kind!r}")
        check(
            self.implementation in IMPLEMENTATIONS,
            "model.implementation",
            f"expected one of {', '.join(IMPLEMENTATIONS)}, got {self.implementation!r}",
        )
        for key, high in (
            ("d_model", MAX_WIDTH),
            ("num_heads", MAX_WIDTH),
            ("d_ff", 4 * MAX_WIDTH),
            ("num_encoder_layers", MAX_LAYERS),
            ("num_decoder_layers", MAX_LAYERS),
            ("max_len", MAX_POSITIONS),
        ):
            check_range(f"model.{key}", getattr(self, key), 1, high)
        if self.d_k is None:
            check(
                self.d_model % self.num_heads == 0,
                "model.num_heads",
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}; "
                "pick another head count or set model.d_k explicitly",
            )
        for key in ("d_k", "d_v"):
            check_range(f"model.{key}", getattr(self, key), 1, MAX_WIDTH, optional=True)
        check(self.d_model % 2 == 0, "model.d_model", "must be even for sinusoidal positions")
        check(self.positions in POSITIONS, "model.positions", f"expected one of {', '.join(POSITIONS)}")
        check(self.cross_attention in CROSS_ATTENTION, "model.cross_attention", "expected attention or fixed_mean")
        self.scores_divisor()  # refuses a bad model.attention_scale now, not at the first batch
        check_range("model.dropout", self.dropout, 0, 1, high_open=True)
        for key in ("attention_dropout", "ff_dropout"):
            check_range(f"model.{key}", getattr(self, key), 0, 1, high_open=True, optional=True)
            if getattr(self, key) is None:
                setattr(self, key, self.dropout)
        # The derived widths, computed here once and recorded: the model, the checkpoint,
        # summary.json, TensorBoard and compare.py all read them from the config.
        if self.d_k is None:
            self.d_k = self.d_model // self.num_heads
        if self.d_v is None:
            self.d_v = self.d_k

    def with_dropout(self, p: float) -> TransformerConfig:
        """This config with dropout ``p`` in every place. ``replace(cfg, dropout=p)`` alone is not
        that: ``__post_init__`` has recorded the attention and feed-forward rates that followed
        the old ``dropout``, and ``replace`` keeps them."""
        return replace(self, dropout=p, attention_dropout=p, ff_dropout=p)

    def scores_divisor(self) -> float | None:
        """What the scores Q Kᵀ are divided by; None for √Dk (attention's own default)."""
        value = str(self.attention_scale)
        if value in ("sqrt_dk", "none"):
            return None if value == "sqrt_dk" else 1.0
        overflow = "the scores (in training their gradients first) overflow float32 and attention gives NaN"
        return positive_number("model.attention_scale", value, "sqrt_dk, none", least=1e-6, below=overflow)


TEACHING_SWITCHES = ("attention_scale", "causal_mask", "positions", "cross_attention")  # of TransformerConfig


def teaching_switches(model: TransformerConfig | RNNConfig) -> dict[str, str]:
    """The teaching switches a model's configuration sets away from the notes' model, each as
    the override that sets it (``{"model.causal_mask": "false"}``); empty for the notes' model
    and for an RNN, which has none."""
    if not isinstance(model, TransformerConfig):
        return {}
    changed = {}
    for name in TEACHING_SWITCHES:
        value, default = getattr(model, name), TransformerConfig.__dataclass_fields__[name].default
        if str(value) != str(default):
            changed[f"model.{name}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return changed


@dataclass
class RNNConfig:
    kind: str = knob("rnn", '"rnn": fixed context C; "rnn_attention": additive attention')
    d_embed: int = knob(128, "width of the word embeddings")
    d_hidden: int = knob(256, "GRU state width (per direction in the encoder)")
    num_layers: int = knob(1, "stacked GRU layers")
    bidirectional: bool = knob(True, "read the source both ways")
    dropout: float = knob(0.1, "dropout between layers and on embeddings")
    tie_embeddings: bool = knob(False, "output projection shares the target embedding")
    d_attention: int | None = knob(None, "rnn_attention only; None -> d_hidden (then recorded)")
    max_len: int = knob(256, "longest source or target the decoders are asked to handle")

    def __post_init__(self) -> None:
        check(
            self.kind in ("rnn", "rnn_attention"), "model.kind", f"expected 'rnn' or 'rnn_attention', got {self.kind!r}"
        )
        for key, high in (("d_embed", MAX_WIDTH), ("d_hidden", MAX_WIDTH), ("num_layers", MAX_LAYERS)):
            check_range(f"model.{key}", getattr(self, key), 1, high)
        check_range("model.max_len", self.max_len, 1, MAX_POSITIONS)
        check_range("model.d_attention", self.d_attention, 1, MAX_WIDTH, optional=True)
        check_range("model.dropout", self.dropout, 0, 1, high_open=True)
        if self.kind == "rnn_attention" and self.d_attention is None:  # derived once, then recorded
            self.d_attention = self.d_hidden
