"""Two numbers per attention layer that the notes' claims are read by (docs/claims.md): the
entropy of the attention rows (claim 1: unscaled scores saturate the softmax, so rows grow
peaked and their entropy falls) and the share of the decoder self-attention's weight on later
positions (claim 2: with the causal mask it is exactly 0; without it the decoder looks ahead).

Maps are :meth:`minitrans.inference.translator.Translator.attention_maps`' ``{kind: [per-layer
(H, Lq, Lk)]}``. Shape legend: H heads, Lq query rows, Lk keys.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor

from minitrans.analysis.viz import attention_card
from minitrans.core.textio import read_json
from minitrans.inference.translator import sentence_tokens


def row_entropy(weights: Tensor) -> Tensor:
    """-Σ w log w of each row, in nats (0 log 0 = 0): (..., Lq, Lk) -> (..., Lq)."""
    return -torch.special.xlogy(weights, weights).sum(dim=-1)


def attention_entropy(maps: dict[str, list[Tensor]]) -> dict[str, float]:
    """``{"enc_self_layer1": mean row entropy over heads and rows, ...}`` for every layer; rows
    with no weight at all (nothing to attend to) are left out."""
    found = {}
    for kind, layers in maps.items():
        for n, weights in enumerate(layers):
            if weights is None:
                continue
            real = weights.sum(dim=-1) > 0  # (H, Lq)
            found[f"{kind}_layer{n + 1}"] = float(row_entropy(weights.float())[real].mean()) if real.any() else 0.0
    return found


def future_share(weights: Tensor) -> float:
    """The mean share of a query row's weight on positions after its own: (H, T, T) -> float;
    0 for a causal decoder, up to (T-1-t)/T per row for one that attends uniformly."""
    length = weights.shape[-1]
    later = torch.ones(length, length, dtype=torch.bool, device=weights.device).triu(1)  # (T, T)
    return float((weights * later).sum(dim=-1).mean())


def measure_attention_stats(translator, src_ids: list[list[int]], tgt_ids: list[list[int]]) -> dict[str, dict]:
    """Over sentence pairs (targets teacher-forced): each layer's mean row entropy and each
    decoder self-attention layer's mean future share, averaged over the sentences;
    ``{"entropy": {"enc_self_layer1": ...}, "future_share": {"dec_self_layer1": ...}}``."""
    entropy: dict[str, list[float]] = {}
    future: dict[str, list[float]] = {}
    for src, tgt in zip(src_ids, tgt_ids):
        maps = translator.attention_maps(src, tgt)
        for key, value in attention_entropy(maps).items():
            entropy.setdefault(key, []).append(value)
        for n, weights in enumerate(maps.get("dec_self", [])):
            future.setdefault(f"dec_self_layer{n + 1}", []).append(future_share(weights))
    mean = {key: sum(values) / len(values) for key, values in entropy.items()}
    return {"entropy": mean, "future_share": {key: sum(values) / len(values) for key, values in future.items()}}


CARD_FORMATS = (".png", ".svg", ".pdf")
_RUN_RECORDS = ("summary.json", "config.yaml", "overrides.yaml", "hydra.yaml", "minitrans.json", "config.json")


def _owned_by_a_run(path: Path) -> bool:
    """A file a run or an export wrote and reads back: a checkpoint, weights, its record."""
    return (
        path.suffix in (".pt", ".safetensors", ".bin", ".model")
        or path.parent.name in ("checkpoints", ".hydra")
        or path.name in _RUN_RECORDS
    )


def check_outputs(translator, out: Path | None, card: Path | None) -> None:
    """Refuse, before anything is measured, outputs that cannot be written or would replace what
    this tool did not write: a folder, the model read, a run's checkpoint or record, a JSON file
    not of this tool, a card in a format matplotlib would not write, a card for a model with no
    decoder self-attention. Raises ValueError, one line."""
    named = [(flag, Path(path)) for flag, path in (("--out", out), ("--card", card)) if path is not None]
    if len(named) == 2 and named[0][1].resolve() == named[1][1].resolve():
        raise ValueError(f"--out and --card name one file, {out}; name two")
    model_file = Path(translator.path).resolve() if translator.path is not None else None
    for flag, path in named:
        if path.is_dir():
            raise ValueError(f"{flag} {path} is a folder; name a file in it")
        above = next((folder for folder in path.parents if folder.exists()), None)
        if above is not None and not above.is_dir():
            raise ValueError(f"{flag} {path}: {above} is a file, not a folder")
        if path.exists() and (path.resolve() == model_file or _owned_by_a_run(path.resolve())):
            raise ValueError(f"{flag} {path} would replace a file of a run or a model; name a new file")
    if out is not None and Path(out).exists() and not _is_ours(Path(out)):
        raise ValueError(f"--out {out} exists and is not an earlier attention_stats.py result; name a new file")
    if card is not None:
        if Path(card).suffix.lower() not in CARD_FORMATS:
            raise ValueError(f"--card {card}: name a .png, .svg or .pdf file")
        if "dec_self" not in translator.attention_maps([translator.tokenizer.eos_id], []):
            raise ValueError("--card draws the decoder's self-attention, and this model's decoder has none")


def _is_ours(path: Path) -> bool:
    try:
        found = read_json(path)
    except (OSError, ValueError):
        return False
    return isinstance(found, dict) and {"entropy", "future_share"} <= set(found)


def future_card(translator, src_ids: list[int], tgt_ids: list[int], title: str):
    """The decoder self-attention head with the most weight on later positions, for one pair
    teacher-forced, as an attention card (rows: decoder inputs; columns: the same positions)."""
    layers = translator.attention_maps(src_ids, tgt_ids)["dec_self"]  # [(H, T, T)]
    share, layer, head = max((future_share(w[h][None]), n, h) for n, w in enumerate(layers) for h in range(len(w)))
    _, tgt_in_tokens, _ = sentence_tokens(translator.tokenizer, src_ids, tgt_ids)
    heading = f"{title} · decoder self-attention L{layer + 1} H{head + 1}: {share:.0%} on later words"
    return attention_card(layers[layer][head], tgt_in_tokens, tgt_in_tokens, heading)


__all__ = [
    "CARD_FORMATS",
    "attention_entropy",
    "check_outputs",
    "future_card",
    "future_share",
    "measure_attention_stats",
    "row_entropy",
]
