"""Export a trained Transformer to CTranslate2, the C++ inference engine for Transformer translation.

    python scripts/export.py RUN --to ctranslate2 OUT_DIR [--quantization int8]

Built on CTranslate2's own converter API: a :class:`ctranslate2.converters.Converter` whose
``_load`` fills a ``TransformerSpec`` (encoder and decoder specs, one ``LinearSpec`` per
projection) from our weights; the engine then validates, quantises and writes it. The mapping:

- our fused self-attention ``qkv_proj`` (Q, K, V stacked in that order) is CTranslate2's fused
  ``linear[0]``; cross-attention's ``q_proj`` and fused ``kv_proj`` (K, V) are ``linear[0]`` and
  ``linear[1]``; ``out_proj`` is the last ``linear``;
- pre-norm (``norm_first``) maps to ``pre_norm=True`` with the stacks' final LayerNorms;
  post-norm to ``pre_norm=False`` (a LayerNorm after each residual sum, no final one);
- embeddings are multiplied by √d_model in both; shared source/target embeddings and the tied
  output projection are the same array, which CTranslate2 stores once (it aliases equal
  variables);
- positions: CTranslate2's built-in sinusoids concatenate [sin | cos], start at position 1 and
  use another frequency step than ours (interleaved sin/cos from position 0), so our own table is
  shipped as the position-encoding weights of both stacks;
- a per-head width ``d_k`` other than d_model / num_heads is the spec's ``head_dim``
  (CTranslate2 scales scores by 1/√head_dim); LayerNorm's epsilon travels in the config.

What the engine cannot represent is refused with one line (:class:`ExportError`): the RNN
models, and ``d_v`` different from ``d_k`` (CTranslate2 splits keys and values into heads of
one width).

The exported folder is self-contained: ``model.bin``, ``config.json`` and the vocabularies
(CTranslate2's), the SentencePiece models (``src.model``, and ``tgt.model`` for separate
vocabularies) and ``minitrans.json`` (the run's configuration, ``max_len``, what was exported).
:class:`minitrans.ct2.Ct2Translator` translates with it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from minitrans.ct2 import METADATA, import_ctranslate2
from minitrans.tokenizer import Tokenizer
from minitrans.transformer import Transformer

FORMAT = "minitrans-ctranslate2"
VERSION = 1
ENGINES = ("ctranslate2",)


class ExportError(ValueError):
    """A model (or a request) that cannot be exported; the message is one line naming why."""


def check_exportable(model: nn.Module) -> None:
    """Raise :class:`ExportError` naming the first thing CTranslate2 cannot represent."""
    if not isinstance(model, Transformer):
        raise ExportError(
            f"cannot export a {type(model).__name__}: CTranslate2 runs Transformers only (no recurrent models)"
        )
    attn = model.encoder_layers[0].self_attn
    if attn.d_v != attn.d_k:
        raise ExportError(
            f"cannot export d_v={attn.d_v} different from d_k={attn.d_k}: "
            "CTranslate2 splits keys and values into heads of one width"
        )
    activation = model.encoder_layers[0].feed_forward.net[1]
    if not isinstance(activation, nn.ReLU):
        raise ExportError(f"cannot export the feed-forward activation {type(activation).__name__}")


def _array(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().to(torch.float32).cpu().numpy()


def _set_linear(spec, linear: nn.Linear) -> None:
    spec.weight = _array(linear.weight)  # (out, in), as CTranslate2 expects
    if linear.bias is not None:
        spec.bias = _array(linear.bias)


def _set_norm(spec, norm: nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)


def _set_attention(spec, block, attention) -> None:
    _set_norm(spec.layer_norm, block.norm)
    if attention.is_cross:
        _set_linear(spec.linear[0], attention.q_proj)
        _set_linear(spec.linear[1], attention.kv_proj)  # K then V: CTranslate2's fused order
    else:
        _set_linear(spec.linear[0], attention.qkv_proj)  # Q, K, V: CTranslate2's fused order
    _set_linear(spec.linear[-1], attention.out_proj)


def _set_ffn(spec, layer) -> None:
    _set_norm(spec.layer_norm, layer.ff_block.norm)
    _set_linear(spec.linear_0, layer.feed_forward.net[0])
    _set_linear(spec.linear_1, layer.feed_forward.net[3])


def transformer_spec(model: Transformer, tokenizer: Tokenizer):
    """Our Transformer's weights as a ``ctranslate2.specs.TransformerSpec`` (vocabularies registered)."""
    import_ctranslate2()
    from ctranslate2.specs import common_spec, transformer_spec

    check_exportable(model)
    attn = model.encoder_layers[0].self_attn
    head_dim = None if attn.d_k * attn.num_heads == model.d_model else attn.d_k
    options = {"num_heads": attn.num_heads, "pre_norm": model.norm_first, "activation": common_spec.Activation.RELU}
    encoder = transformer_spec.TransformerEncoderSpec(len(model.encoder_layers), head_dim=head_dim, **options)
    # alignment_heads=0: the engine's attention output averages every head of the last layer, as ours
    decoder = transformer_spec.TransformerDecoderSpec(
        len(model.decoder_layers), head_dim=head_dim, alignment_layer=-1, alignment_heads=0, **options
    )
    positions = _array(model.positions.table)  # (max_len, D): ours, not the engine's own sinusoids

    encoder.embeddings[0].weight = _array(model.src_embed.weight)
    encoder.position_encodings.encodings = positions
    for spec, layer in zip(encoder.layer, model.encoder_layers):
        _set_attention(spec.self_attention, layer.attn_block, layer.self_attn)
        _set_ffn(spec.ffn, layer)
    decoder.embeddings.weight = _array(model.tgt_embed.weight)
    decoder.position_encodings.encodings = positions
    for spec, layer in zip(decoder.layer, model.decoder_layers):
        _set_attention(spec.self_attention, layer.self_block, layer.self_attn)
        _set_attention(spec.attention, layer.cross_block, layer.cross_attn)
        _set_ffn(spec.ffn, layer)
    if model.norm_first:
        _set_norm(encoder.layer_norm, model.encoder_norm)
        _set_norm(decoder.layer_norm, model.decoder_norm)
    _set_linear(decoder.projection, model.output)

    spec = transformer_spec.TransformerSpec(encoder, decoder)
    spec.config.layer_norm_epsilon = model.encoder_layers[0].attn_block.norm.eps
    # The SentencePiece pieces are the engine's vocabularies: ids and special tokens agree.
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = (
        tokenizer.src.id_to_piece(i) for i in (tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id)
    )
    spec.config.decoder_start_token = tokenizer.tgt.id_to_piece(tokenizer.bos_id)
    for processor, register, rows in (
        (tokenizer.src, spec.register_source_vocabulary, model.src_embed.num_embeddings),
        (tokenizer.tgt, spec.register_target_vocabulary, model.tgt_embed.num_embeddings),
    ):
        if processor.get_piece_size() != rows:
            raise ExportError(f"the tokenizer has {processor.get_piece_size()} pieces but the model {rows} embeddings")
        register([processor.id_to_piece(i) for i in range(rows)])
    return spec


