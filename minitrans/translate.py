"""Translator: a trained model and its tokenizer -> text, in batches sorted by length."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from minitrans.data.batching import collate
from minitrans.decoding import translate_ids
from minitrans.interface import AttentionMaps, Seq2SeqModel
from minitrans.tokenizer import Tokenizer


class Translator:
    def __init__(self, model: Seq2SeqModel, tokenizer: Tokenizer, max_len: int, device: torch.device | None = None):
        self.model, self.tokenizer, self.max_len = model, tokenizer, max_len
        self.device = device or next(model.parameters()).device

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | torch.device = "auto") -> Translator:
        from minitrans.checkpoint import load_checkpoint
        from minitrans.config import model_from_dict
        from minitrans.models import build_model
        from minitrans.utils import pick_device

        device = pick_device(device) if isinstance(device, str) else device
        payload = load_checkpoint(path)
        tokenizer = Tokenizer.from_state(payload["tokenizer"])
        model_cfg = model_from_dict(payload["config"]["model"])
        model = build_model(model_cfg, tokenizer)
        model.load_state_dict(payload["model"])
        return cls(model.to(device).eval(), tokenizer, model_cfg.max_len, device)

    def encode(self, sentences: Sequence[str]) -> list[list[int]]:
        """Source ids; a sentence longer than the model's positions is cut (with a warning)."""
        ids = self.tokenizer.encode_src(sentences)
        limit = self.max_len
        for row, sentence_ids in enumerate(ids):
            if len(sentence_ids) > limit:
                warnings.warn(
                    f"sentence {row + 1} has {len(sentence_ids)} subwords; truncated to {limit}", stacklevel=2
                )
                ids[row] = sentence_ids[: limit - 1] + [self.tokenizer.eos_id]
        return ids

    @torch.no_grad()
    def translate_encoded(
        self,
        src_ids: Sequence[Sequence[int]],
        beam: int = 1,
        length_penalty: float = 0.6,
        max_output_ratio: float = 1.5,
        batch_tokens: int = 6000,
        use_cache: bool = True,
    ) -> list[list[int]]:
        """Token ids in, target ids out, in input order; batches are built from sorted lengths."""
        was_training = self.model.training
        self.model.eval()
        order = sorted(range(len(src_ids)), key=lambda i: len(src_ids[i]))
        outputs: list[list[int]] = [[] for _ in src_ids]
        start = 0
        while start < len(order):
            end = start + 1
            # a batch of beam hypotheses costs about beam * rows * length tokens
            while end < len(order) and beam * (end - start + 1) * len(src_ids[order[end]]) <= batch_tokens:
                end += 1
            rows = order[start:end]
            src = collate([src_ids[i] for i in rows], [[] for _ in rows]).src.to(self.device)
            hyps = translate_ids(self.model, src, beam, length_penalty, max_output_ratio, self.max_len, use_cache)
            for row, hyp in zip(rows, hyps):
                outputs[row] = hyp
            start = end
        self.model.train(was_training)
        return outputs

    @torch.no_grad()
    def attention_maps(self, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> AttentionMaps:
        """Every attention map of the model for one sentence pair, by teacher forcing the given
        target (e.g. a translation the model produced, greedy or beam).

        Returns ``{kind: [per-layer (H, Lq, Lk)]}``. Source axes are ``src_ids`` (with EOS);
        decoder query rows are the decoder inputs ``[BOS] + tgt_ids``, whose row t predicts
        output token t of ``tgt_ids + [EOS]``.
        """
        was_training = self.model.training
        self.model.eval()
        src = torch.as_tensor([list(src_ids)], dtype=torch.long, device=self.device)  # (1, S)
        tgt_in = torch.as_tensor([[self.tokenizer.bos_id, *tgt_ids]], dtype=torch.long, device=self.device)  # (1, T)
        enc, enc_maps = self.model.encode(src, need_weights=True)
        _, dec_maps = self.model.decode(enc, tgt_in, need_weights=True)
        self.model.train(was_training)
        return {kind: [layer[0].cpu() for layer in layers] for kind, layers in {**enc_maps, **dec_maps}.items()}

    def translate(self, sentences: Sequence[str], beam: int = 1, **options) -> list[str]:
        """One output line per input sentence; empty or blank input gives an empty output."""
        sentences = list(sentences)
        keep = [i for i, text in enumerate(sentences) if text.strip()]
        hyps = self.translate_encoded(self.encode([sentences[i].strip() for i in keep]), beam, **options)
        out = [""] * len(sentences)
        for i, ids in zip(keep, hyps):
            out[i] = self.tokenizer.decode_tgt(ids)
        return out
