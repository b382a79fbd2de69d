"""What a run writes to TensorBoard, read back with TensorBoard's own EventAccumulator and its
HPARAMS backend: a table of sample translations, one attention card per kind, layer and head
(or a note when the model has none), scalars whose tags say what they are, the CUSTOM SCALARS
layout, and hyper-parameters with the final metrics in the run's own event file, whose metric
columns fill in whether --logdir is the run folder or its parent."""

from __future__ import annotations

import pytest
import torch
from tensorboard import context
from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins import base_plugin
from tensorboard.plugins.custom_scalar import metadata as custom_scalar_metadata
from tensorboard.plugins.hparams import api_pb2, backend_context, list_session_groups
from tensorboard.plugins.hparams import metadata as hparams_metadata
from torch.utils.tensorboard import SummaryWriter

from minitrans.analysis.alignment import measure_alignment, parse_alignment
from minitrans.core.config import DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.translator import Translator
from minitrans.models.build import build_model
from minitrans.runs.summary import RunSummary
from minitrans.runs.tb_gold import log_gold_overlays
from minitrans.runs.tblog import (
    FINAL,
    KEY_HPARAMS,
    NO_ATTENTION,
    log_hparams,
    log_layout,
    log_validation_samples,
)
from minitrans.training.trainer import train

TINY_TRANSFORMER = dict(d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1, num_decoder_layers=2, max_len=64)
TINY_RNN = dict(d_embed=8, d_hidden=16, max_len=64)


def read_events(folder) -> EventAccumulator:
    events = EventAccumulator(str(folder), size_guidance={"images": 0, "scalars": 0, "tensors": 0})
    events.Reload()
    return events


def text_of(events: EventAccumulator, tag: str) -> str:
    return events.Tensors(f"{tag}/text_summary")[-1].tensor_proto.string_val[0].decode()


def session_hparams(events: EventAccumulator) -> dict:
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)[hparams_metadata.SESSION_START_INFO_TAG]
    start = hparams_metadata.parse_session_start_info_plugin_data(content)
    return {
        key: value.WhichOneof("kind") and getattr(value, value.WhichOneof("kind"))
        for key, value in start.hparams.items()
    }


def hparams_table(logdir) -> dict[str, dict[str, float]]:
    """What TensorBoard's HPARAMS table shows for ``tensorboard --logdir logdir``: each
    session's name and its metric columns, from TensorBoard's own backend."""
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(logdir))
    tb_context = base_plugin.TBContext(logdir=str(logdir), multiplexer=mux, data_provider=provider)
    request = api_pb2.ListSessionGroupsRequest(
        start_index=0, slice_size=100, allowed_statuses=[api_pb2.STATUS_SUCCESS, api_pb2.STATUS_UNKNOWN]
    )
    handler = list_session_groups.Handler(context.RequestContext(), backend_context.Context(tb_context), "", request)
    return {
        group.name: {metric.name.tag: metric.value for metric in group.metric_values}
        for group in handler.run().session_groups
    }


def experiment(events: EventAccumulator) -> api_pb2.Experiment:
    content = events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)[hparams_metadata.EXPERIMENT_TAG]
    return hparams_metadata.parse_experiment_plugin_data(content)


@pytest.fixture(scope="module")
def tokenizer():
    src = ["the man rides a bike .", "a woman reads the book .", "the dog sees a cat ."]
    tgt = ["der Mann fährt Rad .", "eine Frau liest das Buch .", "der Hund sieht eine Katze ."]
    return Tokenizer.train(src, tgt, vocab_size=300)


SAMPLES = [
    {"src": "the man reads .", "tgt": "der Mann liest ."},
    {"src": "a <b> * | cat", "tgt": "eine Katze"},
]


def log_samples(tmp_path, tokenizer, model_cfg) -> EventAccumulator:
    torch.manual_seed(0)
    model = build_model(model_cfg, tokenizer).eval()
    translator = Translator(model, tokenizer, max_len=64, device=torch.device("cpu"))
    samples = [row | {"src_ids": translator.encode([row["src"]])[0]} for row in SAMPLES]
    with SummaryWriter(str(tmp_path)) as writer:
        log_validation_samples(writer, translator, samples, ["der Mann liest .", ""], step=7)
    return read_events(tmp_path)


