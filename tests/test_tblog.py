"""What a run writes to TensorBoard, read back with TensorBoard's own EventAccumulator:
sample translations, attention maps of every kind and layer (or a note when the model has
none), scalars, and hyper-parameters with the final metrics in the run's own event file."""

from __future__ import annotations

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import metadata as hparams_metadata
from torch.utils.tensorboard import SummaryWriter

from minitrans.config import DataConfig, RNNConfig, TrainConfig, TrainerConfig, TransformerConfig
from minitrans.models import build_model
from minitrans.tblog import NO_ATTENTION, log_hparams, log_validation_samples
from minitrans.tokenizer import Tokenizer
from minitrans.trainer import train
from minitrans.translate import Translator

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


def test_transformer_logs_text_and_every_kind_layer_and_head(tmp_path, tokenizer):
    events = log_samples(tmp_path, tokenizer, TransformerConfig(**TINY_TRANSFORMER))
    images = events.Tags()["images"]
    expected = {
        f"attention/sample{i}/{kind}/layer{n}"
        for i in range(2)
        for kind, layers in (("enc_self", 1), ("dec_self", 2), ("cross", 2))
        for n in range(1, layers + 1)
    }
    assert set(images) == expected
    image = events.Images("attention/sample0/cross/layer2")[-1]
    assert image.step == 7 and image.width > image.height > 100
    text = text_of(events, "samples/0")
    assert "der Mann liest ." in text and "the man reads ." in text
    assert r"a \<b\> \* \| cat" in text_of(events, "samples/1")  # Markdown would eat these
    assert "attention/none/text_summary" not in events.Tags()["tensors"]


def test_rnn_with_attention_logs_its_alignment_only(tmp_path, tokenizer):
    events = log_samples(tmp_path, tokenizer, RNNConfig(kind="rnn_attention", **TINY_RNN))
    assert set(events.Tags()["images"]) == {"attention/sample0/cross/layer1", "attention/sample1/cross/layer1"}


def test_fixed_context_rnn_says_it_has_no_attention_instead_of_empty_images(tmp_path, tokenizer):
    events = log_samples(tmp_path, tokenizer, RNNConfig(kind="rnn", **TINY_RNN))
    assert events.Tags()["images"] == []
    assert text_of(events, "attention/none") == NO_ATTENTION
    assert "samples/1/text_summary" in events.Tags()["tensors"]


def test_rnn_hparams_name_its_own_hyper_parameters(tmp_path):
    cfg = TrainConfig(model=RNNConfig(kind="rnn_attention", **TINY_RNN))
    summary = {
        "name": "rnn_attention",
        "steps": 3,
        "train_seconds": 1.0,
        "valid": {"bleu": 1.0, "chrf": 2.0, "loss": 3.0},
        "test": {"bleu": 4.0, "chrf": 5.0},
        "test_splits": {"test": {"bleu": 4.0, "chrf": 5.0}, "hard": {"bleu": 6.0, "chrf": 7.0}},
    }
    with SummaryWriter(str(tmp_path)) as writer:
        log_hparams(writer, cfg, 1234, summary)
    events = read_events(tmp_path)
    hparams = session_hparams(events)
    assert hparams["model"] == "rnn_attention" and hparams["d_hidden"] == 16 and hparams["params"] == 1234
    assert hparams["d_attention"] == 16 and hparams["bidirectional"] == "true"
    assert "num_heads" not in hparams
    scalars = {tag: events.Scalars(tag)[-1].value for tag in events.Tags()["scalars"]}
    assert (
        scalars["final/test_bleu"] == 4.0 and scalars["final/hard_bleu"] == 6.0 and scalars["final/valid_loss"] == 3.0
    )


def test_a_tiny_training_run_writes_scalars_samples_attention_and_hparams_into_one_event_file(tmp_path):
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
    for tag in ("train/loss", "valid/bleu", "valid/loss", "final/test_bleu", "final/valid_bleu", "final/valid_loss"):
        assert tag in tags["scalars"], tag
    assert events.Scalars("final/test_bleu")[-1].value == pytest.approx(summary["test"]["bleu"])
    assert {
        "attention/sample0/cross/layer1",
        "attention/sample0/enc_self/layer1",
        "attention/sample0/dec_self/layer2",
    } <= set(tags["images"])
    assert {image.step for image in events.Images("attention/sample0/cross/layer1")} == {4}
    assert "samples/0/text_summary" in tags["tensors"]
    hparams = session_hparams(events)
    assert hparams["model"] == "transformer" and hparams["num_heads"] == 2 and hparams["d_k"] == 8
    assert hparams["params"] == summary["params"] and hparams["d_model"] == 16
    assert hparams_metadata.SESSION_END_INFO_TAG in events.PluginTagToContent(hparams_metadata.PLUGIN_NAME)
