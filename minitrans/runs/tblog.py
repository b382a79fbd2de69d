"""What a run shows in TensorBoard: the chart layout, sample translations, attention maps, and
the hyper-parameters with the final figures.

Tags written here, all into the run's own event file:

    samples/translations                       text: a table of the sample sentences (source,
                                               reference, hypothesis), one per validation
    attention_{kind}/sample{i}/layer{n}/head{h}   image: one head's map, every card the same size
                                               (kind: cross, dec_self, enc_self); its title names
                                               the head's role where its share on this map passes
                                               the threshold ("· previous-token": analysis/head_roles.py)
    attention/none                             text, for a model without attention (fixed-context RNN)
    attention_entropy/{kind}_layer{n}          scalar: the mean row entropy (nats) of that layer's maps on
                                               the sample sentences (analysis/attention_stats.py)
    valid/aer_best_head                        scalar: the AER of the best-aligning cross-attention head
                                               on a validation sample (embedded corpus: gold alignments)
    alignment/aer_by_head                      image: layer x head AER heatmap of that sample
    alignment/gold_vs_attention/sample{i}      image: the best head's cross-attention map of sample
                                               sentence i (its reference teacher-forced) with the
                                               gold word links outlined (dashed: possible links)
    ~final/*                                   scalars: the final figures, read by HPARAMS as its
                                               metric columns (the "~" sorts them after train/ and
                                               valid/, so SCALARS opens on the curves)
    _hparams_/experiment, session_start_info … the hyper-parameters, for the HPARAMS view
    custom_scalars__config__                   the CUSTOM SCALARS layout: train vs valid loss, BLEU
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from torch.utils.tensorboard import SummaryWriter
from torch.utils.tensorboard.summary import hparams as hparams_summaries

from minitrans.analysis.alignment import AlignmentReport
from minitrans.analysis.attention_stats import attention_entropy
from minitrans.analysis.head_roles import map_roles
from minitrans.analysis.heads import heads_heatmap
from minitrans.analysis.viz import attention_card_images, figure_to_array
from minitrans.core.config import CROSS_ATTENTION, POSITIONS
from minitrans.core.sharing import ALONE, Share
from minitrans.inference.translator import sentence_tokens
from minitrans.runs.summary import RunSummary

NO_ATTENTION = (
    "this model has no attention: one context vector C for every target word "
    "(the encoder's summary of the whole source), so there is no alignment to show"
)
FINAL = "~final"  # the final figures' tag prefix: sorts after train/ and valid/ in SCALARS

# The CUSTOM SCALARS tab: the curves to read first, side by side, one tag per chart. TensorBoard
# colours a chart's lines by run (a series is "tag (run)", its colour the run's) and draws no
# legend, so two tags of one run on one chart are two lines of one colour that cannot be told
# apart; with one tag per chart, each line is a run, in the colour the run selector shows. (Tags
# are regular expressions; the valid curves have a point per validation only, so read them with
# smoothing 0.)
SCALARS_LAYOUT = {
    "train vs valid": {
        "train loss, label-smoothed (what training minimises)": ["Multiline", [r"train/loss_label_smoothed$"]],
        "valid loss, label-smoothed (the same loss on the validation split)": [
            "Multiline",
            [r"valid/loss_label_smoothed$"],
        ],
        "valid cross-entropy, no label smoothing": ["Multiline", [r"valid/cross_entropy$"]],
        "valid BLEU": ["Multiline", [r"valid/bleu$"]],
        "valid chrF": ["Multiline", [r"valid/chrf$"]],
    },
    "training": {
        "learning rate": ["Multiline", [r"train/lr$"]],
        "target tokens per second": ["Multiline", [r"train/tokens_per_second$"]],
        "target tokens per CPU-second": ["Multiline", [r"train/tokens_per_cpu_second$"]],
        "resident memory, MiB": ["Multiline", [r"train/rss_mib$"]],
    },
}


def log_layout(writer: SummaryWriter) -> None:
    """The CUSTOM SCALARS layout (:data:`SCALARS_LAYOUT`); once per event file."""
    writer.add_custom_scalars(SCALARS_LAYOUT)


def _markdown(text: str) -> str:
    """Escape what TensorBoard's Markdown would eat (``<unk>``, ``*``, ``|`` …)."""
    return re.sub(r"([\\`*_{}\[\]<>|#])", r"\\\1", text)


def samples_table(sources: list[str], references: list[str], hypotheses: list[str]) -> str:
    """A Markdown table with a header row: one row per sample sentence."""
    lines = ["| # | source | reference | hypothesis |", "|---:|---|---|---|"]
    for i, (src, ref, hyp) in enumerate(zip(sources, references, hypotheses)):
        lines.append(f"| {i} | {_markdown(src)} | {_markdown(ref)} | {_markdown(hyp) or '*(empty)*'} |")
    return "\n".join(lines)


