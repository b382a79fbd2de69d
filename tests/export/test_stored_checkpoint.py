"""A checkpoint and a ``--to hf`` export made by main at 29358fa (before the notes/fast split)
load into both implementations and translate as main's code did (tests/fixtures/main_29358fa:
a debug=tiny run's best.pt, its export, and the strings main's code gave for them)."""

import json
from dataclasses import replace

import pytest
from helpers import FIXTURES

from minitrans.core.decoding_options import DecodingOptions
from minitrans.export.loading import load_torch_translator
from minitrans.models.fast.transformer import FastTransformer
from minitrans.models.transformer import Transformer

DATA = FIXTURES / "main_29358fa"
RECORDED = json.loads((DATA / "translations.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("implementation", ["fast", "notes"])
@pytest.mark.parametrize("name", ["tiny.pt", "tiny_hf"])
def test_a_checkpoint_of_todays_format_translates_as_main_did(name, implementation):
    translator = load_torch_translator(DATA / name, device="cpu")
    if implementation == "notes":  # the same weights in the notes model
        fast = translator.model
        notes = Transformer(replace(translator_config(translator), implementation="notes"), *vocab(fast))
        notes.load_state_dict(fast.state_dict())
        translator.model = notes.eval()
    assert type(translator.model) is (FastTransformer if implementation == "fast" else Transformer)
    assert translator.translate(RECORDED["sources"]) == RECORDED[name]["greedy"]
    assert translator.translate(RECORDED["sources"], DecodingOptions(beam_size=4)) == RECORDED[name]["beam4"]


def translator_config(translator):
    """The run's model config, typed, from the translator's recorded config."""
    from minitrans.core.config import TransformerConfig

    fields = TransformerConfig.__dataclass_fields__
    return TransformerConfig(**{k: v for k, v in translator.config["model"].items() if k in fields})


def vocab(model):
    return model.src_embed.num_embeddings, model.output.out_features, model.pad_id
