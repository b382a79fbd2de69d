"""train(cfg, out_dir): the training loop, schedule, evaluation, checkpoints and logging.

The trainer knows the model only through the shared interface, so the Transformer and
both RNN baselines train here unchanged. Everything the run writes goes under ``out_dir``:

    out_dir/tokenizer/        SentencePiece model(s)
    out_dir/checkpoints/      last.pt (resume), best.pt (best validation BLEU), step_*.pt
    out_dir/events.out.tfevents.*   TensorBoard
    out_dir/translations/     hypotheses of every evaluated split
    out_dir/summary.json      final scores read by sweeps and compare.py

Re-running into the same folder resumes from ``checkpoints/last.pt`` (written every
``checkpoint_every`` steps, at every evaluation, and on SIGINT/SIGTERM): weights, optimizer,
schedule, step, epoch, position within the epoch and every rank's random generators. On the
CPU with the same thread count the resumed run is bitwise the run that never stopped, per-step
losses included; evaluation runs inside ``preserved_rng`` so it cannot shift the stream. Not
exact: a ``max_minutes`` budget (time is not reproducible) and GPU kernels that are themselves
nondeterministic. Under torchrun the same code trains with DistributedDataParallel; see
:mod:`minitrans.training.distributed`.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.tensorboard import SummaryWriter

from minitrans.core.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from minitrans.core.config import ConfigError, TrainConfig
from minitrans.core.run_folder import RunLock, clean_interrupted_saves
from minitrans.core.utils import (
    SignalReceived,
    StopRequest,
    get_rng_state,
    pick_device,
    preserved_rng,
    seed_everything,
    set_rng_state,
)
from minitrans.data.batching import collate
from minitrans.data.tokenizer import Tokenizer
from minitrans.inference.translator import Translator
from minitrans.models.build import build_model, build_model_for_weights, memory_bytes, model_bytes
from minitrans.models.interface import count_parameters
from minitrans.runs import reporting
from minitrans.runs.averaging import average_state_dicts
from minitrans.runs.summary import RunSummary, summary_line
from minitrans.runs.tblog import log_hparams, log_layout
from minitrans.training import distributed
from minitrans.training.progress import TrainingProgress
from minitrans.training.resume import AFRESH, check_same_run, find_resume_checkpoint, load_resume_checkpoint
from minitrans.training.run_data import prepare_training_data
from minitrans.training.schedule import lr_factor
from minitrans.training.step import autocast_dtype_for, enable_tf32, load_optimizer_state, make_optimizer, train_step

log = logging.getLogger(__name__)


class TrainingError(RuntimeError):
    """Training cannot go on (e.g. too many non-finite steps); the last checkpoint is intact."""


class TrainingStopped(Exception):
    """SIGINT / SIGTERM stopped the run after writing a checkpoint; ``exit_code`` is 128 + signal."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class TrainState:
    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of ``epoch`` already trained on
    best_bleu: float = -1.0
    bad_steps: int = 0  # consecutive non-finite steps
    skipped_steps: int = 0
    train_seconds: float = 0.0


def crash_after(step: int) -> Callable[[TrainState], None]:
    """A step hook for ``trainer.crash_at_step``, a testing aid: SIGKILL this process right after
    ``step``, as a crash would (the resume tests need a run that dies without a chance to save)."""

    def hook(state: TrainState) -> None:
        if state.step == step:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def training_device(name: str) -> torch.device:
    """``trainer.device`` as a torch device; one this machine lacks is a ConfigError naming the key."""
    try:
        return pick_device(name)
    except ValueError as error:
        raise ConfigError(f"trainer.device: {error}") from None