def log_validation_samples(
    writer: SummaryWriter | None, translator, samples, hypotheses: list[str], step: int, share: Share = ALONE
) -> None:
    """Source, reference and hypothesis of the fixed sample sentences as one table, and every
    attention map of the model on each of them (teacher forcing its own hypothesis).

    ``samples`` is a Dataset slice (or list of rows) with ``src``, ``tgt`` and ``src_ids``;
    ``hypotheses`` are their current translations. The hypothesis ids come from re-encoding
    the text, which matches the decoder's own ids up to SentencePiece normalisation. Shared,
    each rank draws every ``size``-th sample's cards and rank 0, the one with the ``writer``,
    logs them all in sample order.
    """
    if not hypotheses:
        return
    rows = [samples[i] for i in range(len(hypotheses))]
    if writer is not None:
        table = samples_table([row["src"] for row in rows], [row["tgt"] for row in rows], hypotheses)
        writer.add_text("samples/translations", table, step)
    mine = share.mine(range(len(rows)), main_last=True)
    cards = share.merge(
        {i: _sample_cards(translator, rows[i]["src_ids"], hypotheses[i], f"sample {i} · ") for i in mine},
        everywhere=False,
    )
    if writer is None or cards is None:
        return
    for i in range(len(rows)):
        if cards[i] is None:  # no attention (the fixed-context RNN): say so once
            writer.add_text("attention/none", NO_ATTENTION, step)
            return
        _add_cards(writer, cards[i][0], step, i)
    for key in cards[0][1]:  # each layer's entropy, averaged over the samples
        writer.add_scalar(f"attention_entropy/{key}", sum(cards[i][1][key] for i in range(len(rows))) / len(rows), step)


def log_attention(
    writer: SummaryWriter,
    translator,
    src_ids,
    hypothesis: str | list[int],
    step: int,
    sample: int = 0,
    title_prefix: str = "",
) -> bool:
    """Every head's map of every kind and layer for one sentence and its translation (text,
    or the decoder's own ids) under ``attention_{kind}/sample{sample}/layer{n}/head{h}``;
    False (and nothing logged) when the model has no attention."""
    images = attention_images(translator, src_ids, hypothesis, title_prefix)
    if images is None:
        return False
    _add_cards(writer, images, step, sample)
    return True


def attention_images(translator, src_ids, hypothesis: str | list[int], title_prefix: str = "") -> dict | None:
    """The cards of :func:`log_attention` as ``{"kind/layer{n}/head{h}": HWC image}``; None when
    the model has no attention."""
    found = _sample_maps(translator, src_ids, hypothesis)
    return None if found is None else attention_card_images(*found, title_prefix)


def _sample_cards(translator, src_ids, hypothesis, title_prefix: str) -> tuple[dict, dict[str, float]] | None:
    """:func:`attention_images` and each layer's mean row entropy, from one teacher-forced pass;
    a self-attention card names its head's role where the head's share on this map passes its
    threshold (:func:`minitrans.analysis.head_roles.map_roles`: it reads the maps, nothing else)."""
    found = _sample_maps(translator, src_ids, hypothesis)
    if found is None:
        return None
    return attention_card_images(*found, title_prefix, roles=map_roles(found[0])), attention_entropy(found[0])


def _sample_maps(translator, src_ids, hypothesis: str | list[int]):
    """(maps, source tokens, decoder input tokens, output tokens) of one sentence and its
    hypothesis teacher-forced; None when the model has no attention."""
    tokenizer = translator.tokenizer
    src_ids = translator.fit_source(src_ids)  # cut as decoding cuts it (quiet: the notes are data)
    hyp_ids = tokenizer.encode_tgt([hypothesis])[0] if isinstance(hypothesis, str) else list(hypothesis)
    hyp_ids = hyp_ids[: max(translator.max_len - 1, 0)]  # the decoder input is <s> + hypothesis
    maps = translator.attention_maps(src_ids, hyp_ids)
    if not maps:
        return None
    return (maps, *sentence_tokens(tokenizer, src_ids, hyp_ids))


def _add_cards(writer: SummaryWriter, images: dict, step: int, sample: int) -> None:
    for key, image in images.items():
        kind, rest = key.split("/", 1)
        writer.add_image(f"attention_{kind}/sample{sample}/{rest}", image, step, dataformats="HWC")


def log_alignment(writer: SummaryWriter, report: AlignmentReport, step: int) -> None:
    """The best cross-attention head's AER as a scalar (a learner watches alignment appear) and
    every head's AER as a layer x head heatmap."""
    writer.add_scalar("valid/aer_best_head", report.best_head()[2], step)
    fig = heads_heatmap({f"cross-attention AER, step {step}": report.aer_grid()}, "AER", cmap="viridis_r")
    writer.add_image("alignment/aer_by_head", figure_to_array(fig), step, dataformats="HWC")