def test_transformer_logs_a_sample_table_and_one_card_per_kind_layer_and_head(tmp_path, tokenizer):
    events = log_samples(tmp_path, tokenizer, TransformerConfig(**TINY_TRANSFORMER))
    images = events.Tags()["images"]
    expected = {
        f"attention_{kind}/sample{i}/layer{n}/head{h}"
        for i in range(2)
        for kind, layers in (("enc_self", 1), ("dec_self", 2), ("cross", 2))
        for n in range(1, layers + 1)
        for h in (1, 2)
    }
    assert set(images) == expected
    sizes = {(events.Images(tag)[-1].width, events.Images(tag)[-1].height) for tag in images}
    assert len(sizes) == 1  # every card has one shape, whatever the kind and the sentence
    assert events.Images("attention_cross/sample0/layer2/head1")[-1].step == 7
    table = text_of(events, "samples/translations").splitlines()
    assert table[0] == "| # | source | reference | hypothesis |"  # a header row, not an empty one
    assert table[2] == "| 0 | the man reads . | der Mann liest . | der Mann liest . |"
    assert r"a \<b\> \* \| cat" in table[3] and "*(empty)*" in table[3]  # Markdown would eat these
    assert "attention/none/text_summary" not in events.Tags()["tensors"]


def test_rnn_with_attention_logs_its_alignment_only(tmp_path, tokenizer):
    events = log_samples(tmp_path, tokenizer, RNNConfig(kind="rnn_attention", **TINY_RNN))
    assert set(events.Tags()["images"]) == {
        "attention_cross/sample0/layer1/head1",
        "attention_cross/sample1/layer1/head1",
    }


def test_fixed_context_rnn_says_it_has_no_attention_instead_of_empty_images(tmp_path, tokenizer):
    events = log_samples(tmp_path, tokenizer, RNNConfig(kind="rnn", **TINY_RNN))
    assert events.Tags()["images"] == []
    assert text_of(events, "attention/none") == NO_ATTENTION
    assert "samples/translations/text_summary" in events.Tags()["tensors"]


def test_each_gold_samples_best_head_map_is_logged_with_its_links_outlined(tmp_path, tokenizer):
    torch.manual_seed(0)
    model = build_model(TransformerConfig(**TINY_TRANSFORMER), tokenizer).eval()
    translator = Translator(model, tokenizer, max_len=64, device=torch.device("cpu"))
    rows = [("the man reads .", "der Mann liest ."), ("a cat", "eine Katze"), ("the dog sees a cat .", "x y")]
    samples = [{"src_ids": translator.encode([src])[0], "tgt_ids": tokenizer.encode_tgt([tgt])[0]} for src, tgt in rows]
    gold = [parse_alignment("0-0 1-1 2-2 3-3"), None, parse_alignment("0-0 1p1")]  # the second: not the grammar's
    src_ids, tgt_ids = [row["src_ids"] for row in samples], [row["tgt_ids"] for row in samples]
    report = measure_alignment(model, tokenizer, src_ids, tgt_ids, gold)
    with SummaryWriter(str(tmp_path)) as writer:
        assert log_gold_overlays(writer, translator, samples, gold, report, step=5) == 2
    events = read_events(tmp_path)
    assert set(events.Tags()["images"]) == {
        "alignment/gold_vs_attention/sample0",
        "alignment/gold_vs_attention/sample2",
    }
    assert events.Images("alignment/gold_vs_attention/sample2")[-1].step == 5


RNN_SUMMARY = {
    "name": "rnn_attention",
    "steps": 3,
    "train_seconds": 90.0,
    "valid": {"bleu": 1.0, "chrf": 2.0, "loss": 3.0},
    "test": {"bleu": 4.0, "chrf": 5.0},
    "test_splits": {"test": {"bleu": 4.0, "chrf": 5.0}, "hard": {"bleu": 6.0, "chrf": 7.0}},
}


