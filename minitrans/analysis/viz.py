"""Attention heatmaps with the subword tokens on both axes, for TensorBoard and PNG files.

Figures are plain :class:`matplotlib.figure.Figure` objects on the Agg canvas (:func:`new_figure`):
pyplot is never imported, no global backend is switched, and a figure is freed as soon as nothing
refers to it. Every map is drawn on one fixed 0-1 colour scale, so pictures of different heads,
layers and training steps compare by eye. The axes of each kind of map, as
:meth:`minitrans.inference.translator.Translator.attention_maps` returns them ``{kind: [per-layer
(H, Lq, Lk)]}``:

    enc_self   rows and columns: source pieces (ending in ``</s>``)
    dec_self   rows and columns: decoder inputs, ``<s>`` + target pieces
    cross      rows: output tokens, target pieces + ``</s>``; columns: source pieces

TensorBoard gets one card per head (:func:`attention_cards`): every card has the same fixed
size, so the IMAGES tab lines them up, and its fonts and label spacing are chosen to be read
at the card's default width. PNG files get every layer and head of cross-attention as one grid
(:func:`save_attention_png`). Tokens of any script are drawn with a font that has them
(:mod:`minitrans.analysis.fonts`); every plot colours a model kind the same way (:data:`MODEL_COLORS`).

Shape legend: H heads, Lq query (row) length, Lk key (column) length.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from minitrans.analysis.fonts import token_fonts

if TYPE_CHECKING:  # tensors come in, but plotting needs no torch: compare.py starts without it
    import torch
    from matplotlib.figure import Figure

    from minitrans.inference.lines import LineResult
    from minitrans.inference.translator import Translator

KIND_TITLES = {
    "enc_self": "encoder self-attention",
    "dec_self": "decoder masked self-attention",
    "cross": "cross-attention (rows: output tokens, columns: source)",
}
CMAP = "viridis"
# One colour per model kind in every plot (tab10's blue, red and green): the Transformer is
# never green in one figure and blue in the next.
MODEL_COLORS = {"transformer": "#1f77b4", "rnn": "#d62728", "rnn_attention": "#2ca02c"}
OTHER_COLORS = ("#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
CARD_INCHES = 3.6  # a TensorBoard card: 360 x 360 pixels at DPI, near its default display width
CARD_FONT = 10.0
CARD_MAX_LABELS = 20  # per axis; a longer sentence labels every 2nd (3rd ...) token
CARD_LABEL_CHARS = 10
MAX_HEADS_PER_ROW = 4
MAX_ROW_INCHES = 20.0  # fewer heads to a row when sentences are long
MAX_LABEL_CHARS = 16
DPI = 100


def new_figure(**kwargs) -> Figure:
    """A Figure on the Agg canvas. Matplotlib comes with the first drawing: a training process
    that never draws (every rank but 0) starts half a second sooner."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    return FigureCanvasAgg(Figure(**kwargs)).figure  # the figure keeps its canvas: fig.canvas


def _label(token: str) -> str:
    """A tick label that matplotlib prints literally ("$" would start mathtext), cut if very long."""
    if len(token) > MAX_LABEL_CHARS:
        token = token[: MAX_LABEL_CHARS - 1] + "…"
    return token.replace("$", r"\$")


def _cell_inches(num_rows: int, num_cols: int) -> float:
    """Cells shrink as sentences grow, so a long sentence stays a picture, not a poster."""
    return float(np.clip(5.0 / max(num_rows, num_cols, 1), 0.13, 0.3))


def _text_inches(tokens: Sequence[str], font: float) -> float:
    """Room a column of tick labels needs (a generous estimate; no text is measured, which
    would cost a draw)."""
    longest = max((len(t) for t in tokens), default=1)
    return min(longest, MAX_LABEL_CHARS) * font * 0.6 / 72 + 0.1


