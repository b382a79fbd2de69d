"""The concepts page's diagrams, drawn from minitrans' own modules, so that a change to the model
changes the picture: the masks from ``make_causal_mask`` and ``make_padding_mask``, the position
table from ``SinusoidalPositions``, the head split from a real ``MultiHeadAttention`` and
``split_heads`` / ``merge_heads``, one head's weights from ``scaled_dot_product_attention``, the
encoder-decoder from a built ``Transformer``'s modules, and the fixed C against c_i from a built
``FixedContextRNN`` and ``AttentionRNN``.

    python docs/diagrams.py              # writes docs/diagrams/*.png (its own files only)
    python docs/diagrams.py --out DIR

Each PNG keeps a fingerprint of the tensors it shows, so ``tests/docs/test_diagrams.py`` fails when
a committed picture was drawn from older code. Each figure is ``WIDTH`` inches wide and no text is
under 9 points, so at the page's content width (``CONTENT_PX``) every label is at least 9 px high.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # minitrans from this checkout

from minitrans.core.config import RNNConfig, TransformerConfig  # noqa: E402
from minitrans.data.tokenizer import PAD_ID  # noqa: E402
from minitrans.models import attention, rnn, transformer  # noqa: E402

OUT = ROOT / "docs" / "diagrams"
WIDTH, DPI = 8.0, 150
CONTENT_PX = 688  # the width of the page's content column in a 1280 px window, where a picture is shown
FINGERPRINT = "minitrans-data"  # the PNG text field holding what the picture was drawn from
STYLE = {"font.size": 10, "axes.titlesize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9}
SOURCE = ["karina", "is", "going", "to", "the", "store"]
SHORT = ["she", "sings", "<pad>", "<pad>", "<pad>", "<pad>"]  # padded to the batch's longest
TARGET = ["<s>", "karina", "geht", "zum", "laden"]  # the decoder's input: shifted right by <s>
MASK_COLOURS = ListedColormap(["#f2f2f2", "#3f51b5"])  # False, True (may attend)


@dataclass
class Diagram:
    """A figure and the tensors it draws, as the modules computed them (what the tests compare)."""

    name: str
    figure: Figure
    data: dict[str, np.ndarray] = field(default_factory=dict)


def token_ids(*sentences: list[str]) -> torch.Tensor:
    """(B, L) ids of a toy vocabulary: every word its own id, ``<pad>`` the tokenizer's PAD_ID."""
    vocab = {"<pad>": PAD_ID}
    for word in (word for sentence in sentences for word in sentence):
        vocab.setdefault(word, len(vocab) + 3)  # clear of the tokenizer's special ids
    return torch.tensor([[vocab[word] for word in sentence] for sentence in sentences])


def draw_mask(ax, mask: np.ndarray, rows: list[str], columns: list[str], title: str) -> None:
    ax.imshow(mask, cmap=MASK_COLOURS, vmin=0, vmax=1)
    ax.set_xticks(range(len(columns)), columns, rotation=45, ha="left")
    ax.set_yticks(range(len(rows)), rows)
    ax.xaxis.tick_top()
    ax.set_xticks(np.arange(len(columns) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(rows) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("key j (attended to)")
    ax.set_ylabel("query i (attending)")
    ax.set_title(title, pad=10)


def masks() -> Diagram:
    causal = attention.make_causal_mask(len(TARGET))[0, 0].numpy()  # (T, T)
    padding = attention.make_padding_mask(token_ids(SOURCE, SHORT), PAD_ID)  # (B, 1, 1, S)
    seen = padding.expand(-1, 1, len(SHORT), -1)[1, 0].numpy()  # broadcast over the scores' queries
    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH, 4.6), layout="constrained")
    draw_mask(left, causal, TARGET, TARGET, "make_causal_mask(5): decoder,\n$i$ sees $j \\leq i$")
    draw_mask(right, seen, SHORT, SHORT, "make_padding_mask: a short source,\nno query sees <pad>")
    fig.suptitle("blue: True, may attend; grey: False", fontsize=10)
    return Diagram("masks", fig, {"causal": causal, "padding": padding[:, 0, 0].numpy(), "padding_rows": seen})