def test_rnn_hparams_name_its_own_hyper_parameters(tmp_path):
    cfg = TrainConfig(model=RNNConfig(kind="rnn_attention", **TINY_RNN))
    with SummaryWriter(str(tmp_path)) as writer:
        log_hparams(writer, cfg, 1234, RunSummary.from_dict(RNN_SUMMARY))
    events = read_events(tmp_path)
    hparams = session_hparams(events)
    assert hparams["model"] == "rnn_attention" and hparams["d_hidden"] == "16" and hparams["params"] == "1234"
    assert hparams["d_attention"] == "16" and hparams["bidirectional"] == "true"
    assert "num_heads" not in hparams
    scalars = {tag: events.Scalars(tag)[-1].value for tag in events.Tags()["scalars"]}
    assert scalars == {
        f"{FINAL}/test_bleu": 4.0,
        f"{FINAL}/test_chrf": 5.0,
        f"{FINAL}/valid_bleu": 1.0,
        f"{FINAL}/valid_chrf": 2.0,
        f"{FINAL}/valid_cross_entropy": 3.0,
        f"{FINAL}/train_minutes": 1.5,
        f"{FINAL}/hard_bleu": 6.0,
        f"{FINAL}/hard_chrf": 7.0,
    }  # no doubled tag such as test/test/bleu


def test_the_final_scalars_sort_after_the_training_curves():
    # TensorBoard's SCALARS opens its first two tag groups, in sorted order
    assert sorted(["train", "valid", FINAL, "attention_cross"])[-1] == FINAL


def test_hparams_metric_columns_fill_in_with_the_run_or_its_parent_as_logdir(tmp_path):
    summary = RNN_SUMMARY | {"name": "transformer"}
    for job, heads in (("0_model.num_heads=1", 1), ("1_model.num_heads=2", 2)):
        cfg = TrainConfig(model=TransformerConfig(**TINY_TRANSFORMER | {"num_heads": heads}))
        with SummaryWriter(str(tmp_path / "sweep" / job)) as writer:
            log_hparams(writer, cfg, 1234, RunSummary.from_dict(summary))
    run_only = hparams_table(tmp_path / "sweep" / "0_model.num_heads=1")
    assert list(run_only) == ["."]  # TensorBoard's name for the logdir itself
    assert run_only["."][f"{FINAL}/test_bleu"] == 4.0 and run_only["."][f"{FINAL}/hard_chrf"] == 7.0
    sweep = hparams_table(tmp_path / "sweep")
    assert sorted(sweep) == ["0_model.num_heads=1", "1_model.num_heads=2"]
    assert all(metrics[f"{FINAL}/valid_bleu"] == 1.0 and len(metrics) == 8 for metrics in sweep.values())
    exp = experiment(read_events(tmp_path / "sweep" / "1_model.num_heads=2"))
    shown = sorted(info.name for info in exp.hparam_infos if info.differs)  # HPARAMS shows these five first
    assert shown == sorted(KEY_HPARAMS) and {"num_heads", "d_k"} <= set(shown)
    names = [info.name for info in exp.hparam_infos]
    assert {"d_hidden", "d_attention", "lr"} <= set(names)  # one set of columns for every model kind
    assert {m.display_name for m in exp.metric_infos} >= {"test BLEU", "valid cross-entropy", "hard BLEU"}


def test_integers_show_as_integers_in_hparams_and_rates_as_numbers(tmp_path):
    """HPARAMS prints a number with four decimals (4.0000, 1.1842e+6): integer settings go in as
    text, declared so in the experiment; the real-valued ones stay numbers."""
    cfg = TrainConfig(model=TransformerConfig(**TINY_TRANSFORMER | {"num_heads": 4}))
    with SummaryWriter(str(tmp_path)) as writer:
        log_hparams(writer, cfg, 1_184_208, RunSummary.from_dict(RNN_SUMMARY | {"name": "transformer"}))
    events = read_events(tmp_path)
    hparams = session_hparams(events)
    assert (hparams["num_heads"], hparams["d_k"], hparams["params"], hparams["seed"]) == ("4", "4", "1184208", "0")
    assert hparams["lr"] == pytest.approx(3e-3) and hparams["dropout"] == 0.0
    types = {info.name: info.type for info in experiment(events).hparam_infos}
    assert types["num_heads"] == types["params"] == types["max_steps"] == api_pb2.DATA_TYPE_STRING
    assert types["lr"] == types["dropout"] == api_pb2.DATA_TYPE_FLOAT64


