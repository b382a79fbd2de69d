"""What a run shows in TensorBoard beyond scalars: sample translations, attention maps, hparams.

Tags written here, all into the run's own event file:

    samples/{i}                            text: source, reference and hypothesis of sample i
    attention/sample{i}/{kind}/layer{n}    image: one layer's maps, heads as panels
                                           (kind: enc_self, dec_self, cross)
    attention/none                         text, for a model without attention (fixed-context RNN)
    final/*                                scalars: the run's final metrics, the HPARAMS view's columns
    _hparams_/session_start_info …         the run's hyper-parameters, for the HPARAMS view
"""

from __future__ import annotations

import re

from torch.utils.tensorboard import SummaryWriter
from torch.utils.tensorboard.summary import hparams as hparams_summaries

from minitrans.viz import attention_figures, figure_to_array, sentence_tokens

NO_ATTENTION = (
    "this model has no attention: one context vector C for every target word "
    "(the encoder's summary of the whole source), so there is no alignment to show"
)


def _markdown(text: str) -> str:
    """Escape what TensorBoard's Markdown would eat (``<unk>``, ``*``, ``|`` …)."""
    return re.sub(r"([\\`*_{}\[\]<>|#])", r"\\\1", text)


def log_validation_samples(writer: SummaryWriter, translator, samples, hypotheses: list[str], step: int) -> None:
    """Source, reference and hypothesis of the fixed sample sentences as text, and every
    attention map of the model on each of them (teacher forcing its own hypothesis).

    ``samples`` is a Dataset slice with ``src``, ``tgt``, ``src_ids`` and ``tgt_ids`` columns;
    ``hypotheses`` are their current translations. The hypothesis ids come from re-encoding
    the text, which matches the decoder's own ids up to SentencePiece normalisation.
    """
    has_attention = True
    for i, hyp in enumerate(hypotheses):
        row = samples[i]
        text = (
            f"| | |\n|---|---|\n| **source** | {_markdown(row['src'])} |\n"
            f"| **reference** | {_markdown(row['tgt'])} |\n| **hypothesis** | {_markdown(hyp)} |"
        )
        writer.add_text(f"samples/{i}", text, step)
        if has_attention:
            has_attention = log_attention(
                writer, translator, row["src_ids"], hyp, f"attention/sample{i}", step, title_prefix=f"sample {i}: "
            )
    if not has_attention:
        writer.add_text("attention/none", NO_ATTENTION, step)


def log_attention(
    writer: SummaryWriter,
    translator,
    src_ids,
    hypothesis: str | list[int],
    tag: str,
    step: int,
    title_prefix: str = "",
) -> bool:
    """Every layer's maps of every kind for one sentence and its translation (text, or the
    decoder's own ids) under ``{tag}/{kind}/layer{n}``; False (and nothing logged) when the
    model has no attention."""
    tokenizer = translator.tokenizer
    hyp_ids = tokenizer.encode_tgt([hypothesis])[0] if isinstance(hypothesis, str) else list(hypothesis)
    hyp_ids = hyp_ids[: max(translator.max_len - 1, 0)]  # the decoder input is <s> + hypothesis
    maps = translator.attention_maps(src_ids, hyp_ids)
    if not maps:
        return False
    src_tokens, tgt_in_tokens, tgt_out_tokens = sentence_tokens(tokenizer, src_ids, hyp_ids)
    for key, fig in attention_figures(maps, src_tokens, tgt_in_tokens, tgt_out_tokens, title_prefix).items():
        writer.add_image(f"{tag}/{key}", figure_to_array(fig), step, dataformats="HWC")
    return True


def run_hparams(cfg, num_params: int, summary: dict) -> dict:
    """The hyper-parameters a run is compared by; only those that apply to its model kind."""
    model, trainer, data = cfg.model, cfg.trainer, cfg.data
    values = {
        "name": summary.get("name") or model.kind,
        "model": model.kind,
        "params": num_params,
        "data": data.name,
        "vocab_size": data.vocab_size,
        "max_steps": trainer.max_steps,
        "steps": summary.get("steps", 0),
        "batch_tokens": trainer.batch_tokens,
        "lr": trainer.lr,
        "warmup_steps": trainer.warmup_steps,
        "dropout": model.dropout,
        "seed": cfg.seed,
    }
    if model.kind == "transformer":
        values |= {
            "num_heads": model.num_heads,
            "d_k": model.head_dim,
            "d_v": model.d_v or model.head_dim,
            "d_model": model.d_model,
            "d_ff": model.d_ff,
            "encoder_layers": model.num_encoder_layers,
            "decoder_layers": model.num_decoder_layers,
            "norm_first": model.norm_first,
        }
    else:
        values |= {
            "d_embed": model.d_embed,
            "d_hidden": model.d_hidden,
            "layers": model.num_layers,
            "bidirectional": model.bidirectional,
        }
        if model.kind == "rnn_attention":
            values["d_attention"] = model.d_attention or model.d_hidden
    return {key: str(value).lower() if isinstance(value, bool) else value for key, value in values.items()}


def final_metrics(summary: dict) -> dict[str, float]:
    """``final/*`` scalars: valid and (first) test BLEU and chrF, valid loss, every test split."""
    valid, test = summary["valid"], summary["test"]
    metrics = {
        "final/test_bleu": test["bleu"],
        "final/test_chrf": test["chrf"],
        "final/valid_bleu": valid["bleu"],
        "final/valid_chrf": valid["chrf"],
        "final/valid_loss": valid["loss"],
        "final/train_seconds": summary.get("train_seconds", 0.0),
    }
    splits = summary.get("test_splits", {})
    if len(splits) > 1:
        for name, scores in splits.items():
            metrics[f"final/{name}_bleu"] = scores["bleu"]
            metrics[f"final/{name}_chrf"] = scores["chrf"]
    return {key: float(value) for key, value in metrics.items()}


def log_hparams(writer: SummaryWriter, cfg, num_params: int, summary: dict) -> None:
    """Hyper-parameters with the run's final metrics, for TensorBoard's HPARAMS view.

    ``SummaryWriter.add_hparams`` would write into a new sub-folder (a second "run"); here the
    session summaries go into the run's own event file, so each run folder of a sweep is one
    row of the HPARAMS table. No experiment summary is written: TensorBoard then builds the
    columns from every run's hyper-parameters (a Transformer and an RNN have different ones)
    and offers every scalar tag, ``final/*`` included, as a metric.
    """
    values = run_hparams(cfg, num_params, summary)
    metrics = final_metrics(summary)
    _, session_start, session_end = hparams_summaries(values, metrics)
    file_writer = writer._get_file_writer()
    file_writer.add_summary(session_start)
    step = summary.get("steps", None)
    for key, value in metrics.items():
        writer.add_scalar(key, value, step)
    file_writer.add_summary(session_end)
    writer.flush()


__all__ = ["NO_ATTENTION", "final_metrics", "log_attention", "log_hparams", "log_validation_samples", "run_hparams"]
