"""A model card: what a checkpoint is and what it knows, in a dozen lines (``translate.py RUN
--info``): the language pair, the corpus and its size, the model and its parameters, the test
BLEU from the run's ``summary.json``, and for the embedded corpus what its grammar covers, with
a few example sentences."""

from __future__ import annotations

from pathlib import Path

from minitrans.core.textio import read_json
from minitrans.data.generated import coverage_summary, example_pairs
from minitrans.inference.base import BaseTranslator
from minitrans.inference.coverage import language_name
from minitrans.models.interface import count_parameters

CORPUS_NOTES = {
    "generated": "the embedded grammar (minitrans.data.generated)",
    "multi30k": "Multi30k: image captions of everyday scenes (Flickr30k)",
}


def find_summary(checkpoint: Path | None) -> tuple[dict, Path] | None:
    """The ``summary.json`` of the run a checkpoint belongs to (RUN/checkpoints/X.pt -> RUN),
    with its path, or None."""
    if checkpoint is None:
        return None
    for folder in (checkpoint.parent, checkpoint.parent.parent):
        path = folder / "summary.json"
        if path.is_file():
            try:
                return read_json(path), path
            except (OSError, ValueError):
                return None
    return None


def _model_line(model, params: int | None) -> str:
    """``model``: the run's model configuration, None when unknown."""
    kind = model.kind if model is not None else "model"
    if model is None:
        shape = "? GRU layers of ? units"
    elif kind == "transformer":
        shape = (
            f"d_model {model.d_model}, {model.num_heads} heads, "
            f"{model.num_encoder_layers}+{model.num_decoder_layers} layers"
        )
    else:
        shape = f"{model.num_layers} GRU layers of {model.d_hidden} units"
    count = f"{params:,} parameters" if params is not None else "a CTranslate2 export"
    return f"{kind}, {count} ({shape})"


def model_card(translator: BaseTranslator, location: str | Path | None = None) -> str:
    """The card of a loaded model; ``location`` names it when it was not loaded from a
    checkpoint file (a CTranslate2 export)."""
    config = translator.run_config
    data = config.data if config is not None else None
    src, tgt = (data.src_lang, data.tgt_lang) if data is not None else ("?", "?")
    record = translator.record
    model = getattr(translator, "model", None)  # a CTranslate2 export has no PyTorch model
    lines = [
        f"checkpoint: {translator.path or location}",
        f"languages:  {language_name(src)} → {language_name(tgt)} ({src}→{tgt})",
        f"model:      {_model_line(config.model if config is not None else None, count_parameters(model) if model is not None else None)}",
    ]
    if switches := translator.teaching_switches:
        lines.append(
            f"teaching:   trained with {', '.join(f'{k}={v}' for k, v in switches.items())} "
            "(a teaching switch of docs/claims.md: not the notes' model)"
        )
    corpus = data.name if data is not None else "?"
    note = CORPUS_NOTES.get(corpus, corpus)
    if data is not None and corpus == "hf" and data.path:  # which of all the datasets: its path or Hub id
        note = f"hf: {data.path}" + (f" ({data.subset})" if data.subset else "")
    elif data is not None and corpus == "parallel" and data.root:
        note = f"parallel: {data.root}"
    if record is not None:
        rebuilt = ", rebuilt from the run's configuration" if record.is_rebuilt else ""
        lines.append(
            f"corpus:     {note}; {record.num_pairs:,} training pairs, "
            f"{record.num_forms:,} distinct source words{rebuilt}"
            + (
                "; the sources are all lower-case: input is lower-cased (translate.py --keep-case keeps it)"
                if record.is_lowercase
                else ""
            )
        )
    else:
        lines.append(f"corpus:     {note}; coverage unknown (this checkpoint predates the record of its training data)")
    found = find_summary(translator.path)
    if found is not None:
        summary, path = found
        test = summary.get("test") or {}
        split = ((data.test_splits if data is not None else None) or ["test"])[0]
        if "bleu" in test:
            lines.append(
                f"test BLEU:  {test['bleu']:.2f} (chrF {test.get('chrf', float('nan')):.2f}) on {split}"
                f"{', tokenize ' + test['bleu_tokenize'] if 'bleu_tokenize' in test else ''}, "
                f"{summary.get('weights', 'final weights')}; from {path}"
            )
    else:
        lines.append("test BLEU:  unknown (no summary.json beside this checkpoint)")
    if corpus == "generated":
        lines += ["", "What it knows — only what the grammar generates:", coverage_summary(), "", "Examples:"]
        for en, de in example_pairs():
            source, target = (en, de) if src == "en" else (de, en)
            lines.append(f"  {source}  →  {target}")
    lines += ["", "Words never seen in training are named in a warning when you translate."]
    return "\n".join(lines)


__all__ = ["find_summary", "model_card"]
