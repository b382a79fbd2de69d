"""What a run shows in TensorBoard beyond scalars: sample translations, attention maps, hparams."""

from __future__ import annotations

from torch.utils.tensorboard import SummaryWriter


def log_validation_samples(writer: SummaryWriter, translator, samples, hypotheses: list[str], step: int) -> None:
    """Source, reference and hypothesis of the fixed sample sentences, as text.

    ``samples`` is a Dataset slice with ``src``, ``tgt``, ``src_ids`` and ``tgt_ids`` columns;
    ``hypotheses`` are their current translations.
    """
    for i, hyp in enumerate(hypotheses):
        row = samples[i]
        text = f"**source:** {row['src']}  \n**reference:** {row['tgt']}  \n**hypothesis:** {hyp}"
        writer.add_text(f"samples/{i}", text, step)


def log_hparams(writer: SummaryWriter, cfg, num_params: int, summary: dict) -> None:
    """Hyper-parameters with the run's final metrics, for TensorBoard's HPARAMS view."""