def _with_token_fonts(build):
    """Build the figure with fonts for its tokens' scripts (:mod:`minitrans.analysis.fonts`)."""

    @functools.wraps(build)
    def wrapper(maps, row_tokens, col_tokens, title, *args, **kwargs):
        with token_fonts([*row_tokens, *col_tokens, title]):
            return build(maps, row_tokens, col_tokens, title, *args, **kwargs)

    return wrapper


@_with_token_fonts
def _draw_grid(
    panels: list[list[torch.Tensor]],
    row_tokens: Sequence[str],
    col_tokens: Sequence[str],
    title: str,
    panel_titles: list[list[str]],
) -> Figure:
    """A grid of (Lq, Lk) heatmaps sharing the token axes and one colour bar.

    Row tokens label the first panel of each grid row; column tokens sit on top of every
    panel, rotated, so each panel reads on its own. The layout is computed in inches from the
    sentence lengths (a layout engine would measure every label: several times slower).
    """
    num_rows, num_cols = len(row_tokens), len(col_tokens)
    grid_rows, grid_cols = len(panels), max(len(row) for row in panels)
    cell = _cell_inches(num_rows, num_cols)
    font = float(np.clip(cell * 72 * 0.75, 6, 10))
    panel_w, panel_h = num_cols * cell, num_rows * cell
    left, top_labels = _text_inches(row_tokens, font), _text_inches(col_tokens, font)
    panel_title = 1.6 * (font + 1) / 72 if any(any(row) for row in panel_titles) else 0.0
    gap_x, gap_y, bar_w = 0.15, 0.25, 0.9
    width = max(left + grid_cols * panel_w + (grid_cols - 1) * gap_x + bar_w, 3.0)
    title_font = font + 3
    title_lines = textwrap.wrap(title, max(20, int(width * 72 / (0.55 * title_font)))) or [""]
    title_h = len(title_lines) * 1.4 * title_font / 72 + 0.3
    height = max(title_h + grid_rows * (top_labels + panel_title + panel_h) + (grid_rows - 1) * gap_y + 0.15, 2.0)
    fig = new_figure(figsize=(width, height), dpi=DPI)
    image = None
    for r, row in enumerate(panels):
        bottom = (
            height - title_h - r * (top_labels + panel_title + panel_h + gap_y) - top_labels - panel_title - panel_h
        )
        for c, weights in enumerate(row):
            x = left + c * (panel_w + gap_x)
            ax = fig.add_axes((x / width, bottom / height, panel_w / width, panel_h / height))
            image = ax.imshow(
                weights.detach().float().cpu().numpy(),
                cmap=CMAP,
                vmin=0.0,
                vmax=1.0,
                aspect="auto",
                interpolation="nearest",
            )
            if panel_titles[r][c]:
                ax.set_title(panel_titles[r][c], fontsize=font + 1, pad=3)  # placed above the top tick labels
            ax.xaxis.tick_top()
            ax.set_xticks(range(num_cols), [_label(t) for t in col_tokens], rotation=90, fontsize=font)
            ax.set_yticks(range(num_rows), [_label(t) for t in row_tokens] if c == 0 else [], fontsize=font)
            ax.tick_params(length=0, pad=1)
    if image is not None:
        bar_h = min(height - title_h - 0.3, max(panel_h, 1.5))
        bar_bottom = height - title_h - top_labels - panel_title - bar_h
        bar = fig.add_axes(((width - bar_w + 0.15) / width, bar_bottom / height, 0.12 / width, bar_h / height))
        fig.colorbar(image, cax=bar)
        bar.tick_params(labelsize=font)
    fig.suptitle("\n".join(title_lines), fontsize=title_font, y=1 - 0.08 / height, va="top")
    return fig


def model_color(kind: str, index: int = 0) -> str:
    """The fixed colour of a model kind; other kinds cycle through the remaining colours."""
    return MODEL_COLORS.get(kind) or OTHER_COLORS[index % len(OTHER_COLORS)]