def positions() -> Diagram:
    d_model, length = TransformerConfig().d_model, 64
    table = transformer.SinusoidalPositions(d_model, length)(length).numpy()  # (L, D)
    fig, (heat, lines) = plt.subplots(
        1, 2, figsize=(WIDTH, 3.6), layout="constrained", gridspec_kw={"width_ratios": [3, 2]}
    )
    image = heat.imshow(table, cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
    heat.set_xlabel(f"dimension (d_model = {d_model})")
    heat.set_ylabel("position pos")
    heat.set_title("SinusoidalPositions: the table PE")
    fig.colorbar(image, ax=heat, shrink=0.8)
    for dim in (8, 9, 20, 40):  # a sine and its cosine, then slower waves
        wave = "sin" if dim % 2 == 0 else "cos"
        lines.plot(table[:, dim], label=f"dim {dim} ({wave})")
    lines.set_xlabel("position pos")
    lines.set_title("columns: one frequency each")
    lines.legend(fontsize=9, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    return Diagram("positions", fig, {"table": table})


def heads() -> Diagram:
    cfg = TransformerConfig()
    mha = attention.MultiHeadAttention(cfg.d_model, cfg.num_heads, cfg.d_k, cfg.d_v)
    x = torch.zeros(1, len(SOURCE), cfg.d_model)  # (B, L, D)
    q, _, v = mha.project_qkv(x)  # (B, H, L, Dk|Dv): the shapes, from the module itself
    num_heads, width = q.shape[1], q.shape[1] * q.shape[3]
    column = torch.arange(width, dtype=torch.float32).expand(1, len(SOURCE), width)  # each entry: its column
    split = attention.split_heads(column, num_heads)  # (B, H, L, Dk)
    merged = attention.merge_heads(split)  # (B, L, H·Dk)
    fig = plt.figure(figsize=(WIDTH, 5.4), layout="constrained")
    rows = fig.subfigures(3, 1, height_ratios=[1, 1.2, 1])
    style = {"cmap": "viridis", "vmin": 0, "vmax": width - 1, "aspect": "auto"}

    def matrix(ax, values, title):
        ax.imshow(values.numpy(), **style)
        ax.set_yticks(range(len(SOURCE)), SOURCE)
        ax.set_title(title)

    top = rows[0].subplots()
    matrix(top, column[0], f"Q = X W^Q: (B, L, H·Dk) = {tuple(column.shape)}, colour = column")
    per_head = rows[1].subplots(1, num_heads, sharey=True)
    rows[1].suptitle(f"split_heads → (B, H, L, Dk) = {tuple(split.shape)}: head h takes its own columns", size=10)
    for head, ax in enumerate(np.atleast_1d(per_head)):
        matrix(ax, split[0, head], f"head {head + 1}")
        first, last = int(split[0, head, 0, 0]), int(split[0, head, 0, -1])  # the columns this head was given
        ax.set_xticks([0, split.shape[-1] - 1], [first, last])
        ax.set_xlabel(f"columns {first}–{last}")
    bottom = rows[2].subplots()
    matrix(bottom, merged[0], f"merge_heads → (B, L, H·Dv) = {tuple(merged.shape)}, then W^O → (B, L, D)")
    bottom.set_xlabel("column of H·Dv: head 1's first")
    return Diagram("heads", fig, {"split": split[0].numpy(), "merged": merged[0].numpy(), "q": np.array(q.shape)})


def one_head() -> Diagram:
    """The notes' worked example: five tokens in two dimensions, W^Q = W^K = W^V = I, so Q = K = V = X."""
    tokens = ["karina", "is", "going", "the", "store"]
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.5, 1.0]])  # (L, d)
    out, weights = attention.scaled_dot_product_attention(
        x[None, None], x[None, None], x[None, None], need_weights=True
    )
    out, weights = out[0, 0].numpy(), weights[0, 0].numpy()  # (L, d), (L, L)
    fig, axes = plt.subplots(
        1, 5, figsize=(WIDTH, 3.2), layout="constrained", gridspec_kw={"width_ratios": [2, 5, 5, 2, 2]}
    )
    panels = [
        ("Q", x.numpy(), tokens, ["1", "2"]),
        ("$K^\\top$", x.numpy().T, ["1", "2"], tokens),
        ("weights =\nsoftmax($QK^\\top/\\sqrt{d_k}$)", weights, tokens, tokens),
        ("V", x.numpy(), tokens, ["1", "2"]),
        ("out =\nweights · V", out, tokens, ["1", "2"]),
    ]
    for ax, (title, values, rows, columns) in zip(axes, panels):
        ax.imshow(values, cmap="Blues", vmin=0, vmax=max(1.0, values.max()))
        for (i, j), value in np.ndenumerate(values):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=9, color="black")
        ax.set_xticks(range(len(columns)), columns, rotation=90 if len(columns) > 2 else 0)
        ax.set_yticks(range(len(rows)), rows if ax in (axes[0], axes[2], axes[1]) else [""] * len(rows))
        ax.set_title(title)
    fig.suptitle("One head on the notes' example: Q = K = V = X, $d_k$ = 2", fontsize=10)
    return Diagram("one_head", fig, {"weights": weights, "out": out})


