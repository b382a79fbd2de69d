"""train(cfg, out_dir): the training loop, schedule, evaluation, checkpoints and logging.

The trainer knows the model only through the shared interface and its loss through
``models.build.training_loss``. Everything the run writes goes under ``out_dir``:

    out_dir/tokenizer/        SentencePiece model(s)
    out_dir/checkpoints/      last.pt (resume), best.pt (best validation BLEU), step_*.pt
    out_dir/events.out.tfevents.*   TensorBoard
    out_dir/translations/     hypotheses of every evaluated split
    out_dir/summary.json      final scores read by sweeps and compare.py

Re-running into the same folder resumes from ``checkpoints/last.pt`` (written every
``checkpoint_every`` steps, at every evaluation, and on SIGINT/SIGTERM): weights, optimizer,
schedule, position in the data and every rank's random generators, so that on the CPU with the
same thread count the resumed run is bitwise the run that never stopped (evaluation runs inside
``preserved_rng``), except under a ``max_minutes`` budget or nondeterministic GPU kernels. Under
torchrun the same code trains with DDP (:mod:`minitrans.training.distributed`).
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import torch
from torch.utils.tensorboard import SummaryWriter

from minitrans.core.config import TrainConfig
from minitrans.core.run_folder import RunLock, clean_interrupted_saves
from minitrans.core.utils import SignalReceived, StopRequest, get_rng_state, preserved_rng, seed_everything
from minitrans.data.batching import collate, drop_words
from minitrans.inference.translator import Translator
from minitrans.models.build import training_loss
from minitrans.models.interface import count_parameters
from minitrans.runs import reporting
from minitrans.runs.summary import RunSummary
from minitrans.runs.tblog import log_hparams, log_layout
from minitrans.training import distributed
from minitrans.training.checkpoints import (
    Checkpoints,
    checkpoint_payload,
    load_final_weights,
    restore_training,
    resume_checkpoint,
)
from minitrans.training.progress import TrainingProgress
from minitrans.training.resources import ThroughputLog
from minitrans.training.run_data import prepare_training_data
from minitrans.training.schedule import make_scheduler
from minitrans.training.setup import model_to_train, training_device, wrap_for_training
from minitrans.training.state import TrainingError, TrainingStopped, TrainState, crash_after
from minitrans.training.step import autocast_dtype_for, enable_tf32, make_optimizer, train_step

log = logging.getLogger(__name__)


class Trainer:
    """``Trainer(cfg, out_dir, clock).fit()``; training seconds come from ``clock`` (perf_counter)."""

    def __init__(self, cfg: TrainConfig, out_dir: str | Path, clock: Callable[[], float] | None = None) -> None:
        self.cfg, self.out_dir = cfg, Path(out_dir)
        self.clock = clock or time.perf_counter
        self.checkpoints = Checkpoints.of_run(
            self.out_dir, keep_steps=cfg.trainer.average_last, keep_best=cfg.trainer.final_weights == "best"
        )
        self.dist = distributed.init()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        # the folder is this run's until fit() returns or raises (or the process ends)
        self.lock = RunLock(self.out_dir)
        if self.dist.is_main:
            self.lock.acquire()
            for path in clean_interrupted_saves(self.out_dir):
                log.info("removed %s, left by a save that was interrupted", path)
        try:
            self._setup()
        except BaseException:
            self.lock.release()
            raise

    def _setup(self) -> None:
        """Device, resume checkpoint, data, model and optimizer, in this order (the order the
        random generators are drawn in: a resumed run replays it exactly)."""
        cfg, tcfg = self.cfg, self.cfg.trainer
        if tcfg.num_threads:
            torch.set_num_threads(tcfg.num_threads)
        seed_everything(cfg.seed)
        self.device = distributed.local_device(training_device(tcfg.device), self.dist)
        resume_path, payload = resume_checkpoint(self.checkpoints, self.cfg, self.device)
        self._prepare_data(payload)
        self.state = TrainState()  # before the schedule, which may read its training seconds
        self._build_training(payload, resume_path)
        self.writer: SummaryWriter | None = None
        self.throughput = ThroughputLog()  # tokens/s, CPU time and memory since the last log line
        # called with the state after every optimizer step; trainer.crash_at_step installs the
        # testing aid here, so the loop itself knows nothing of it
        self.step_hooks: list[Callable[[TrainState], None]] = []
        if tcfg.crash_at_step is not None:
            self.step_hooks.append(crash_after(tcfg.crash_at_step))
        if self.dist.rank > 0:  # its own dropout stream (the initial weights come from rank 0)
            seed_everything(cfg.seed + self.dist.rank)
        if payload is not None:
            self.state = restore_training(payload, resume_path, self.model, self.optimizer, self.scheduler, self.dist)

    def _prepare_data(self, payload: dict | None) -> None:
        with distributed.InTurn(self.dist):  # one process per machine fills the caches
            saved = payload or {}  # a resumed run: its tokenizer, and the record of the data it must find
            data = prepare_training_data(self.cfg, saved.get("tokenizer"), saved.get("training_data"))
        self.tokenizer, self.data, self.sampler = data.tokenizer, data.splits, data.sampler
        self.src_ids, self.tgt_ids, self.record = data.src_ids, data.tgt_ids, data.record
        self.data_report, self.subword_sampling = data.report, data.subword_sampling
        if self.dist.is_main:
            self.tokenizer.save(self.out_dir / "tokenizer")

    def _build_training(self, payload: dict | None, resume_path: Path | None) -> None:
        """The model (wrapped for DDP and torch.compile as configured), its loss, optimizer,
        schedule and the Translator that validation decodes with."""
        tcfg = self.cfg.trainer
        self.model = model_to_train(self.cfg.model, self.tokenizer, payload, resume_path, self.dist.is_main)
        self.model, self.num_params = self.model.to(self.device), count_parameters(self.model)
        self.step_model = wrap_for_training(self.model, self.dist, self.device, tcfg.compile)
        self.loss_fn = training_loss(self.cfg.model)
        self.optimizer = make_optimizer(self.model.parameters(), tcfg.lr, tcfg.betas, tcfg.weight_decay)
        self.autocast_dtype = autocast_dtype_for(tcfg.precision, self.device)  # None: float32
        if self.autocast_dtype is not None:
            enable_tf32(self.device)
        # a decay to max_minutes reads the seconds every rank agreed on (see _fit)
        self.scheduler = make_scheduler(self.optimizer, tcfg, elapsed=lambda: self.state.train_seconds)
        self.translator = Translator(  # with the run's config: BLEU is tokenised for its target language
            self.model, self.tokenizer, self.cfg.model.max_len, self.device, config=asdict(self.cfg), record=self.record
        )
        self.share = distributed.evaluation_share(self.dist)  # every rank does its part of each evaluation

    # -- the loop ------------------------------------------------------------------------
    def fit(self) -> RunSummary | None:
        """Train to ``max_steps``; the summary on rank 0, None on the other ranks."""
        try:
            return self._fit()
        finally:
            self.lock.release()

    def _fit(self) -> RunSummary | None:
        state, tcfg, dist = self.state, self.cfg.trainer, self.dist
        self._open_log()
        deadline = None if tcfg.max_minutes is None else tcfg.max_minutes * 60
        checkpoint_every = tcfg.checkpoint_every or tcfg.eval_every
        progress = TrainingProgress(
            tcfg.max_steps, tcfg.max_minutes, state.step, state.train_seconds, enabled=tcfg.progress and dist.is_main
        )
        finished = state.step >= tcfg.max_steps or (deadline is not None and state.train_seconds >= deadline)
        if finished:  # a spent step or time budget (a re-run, resume_from): no training, but a last.pt
            (missing,) = distributed.any_rank([not self.checkpoints.last.exists()], dist, self.device)
            if missing:
                self.save()
        with progress:
            with StopRequest() as stop:
                for indices in self._batches() if not finished else ():
                    # step
                    loss = self.train_batch(indices)
                    # decided together: ranks must agree on when to stop, and the schedule on the
                    # training time (each rank's clock differs a little): the slowest rank's
                    signalled, state.train_seconds = distributed.all_reduce_max(
                        [stop.signal is not None, state.train_seconds], dist, self.device
                    )
                    stop_now = signalled > 0
                    out_of_time = deadline is not None and state.train_seconds >= deadline
                    # log
                    if loss is not None:
                        state.step += 1
                        self.scheduler.step()  # after the seconds are agreed: a time budget's decay reads them
                        self._log_step(loss, progress)
                    progress.update(state.step, state.train_seconds)
                    # evaluate and checkpoint
                    finished = state.step >= tcfg.max_steps or out_of_time
                    is_eval = finished or (loss is not None and state.step % tcfg.eval_every == 0)
                    if is_eval or (loss is not None and state.step % checkpoint_every == 0):
                        self._evaluate_and_checkpoint(is_eval)
                        self.throughput.after_evaluation()
                    if loss is not None:
                        for hook in self.step_hooks:
                            hook(state)
                    # stop
                    if finished and not stop_now:  # a signal during the last evaluation is honoured too
                        (stop_now,) = distributed.any_rank([stop.signal is not None], dist, self.device)
                    if stop_now:
                        self._stop(stop.signal or signal.SIGTERM, progress)
                    if finished:
                        break
            summary = self._finish(progress)  # every rank evaluates its share; rank 0 gets the summary
        distributed.barrier(dist)
        return summary

    def _batches(self) -> Iterator[list[int]]:
        """The global batches from the state's position on, epoch after epoch."""
        state = self.state
        while True:
            if self.subword_sampling is not None:  # this epoch's pieces, drawn anew (the same on every rank)
                self.src_ids, self.tgt_ids, self.sampler = self.subword_sampling.epoch_batches(state.epoch)
            yield from self.sampler.batches(state.epoch)[state.batch_in_epoch :]
            state.epoch += 1
            state.batch_in_epoch = 0

    def train_batch(self, indices: list[int]) -> float | None:
        """Forward, backward and update on one global batch (this rank's share of it); returns
        the batch's mean token loss, or None when the loss or gradient was not finite and the
        step was skipped (:class:`TrainingError` after ``max_bad_steps`` of those in a row).
        The schedule is stepped by the loop, once the ranks agree on the training time."""
        tcfg, world, state = self.cfg.trainer, self.dist.world_size, self.state
        started = self.clock()
        shard, weight = distributed.shard(indices, self.dist)
        batch = collate([self.src_ids[i] for i in shard], [self.tgt_ids[i] for i in shard])
        seed = (self.cfg.seed, state.epoch, state.batch_in_epoch, self.dist.rank)  # a resumed run draws the same
        batch = drop_words(batch, tcfg.src_word_dropout, tcfg.tgt_word_dropout, seed).to(self.device)
        global_tokens = sum(len(self.tgt_ids[i]) + 1 for i in indices)
        # summed loss / the global batch's tokens; DDP averages over ranks, so * world: the global mean's gradient
        mean_loss = train_step(
            self.step_model,
            self.optimizer,
            batch,
            loss_scale=weight * world / global_tokens,
            label_smoothing=tcfg.label_smoothing,
            clip_grad_norm=tcfg.clip_grad_norm,
            autocast_dtype=self.autocast_dtype,
            reduce_loss=lambda loss: distributed.all_reduce_sum(loss / world, self.dist),
            loss_fn=self.loss_fn,
            r_drop=tcfg.r_drop,
        )
        loss = None if mean_loss is None else mean_loss.item()
        state.batch_in_epoch += 1
        state.train_seconds += self.clock() - started
        self.throughput.add(global_tokens, self.clock() - started)  # for the tokens/s shown and logged
        if loss is None:
            state.bad_steps += 1
            state.skipped_steps += 1
            if state.bad_steps >= tcfg.max_bad_steps:
                last = self.checkpoints.last
                kept = f"last good checkpoint: {last}" if last.is_file() else "no checkpoint was written yet"
                raise TrainingError(
                    f"{state.bad_steps} non-finite steps in a row after step {state.step} "
                    f"(trainer.max_bad_steps={tcfg.max_bad_steps}); stopping; {kept}; "
                    "try a lower trainer.lr or more trainer.warmup_steps"
                )
            log.warning("step %d: non-finite loss or gradient; skipped", state.step + 1)
            return None
        state.bad_steps = 0
        return loss

    # -- logging -------------------------------------------------------------------------
    def _open_log(self) -> None:
        """TensorBoard (rank 0) and the run's opening line."""
        cfg, state = self.cfg, self.state
        if not self.dist.is_main:
            return
        # purge_step drops events a killed run logged after its last checkpoint
        self.writer = SummaryWriter(log_dir=str(self.out_dir), purge_step=state.step + 1)
        log_layout(self.writer)
        log.info(
            "model %s: %s parameters; %s training pairs; device %s (%s); %d process(es)",
            cfg.model.kind,
            f"{self.num_params:,}",
            f"{len(self.src_ids):,}",
            self.device,
            "bfloat16 autocast" if self.autocast_dtype is not None else "float32",
            self.dist.world_size,
        )

    def _log_step(self, loss: float, progress: TrainingProgress) -> None:
        state, tcfg = self.state, self.cfg.trainer
        if self.writer is None or state.step % tcfg.log_every:
            return
        rate = self.throughput.log(self.writer, state.step)
        progress.show(state.step, loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}", epoch=state.epoch)
        self.writer.add_scalar("train/loss_label_smoothed", loss, state.step)
        self.writer.add_scalar("train/lr", self.scheduler.get_last_lr()[0], state.step)
        self.writer.add_scalar("train/epoch", state.epoch, state.step)

    # -- evaluation and checkpoints ------------------------------------------------------
    def validate(self, to_tensorboard: bool = True) -> dict:
        """Every rank calls it and does its share; the metrics on rank 0 (an empty dict elsewhere)."""
        writer = self.writer if to_tensorboard else None
        with preserved_rng():  # evaluation must not shift the training stream
            cfg, valid = self.cfg, self.data[self.cfg.data.valid_split]
            args = (self.translator, valid, cfg.trainer, writer, self.state.step, cfg.data, self.share)
            return reporting.validate(*args, draw=to_tensorboard)

    def _payload(self, with_training_state: bool = True) -> dict:
        training = {}
        if with_training_state:
            training = dict(optimizer=self.optimizer, scheduler=self.scheduler, state=self.state)
            training["world_size"] = self.dist.world_size
        return checkpoint_payload(self.cfg, self.tokenizer, self.model, self.state.step, self.record, **training)

    def save(self) -> Path:
        """Write last.pt, the training checkpoint. Every rank calls it: each one's generator states go in."""
        rng = distributed.all_gather_object(get_rng_state(), self.dist)
        if self.dist.is_main:
            if self.writer is not None:  # a checkpoint's logs are on disk with it
                self.writer.flush()
            self.checkpoints.save_last(self._payload() | {"rng": rng})
        return self.checkpoints.last

    def _evaluate_and_checkpoint(self, evaluate: bool) -> dict:
        """Validate (every rank its share), keep best.pt and step_*.pt (rank 0), write last.pt (every rank)."""
        metrics, state = {}, self.state
        if evaluate:
            metrics = self.validate()
        if evaluate and self.dist.is_main:
            log.info(
                "step %d: valid loss %.3f BLEU %.2f chrF %.2f",
                state.step,
                metrics["loss"],
                metrics["bleu"],
                metrics["chrf"],
            )
            if metrics["bleu"] >= state.best_bleu:
                state.best_bleu = metrics["bleu"]
                self.checkpoints.save_best(self._payload(with_training_state=False))
            if self.cfg.trainer.average_last > 1:
                self.checkpoints.save_step(self._payload(with_training_state=False), state.step)
        if evaluate:  # every rank keeps the same best_bleu, so every rank's TrainState agrees
            state.best_bleu = distributed.broadcast_object(state.best_bleu, self.dist)
        self.save()
        return metrics

    def _stop(self, signum: int, progress: TrainingProgress) -> None:
        path = self.save()
        progress.close()
        raise TrainingStopped(
            f"stopped by {signal.Signals(signum).name} after step {self.state.step}; checkpoint saved to {path}",
            128 + signum,
            self.out_dir,
        )

    # -- the end -------------------------------------------------------------------------
    def _finish(self, progress: TrainingProgress) -> RunSummary | None:
        """The final evaluation (last.pt is saved, so a signal now stops at once)."""
        try:
            with StopRequest(immediate=True):
                return self.finish(progress)
        except SignalReceived as received:
            progress.close()
            raise TrainingStopped(
                f"stopped by {signal.Signals(received.signum).name} during the final evaluation, after step "
                f"{self.state.step}; checkpoint saved to {self.checkpoints.last}",
                128 + received.signum,
                self.out_dir,
                then="finish",
            ) from None

    def final_weights(self) -> str:
        """Load the weights the run is judged by on every rank (:func:`load_final_weights`)."""
        payload = lambda: self._payload(with_training_state=False)  # noqa: E731  (only if averaged)
        return load_final_weights(self.model, self.checkpoints, self.dist, self.device, payload)

    def finish(self, progress: TrainingProgress | None = None) -> RunSummary | None:
        """The final validation and test of the chosen weights, every rank doing its share; the
        summary (written, and logged) on rank 0, None elsewhere."""
        cfg, state = self.cfg, self.state
        chosen, stage = self.final_weights(), (progress.stage if progress is not None else lambda _: None)
        stage("final validation")
        valid = self.validate(to_tensorboard=False)  # the chosen weights; TensorBoard has them as ~final/* HPARAMS
        stage(f"test ({', '.join(cfg.data.test_splits)})")
        tests = {name: self.data[name] for name in cfg.data.test_splits}
        splits = reporting.evaluate_tests(self.translator, tests, cfg.trainer, self.out_dir, self.share)
        alignment = reporting.final_alignment(self.translator, tests[cfg.data.test_splits[0]], cfg.data, self.share)
        if not self.dist.is_main:
            return None
        summary = RunSummary(
            name=cfg.name or cfg.model.kind,
            model=cfg.model.kind,
            params=self.num_params,
            steps=state.step,
            epochs=state.epoch,
            skipped_steps=state.skipped_steps,
            train_seconds=round(state.train_seconds, 1),
            device=str(self.device),
            processes=self.dist.world_size,
            weights=chosen,
            valid=valid,
            test=splits[cfg.data.test_splits[0]],
            test_splits=splits,
            data=self.data_report,
            config=asdict(cfg),
            alignment=alignment,
        )
        summary.write(self.out_dir)
        log_hparams(self.writer, cfg, self.num_params, summary)
        self.writer.close()
        return summary


def train(cfg: TrainConfig, out_dir: str | Path) -> RunSummary | None:
    """Train (or resume) a run in ``out_dir`` and return its summary (None on ranks > 0)."""
    return Trainer(cfg, out_dir).fit()


__all__ = ["Trainer", "train"]
