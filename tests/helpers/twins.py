"""The benchmark's ``torch.nn.Transformer`` twin given our model's weights, so that a test can hold
the two equal as functions (the benchmark's reference is the same model, not one of its size)."""

from __future__ import annotations

import torch
from torch import nn

from minitrans.bench.reference import TorchTransformer


def copy_weights_into_twin(ours: nn.Module, twin: TorchTransformer) -> None:
    """minitrans' weights into the nn.Transformer twin, parameter by parameter."""
    params = dict(ours.named_parameters())
    mapping = {"embed.weight": "src_embed.weight", "output.weight": "src_embed.weight", "output.bias": "output.bias"}
    for stack, layers in (("encoder", twin.core.encoder.layers), ("decoder", twin.core.decoder.layers)):
        for i, _ in enumerate(layers):
            mine, theirs = f"{stack}_layers.{i}.", f"core.{stack}.layers.{i}."
            mapping |= {
                theirs + "self_attn.in_proj_weight": mine + "self_attn.qkv_proj.weight",
                theirs + "self_attn.in_proj_bias": mine + "self_attn.qkv_proj.bias",
                theirs + "linear1.weight": mine + "feed_forward.net.0.weight",
                theirs + "linear1.bias": mine + "feed_forward.net.0.bias",
                theirs + "linear2.weight": mine + "feed_forward.net.3.weight",
                theirs + "linear2.bias": mine + "feed_forward.net.3.bias",
            }
            mapping |= {
                theirs + f"self_attn.out_proj.{p}": mine + f"self_attn.out_proj.{p}" for p in ("weight", "bias")
            }
            blocks = ["attn_block", "ff_block"] if stack == "encoder" else ["self_block", "cross_block", "ff_block"]
            for n, block in enumerate(blocks, 1):
                mapping |= {theirs + f"norm{n}.{p}": mine + f"{block}.norm.{p}" for p in ("weight", "bias")}
            if stack == "decoder":
                mapping |= {
                    theirs + f"multihead_attn.out_proj.{p}": mine + f"cross_attn.out_proj.{p}"
                    for p in ("weight", "bias")
                }
        if f"{stack}_norm.weight" in params:  # pre-norm: the stack's final LayerNorm
            mapping |= {f"core.{stack}.norm.{p}": f"{stack}_norm.{p}" for p in ("weight", "bias")}
    state = {theirs: params[mine].detach() for theirs, mine in mapping.items()}
    for i, _ in enumerate(twin.core.decoder.layers):  # cross-attention: one in_proj from q_proj and kv_proj
        mine = f"decoder_layers.{i}.cross_attn."
        for p in ("weight", "bias"):
            state[f"core.decoder.layers.{i}.multihead_attn.in_proj_{p}"] = torch.cat(
                [params[mine + f"q_proj.{p}"], params[mine + f"kv_proj.{p}"]]
            ).detach()
    missing, unexpected = twin.load_state_dict(state, strict=False)
    assert unexpected == []
    # post-norm: nn.Transformer's extra final LayerNorms stay at their identity initialisation
    assert all(".norm." in name and "layers" not in name for name in missing), missing


__all__ = ["copy_weights_into_twin"]