TRANSFORMER = ("transformer",)
RNNS = ("rnn", "rnn_attention")


@dataclass(frozen=True)
class HParam:
    """One hyper-parameter of the HPARAMS view: its column name, how a run's configuration
    (``cfg``), parameter count and summary give its value, the model kinds it applies to (all
    when None), and how TensorBoard shows it."""

    name: str
    read: Callable[[Any, int, RunSummary], Any]
    kinds: tuple[str, ...] | None = None
    is_key: bool = False  # one of the five HPARAMS shows by default
    is_float: bool = False  # real-valued; the rest go in as text (see _hparam_value)
    domain: tuple[str, ...] = ()  # the values of a discrete one


# Every hyper-parameter any model kind logs, each listed once: one fixed list for all kinds, so a
# sweep mixing Transformers and RNNs has one set of columns whichever run's experiment summary
# TensorBoard reads. HPARAMS sorts them by name and shows five by default, those marked as
# differing first: the key ones are marked so, and are the five shown.
HPARAMS = (
    HParam("model", lambda cfg, n, s: cfg.model.kind, is_key=True, domain=("rnn", "rnn_attention", "transformer")),
    HParam("num_heads", lambda cfg, n, s: cfg.model.num_heads, TRANSFORMER, is_key=True),
    HParam("d_k", lambda cfg, n, s: cfg.model.d_k, TRANSFORMER, is_key=True),
    HParam("d_model", lambda cfg, n, s: cfg.model.d_model, TRANSFORMER, is_key=True),
    HParam("params", lambda cfg, n, s: n, is_key=True),
    HParam("d_v", lambda cfg, n, s: cfg.model.d_v, TRANSFORMER),
    HParam("d_ff", lambda cfg, n, s: cfg.model.d_ff, TRANSFORMER),
    HParam("encoder_layers", lambda cfg, n, s: cfg.model.num_encoder_layers, TRANSFORMER),
    HParam("decoder_layers", lambda cfg, n, s: cfg.model.num_decoder_layers, TRANSFORMER),
    HParam("norm_first", lambda cfg, n, s: cfg.model.norm_first, TRANSFORMER, domain=("false", "true")),
    # the teaching switches: a claim sweep's runs differ only in one of them
    HParam("attention_scale", lambda cfg, n, s: str(cfg.model.attention_scale), TRANSFORMER),
    HParam("causal_mask", lambda cfg, n, s: cfg.model.causal_mask, TRANSFORMER, domain=("false", "true")),
    HParam("positions", lambda cfg, n, s: cfg.model.positions, TRANSFORMER, domain=POSITIONS),
    HParam("cross_attention", lambda cfg, n, s: cfg.model.cross_attention, TRANSFORMER, domain=CROSS_ATTENTION),
    HParam("d_embed", lambda cfg, n, s: cfg.model.d_embed, RNNS),
    HParam("d_hidden", lambda cfg, n, s: cfg.model.d_hidden, RNNS),
    HParam("layers", lambda cfg, n, s: cfg.model.num_layers, RNNS),
    HParam("bidirectional", lambda cfg, n, s: cfg.model.bidirectional, RNNS, domain=("false", "true")),
    HParam("d_attention", lambda cfg, n, s: cfg.model.d_attention, ("rnn_attention",)),
    HParam("dropout", lambda cfg, n, s: cfg.model.dropout, is_float=True),
    HParam("lr", lambda cfg, n, s: cfg.trainer.lr, is_float=True),
    HParam("warmup_steps", lambda cfg, n, s: cfg.trainer.warmup_steps),
    HParam("batch_tokens", lambda cfg, n, s: cfg.trainer.batch_tokens),
    HParam("max_steps", lambda cfg, n, s: cfg.trainer.max_steps),
    HParam("steps", lambda cfg, n, s: s.steps or 0),
    HParam("label_smoothing", lambda cfg, n, s: cfg.trainer.label_smoothing, is_float=True),
    HParam("vocab_size", lambda cfg, n, s: cfg.data.vocab_size),
    HParam("data", lambda cfg, n, s: cfg.data.name),
    HParam("seed", lambda cfg, n, s: cfg.seed),
    HParam("name", lambda cfg, n, s: s.name or cfg.model.kind),
)
HPARAM_NAMES = tuple(h.name for h in HPARAMS)
KEY_HPARAMS = tuple(h.name for h in HPARAMS if h.is_key)


def run_hparams(cfg, num_params: int, summary: RunSummary) -> dict:
    """The hyper-parameters a run is compared by; only those that apply to its model kind."""
    kind = cfg.model.kind
    return {
        h.name: _hparam_value(h.read(cfg, num_params, summary)) for h in HPARAMS if h.kinds is None or kind in h.kinds
    }


