"""The model card of a shared folder, ``README.md`` in the Hugging Face Hub's format: YAML
metadata (languages, license, tags, pipeline, the scores as ``model-index`` results with
sacrebleu's signatures) and a text that says what the model is, what it was trained on, the
command that trained it, its scores and how to use it."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from minitrans.core.checkpoint import CheckpointFolder
from minitrans.core.languages import language_name
from minitrans.export.ct2_export import shareable_path
from minitrans.inference.model_card import find_summary
from minitrans.models.interface import count_parameters

if TYPE_CHECKING:
    from minitrans.inference.translator import Translator


def training_command(checkpoint: Path) -> str | None:
    """``python scripts/train.py OVERRIDES`` of the run, from Hydra's record of its command
    line (RUN/.hydra/overrides.yaml), or None when the run has none."""
    path = CheckpointFolder.run_folder_of(checkpoint) / ".hydra" / "overrides.yaml"
    try:
        overrides = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return None
    if not isinstance(overrides, list):
        return None
    return shlex.join(["python", "scripts/train.py", *map(str, overrides)])


def _yaml(value) -> str:
    return json.dumps(value, ensure_ascii=False)  # JSON strings are YAML strings


def _results(src: str, tgt: str, test_split: str, scores: dict, corpus: str) -> list[str]:
    """``model-index`` results: BLEU and chrF of the test split, each with its signature."""
    lines = [
        "model-index:",
        "- name: minitrans",
        "  results:",
        "  - task:",
        "      type: translation",
        f"      name: Translation {src}-{tgt}",
        "    dataset:",
        f"      type: {_yaml(corpus)}",
        f"      name: {_yaml(corpus)}",
        f"      split: {_yaml(test_split)}",
        "    metrics:",
    ]
    for name, key in (("BLEU", "bleu"), ("chrF", "chrf")):
        if key in scores:
            lines += [f"    - type: {key}", f"      value: {round(float(scores[key]), 2)}", f"      name: {name}"]
            if f"{key}_signature" in scores:
                lines.append(f"      args: {_yaml(scores[f'{key}_signature'])}")
    return lines


def _sizes(model) -> str:
    """The model's shape in words: width, heads and layers of a Transformer, an RNN's layers."""
    if model.kind == "transformer":
        layers = f"{model.num_encoder_layers}+{model.num_decoder_layers}"
        return f"d_model {model.d_model}, {model.num_heads} heads, {layers} layers"
    return f"{model.num_layers} GRU layers of {model.d_hidden} units"


def hub_card(translator: Translator, checkpoint: Path, license: str = "mit") -> str:
    """The README.md of a shared folder for the model ``translator`` loaded from ``checkpoint``."""
    data, model = translator.run_config.data, translator.run_config.model  # a checkpoint always has one
    src, tgt = data.src_lang, data.tgt_lang
    corpus = shareable_path(data.path) or shareable_path(data.root) or data.name  # none of our paths
    found = find_summary(checkpoint)
    summary = found[0] if found is not None else {}
    test = summary.get("test") or {}
    split = (data.test_splits or ["test"])[0]
    front = [
        "---",
        "language:",  # every value as a quoted string: a newline or colon in one cannot add keys
        f"- {_yaml(src)}",
        f"- {_yaml(tgt)}",
        f"license: {_yaml(license)}",
        "library_name: minitrans",
        "pipeline_tag: translation",
        "tags:",
        "- translation",
        "- minitrans",
        f"- {_yaml(model.kind)}",
    ]
    if test:
        front += _results(src, tgt, split, test, str(corpus))
    front.append("---")
    pair = f"{language_name(src)} → {language_name(tgt)}"
    body = [
        "",
        f"# minitrans {pair} ({src}→{tgt})",
        "",
        f"A {model.kind} trained from scratch with minitrans (an encoder-decoder "
        f"Transformer in PyTorch): {count_parameters(translator.model):,} parameters, {_sizes(model)}; "
        "subwords from SentencePiece "
        f"({'one joint vocabulary' if translator.tokenizer.is_joint else 'one vocabulary per language'}).",
    ]
    if switches := translator.teaching_switches:
        body += [
            "",
            f"Trained with teaching switches ({', '.join(f'`{k}={v}`' for k, v in switches.items())}): each "
            "changes or takes away a piece of the Transformer to measure what it is for (minitrans's "
            "docs/claims.md), so this model may translate worse than one without them, by design.",
        ]
    body += [
        "",
        "## Training data",
        "",
        f"Corpus: `{corpus}` ({data.name})"
        + (f", {translator.record.num_pairs:,} training pairs" if translator.record is not None else "")
        + ". Its record (source word counts, used to warn about unseen words) is `training_data.json`.",
    ]
    cleaning = (summary.get("data") or {}).get("cleaning")
    if cleaning:
        dropped = ", ".join(f"{reason} {n:,}" for reason, n in cleaning.get("dropped", {}).items() if n) or "none"
        body.append(f"Cleaning: {cleaning.get('pairs', 0):,} pairs read, dropped: {dropped}.")
    command = training_command(checkpoint)
    body += ["", "## How it was trained", ""]
    body += ["```", command, "```"] if command else ["The command line was not recorded (no .hydra/overrides.yaml)."]
    if summary:
        body.append(f"{summary.get('steps', '?')} steps, {summary.get('weights', 'final weights')}.")
    body += ["", "## Scores", ""]
    if test:
        body += [
            f"On {split}: BLEU {test.get('bleu', float('nan')):.2f}, chrF {test.get('chrf', float('nan')):.2f} "
            "(sacrebleu, detokenised, cased).",
            "",
            f"- BLEU signature: `{test.get('bleu_signature', 'tok:' + str(test.get('bleu_tokenize', '13a')))}`",
        ]
        if "chrf_signature" in test:
            body.append(f"- chrF signature: `{test['chrf_signature']}`")
    else:
        body.append("Not scored: no summary.json beside the checkpoint.")
    body += [
        "",
        "## Use",
        "",
        "```python",
        "from minitrans.inference.translator import Translator",
        "",
        'translator = Translator.from_pretrained("THIS_FOLDER")',
        'print(translator.translate(["…"]))',
        "```",
        "",
        'or `python scripts/translate.py THIS_FOLDER "…"`. The weights are `model.safetensors`: loading',
        "them runs no pickle.",
        "",
    ]
    return "\n".join(front + body)


__all__ = ["hub_card", "training_command"]