def _card_ticks(tokens: Sequence[str]) -> tuple[list[int], list[str]]:
    """Positions and labels for one axis of a card: every token, or every k-th of a long one."""
    every = math.ceil(len(tokens) / CARD_MAX_LABELS) if tokens else 1
    positions = list(range(0, len(tokens), every))
    labels = []
    for i in positions:
        token = tokens[i] if len(tokens[i]) <= CARD_LABEL_CHARS else tokens[i][: CARD_LABEL_CHARS - 1] + "…"
        labels.append(token.replace("$", r"\$"))
    return positions, labels


@_with_token_fonts
def attention_card(weights: torch.Tensor, row_tokens: Sequence[str], col_tokens: Sequence[str], title: str) -> Figure:
    """One head's map (Lq, Lk) on a card of fixed size (:data:`CARD_INCHES` square): row tokens
    down the left, column tokens along the top, a 0-1 colour bar. Every card has the same
    shape whatever the sentence; a long sentence labels every k-th token so the labels stay
    at :data:`CARD_FONT` points and readable when TensorBoard shows the card at its width."""
    if weights.dim() != 2 or tuple(weights.shape) != (len(row_tokens), len(col_tokens)):
        raise ValueError(
            f"a map of shape {tuple(weights.shape)} does not match {len(row_tokens)} row and "
            f"{len(col_tokens)} column tokens"
        )
    size = CARD_INCHES
    row_ticks, row_labels = _card_ticks(row_tokens)
    col_ticks, col_labels = _card_ticks(col_tokens)
    font = _card_font(row_tokens, col_tokens)
    left = _text_inches(row_labels, font) + 0.1
    top_labels = _text_inches(col_labels, font) + 0.05
    title_text = _card_title(title, font)
    title_h = (title_text.count("\n") + 1) * 1.35 * (font + 1) / 72 + 0.12
    bar_w, right, bottom = 0.1, 0.4, 0.08
    panel_w = size - left - bar_w - right
    panel_h = size - title_h - top_labels - bottom
    fig = new_figure(figsize=(size, size), dpi=DPI)
    ax = fig.add_axes((left / size, bottom / size, panel_w / size, panel_h / size))
    image = ax.imshow(
        weights.detach().float().cpu().numpy(), cmap=CMAP, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest"
    )
    ax.xaxis.tick_top()
    ax.set_xticks(col_ticks, col_labels, rotation=90, fontsize=font)
    ax.set_yticks(row_ticks, row_labels, fontsize=font)
    ax.tick_params(length=2, pad=1)
    bar = fig.add_axes(((left + panel_w + 0.08) / size, bottom / size, bar_w / size, panel_h / size))
    fig.colorbar(image, cax=bar, ticks=[0, 0.5, 1], format="%g")
    bar.tick_params(labelsize=font - 1)
    fig.suptitle(title_text, fontsize=font + 1, y=1 - 0.06 / size, va="top")
    return fig


def _card_font(row_tokens: Sequence[str], col_tokens: Sequence[str]) -> float:
    """The labels' size on a card: one point smaller when an axis shows more than 14 labels."""
    many = max(len(_card_ticks(row_tokens)[0]), len(_card_ticks(col_tokens)[0])) > 14
    return CARD_FONT - 1 if many else CARD_FONT


def _card_title(title: str, font: float) -> str:
    """A card's title, wrapped to the card's width: two lines at most."""
    lines = textwrap.wrap(title, int(CARD_INCHES * 72 / (0.55 * (font + 1)))) or [""]
    return "\n".join(lines[:2])