class Trainer:
    def __init__(self, cfg: TrainConfig, out_dir: str | Path) -> None:
        self.cfg, self.out_dir = cfg, Path(out_dir)
        self.ckpt_dir = self.out_dir / "checkpoints"
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
        resume_path, payload = self._resume_checkpoint()
        self._prepare_data(payload)
        self._build_training(payload, resume_path)
        self.state = TrainState()
        self.writer: SummaryWriter | None = None
        self.window_tokens, self.window_seconds = 0, 0.0  # throughput since the last log line
        # called with the state after every optimizer step; trainer.crash_at_step installs the
        # testing aid here, so the loop itself knows nothing of it
        self.step_hooks: list[Callable[[TrainState], None]] = []
        if tcfg.crash_at_step is not None:
            self.step_hooks.append(crash_after(tcfg.crash_at_step))
        if self.dist.rank > 0:  # its own dropout stream (the initial weights come from rank 0)
            seed_everything(cfg.seed + self.dist.rank)
        if payload is not None:
            self._restore(payload, resume_path)

    def _resume_checkpoint(self) -> tuple[Path | None, dict | None]:
        """The checkpoint this run continues from (see :mod:`minitrans.training.resume`), checked."""
        resume_path = find_resume_checkpoint(self.ckpt_dir, self.cfg.trainer)
        payload = load_resume_checkpoint(resume_path, self.device)
        if payload is not None:
            check_same_run(payload.get("config", {}), self.cfg, resume_path)
            try:
                Tokenizer.from_state(payload["tokenizer"])
            except (KeyError, TypeError, AttributeError, RuntimeError, OSError):
                raise CheckpointError(f"{resume_path} holds no usable tokenizer; {AFRESH}") from None
        return resume_path, payload

    def _prepare_data(self, payload: dict | None) -> None:
        with distributed.InTurn(self.dist):  # one process per machine fills the caches
            data = prepare_training_data(self.cfg, payload["tokenizer"] if payload else None)
        self.tokenizer, self.data, self.sampler = data.tokenizer, data.splits, data.sampler
        self.src_ids, self.tgt_ids, self.record = data.src_ids, data.tgt_ids, data.record
        self.data_report = data.report
        if self.dist.is_main:
            self.tokenizer.save(self.out_dir / "tokenizer")

    def _build_training(self, payload: dict | None, resume_path: Path | None) -> None:
        """The model (wrapped for DDP and torch.compile as configured), optimizer, schedule and
        the Translator that validation decodes with."""
        cfg, tcfg = self.cfg, self.cfg.trainer
        self.model = self._build_model(payload, resume_path).to(self.device)
        self.num_params = count_parameters(self.model)
        wrapped = self.model
        if self.dist.enabled:  # rank 0's initial weights are broadcast to every rank here
            ids = [self.device.index] if self.device.type == "cuda" else None
            wrapped = DistributedDataParallel(self.model, device_ids=ids, broadcast_buffers=False)
        self.step_model = torch.compile(wrapped) if tcfg.compile else wrapped
        self.optimizer = make_optimizer(self.model.parameters(), tcfg.lr, tcfg.betas, tcfg.weight_decay)
        self.autocast_dtype = autocast_dtype_for(tcfg.precision, self.device)  # None: float32
        if self.autocast_dtype is not None:
            enable_tf32(self.device)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lr_factor(tcfg.schedule, tcfg.warmup_steps, tcfg.max_steps, tcfg.min_lr_ratio)
        )
        if tcfg.schedule != "inverse_sqrt" and tcfg.max_minutes is not None and self.dist.is_main:
            log.warning(
                "trainer.schedule=%s decays to its floor at trainer.max_steps=%d; if trainer.max_minutes=%g ends "
                "the run first, the rate never gets there (trainer.schedule=inverse_sqrt needs no end point)",
                tcfg.schedule,
                tcfg.max_steps,
                tcfg.max_minutes,
            )
        self.translator = Translator(  # with the run's config: BLEU is tokenised for its target language
            self.model, self.tokenizer, cfg.model.max_len, self.device, config=asdict(cfg), record=self.record
        )

    def _build_model(self, payload: dict | None, path: Path | None):
        """The configured model, once it is known to fit: in memory with its gradients and
        optimizer state, and (when resuming) to the checkpoint's weights."""
        if payload is not None:
            try:
                return build_model_for_weights(self.cfg.model, self.tokenizer, payload.get("model", {}))
            except (ValueError, TypeError, AttributeError) as error:
                raise CheckpointError(f"{path} does not hold a usable model: {error}") from None
        _, size = model_bytes(self.cfg.model, self.tokenizer)
        memory = memory_bytes()
        if memory is not None and 4 * size > memory:  # weights, gradients, Adam's two moments
            raise ConfigError(
                f"model: {size / 2**30:.1f} GiB of weights need about {4 * size / 2**30:.1f} GiB to train, "
                f"more than this machine's {memory / 2**30:.1f} GiB; choose a smaller model"
            )
        return build_model(self.cfg.model, self.tokenizer)

    # -- checkpoints -----------------------------------------------------------------------
    def _payload(self, with_training_state: bool = True) -> dict:
        payload = {
            "config": asdict(self.cfg),
            "tokenizer": self.tokenizer.to_state(),
            "model": self.model.state_dict(),
            "step": self.state.step,
            "training_data": self.record.to_state(),  # what translate.py warns and --info reports from
        }
        if with_training_state:
            payload |= {
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "state": asdict(self.state),
                "world_size": self.dist.world_size,
            }
        return payload

    def save(self, name: str = "last.pt") -> Path:
        """Write a training checkpoint. Every rank calls it: each one's generator states go in."""
        path = self.ckpt_dir / name
        rng = distributed.all_gather_object(get_rng_state(), self.dist)
        if self.dist.is_main:
            if self.writer is not None:  # a checkpoint's logs are on disk with it
                self.writer.flush()
            save_checkpoint(self._payload() | {"rng": rng}, path)
        return path

    def _restore(self, payload: dict, path: Path) -> None:
        if "optimizer" not in payload:
            raise CheckpointError(f"{path} holds weights only (no optimizer or data position); resume from a last.pt")
        try:
            self._restore_state(payload, path)
        except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as error:
            reason = (str(error).strip().splitlines() or [""])[0]
            raise CheckpointError(
                f"{path} does not hold a usable training state ({type(error).__name__}: {reason}); {AFRESH}"
            ) from None

    def _restore_state(self, payload: dict, path: Path) -> None:
        self.model.load_state_dict(payload["model"])
        load_optimizer_state(self.optimizer, payload["optimizer"])
        self.scheduler.load_state_dict(payload["scheduler"])
        self.state = TrainState(**payload["state"])
        for name, default in asdict(TrainState()).items():
            value = getattr(self.state, name)
            if isinstance(value, bool) or not isinstance(value, (int, float) if isinstance(default, float) else int):
                raise TypeError(f"state.{name} is {value!r}")
        rng = payload["rng"]  # one state per rank of the run that wrote it
        if not isinstance(rng, list) or not rng:
            raise ValueError("no random generator state")
        if self.dist.rank < len(rng):
            set_rng_state(rng[self.dist.rank])
        if len(rng) != self.dist.world_size and self.dist.is_main:  # the data order is still the same
            log.warning("resuming a %d-process run with %d: dropout masks will differ", len(rng), self.dist.world_size)
        if self.dist.is_main:
            log.info("resumed from %s at step %d (epoch %d)", path, self.state.step, self.state.epoch)

    # -- one step ------------------------------------------------------------------------
    def train_step(self, indices: list[int]) -> float | None:
        """Forward, backward and update on one global batch (this rank's share of it); returns
        the batch's mean token loss, or None when the loss or gradient was not finite and the
        step was skipped."""
        tcfg, world = self.cfg.trainer, self.dist.world_size
        shard, weight = distributed.shard(indices, self.dist)
        batch = collate([self.src_ids[i] for i in shard], [self.tgt_ids[i] for i in shard]).to(self.device)
        global_tokens = sum(len(self.tgt_ids[i]) + 1 for i in indices)
        self.window_tokens += global_tokens  # for the tokens/s shown and logged
        # this rank's summed loss over the global batch's token count; DDP averages gradients
        # over ranks, so * world makes the update the gradient of the global mean loss
        mean_loss = train_step(
            self.step_model,
            self.optimizer,
            batch,
            loss_scale=weight * world / global_tokens,
            label_smoothing=tcfg.label_smoothing,
            clip_grad_norm=tcfg.clip_grad_norm,
            scheduler=self.scheduler,
            autocast_dtype=self.autocast_dtype,
            reduce_loss=lambda loss: distributed.all_reduce_sum(loss / world, self.dist),
        )
        if mean_loss is None:
            self.state.bad_steps += 1
            self.state.skipped_steps += 1
            if self.state.bad_steps >= tcfg.max_bad_steps:
                last = self.ckpt_dir / "last.pt"
                kept = f"last good checkpoint: {last}" if last.is_file() else "no checkpoint was written yet"
                raise TrainingError(
                    f"{self.state.bad_steps} non-finite steps in a row after step {self.state.step} "
                    f"(trainer.max_bad_steps={tcfg.max_bad_steps}); stopping; {kept}; "
                    "try a lower trainer.lr or more trainer.warmup_steps"
                )
            log.warning("step %d: non-finite loss or gradient; skipped", self.state.step + 1)
            return None
        self.state.bad_steps = 0
        return mean_loss.item()

    # -- evaluation ----------------------------------------------------------------------
    def validate(self, to_tensorboard: bool = True) -> dict:
        writer = self.writer if to_tensorboard else None
        with preserved_rng():  # evaluation must not shift the training stream
            return reporting.validate(
                self.translator, self.data[self.cfg.data.valid_split], self.cfg.trainer, writer, self.state.step
            )

    # -- the loop ------------------------------------------------------------------------
    def fit(self) -> RunSummary | None:
        """Train to ``max_steps``; the summary on rank 0, None on the other ranks."""
        try:
            return self._fit()
        finally:
            self.lock.release()

    def _fit(self) -> dict | None:
        cfg, tcfg, state, is_main = self.cfg, self.cfg.trainer, self.state, self.dist.is_main
        if is_main:  # purge_step drops events a killed run logged after its last checkpoint
            self.writer = SummaryWriter(log_dir=str(self.out_dir), purge_step=state.step + 1)
            log_layout(self.writer)
            log.info(
                "model %s: %s parameters; %d training pairs; device %s (%s); %d process(es)",
                cfg.model.kind,
                f"{self.num_params:,}",
                len(self.src_ids),
                self.device,
                "bfloat16 autocast" if self.autocast_dtype is not None else "float32",
                self.dist.world_size,
            )
        deadline = None if tcfg.max_minutes is None else tcfg.max_minutes * 60
        checkpoint_every = tcfg.checkpoint_every or tcfg.eval_every
        progress = TrainingProgress(
            tcfg.max_steps, tcfg.max_minutes, state.step, state.train_seconds, enabled=tcfg.progress and is_main
        )
        finished = state.step >= tcfg.max_steps
        if finished:  # e.g. resume_from a finished checkpoint: the run folder still gets one to translate with
            (missing,) = distributed.any_rank([not (self.ckpt_dir / "last.pt").exists()], self.dist, self.device)
            if missing:
                self.save()
        with StopRequest() as stop, progress:
            while not finished:
                batches = self.sampler.batches(state.epoch)
                for indices in batches[state.batch_in_epoch :]:
                    started = time.perf_counter()
                    loss = self.train_step(indices)
                    state.batch_in_epoch += 1
                    state.train_seconds += time.perf_counter() - started
                    self.window_seconds += time.perf_counter() - started
                    # decided together: ranks must agree on when to stop
                    stop_now, out_of_time = distributed.any_rank(
                        [stop.signal is not None, deadline is not None and state.train_seconds >= deadline],
                        self.dist,
                        self.device,
                    )
                    if loss is not None:
                        state.step += 1
                        self._log_step(loss, progress)
                    progress.update(state.step, state.train_seconds)
                    finished = state.step >= tcfg.max_steps or out_of_time
                    is_eval = finished or (loss is not None and state.step % tcfg.eval_every == 0)
                    if is_eval or (loss is not None and state.step % checkpoint_every == 0):
                        self._evaluate_and_checkpoint(is_eval)
                    if loss is not None:
                        for hook in self.step_hooks:
                            hook(state)
                    if finished and not stop_now:  # a signal during the last evaluation is honoured too
                        (stop_now,) = distributed.any_rank([stop.signal is not None], self.dist, self.device)
                    if stop_now:
                        self._stop(stop.signal or signal.SIGTERM, progress)
                    if finished:
                        break
                else:
                    state.epoch += 1
                    state.batch_in_epoch = 0
        if not is_main:
            distributed.barrier(self.dist)  # wait for rank 0's final evaluation
            return None
        try:
            with StopRequest(immediate=True):  # last.pt is saved: a signal now stops at once
                summary = self.finish()
        except SignalReceived as received:
            name = signal.Signals(received.signum).name
            raise TrainingStopped(
                f"stopped by {name} during the final evaluation, after step {state.step}; checkpoint saved to "
                f"{self.ckpt_dir / 'last.pt'}; run the same command again to finish",
                128 + received.signum,
            ) from None
        distributed.barrier(self.dist)
        return summary

    def _log_step(self, loss: float, progress: TrainingProgress) -> None:
        state, tcfg = self.state, self.cfg.trainer
        if self.writer is None or state.step % tcfg.log_every:
            return
        rate = self.window_tokens / max(self.window_seconds, 1e-9)  # target tokens per training second
        self.window_tokens, self.window_seconds = 0, 0.0
        progress.show(state.step, loss=f"{loss:.3f}", tok_s=f"{rate:,.0f}", epoch=state.epoch)
        self.writer.add_scalar("train/loss_label_smoothed", loss, state.step)
        self.writer.add_scalar("train/tokens_per_second", rate, state.step)
        self.writer.add_scalar("train/lr", self.scheduler.get_last_lr()[0], state.step)
        self.writer.add_scalar("train/epoch", state.epoch, state.step)

    def _stop(self, signum: int, progress: TrainingProgress) -> None:
        path = self.save()
        progress.close()
        name = signal.Signals(signum).name
        raise TrainingStopped(
            f"stopped by {name} after step {self.state.step}; checkpoint saved to {path}; "
            "run the same command again to resume",
            128 + signum,
        )

    def _evaluate_and_checkpoint(self, evaluate: bool) -> dict:
        """Validate (rank 0), keep best.pt and step_*.pt, then write last.pt (every rank)."""
        metrics, state, tcfg = {}, self.state, self.cfg.trainer
        if evaluate and self.dist.is_main:
            metrics = self.validate()
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
            if tcfg.average_last > 1:
                save_checkpoint(self._payload(with_training_state=False), self.ckpt_dir / f"step_{state.step:07d}.pt")
                for old in sorted(self.ckpt_dir.glob("step_*.pt"))[: -tcfg.average_last]:
                    old.unlink()
        if evaluate:  # every rank keeps the same best_bleu, so every rank's TrainState agrees
            state.best_bleu = distributed.broadcast_object(state.best_bleu, self.dist)
        self.save()
        return metrics

    def final_weights(self) -> str:
        """Load the weights the run is judged by: the average of the last N checkpoints when
        ``average_last`` > 1, else the checkpoint with the best validation BLEU."""
        n = self.cfg.trainer.average_last
        paths = sorted(self.ckpt_dir.glob("step_*.pt"))[-n:]
        if n > 1 and paths:
            self.model.load_state_dict(average_state_dicts([load_checkpoint(p)["model"] for p in paths]))
            save_checkpoint(self._payload(with_training_state=False), self.ckpt_dir / "averaged.pt")
            return f"average of last {len(paths)} checkpoints"
        # an averaged.pt of an earlier finish (say average_last=3, resumed with 1) is stale now:
        # left there, translate.py and evaluate.py would prefer it to the weights reported here
        (self.ckpt_dir / "averaged.pt").unlink(missing_ok=True)
        best = self.ckpt_dir / "best.pt"
        if not best.exists():  # e.g. started with resume_from at a finished step
            return "last weights"
        self.model.load_state_dict(load_checkpoint(best, map_location=self.device)["model"])
        return "best validation BLEU"

    def finish(self) -> RunSummary:
        cfg, state = self.cfg, self.state
        chosen = self.final_weights()
        valid = self.validate(
            to_tensorboard=False
        )  # the chosen weights; TensorBoard has them as ~final/* HPARAMS metrics
        tests = {name: self.data[name] for name in cfg.data.test_splits}
        splits = reporting.evaluate_tests(self.translator, tests, cfg.trainer, self.out_dir)
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
        )
        summary.write(self.out_dir)
        log_hparams(self.writer, cfg, self.num_params, summary)
        self.writer.close()
        return summary


def train(cfg: TrainConfig, out_dir: str | Path) -> RunSummary | None:
    """Train (or resume) a run in ``out_dir`` and return its summary (None on ranks > 0)."""
    return Trainer(cfg, out_dir).fit()


__all__ = ["Trainer", "TrainingError", "TrainingStopped", "summary_line", "train"]