def _hparam_value(value):
    """HPARAMS prints every number with four decimals (``4.0000``, ``1.1842e+6``): integers go in
    as text, so a head count reads ``4`` and a parameter count every digit; booleans as text too."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value) if isinstance(value, int) else value


def final_metrics(summary: RunSummary) -> dict[str, tuple[float, str]]:
    """The final figures, ``{tag: (value, display name)}``: valid and test BLEU and chrF, valid
    cross-entropy, training minutes, and BLEU/chrF of every further test split."""
    valid, test = summary.valid, summary.test
    metrics = {
        f"{FINAL}/test_bleu": (test["bleu"], "test BLEU"),
        f"{FINAL}/test_chrf": (test["chrf"], "test chrF"),
        f"{FINAL}/valid_bleu": (valid["bleu"], "valid BLEU"),
        f"{FINAL}/valid_chrf": (valid["chrf"], "valid chrF"),
        f"{FINAL}/valid_cross_entropy": (valid["loss"], "valid cross-entropy"),
        f"{FINAL}/train_minutes": ((summary.train_seconds or 0.0) / 60, "training minutes"),
    }
    splits = summary.test_splits
    first = next(iter(splits), None)
    for name, scores in splits.items():
        if name != first:
            metrics[f"{FINAL}/{name}_bleu"] = (scores["bleu"], f"{name} BLEU")
            metrics[f"{FINAL}/{name}_chrf"] = (scores["chrf"], f"{name} chrF")
    return {tag: (float(value), label) for tag, (value, label) in metrics.items()}


def _plugin_summary(tag: str, data: plugin_data_pb2.HParamsPluginData) -> Summary:
    data.version = hparams_metadata.PLUGIN_DATA_VERSION
    plugin = SummaryMetadata.PluginData(plugin_name=hparams_metadata.PLUGIN_NAME, content=data.SerializeToString())
    return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])


def experiment_summary(metrics: dict[str, tuple[float, str]]) -> Summary:
    """HPARAMS' experiment: every hyper-parameter of :data:`HPARAMS` and the final metrics.

    Written explicitly because TensorBoard's own guess fails when ``--logdir`` is the run
    folder itself: the run is then called ".", and the metric it infers looks for run "./."
    (empty metric columns). Naming each metric with an empty group points it at the session's
    own run, whichever folder is the logdir."""
    infos = []
    for h in HPARAMS:
        info = api_pb2.HParamInfo(name=h.name, differs=h.is_key, type=api_pb2.DATA_TYPE_FLOAT64)
        if h.domain:
            info.type = api_pb2.DATA_TYPE_STRING
            info.domain_discrete.values.extend(struct_pb2.Value(string_value=v) for v in h.domain)
        elif not h.is_float:  # text: integers read as integers (see _hparam_value)
            info.type = api_pb2.DATA_TYPE_STRING
        infos.append(info)
    metric_infos = [
        api_pb2.MetricInfo(name=api_pb2.MetricName(group="", tag=tag), display_name=label)
        for tag, (_, label) in metrics.items()
    ]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metric_infos)
    return _plugin_summary(hparams_metadata.EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=experiment))


def log_hparams(writer: SummaryWriter, cfg, num_params: int, summary: RunSummary) -> None:
    """Hyper-parameters with the run's final figures, for TensorBoard's HPARAMS view.

    Everything goes into the run's own event file (``SummaryWriter.add_hparams`` would make a
    second run in a sub-folder), so each run folder of a sweep is one row of the HPARAMS table
    and its metric columns fill in whether ``--logdir`` is the run folder or its parent. The
    final figures are scalars under ``~final/`` (HPARAMS reads its metrics from scalars).
    """
    values = run_hparams(cfg, num_params, summary)
    metrics = final_metrics(summary)
    _, session_start, session_end = hparams_summaries(values, {tag: value for tag, (value, _) in metrics.items()})
    file_writer = writer._get_file_writer()
    file_writer.add_summary(experiment_summary(metrics))
    file_writer.add_summary(session_start)
    step = summary.steps
    for tag, (value, _) in metrics.items():
        writer.add_scalar(tag, value, step)
    file_writer.add_summary(session_end)
    writer.flush()


__all__ = [
    "FINAL",
    "HParam",
    "HPARAMS",
    "HPARAM_NAMES",
    "KEY_HPARAMS",
    "NO_ATTENTION",
    "SCALARS_LAYOUT",
    "experiment_summary",
    "final_metrics",
    "log_alignment",
    "log_attention",
    "log_hparams",
    "log_layout",
    "log_validation_samples",
    "run_hparams",
    "samples_table",
]
