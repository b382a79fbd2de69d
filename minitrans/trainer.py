"""train(cfg, out_dir): the training loop, schedule, evaluation, checkpoints and logging.

The trainer knows the model only through the shared interface, so the Transformer and
both RNN baselines train here unchanged. Everything the run writes goes under ``out_dir``:

    out_dir/tokenizer/        SentencePiece model(s)
    out_dir/checkpoints/      last.pt (resume), best.pt (best validation BLEU), step_*.pt
    out_dir/events.out.tfevents.*   TensorBoard
    out_dir/translations/     hypotheses of every evaluated split
    out_dir/summary.json      final scores read by sweeps and compare.py
"""

from __future__ import annotations

import json
import logging
import math
import signal
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.utils.tensorboard import SummaryWriter
from tqdm.auto import tqdm

from minitrans.checkpoint import load_checkpoint, save_checkpoint
from minitrans.config import TrainConfig
from minitrans.data import TokenBatchSampler, collate, load_corpus, tokenize_corpus
from minitrans.evaluation import evaluate_split, token_loss, validation_loss
from minitrans.interface import count_parameters
from minitrans.models import build_model
from minitrans.tblog import log_hparams, log_validation_samples
from minitrans.tokenizer import Tokenizer
from minitrans.translate import Translator
from minitrans.utils import get_rng_state, pick_device, seed_everything, set_rng_state

log = logging.getLogger(__name__)


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. too many non-finite steps); the last checkpoint is intact."""


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of ``epoch`` already trained on
    best_bleu: float = -1.0
    bad_steps: int = 0  # consecutive non-finite steps
    skipped_steps: int = 0
    train_seconds: float = 0.0


def inverse_sqrt_schedule(warmup_steps: int, min_ratio: float = 0.0):
    """Linear warm-up to the peak, then decay with 1/sqrt(step) (Vaswani et al., 2017)."""

    def factor(step: int) -> float:
        step = max(step, 1)
        if step < warmup_steps:
            return step / warmup_steps
        return max(math.sqrt(max(warmup_steps, 1) / step), min_ratio)

    return factor


class _StopRequest:
    """SIGINT / SIGTERM ask the loop to checkpoint and stop after the current step."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __enter__(self):
        self._previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread: leave signals alone
                pass
        return self

    def _handle(self, signum, frame) -> None:
        if self.signal is not None:  # a second Ctrl-C stops at once
            raise KeyboardInterrupt
        self.signal = signum

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