def test_each_hyper_parameter_is_named_once_and_every_kind_logs_its_own_in_the_table():
    """The table of hyper-parameters is the one list: each name is written once in tblog.py (not
    again in a list of names, of key ones, of real-valued ones), and what a run logs is the table's
    entries for its model kind, in the table's order."""
    import ast
    from pathlib import Path

    from minitrans.runs import tblog

    constants = [
        node.value
        for node in ast.walk(ast.parse(Path(tblog.__file__).read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    assert {name: constants.count(name) for name in tblog.HPARAM_NAMES} == dict.fromkeys(tblog.HPARAM_NAMES, 1)
    summary = RunSummary.from_dict(RNN_SUMMARY)
    for model in (TransformerConfig(**TINY_TRANSFORMER), RNNConfig(kind="rnn"), RNNConfig(kind="rnn_attention")):
        logged = list(tblog.run_hparams(TrainConfig(model=model), 10, summary))
        assert logged == [h.name for h in tblog.HPARAMS if h.kinds is None or model.kind in h.kinds]
        assert ("num_heads" in logged) == (model.kind == "transformer")
        assert ("d_attention" in logged) == (model.kind == "rnn_attention")


def test_each_custom_scalars_chart_has_one_tag_so_each_run_is_a_line_of_its_colour():
    """TensorBoard names a CUSTOM SCALARS series "tag (run)" and colours it by the run, with no
    legend: two tags on one chart would be two lines of one colour."""
    from minitrans.runs.tblog import SCALARS_LAYOUT

    charts = [chart for category in SCALARS_LAYOUT.values() for chart in category.values()]
    assert charts and all(kind == "Multiline" and len(tags) == 1 for kind, tags in charts)
    titles = [title for category in SCALARS_LAYOUT.values() for title in category]
    assert len(set(titles)) == len(titles)


def test_a_sample_over_max_len_is_cut_for_its_attention_maps_as_decoding_cuts_it(tmp_path, tokenizer):
    """A validation line longer than model.max_len pieces crashed every run at its first
    validation (ValueError from the model's positions) before any checkpoint was written."""
    torch.manual_seed(0)
    model = build_model(TransformerConfig(**TINY_TRANSFORMER | {"max_len": 8}), tokenizer).eval()
    translator = Translator(model, tokenizer, max_len=8, device=torch.device("cpu"))
    long_row = {"src": "the man rides a bike . " * 4, "tgt": "der Mann fährt Rad ."}
    long_row["src_ids"] = translator.encode([long_row["src"]])[0]
    assert len(long_row["src_ids"]) > 8
    with SummaryWriter(str(tmp_path)) as writer:
        log_validation_samples(writer, translator, [long_row], ["der Mann fährt Rad ."], step=1)
    images = read_events(tmp_path).Tags()["images"]
    assert "attention_cross/sample0/layer1/head1" in images


def test_the_custom_scalars_layout_charts_train_against_valid(tmp_path):
    with SummaryWriter(str(tmp_path)) as writer:
        log_layout(writer)
    events = read_events(tmp_path)
    content = events.PluginTagToContent(custom_scalar_metadata.PLUGIN_NAME)
    assert content  # TensorBoard's CUSTOM SCALARS tab appears
    from minitrans.runs.tblog import SCALARS_LAYOUT

    charts = SCALARS_LAYOUT["train vs valid"]  # side by side, in reading order
    tags = [tag for _, (_, chart_tags) in charts.items() for tag in chart_tags]
    assert tags[:2] == [r"train/loss_label_smoothed$", r"valid/loss_label_smoothed$"]


def test_a_tiny_run_writes_scalars_samples_attention_and_hparams_into_one_event_file(tmp_path):
    cfg = TrainConfig(
        model=TransformerConfig(**TINY_TRANSFORMER),
        data=DataConfig(
            num_train=200, num_valid=10, num_test=10, max_words=8, vocab_size=320, cache_dir=str(tmp_path / "cache")
        ),
        trainer=TrainerConfig(
            max_steps=4,
            eval_every=4,
            log_every=2,
            warmup_steps=2,
            batch_tokens=400,
            eval_sentences=4,
            sample_sentences=1,
            progress=False,
            num_threads=1,
        ),
    )
    run = tmp_path / "run"
    summary = train(cfg, run)
    assert len(list(run.glob("events.out.tfevents.*"))) == 1
    assert not [p for p in run.iterdir() if p.is_dir() and list(p.glob("events.out.tfevents.*"))]  # no sub-run
    events = read_events(run)
    tags = events.Tags()
    for tag in (
        "train/loss_label_smoothed",
        "valid/bleu",
        "valid/cross_entropy",
        "valid/loss_label_smoothed",
        f"{FINAL}/test_bleu",
        f"{FINAL}/valid_bleu",
        f"{FINAL}/valid_cross_entropy",
    ):
        assert tag in tags["scalars"], tag
    assert not [tag for tag in tags["scalars"] if tag.startswith("test/") or tag.endswith("/loss")]
    assert events.Scalars(f"{FINAL}/test_bleu")[-1].value == pytest.approx(summary.test["bleu"])
    assert events.Scalars("valid/cross_entropy")[-1].value == pytest.approx(summary.valid["loss"])
    # two different quantities under two names (the default trainer smooths labels by 0.1)
    smoothed, plain = (events.Scalars(f"valid/{name}")[-1].value for name in ("loss_label_smoothed", "cross_entropy"))
    assert smoothed != pytest.approx(plain, abs=1e-4)
    assert {
        "attention_cross/sample0/layer1/head1",
        "attention_enc_self/sample0/layer1/head2",
        "attention_dec_self/sample0/layer2/head1",
    } <= set(tags["images"])
    assert {image.step for image in events.Images("attention_cross/sample0/layer1/head1")} == {4}
    assert "samples/translations/text_summary" in tags["tensors"]
    assert events.PluginTagToContent(custom_scalar_metadata.PLUGIN_NAME)
    hparams = session_hparams(events)
    assert hparams["model"] == "transformer" and hparams["num_heads"] == "2" and hparams["d_k"] == "8"
    assert hparams["params"] == str(summary.params) and hparams["d_model"] == "16"
    assert hparams_metadata.SESSION_END_INFO_TAG in events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)


def test_each_layers_attention_entropy_is_logged_beside_its_cards(tmp_path, tokenizer):
    """attention_entropy/{kind}_layer{n}: the samples' mean row entropy, between 0 (one-hot rows)
    and log of the keys (uniform rows), for every layer a card is drawn for."""
    events = log_samples(tmp_path, tokenizer, TransformerConfig(**TINY_TRANSFORMER))
    tags = {tag for tag in events.Tags()["scalars"] if tag.startswith("attention_entropy/")}
    assert tags == {f"attention_entropy/{k}_layer{n}" for k, layers in (("enc_self", 1), ("dec_self", 2), ("cross", 2))
                    for n in range(1, layers + 1)}  # fmt: skip
    values = [events.Scalars(tag)[-1] for tag in tags]
    assert all(event.step == 7 and 0 < event.value < 3.5 for event in values)


def test_the_teaching_switches_are_hparams_columns_of_a_transformer(tmp_path):
    from minitrans.core.config import TEACHING_SWITCHES

    model = TransformerConfig(
        d_model=16, num_heads=2, causal_mask=False, attention_scale="2", positions="none", cross_attention="fixed_mean"
    )
    with SummaryWriter(str(tmp_path)) as writer:
        log_hparams(writer, TrainConfig(model=model), 1234, RunSummary.from_dict(RNN_SUMMARY))
    hparams = session_hparams(read_events(tmp_path))
    assert {name: hparams[name] for name in TEACHING_SWITCHES} == {
        "attention_scale": "2",
        "causal_mask": "false",
        "positions": "none",
        "cross_attention": "fixed_mean",
    }