def _kind_cards(kind: str, layers: list[torch.Tensor], title_prefix: str, roles: Sequence[Sequence[str]] | None = None):
    """``(key, weights, title)`` of every card of one kind, layer by layer, head by head; a
    head's role (``roles`` [layer][head], "" for none) ends its title: "· previous-token"."""
    short = {"enc_self": "encoder self", "dec_self": "decoder self", "cross": "cross"}
    for index, maps in enumerate(layers, start=1):
        for head in range(maps.shape[0]):
            title = f"{title_prefix}{short.get(kind, kind)} · layer {index}/{len(layers)} · head {head + 1}/{len(maps)}"
            role = roles[index - 1][head] if roles is not None else ""
            yield f"{kind}/layer{index}/head{head + 1}", maps[head], title + (f" · {role}" if role else "")


def attention_cards(
    attention: dict[str, list[torch.Tensor]],
    src_tokens: Sequence[str],
    tgt_in_tokens: Sequence[str],
    tgt_out_tokens: Sequence[str],
    title_prefix: str = "",
    roles: dict[str, list[list[str]]] | None = None,
) -> dict[str, Figure]:
    """One card per kind, layer and head, keyed ``"cross/layer1/head1"`` … (counting from 1);
    a model without attention gives ``{}``; ``roles`` ({kind: [layer][head] label}) end titles."""
    cards = {}
    for kind, layers in attention.items():
        rows, cols = _axes_for(kind, src_tokens, tgt_in_tokens, tgt_out_tokens)
        for key, weights, title in _kind_cards(kind, layers, title_prefix, (roles or {}).get(kind)):
            cards[key] = attention_card(weights, rows, cols, title)
    return cards


def attention_card_images(
    attention: dict[str, list[torch.Tensor]],
    src_tokens: Sequence[str],
    tgt_in_tokens: Sequence[str],
    tgt_out_tokens: Sequence[str],
    title_prefix: str = "",
    roles: dict[str, list[list[str]]] | None = None,
) -> dict[str, np.ndarray]:
    """The cards of :func:`attention_cards`, rendered: ``(height, width, 3)`` uint8 arrays, pixel
    for pixel the same as :func:`figure_to_array` of each card, several times faster.

    Every card of one kind has the same tokens, so one figure per kind is built and its frame
    (token labels, colour bar) drawn once; each head then restores that frame and draws only
    what differs, its map, the axes' border over it, and its title (blitting). A validation
    draws dozens of cards: this keeps them off the training's critical path.
    """
    images = {}
    for kind, layers in attention.items():
        rows, cols = _axes_for(kind, src_tokens, tgt_in_tokens, tgt_out_tokens)
        cards = list(_kind_cards(kind, layers, title_prefix, (roles or {}).get(kind)))
        if not cards:
            continue
        _, first_weights, first_title = cards[0]
        fig = attention_card(first_weights, rows, cols, first_title)
        canvas, (ax, *_) = fig.canvas, fig.axes
        (image,) = ax.images
        title = fig._suptitle  # suptitle's own artist: set_text keeps its font and place
        changing = sorted([image, *ax.spines.values()], key=lambda artist: artist.get_zorder())
        for artist in (*changing, title):
            artist.set_visible(False)
        canvas.draw()
        frame = canvas.copy_from_bbox(fig.bbox)
        for artist in (*changing, title):
            artist.set_visible(True)
        renderer, font = canvas.get_renderer(), _card_font(rows, cols)
        lines = _card_title(first_title, font).count("\n")
        for key, weights, text in cards:
            wrapped = _card_title(text, font)
            if wrapped.count("\n") != lines:  # a title of another height moves the map: a card of its own
                images[key] = figure_to_array(attention_card(weights, rows, cols, text))
                continue
            canvas.restore_region(frame)
            image.set_data(weights.detach().float().cpu().numpy())
            title.set_text(wrapped)
            for artist in (*changing, title):  # in the order a full draw paints them
                artist.draw(renderer)
            images[key] = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    return images


# Which tokens label the rows and the columns of each kind of map (names of SentenceAttention's fields).
KIND_AXES = {
    "enc_self": ("src_tokens", "src_tokens"),
    "dec_self": ("tgt_in_tokens", "tgt_in_tokens"),
    "cross": ("tgt_out_tokens", "src_tokens"),
}