class Trainer:
    def __init__(self, cfg: TrainConfig, out_dir: str | Path) -> None:
        self.cfg, self.out_dir = cfg, Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        tcfg = cfg.trainer
        if tcfg.num_threads:
            torch.set_num_threads(tcfg.num_threads)
        seed_everything(cfg.seed)
        self.device = pick_device(tcfg.device)
        corpus = load_corpus(cfg.data)
        train_split = corpus[cfg.data.train_split]
        self.tokenizer = Tokenizer.train(
            train_split["src"],
            train_split["tgt"],
            cfg.data.vocab_size,
            cfg.data.spm_model_type,
            cfg.data.joint_vocab,
            cfg.data.cache_dir,
        )
        self.tokenizer.save(self.out_dir / "tokenizer")
        self.data = tokenize_corpus(corpus, self.tokenizer, cfg.data.cache_dir)
        max_tokens = min(cfg.data.max_tokens, cfg.model.max_len - 1)
        self.train_set = self.data[cfg.data.train_split].filter(
            lambda row: len(row["src_ids"]) <= max_tokens and len(row["tgt_ids"]) < max_tokens
        )
        if len(self.train_set) == 0:
            raise ValueError(f"no training pair fits data.max_tokens={max_tokens}")
        self.sampler = TokenBatchSampler(
            [len(ids) for ids in self.train_set["src_ids"]],
            [len(ids) for ids in self.train_set["tgt_ids"]],
            tcfg.batch_tokens,
            seed=cfg.seed,
        )
        self.model = build_model(cfg.model, self.tokenizer).to(self.device)
        self.num_params = count_parameters(self.model)
        self.step_model = torch.compile(self.model) if tcfg.compile else self.model
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=tcfg.lr, betas=tuple(tcfg.betas), weight_decay=tcfg.weight_decay
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, inverse_sqrt_schedule(tcfg.warmup_steps, tcfg.min_lr_ratio)
        )
        self.translator = Translator(self.model, self.tokenizer, cfg.model.max_len, self.device)
        self.state = TrainState()
        self.ckpt_dir = self.out_dir / "checkpoints"
        self.writer: SummaryWriter | None = None

    # -- checkpoints -----------------------------------------------------------------------
    def _payload(self, with_training_state: bool = True) -> dict:
        payload = {
            "config": asdict(self.cfg),
            "tokenizer": self.tokenizer.to_state(),
            "model": self.model.state_dict(),
            "step": self.state.step,
        }
        if with_training_state:
            payload |= {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "state": asdict(self.state),
                "rng": get_rng_state(),
            }
        return payload

    def save(self, name: str = "last.pt") -> Path:
        path = self.ckpt_dir / name
        save_checkpoint(self._payload(), path)
        return path

    def maybe_resume(self) -> bool:
        path = self.ckpt_dir / "last.pt"
        if not (self.cfg.trainer.resume and path.exists()):
            return False
        payload = load_checkpoint(path, map_location=self.device)
        self.model.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        self.scheduler.load_state_dict(payload["scheduler"])
        self.state = TrainState(**payload["state"])
        set_rng_state(payload["rng"])
        log.info("resumed from %s at step %d", path, self.state.step)
        return True

    # -- one step ------------------------------------------------------------------------
    def train_step(self, batch) -> float | None:
        """Forward, backward and update on one batch; returns the mean token loss, or None
        when the loss or gradient was not finite and the step was skipped."""
        tcfg = self.cfg.trainer
        self.model.train()
        logits = self.step_model(batch.src, batch.tgt_in)  # (B, T, V)
        loss = token_loss(logits, batch.tgt_out, tcfg.label_smoothing) / batch.num_tgt_tokens
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), tcfg.clip_grad_norm)
        if not (torch.isfinite(loss) and torch.isfinite(grad_norm)):
            self.optimizer.zero_grad(set_to_none=True)
            self.state.bad_steps += 1
            self.state.skipped_steps += 1
            if self.state.bad_steps >= tcfg.max_bad_steps:
                raise TrainingError(
                    f"{self.state.bad_steps} non-finite steps in a row at step {self.state.step}; stopping "
                    f"(last good checkpoint: {self.ckpt_dir / 'last.pt'})"
                )
            return None
        self.optimizer.step()
        self.scheduler.step()
        self.state.bad_steps = 0
        return loss.item()

    # -- evaluation ----------------------------------------------------------------------
    def validate(self) -> dict:
        cfg, tcfg = self.cfg, self.cfg.trainer
        valid = self.data[cfg.data.valid_split]
        loss = validation_loss(self.model, valid, tcfg.batch_tokens, self.device)
        scores, hyps = evaluate_split(
            self.translator, valid, limit=tcfg.eval_sentences, max_output_ratio=tcfg.max_output_ratio
        )
        metrics = {"loss": loss, "bleu": scores["bleu"], "chrf": scores["chrf"]}
        if self.writer is not None:
            step = self.state.step
            self.writer.add_scalar("valid/loss", loss, step)
            self.writer.add_scalar("valid/bleu", scores["bleu"], step)
            self.writer.add_scalar("valid/chrf", scores["chrf"], step)
            count = min(tcfg.sample_sentences, len(hyps))
            log_validation_samples(self.writer, self.translator, valid.select(range(count)), hyps[:count], step)
        return metrics

    # -- the loop ------------------------------------------------------------------------
    def fit(self) -> dict:
        cfg, tcfg, state = self.cfg, self.cfg.trainer, self.state
        resumed = self.maybe_resume()
        self.writer = SummaryWriter(log_dir=str(self.out_dir), purge_step=state.step if resumed else None)
        log.info(
            "model %s: %s parameters; %d training pairs; device %s",
            cfg.model.kind,
            f"{self.num_params:,}",
            len(self.train_set),
            self.device,
        )
        src_ids, tgt_ids = self.train_set["src_ids"], self.train_set["tgt_ids"]
        deadline = None if tcfg.max_minutes is None else tcfg.max_minutes * 60
        progress = tqdm(
            total=tcfg.max_steps, initial=state.step, disable=not tcfg.progress, desc="train", dynamic_ncols=True
        )
        window_tokens, window_start = 0, time.perf_counter()
        last_metrics: dict = {}
        with _StopRequest() as stop:
            while state.step < tcfg.max_steps and (deadline is None or state.train_seconds < deadline):
                batches = self.sampler.batches(state.epoch)
                for indices in batches[state.batch_in_epoch :]:
                    started = time.perf_counter()
                    batch = collate([src_ids[i] for i in indices], [tgt_ids[i] for i in indices]).to(self.device)
                    loss = self.train_step(batch)
                    state.batch_in_epoch += 1
                    if loss is not None:
                        state.step += 1
                        progress.update(1)
                    state.train_seconds += time.perf_counter() - started
                    window_tokens += batch.num_tgt_tokens
                    if loss is not None and state.step % tcfg.log_every == 0:
                        rate = window_tokens / (time.perf_counter() - window_start)
                        progress.set_postfix(loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}")
                        self.writer.add_scalar("train/loss", loss, state.step)
                        self.writer.add_scalar("train/lr", self.scheduler.get_last_lr()[0], state.step)
                        self.writer.add_scalar("train/tokens_per_second", rate, state.step)
                        window_tokens, window_start = 0, time.perf_counter()
                    finished = state.step >= tcfg.max_steps or (
                        deadline is not None and state.train_seconds >= deadline
                    )
                    if loss is not None and (state.step % tcfg.eval_every == 0 or finished):
                        last_metrics = self._evaluate_and_checkpoint()
                        window_tokens, window_start = 0, time.perf_counter()
                    if stop.signal is not None:
                        self.save()
                        progress.close()
                        log.warning(
                            "stopped by signal %d at step %d; checkpoint saved, re-run to resume",
                            stop.signal,
                            state.step,
                        )
                        raise SystemExit(128 + stop.signal)
                    if finished:
                        break
                else:
                    state.epoch += 1
                    state.batch_in_epoch = 0
                    continue
                break
        progress.close()
        if not last_metrics:  # resumed a finished run
            last_metrics = self.validate()
        return self.finish(last_metrics)

    def _evaluate_and_checkpoint(self) -> dict:
        metrics = self.validate()
        state = self.state
        log.info(
            "step %d: valid loss %.3f BLEU %.2f chrF %.2f",
            state.step,
            metrics["loss"],
            metrics["bleu"],
            metrics["chrf"],
        )
        if metrics["bleu"] >= state.best_bleu:
            state.best_bleu = metrics["bleu"]
            save_checkpoint(self._payload(with_training_state=False), self.ckpt_dir / "best.pt")
        if self.cfg.trainer.average_last > 1:
            save_checkpoint(self._payload(with_training_state=False), self.ckpt_dir / f"step_{state.step:07d}.pt")
            for old in sorted(self.ckpt_dir.glob("step_*.pt"))[: -self.cfg.trainer.average_last]:
                old.unlink()
        self.save()
        return metrics

    def final_weights(self) -> str:
        """Load the weights the run is judged by: the average of the last N checkpoints when
        ``average_last`` > 1, else the checkpoint with the best validation BLEU."""
        n = self.cfg.trainer.average_last
        if n > 1:
            paths = sorted(self.ckpt_dir.glob("step_*.pt"))[-n:]
            states = [load_checkpoint(p)["model"] for p in paths]
            averaged = {k: sum(s[k].float() for s in states) / len(states) for k in states[0]}
            self.model.load_state_dict({k: v.to(states[0][k].dtype) for k, v in averaged.items()})
            save_checkpoint(self._payload(with_training_state=False), self.ckpt_dir / "averaged.pt")
            return f"average of last {len(paths)} checkpoints"
        self.model.load_state_dict(load_checkpoint(self.ckpt_dir / "best.pt", map_location=self.device)["model"])
        return "best validation BLEU"

    def finish(self, last_valid: dict) -> dict:
        cfg, tcfg = self.cfg, self.cfg.trainer
        chosen = self.final_weights()
        valid = self.validate()
        out = self.out_dir / "translations"
        out.mkdir(exist_ok=True)
        splits = {}
        for name in cfg.data.test_splits:
            scores, hyps = evaluate_split(
                self.translator,
                self.data[name],
                with_buckets=True,
                beam=tcfg.beam_size,
                length_penalty=tcfg.length_penalty,
                max_output_ratio=tcfg.max_output_ratio,
            )
            (out / f"{name}.hyp.txt").write_text("".join(h + "\n" for h in hyps), encoding="utf-8")
            splits[name] = scores
            self.writer.add_scalar(f"test/{name}/bleu", scores["bleu"], self.state.step)
        first = splits[cfg.data.test_splits[0]]
        summary = {
            "name": cfg.name or cfg.model.kind,
            "model": cfg.model.kind,
            "params": self.num_params,
            "steps": self.state.step,
            "epochs": self.state.epoch,
            "skipped_steps": self.state.skipped_steps,
            "train_seconds": round(self.state.train_seconds, 1),
            "device": str(self.device),
            "weights": chosen,
            "valid": valid,
            "test": first,
            "test_splits": splits,
            "config": asdict(cfg),
        }
        (self.out_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
        log_hparams(self.writer, cfg, self.num_params, summary)
        self.writer.close()
        return summary


def train(cfg: TrainConfig, out_dir: str | Path) -> dict:
    """Train (or resume) a run in ``out_dir`` and return its summary."""
    return Trainer(cfg, out_dir).fit()


def summary_line(summary: dict, out_dir: str | Path) -> str:
    test, valid = summary["test"], summary["valid"]
    return (
        f"{summary['model']} ({summary['params']:,} params): test BLEU {test['bleu']:.2f} chrF {test['chrf']:.2f} | "
        f"valid BLEU {valid['bleu']:.2f} loss {valid['loss']:.3f} | {summary['steps']} steps, "
        f"{summary['train_seconds']:.0f} s training | {out_dir}"
    )