def box(ax, x, y, width, height, text, colour, size=9):
    ax.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.01", fc=colour, ec="#555555"))
    ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=size)


def arrow(ax, start, end, text=""):
    ax.annotate("", end, start, arrowprops={"arrowstyle": "->", "color": "#333333", "lw": 1.2})
    if text:
        ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2 + 0.012, text, ha="center", fontsize=9)


def attention_kind(layer, module) -> str:
    if getattr(module, "is_cross", False):
        return "cross-attention: Q from the decoder,\nK and V from the memory"
    if getattr(layer, "is_causal", False):
        return "masked self-attention (causal mask)"
    return "self-attention (padding mask)"


def feed_forward_kind(module) -> str:
    inner = next(linear for linear in module.modules() if isinstance(linear, torch.nn.Linear))
    return f"feed-forward, d_ff = {inner.out_features}"


def sublayers(layer) -> list[tuple[str, str]]:
    """(name, what it is) of a layer's attention and feed-forward modules, in the order it runs them."""
    return [
        (
            name,
            attention_kind(layer, module)
            if isinstance(module, attention.MultiHeadAttention)
            else feed_forward_kind(module),
        )
        for name, module in layer.named_children()
        if isinstance(module, (attention.MultiHeadAttention, transformer.FeedForward))
    ]


def encoder_decoder() -> Diagram:
    cfg = TransformerConfig()
    model = transformer.Transformer(cfg, 32, 32, PAD_ID)
    stacks = {"encoder_layers": model.encoder_layers, "decoder_layers": model.decoder_layers}
    fig, ax = plt.subplots(figsize=(WIDTH, 5.6), layout="constrained")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.axis("off")
    colours = {"attention": "#c5cae9", "cross": "#ffe0b2", "feed-forward": "#dcedc8"}
    tops, cross_boxes = {}, []
    for left, (name, layers) in zip((0.04, 0.52), stacks.items()):
        parts = sublayers(layers[0])
        height = 0.13 * len(parts) + 0.08
        box(ax, left, 0.2, 0.44, height, "", "#f5f5f5")
        ax.text(left + 0.43, 0.2 + height - 0.035, f"{name} × {len(layers)}", ha="right", fontsize=10, weight="bold")
        for index, (part, kind) in enumerate(parts):
            colour = colours["cross" if "cross" in kind else "feed-forward" if "feed-forward" in kind else "attention"]
            y = 0.22 + 0.13 * index
            box(ax, left + 0.02, y, 0.33, 0.1, f"{part}\n{kind}", colour, size=9)
            if "cross" in kind:
                cross_boxes.append((left + 0.02, y + 0.05))
        tops[name] = (left + 0.185, 0.2 + height)
    box(ax, 0.06, 0.06, 0.33, 0.08, "src_embed + positions\n← source tokens", "#eeeeee")
    box(ax, 0.54, 0.06, 0.33, 0.08, "tgt_embed + positions\n← target, shifted right", "#eeeeee")
    arrow(ax, (0.225, 0.14), (0.225, 0.2))
    arrow(ax, (0.705, 0.14), (0.705, 0.2))
    box(ax, 0.06, 0.86, 0.33, 0.08, "encoder_norm → memory (B, S, D)", "#eeeeee")
    box(ax, 0.54, 0.86, 0.33, 0.08, "decoder_norm → output → logits (B, T, V)", "#eeeeee")
    arrow(ax, tops["encoder_layers"], (0.225, 0.86))
    arrow(ax, tops["decoder_layers"], (0.705, 0.86))
    for x, y in cross_boxes:  # the memory feeds every decoder layer's cross-attention
        ax.annotate("", (x, y), (0.39, 0.88), arrowprops={"arrowstyle": "->", "color": "#e65100", "lw": 1.5})
    heads = next(module for module in model.modules() if isinstance(module, attention.MultiHeadAttention))
    ax.set_title(
        f"Transformer(d_model={cfg.d_model}): every attention has H = {heads.num_heads} heads of d_k = {heads.d_k}"
    )
    names = {name: [part for part, _ in sublayers(layers[0])] for name, layers in stacks.items()}
    counts = np.array([len(layers) for layers in stacks.values()])
    return Diagram("encoder_decoder", fig, {"layers": counts, **{k: np.array(v) for k, v in names.items()}})


