"""Exercise 7 solved, and the usual wrong versions."""

import torch


def cross_attention(y, memory, src_mask, w_q, w_k, w_v, w_o, num_heads, **how):
    def split(x):
        b, length, width = x.shape
        return x.view(b, length, num_heads, width // num_heads).transpose(1, 2)  # (B, H, L, W)

    source = y if how.get("sources_swapped") else memory
    target = memory if how.get("sources_swapped") else y
    q, k, v = split(target @ w_q), split(source @ w_k), split(source @ w_v)
    scores = q @ k.transpose(-2, -1) * how.get("scale", q.shape[-1] ** -0.5)  # (B, H, T, S)
    if how.get("sources_swapped") and not how.get("mask_misfit"):
        src_mask = None  # (B, 1, 1, S) would not fit scores (B, H, S, T)
    if how.get("causal"):
        src_mask = src_mask & torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
    if src_mask is not None and not how.get("src_mask_ignored"):
        scores = scores.masked_fill(~src_mask, float("-inf"))
    out = scores.softmax(dim=-1) @ v  # (B, H, T, d_v)
    if how.get("merge_interleaved"):
        merged = out.permute(0, 2, 3, 1).reshape(out.shape[0], out.shape[2], -1)
    else:
        merged = out.transpose(1, 2).reshape(out.shape[0], out.shape[2], -1)
    return merged if how.get("no_output_projection") else merged @ w_o


def wrong(**how):
    return {"cross_attention": lambda *args: cross_attention(*args, **how)}


WRONG = {
    "src_mask_ignored": wrong(src_mask_ignored=True),
    "cross_causal": wrong(causal=True),
    "no_scale": wrong(scale=1.0),
    "scale_dk": {"cross_attention": lambda *args: cross_attention(*args, scale=1 / (args[3].shape[1] // args[7]))},
    "merge_interleaved": wrong(merge_interleaved=True),
    "sources_swapped": wrong(sources_swapped=True),
    "scores_shape": wrong(sources_swapped=True, mask_misfit=True),
    "no_output_projection": wrong(no_output_projection=True),
}
