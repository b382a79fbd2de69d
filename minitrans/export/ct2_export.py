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
  (CTranslate2 scales scores by 1/√head_dim); LayerNorm's epsilon travels in the config;
- the teaching switches (docs/claims.md) travel in the weights: a scores' scale s other than
  1/√Dk (``model.attention_scale``) multiplies the query projection by s·√Dk, which the engine's
  1/√Dk turns back into s (bit for bit when s·√Dk is a power of two, as for ``none`` at d_k 4,
  16 or 64; else to float rounding); fixed-mean cross-attention is a scale of 0, a query projection of
  zeros, so every score is 0 and each source token gets the same weight; ``positions=learned``
  ships its table and ``positions=none`` a table of zeros; without the causal mask the engine
  decodes as our cached decoding does (each step sees only the steps before it).

What the engine cannot represent is refused with one line (:class:`ExportError`): the RNN
models, ``d_v`` different from ``d_k`` (CTranslate2 splits keys and values into heads of
one width), and a float16 quantization of query weights a scale made too large for float16.

The exported folder is self-contained: ``model.bin``, ``config.json`` and the vocabularies
(CTranslate2's), the SentencePiece models (``src.model``, and ``tgt.model`` for separate
vocabularies) and ``minitrans.json`` (the run's configuration, ``max_len``, what was exported).
:class:`minitrans.export.ct2_translator.Ct2Translator` translates with it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch
from torch import nn

from minitrans.core.checkpoint import resolve_checkpoint
from minitrans.core.textio import read_json
from minitrans.data.tokenizer import Tokenizer
from minitrans.export.ct2_translator import METADATA, import_ctranslate2
from minitrans.export.loading import load_torch_translator
from minitrans.models.attention import MultiHeadAttention
from minitrans.models.transformer import Transformer

FORMAT = "minitrans-ctranslate2"
VERSION = 1
ENGINES = ("ctranslate2", "hf")  # hf: a shareable folder (minitrans.export.hf_export)


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


def query_factor(attention) -> float | None:
    """What the query projection is multiplied by so that the engine's own 1/√Dk gives this
    module's scores: s·√Dk for a scale s (0 for fixed-mean cross-attention, whose scores are all
    0); None where the module divides by √Dk itself."""
    return None if attention.scale is None else attention.scale * attention.d_k**0.5


def _set_attention(spec, block, attention) -> None:
    _set_norm(spec.layer_norm, block.norm)
    if attention.is_cross:
        _set_linear(spec.linear[0], attention.q_proj)
        _set_linear(spec.linear[1], attention.kv_proj)  # K then V: CTranslate2's fused order
    else:
        _set_linear(spec.linear[0], attention.qkv_proj)  # Q, K, V: CTranslate2's fused order
    factor = query_factor(attention)
    if factor is not None:
        # (x Wᵀ + b)·s = (x (cW)ᵀ + cb) / √Dk with c = s·√Dk: the query rows carry the scale,
        # the engine's attention is left as it is. Q's rows come first in the fused projection.
        # (The arrays may share the model's memory: scaled into copies, the model is left alone.)
        query, rows = spec.linear[0], attention.num_heads * attention.d_k
        scale = np.ones(query.weight.shape[0], dtype=np.float32)  # (rows of the projection,)
        scale[:rows] = factor
        query.weight = query.weight * scale[:, None]
        if isinstance(query.bias, np.ndarray):
            query.bias = query.bias * scale
    _set_linear(spec.linear[-1], attention.out_proj)


FLOAT16_MAX = float(np.finfo(np.float16).max)


def check_quantizable(model: Transformer, quantization: str | None) -> None:
    """:class:`ExportError` when a float16 type cannot hold the query weights that carry the
    scores' scale (:func:`query_factor`): they would be stored as inf and translate to noise."""
    if quantization is None or quantization not in ("float16", "int8_float16"):
        return
    for name, module in model.named_modules():
        factor = query_factor(module) if isinstance(module, MultiHeadAttention) else None
        if not factor:
            continue
        projection = module.q_proj if module.is_cross else module.qkv_proj
        rows = module.num_heads * module.d_k
        weights = [projection.weight[:rows]] + ([projection.bias[:rows]] if projection.bias is not None else [])
        largest = factor * max(float(part.detach().abs().max()) for part in weights)
        if largest > FLOAT16_MAX:
            raise ExportError(
                f"cannot export with quantization {quantization}: the scores' scale folded into {name}'s query "
                f"weights makes them as large as {largest:.3g}, past float16's {FLOAT16_MAX:g}; "
                "use float32, bfloat16 or int8"
            )


def _positions(model: Transformer) -> np.ndarray:
    """What the model adds to each position's embedding, as a (max_len, D) table: its sinusoids,
    its learned table, or zeros (``positions=none``)."""
    length = model.positions.max_len
    with torch.no_grad():
        return _array(torch.zeros(length, model.d_model) + model.positions(length))  # (L, D)


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
    positions = _positions(model)  # (max_len, D): ours, not the engine's own sinusoids

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

    if quantization is not None and quantization not in ACCEPTED_MODEL_TYPES:
        raise ExportError(f"unknown quantization {quantization!r}; choose one of {', '.join(ACCEPTED_MODEL_TYPES)}")
    checkpoint = resolve_checkpoint(checkpoint)
    out_dir = check_replaceable(out_dir, force, keep=checkpoint)
    translator = load_torch_translator(checkpoint, "cpu")
    check_exportable(translator.model)
    check_quantizable(translator.model, quantization)
    tokenizer = translator.tokenizer
    metadata = {
        "format": FORMAT,
        "version": VERSION,
        "engine": "ctranslate2",
        "ctranslate2_version": ctranslate2.__version__,
        "quantization": quantization or "float32",
        "source": shareable_source(checkpoint),
        "max_len": translator.max_len,
        "joint_vocab": tokenizer.is_joint,
        "config": shareable_config(translator.config),
        # what translate.py --info reports and its unseen-word warnings draw on
        "training_data": translator.record.to_state() if translator.record is not None else None,
    }
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        tokenizer.save(staging)  # src.model (+ tgt.model)
        (staging / METADATA).write_text(json.dumps(metadata, indent=2, default=str) + "\n", encoding="utf-8")
        files = {path.name: path for path in sorted(staging.iterdir())}
        with staged_export(out_dir, force, keep=checkpoint) as converted:
            _converter(translator.model, tokenizer, files).convert(str(converted), quantization=quantization)
    return out_dir


@contextlib.contextmanager
def staged_export(out_dir: Path, force: bool, keep: Path | None = None) -> Iterator[Path]:
    """A folder (not yet created) to write an export into, beside ``out_dir``; when the block ends
    without an error it replaces ``out_dir``, so a failed export leaves nothing half-written.

    The staging folder holds :data:`PARTIAL_MARKER`, so one left by a killed export is ours to
    remove (:func:`remove_partial_exports`, at the next export); ``out_dir`` is checked again just
    before it is replaced (:func:`check_replaceable`).
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    remove_partial_exports(out_dir)
    partial = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.{PARTIAL_TAG}"))
    try:
        (partial / PARTIAL_MARKER).touch()
        yield partial / "export"
        if out_dir.exists():
            check_replaceable(out_dir, force, keep=keep)  # still ours to replace, just before
            shutil.rmtree(out_dir)
        (partial / "export").rename(out_dir)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


PARTIAL_TAG = "partial-"
PARTIAL_MARKER = ".minitrans-partial-export"  # inside a staging folder: only folders holding it are cleaned


def shareable_path(value: str | None) -> str | None:
    """A ``data.root`` or ``data.path`` as others may see it: a local path cut to its last part,
    a Hub id (``bentrevett/multi30k``) whole."""
    if isinstance(value, str) and value and (Path(value).expanduser().exists() or value[0] in "/~."):
        return Path(value).expanduser().name
    return value


def shareable_config(config: dict | None) -> dict | None:
    """A run's configuration as an export gives it to others: without this machine's paths —
    no ``data.cache_dir``, and ``data.root`` / ``data.path`` as :func:`shareable_path` gives them."""
    if not isinstance(config, dict) or not isinstance(config.get("data"), dict):
        return config
    data = {key: value for key, value in config["data"].items() if key != "cache_dir"}
    for key in ("root", "path"):
        if key in data:
            data[key] = shareable_path(data[key])
    return {**config, "data": data}


def shareable_source(checkpoint: Path) -> str:
    """Which checkpoint an export was made from, without the folders above its run:
    ``run/checkpoints/best.pt`` for RUN/checkpoints/best.pt, else the file's name."""
    parts = checkpoint.parts
    return "/".join(parts[-3:]) if len(parts) >= 3 and parts[-2] == "checkpoints" else checkpoint.name


def is_export(path: Path) -> bool:
    """True for a folder an earlier export wrote: it holds our marker file with our format (the
    CTranslate2 export's minitrans.json, or the shareable folder's config.json)."""
    for name, expected in ((METADATA, FORMAT), ("config.json", "minitrans-hf")):
        try:
            metadata = read_json(path / name)
        except (OSError, ValueError):
            continue
        if isinstance(metadata, dict) and metadata.get("format") == expected:
            return True
    return False


def check_replaceable(out_dir: str | Path, force: bool, keep: Path | None = None) -> Path:
    """The absolute folder to export into, or :class:`ExportError` when writing there could lose data.

    A folder that does not exist is always fine. An existing one is replaced only with ``force``,
    and only when it is empty or an earlier export (it holds our marker file): never the current
    folder or one above it, the folder that holds ``keep`` (the checkpoint being exported), or a
    folder with anything else in it — a run folder, a home directory, a typo.
    """
    out_dir = Path(out_dir).expanduser().absolute()
    resolved = out_dir.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise ExportError(f"refusing to export into {out_dir}: it is the current folder or holds it; name a new folder")
    if keep is not None and (resolved == Path(keep).resolve() or resolved in Path(keep).resolve().parents):
        raise ExportError(
            f"refusing to export into {out_dir}: it holds the checkpoint being exported; name a new folder"
        )
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise ExportError(f"refusing to replace {out_dir}: it is not a folder; name a new folder")
    if not out_dir.exists():
        return out_dir
    if not force:
        raise ExportError(f"{out_dir} already exists (use --force to replace an earlier export)")
    if is_export(out_dir) or not any(out_dir.iterdir()):
        return out_dir
    raise ExportError(
        f"refusing to replace {out_dir}: --force replaces only an earlier export (a folder holding {METADATA} "
        "or a minitrans config.json) "
        "or an empty folder, and this one holds other files; name a new folder"
    )


def remove_partial_exports(out_dir: Path) -> list[Path]:
    """Remove staging folders that an export into ``out_dir`` left when it was killed; returns them.

    Only folders named like ours *and* holding the staging marker are removed, so nothing this
    module did not write is touched.
    """
    removed = []
    for path in out_dir.parent.glob(f".{out_dir.name}.{PARTIAL_TAG}*"):
        if path.is_dir() and not path.is_symlink() and (path / PARTIAL_MARKER).is_file():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


__all__ = [
    "ENGINES",
    "ExportError",
    "check_exportable",
    "check_replaceable",
    "export_ctranslate2",
    "is_export",
    "staged_export",
    "transformer_spec",
]