def contexts() -> Diagram:
    src, tgt_in = token_ids(SOURCE, TARGET + ["<pad>"])[:, None]
    tgt_in = tgt_in[:, : len(TARGET)]
    torch.manual_seed(0)
    drawn = {}
    for kind, model_class in (("rnn", rnn.FixedContextRNN), ("rnn_attention", rnn.AttentionRNN)):
        cfg = RNNConfig(kind=kind, d_embed=16, d_hidden=8, dropout=0.0)
        model = model_class(cfg, 32, PAD_ID).eval()
        steps = []
        hook = model.decoder.context.register_forward_hook(
            lambda module, args, out, steps=steps: steps.append(out[0][0])
        )
        with torch.no_grad():
            enc, _ = model.encode(src)
            _, maps = model.decode(enc, tgt_in, need_weights=True)
        hook.remove()
        drawn[kind] = torch.stack(steps).numpy()  # (T, Dc): the context each target word receives
        if maps:
            drawn["weights"] = maps["cross"][0][0, 0].numpy()  # (T, S)
    fig, axes = plt.subplots(
        1, 3, figsize=(WIDTH, 3.4), layout="constrained", gridspec_kw={"width_ratios": [4, 4, 3.4]}
    )
    own = drawn["rnn_attention"] - drawn["rnn_attention"].mean(axis=0)  # untrained: small, but never zero
    for ax, values, title in (
        (axes[0], drawn["rnn"], "FixedContextRNN: one C,\nthe same row for every word"),
        (axes[1], own, "AttentionRNN: $c_i - \\bar{c}$,\neach word's own context"),
    ):
        scale = abs(values).max()
        ax.imshow(values, cmap="RdBu", vmin=-scale, vmax=scale, aspect="auto")
        ax.set_yticks(range(len(TARGET)), TARGET)
        ax.set_xlabel(f"context dimension (Dc = {values.shape[1]})")
        ax.set_title(title)
    axes[1].set_yticklabels([])
    image = axes[2].imshow(drawn["weights"], cmap="Blues", aspect="auto")  # untrained: all near 1/S
    axes[2].set_xticks(range(len(SOURCE)), SOURCE, rotation=90)
    axes[2].set_yticks(range(len(TARGET)), [])
    axes[2].set_title("its weights $\\alpha_{ij}$,\n$c_i = \\sum_j \\alpha_{ij} h_j$")
    fig.colorbar(image, ax=axes[2], shrink=0.8)
    fig.suptitle("The context each target word receives (untrained models: the rows, not the values, matter)")
    return Diagram(
        "contexts", fig, {"fixed": drawn["rnn"], "attention": drawn["rnn_attention"], "weights": drawn["weights"]}
    )


DIAGRAMS: dict[str, Callable[[], Diagram]] = {
    "masks": masks,
    "positions": positions,
    "heads": heads,
    "one_head": one_head,
    "encoder_decoder": encoder_decoder,
    "contexts": contexts,
}


def fingerprint(diagram: Diagram) -> dict[str, list]:
    """Per array drawn: its shape, its sum and a position-weighted sum, which a changed mask, table
    or split changes; kept in the PNG, so a test can tell a committed picture drawn from older code."""
    prints = {}
    for key, values in diagram.data.items():
        if np.asarray(values).dtype.kind in "US":  # module names: kept as they are
            prints[key] = np.asarray(values).tolist()
            continue
        values = np.asarray(values, dtype=np.float64)
        weights = np.linspace(1.0, 2.0, values.size).reshape(values.shape)
        prints[key] = [*values.shape, float(values.sum()), float((values * weights).sum())]
    return prints


def draw(name: str) -> Diagram:
    with plt.rc_context(STYLE):
        return DIAGRAMS[name]()


def write_all(out: Path) -> list[Path]:
    """Draw every diagram into ``out`` as NAME.png; only those names are written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in DIAGRAMS:
        diagram = draw(name)
        path = out / f"{name}.png"
        diagram.figure.savefig(path, dpi=DPI, metadata={FINGERPRINT: json.dumps(fingerprint(diagram))})
        plt.close(diagram.figure)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="the folder for the PNGs (default docs/diagrams)")
    args = parser.parse_args(argv)
    for path in write_all(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