def _converter(model: Transformer, tokenizer: Tokenizer, files: dict[str, Path]):
    """A CTranslate2 converter for one in-memory model; ``files`` are copied into the folder."""
    ctranslate2 = import_ctranslate2()

    class MinitransConverter(ctranslate2.converters.Converter):
        def _load(self):
            spec = transformer_spec(model, tokenizer)
            for name, path in files.items():
                spec.register_file(str(path), name)
            return spec

    return MinitransConverter()


def export_ctranslate2(
    checkpoint: str | Path,
    out_dir: str | Path,
    quantization: str | None = None,
    force: bool = False,
) -> Path:
    """Export a run folder or ``.pt`` checkpoint to a self-contained CTranslate2 folder.

    ``quantization`` is any of CTranslate2's weight types (int8, int16, float16, bfloat16,
    int8_float32, ...; default: float32). An existing ``out_dir`` is replaced only with ``force``.
    """
    ctranslate2 = import_ctranslate2()
    from ctranslate2.specs.model_spec import ACCEPTED_MODEL_TYPES

    from minitrans.checkpoint import resolve_checkpoint
    from minitrans.translate import Translator

    if quantization is not None and quantization not in ACCEPTED_MODEL_TYPES:
        raise ExportError(f"unknown quantization {quantization!r}; choose one of {', '.join(ACCEPTED_MODEL_TYPES)}")
    out_dir = Path(out_dir)
    if out_dir.exists() and not force:
        raise ExportError(f"{out_dir} already exists (use --force to replace it)")
    checkpoint = resolve_checkpoint(checkpoint)
    translator = Translator.from_checkpoint(checkpoint, "cpu")
    check_exportable(translator.model)
    tokenizer = translator.tokenizer
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "engine": "ctranslate2",
        "ctranslate2_version": ctranslate2.__version__,
        "quantization": quantization or "float32",
        "source": str(checkpoint),
        "max_len": translator.max_len,
        "joint_vocab": tokenizer.is_joint,
        "config": translator.config,
        # what translate.py --info reports and its unseen-word warnings draw on
        "training_data": translator.record.to_state() if translator.record is not None else None,
    }
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        tokenizer.save(staging)  # src.model (+ tgt.model)
        (staging / METADATA).write_text(json.dumps(metadata, indent=2, default=str) + "\n", encoding="utf-8")
        files = {path.name: path for path in sorted(staging.iterdir())}
        # Convert next to the target, then swap in: a failed export leaves nothing half-written.
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
        try:
            _converter(translator.model, tokenizer, files).convert(str(partial), quantization=quantization, force=True)
            if out_dir.exists():
                shutil.rmtree(out_dir)
            partial.rename(out_dir)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return out_dir


__all__ = ["ENGINES", "ExportError", "check_exportable", "export_ctranslate2", "transformer_spec"]