def _axes_for(kind: str, src_tokens, tgt_in_tokens, tgt_out_tokens) -> tuple[list[str], list[str]]:
    if kind not in KIND_AXES:
        raise ValueError(f"unknown attention kind {kind!r}")
    tokens = {"src_tokens": src_tokens, "tgt_in_tokens": tgt_in_tokens, "tgt_out_tokens": tgt_out_tokens}
    rows, cols = KIND_AXES[kind]
    return list(tokens[rows]), list(tokens[cols])


def save_attention_png(
    attention: dict[str, list[torch.Tensor]],
    src_tokens: Sequence[str],
    tgt_in_tokens: Sequence[str],
    tgt_out_tokens: Sequence[str],
    path: str | Path,
) -> list[Path]:
    """Cross-attention of every layer and head as one PNG at ``path``: layers as rows (layer 1
    on top), heads as columns, output tokens down the side and source pieces along the top.

    Returns the files written: ``[path]``, or ``[]`` when the model has no cross-attention
    (the fixed-context RNN), in which case nothing is written.
    """
    layers = attention.get("cross", [])
    if not layers:
        return []
    rows, cols = _axes_for("cross", src_tokens, tgt_in_tokens, tgt_out_tokens)
    num_heads = max(maps.shape[0] for maps in layers)
    panels = [[maps[h] for h in range(maps.shape[0])] for maps in layers]
    titles = [
        [f"layer {index}" + (f", head {h + 1}" if num_heads > 1 else "") for h in range(maps.shape[0])]
        for index, maps in enumerate(layers, start=1)
    ]
    fig = _draw_grid(panels, rows, cols, KIND_TITLES["cross"], titles)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    return [path]


def figure_to_array(fig: Figure) -> np.ndarray:
    """Render a figure on the Agg canvas: (height, width, 3) uint8, for ``add_image(dataformats="HWC")``."""
    canvas = fig.canvas  # new_figure's Agg canvas
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


def save_line_attention(
    translator: Translator, results: Sequence[LineResult], path: str | Path
) -> tuple[list[Path], list[str]]:
    """The cross-attention of every layer and head (:func:`save_attention_png`) of each sentence
    that the line path translated (:func:`~minitrans.inference.lines.translate_lines`: split,
    lower-cased and cut as for the text shown), its best translation teacher-forced.

    One line of one sentence is drawn at ``path``; several lines are numbered by line, and a
    line that was split by sentence too (``attn.2.png``, ``attn.3.1.png``, ``attn.3.2.png``).
    Returns the files written and the notes for the user: blank lines get no picture, nor does
    a model without cross-attention (the fixed-context RNN), which one note says.
    """
    written: list[Path] = []
    path = Path(path)
    for number, result in enumerate(results, 1):
        for part, (sentence, best) in enumerate(zip(result.sentences, result.sentence_translations), 1):
            if best is None:
                continue
            tgt_ids = [translator.tokenizer.tgt.piece_to_id(piece) for piece in best.pieces]
            attention = translator.attention(translator.encode([sentence])[0], tgt_ids)
            if "cross" not in attention.maps:
                return written, ["this model has no cross-attention to draw (a fixed-context RNN)"]
            numbers = [number] * (len(results) > 1) + [part] * (len(result.sentences) > 1)
            name = ".".join([path.stem, *map(str, numbers)]) + (path.suffix or ".png") if numbers else path.name
            maps, tokens = attention.maps, (attention.src_tokens, attention.tgt_in_tokens, attention.tgt_out_tokens)
            written += save_attention_png(maps, *tokens, path.with_name(name))
    return written, []


__all__ = [
    "KIND_AXES",
    "KIND_TITLES",
    "MODEL_COLORS",
    "attention_card",
    "attention_card_images",
    "attention_cards",
    "model_color",
    "figure_to_array",
    "save_attention_png",
    "save_line_attention",
]
