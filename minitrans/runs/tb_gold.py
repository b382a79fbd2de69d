"""The gold-alignment overlays TensorBoard shows under ``alignment/gold_vs_attention/sample{i}``:
the best-aligning cross-attention head's map of each sample sentence with the gold word links
outlined. Split from :mod:`minitrans.runs.tblog`, which logs everything else a run shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch.utils.tensorboard import SummaryWriter

from minitrans.analysis.alignment import AlignmentReport, GoldAlignment, gold_cells
from minitrans.analysis.viz import attention_card, figure_to_array
from minitrans.core.sharing import ALONE, Share
from minitrans.inference.translator import sentence_tokens

GOLD_EDGE = "#ff2d2d"  # the gold links' outline: red stands out on viridis' dark and bright ends


def log_gold_overlays(
    writer: SummaryWriter | None,
    translator,
    samples,
    gold: Sequence[GoldAlignment | None],
    report: AlignmentReport,
    step: int,
    share: Share = ALONE,
) -> int:
    """The best head's cross-attention map of each sample sentence, its reference teacher-forced
    (the gold belongs to the reference's words, as when AER is measured), with the gold links
    outlined, under ``alignment/gold_vs_attention/sample{i}``. ``samples`` rows have
    ``src_ids`` (ending in EOS) and ``tgt_ids``; a sample without gold or longer than the
    model's positions is left out. Shared, each rank draws every ``size``-th sample and rank 0
    (the ``writer``'s) logs them in order. Returns the number of images logged."""
    mine = share.mine(range(len(gold)), main_last=True)
    images = share.merge({i: _gold_overlay(translator, samples[i], gold[i], report, i) for i in mine}, everywhere=False)
    if writer is None or images is None:
        return 0
    logged = [i for i in range(len(gold)) if images[i] is not None]
    for i in logged:
        writer.add_image(f"alignment/gold_vs_attention/sample{i}", images[i], step, dataformats="HWC")
    return len(logged)


def _gold_overlay(translator, row, alignment: GoldAlignment | None, report: AlignmentReport, i: int):
    """Sample ``i``'s overlay image (HWC), or None for a sample :func:`log_gold_overlays` leaves out."""
    layer, head, best = report.best_head()
    layers, heads = len(report.heads), len(report.heads[0])
    tokenizer = translator.tokenizer
    src_ids, tgt_ids = list(row["src_ids"]), list(row["tgt_ids"])
    if alignment is None or len(src_ids) > translator.max_len or len(tgt_ids) >= translator.max_len:
        return None
    weights = translator.attention_maps(src_ids, tgt_ids)["cross"][layer][head]  # (T+1, S)
    src_tokens, _, tgt_out_tokens = sentence_tokens(tokenizer, src_ids, tgt_ids)
    title = (
        f"sample {i} · gold links outlined · best head: layer {layer + 1}/{layers} · head {head + 1}/{heads}"
        f" (AER {best:.3f})"
    )
    from matplotlib.patches import Rectangle  # with the first drawing, as in analysis/viz.py

    fig = attention_card(weights, tgt_out_tokens, src_tokens, title)
    for r, c, sure in gold_cells(tokenizer, src_ids, tgt_ids, alignment):
        fig.axes[0].add_patch(
            Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor=GOLD_EDGE, lw=1.2, ls="-" if sure else "--")
        )
    return figure_to_array(fig)


__all__ = ["GOLD_EDGE", "log_gold_overlays"]
