"""Sweeps end to end: a Hydra multirun of scripts/train.py gives one folder per job, named
after what the sweep varies, each with its own TensorBoard events; an impossible combination
is refused with a clear line while the other jobs run; compare.py reads the result. The same
through Hydra's joblib launcher (jobs in parallel) and submitit's local executor (the cluster
launcher's code path), where a job preempted with SIGUSR2 saves, is requeued and resumes; an
Optuna search whose best trial comes back as one command line. Also: the ready-made heads × d_k
experiments compose."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import needs_sweep_plugin
from helpers import REPO
from helpers.compose import compose_experiment
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from minitrans.core.checkpoint import load_checkpoint
from minitrans.core.hydra_config import register_configs, to_dataclass
from minitrans.core.hydra_sweep import swept_keys, swept_overrides
from minitrans.core.run_folder import HOLDER_NAME
from minitrans.core.utils import StopRequest
from minitrans.runs.compare import compare

TINY = {
    "model.d_model": 16,
    "model.d_ff": 32,
    "model.num_encoder_layers": 1,
    "model.num_decoder_layers": 1,
    "data.num_train": 200,
    "data.num_valid": 10,
    "data.num_test": 10,
    "data.max_words": 8,
    "data.vocab_size": 320,
    "trainer.max_steps": 3,
    "trainer.eval_every": 3,
    "trainer.eval_sentences": 4,
    "trainer.sample_sentences": 1,
    "trainer.batch_tokens": 400,
    "trainer.warmup_steps": 1,
    "trainer.progress": "false",
    "trainer.num_threads": 1,
    "trainer.processes": 1,  # a model this small: one process per job (tests/training/test_launch.py trains two)
}


def sweep_command(tmp_path: Path, sweep: Path, *args: str, **settings) -> list[str]:
    """``scripts/train.py -m ARGS`` with the tiny settings (``settings`` changes some), into ``sweep``."""
    tiny = TINY | {key.replace("__", "."): value for key, value in settings.items()}
    tiny = {key: value for key, value in tiny.items() if value is not None}  # None: left to the experiment
    return [
        sys.executable,
        "scripts/train.py",
        "-m",
        *args,
        *[f"{key}={value}" for key, value in tiny.items()],
        f"data.cache_dir={tmp_path / 'cache'}",
        f"hydra.sweep.dir={sweep}",
    ]


SWEEP_ENV = os.environ | {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}


def run_sweep(tmp_path: Path, sweep: Path, *args: str, timeout: float = 600, **settings) -> subprocess.CompletedProcess:
    command = sweep_command(tmp_path, sweep, *args, **settings)
    return subprocess.run(command, cwd=REPO, env=SWEEP_ENV, capture_output=True, text=True, timeout=timeout)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


def job_pid(job: Path) -> int:
    """The process training in ``job`` now (the lock's holder file names it: "pid N on HOST, since ...")."""
    return int((job / HOLDER_NAME).read_text().split()[1])


def event_pids(job: Path) -> list[int]:
    """The processes that wrote ``job``'s TensorBoard events (events.out.tfevents.TIME.HOST.PID.N)."""
    return sorted(int(path.name.split(".")[-2]) for path in job.glob("events.out.tfevents.*"))


@pytest.mark.slow
def test_multirun_gives_a_folder_per_job_refuses_the_impossible_one_and_compares(tmp_path):
    sweep = tmp_path / "sweep"
    # 3 does not divide d_model=16: refused, the sweep goes on. The tiny settings on the same
    # command line stay out of the folder names: only the swept key shows.
    done = run_sweep(tmp_path, sweep, "model.num_heads=1,2,3")
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "skipping job 2_model.num_heads=3: model.num_heads: d_model=16 is not divisible by num_heads=3" in output

    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert jobs == ["0_model.num_heads=1", "1_model.num_heads=2", "2_model.num_heads=3"]
    for job in jobs[:2]:
        assert (sweep / job / "summary.json").exists()
        assert len(list((sweep / job).glob("events.out.tfevents.*"))) == 1
    assert not (sweep / jobs[2] / "summary.json").exists()

    result = compare([sweep])
    assert [run.num_heads for run in result.runs] == [1, 2]
    assert [run.d_k for run in result.runs] == [16, 8]
    assert "`2_model.num_heads=3`: model.num_heads: d_model=16 is not divisible by num_heads=3" in result.table
    assert {"comparison.md", "heads_dk_bleu.png"} <= {path.name for path in result.files}


@pytest.mark.slow
@needs_sweep_plugin("joblib")
def test_a_joblib_sweep_runs_its_jobs_in_processes_of_their_own_and_compares(tmp_path):
    """hydra/launcher=joblib: the jobs run in joblib's worker processes (which never ran
    scripts/train.py's module code: the folder-name resolvers come with Hydra's state), named
    and laid out as with the basic launcher."""
    sweep = tmp_path / "joblib"
    done = run_sweep(tmp_path, sweep, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "model.num_heads=1,2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Joblib.Parallel(n_jobs=2" in done.stdout + done.stderr
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert [job.name for job in jobs] == ["0_model.num_heads=1", "1_model.num_heads=2"]
    for job in jobs:
        assert (job / "summary.json").exists() and len(list(job.glob("events.out.tfevents.*"))) == 1
    assert event_pids(jobs[0]) != event_pids(jobs[1])  # two processes (the basic launcher runs both in one)
    result = compare([sweep])
    assert [run.num_heads for run in result.runs] == [1, 2]
    assert "| 0_model.num_heads=1 |" in result.table


@pytest.mark.slow
@needs_sweep_plugin("submitit")
def test_a_submitit_job_preempted_by_sigusr2_is_requeued_and_resumes_in_its_folder(tmp_path):
    """hydra/launcher=submitit_local (the code path of submitit_slurm, with a local executor):
    SIGUSR2, submitit's preemption signal, reaches job 0 while it trains; it writes last.pt,
    submitit requeues it, and the requeued job resumes in the same folder and finishes."""
    sweep = tmp_path / "submitit"
    command = sweep_command(
        tmp_path,
        sweep,
        "hydra/launcher=submitit_local",
        "model.num_heads=1,2",
        trainer__max_steps=600,
        trainer__eval_every=600,  # no checkpoint before the end but the one the signal asks for
    )
    process = subprocess.Popen(
        command, cwd=REPO, env=SWEEP_ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        first = sweep / "0_model.num_heads=1"
        deadline = time.monotonic() + 400
        while "parameters;" not in read(first / "train.log") or not (first / HOLDER_NAME).exists():  # the loop starts
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()[0]
            time.sleep(0.05)
        time.sleep(0.5)  # well inside the loop (600 steps take seconds)
        preempted = job_pid(first)
        os.kill(preempted, signal.SIGUSR2)
        output = process.communicate(timeout=400)[0]
    finally:
        process.kill()
    assert process.returncode == 0, output
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert [job.name for job in jobs] == ["0_model.num_heads=1", "1_model.num_heads=2"]
    resumed = re.search(r"resumed from \S+last.pt at step (\d+)", read(first / "train.log"))
    assert resumed and 0 < int(resumed.group(1)) < 600, read(first / "train.log")  # the step the signal saved
    assert preempted in event_pids(first) and len(event_pids(first)) == 2  # a new process took the folder over
    result = compare([sweep])
    assert [run.summary.steps for run in result.runs] == [600, 600]
    assert [run.num_heads for run in result.runs] == [1, 2]


@pytest.mark.slow
@needs_sweep_plugin("optuna")
def test_an_optuna_search_names_trials_by_their_values_and_gives_the_best_command(tmp_path):
    sweep = tmp_path / "optuna"
    done = run_sweep(tmp_path, sweep, "experiment=heads_dk_search", "hydra.sweeper.n_trials=3", model__d_ff=None)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "Best parameters:" in output and (sweep / "optimization_results.yaml").exists()
    printed = re.search(r"best trial: (\S+); to train it again:\n  (python scripts/train.py .*)", done.stdout)
    assert printed, output  # at the end of the search
    searched = ["model.d_ff", "model.d_k", "model.num_heads", "trainer.label_smoothing", "trainer.lr"]
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir())
    assert [job.split("_", 1)[0] for job in jobs] == ["0", "1", "2"]
    for job in jobs:
        assert [item.split("=")[0] for item in job.split("_", 1)[1].split(",")] == searched
    result = compare([sweep])
    assert len(result.runs) == 3
    best = yaml.safe_load((sweep / "optimization_results.yaml").read_text())["best_params"]
    (line,) = [note for note in result.notes if note.startswith("best trial: ")]
    command = line.split(": ", 2)[2]
    assert command.startswith("python scripts/train.py ") and "experiment=heads_dk_search" in command
    assert all(f"{key}={value}" in command.split() for key, value in best.items())
    assert printed.group(2) == command and line.startswith(f"best trial: {printed.group(1)} ")
    assert max(run.summary.valid["bleu"] for run in result.runs) == pytest.approx(
        yaml.safe_load((sweep / "optimization_results.yaml").read_text())["best_value"]
    )


@pytest.mark.slow
@needs_sweep_plugin("submitit")
def test_a_submitit_job_trains_with_the_default_process_count(tmp_path):
    """hydra/launcher=submitit_local with trainer.processes=auto (the other sweep tests pin 1):
    the job runs under submitit's own __main__, and the training processes it starts must find
    what they run by name there."""
    from minitrans.training.launch import physical_cores

    sweep = tmp_path / "submitit"
    done = run_sweep(tmp_path, sweep, "hydra/launcher=submitit_local", "model.num_heads=2", trainer__processes=None)
    output = done.stdout + done.stderr + "".join(read(log) for log in sweep.rglob("*.log"))
    assert done.returncode == 0, output
    (job,) = [p for p in sweep.iterdir() if p.is_dir() and not p.name.startswith(".")]
    summary = json.loads(read(job / "summary.json") or "{}")
    assert summary.get("processes") == physical_cores(), output


DIVERGING = ("trainer.max_bad_steps=1",)  # trainer.lr=1e30 diverges at its second step


@pytest.mark.slow
def test_a_diverging_job_is_skipped_and_the_grid_sweep_goes_on(tmp_path):
    sweep = tmp_path / "grid"
    done = run_sweep(tmp_path, sweep, "trainer.lr=1e30,0.003", *DIVERGING)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "non-finite steps in a row" in output and "failed; the rest of the sweep goes on" in output
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert [job.name.split("_")[0] for job in jobs] == ["0", "1"]
    assert [(job / "summary.json").exists() for job in jobs] == [False, True]  # the second job trained


@pytest.mark.slow
@needs_sweep_plugin("optuna")
@pytest.mark.parametrize("max_failure_rate", [1.0, 0.0])
def test_a_diverging_trial_is_a_failed_trial_of_an_optuna_search(tmp_path, max_failure_rate):
    """A failed trial counts against hydra.sweeper.max_failure_rate: within it, the search goes
    on and writes its results (the best trial is the one that trained); past it (0.0, Optuna's
    default), the search ends with one line and no traceback."""
    sweep = tmp_path / "optuna"
    # seed 0 draws lr 0.003, then 1e30 (Optuna's grid sampler cannot end on a failed trial)
    search = ("hydra/sweeper=optuna", "hydra/sweeper/sampler=random", "hydra.sweeper.sampler.seed=0")
    search += ("hydra.sweeper.n_trials=2",)
    rate = f"hydra.sweeper.max_failure_rate={max_failure_rate}"
    done = run_sweep(
        tmp_path, sweep, *search, rate, "hydra.sweeper.direction=maximize", "trainer.lr=choice(1e30,0.003)", *DIVERGING
    )
    output = done.stdout + done.stderr
    assert "non-finite steps in a row" in output and "Traceback" not in output, output
    results = sweep / "optimization_results.yaml"
    if max_failure_rate:
        assert done.returncode == 0, output
        assert yaml.safe_load(results.read_text())["best_params"] == {"trainer.lr": 0.003}
    else:
        assert done.returncode == 1 and not results.exists(), output
        assert re.search(r"^trial \S+ failed; its error line is above$", done.stderr, re.MULTILINE), output


def test_heads_dk_matched_holds_h_times_d_k_at_128_and_sweeps_only_the_heads():
    params = dict(compose_experiment("experiment=heads_dk_matched", hydra=True).hydra.sweeper.params)
    assert swept_keys(params) == {"model.num_heads"}
    shapes = []
    for heads in params["model.num_heads"].split(","):
        job = compose_experiment(
            "experiment=heads_dk_matched", f"model.num_heads={heads}", f"model.d_k={params['model.d_k']}"
        )
        model = to_dataclass(job).model
        shapes.append((model.num_heads, model.d_k))
    assert shapes == [(1, 128), (2, 64), (4, 32), (8, 16), (16, 8)]


@needs_sweep_plugin("optuna")
def test_heads_dk_search_maximises_valid_bleu_over_five_knobs_in_a_trial_budget():
    sweeper = compose_experiment("experiment=heads_dk_search", hydra=True).hydra.sweeper
    assert sweeper._target_.endswith("OptunaSweeper") and sweeper.sampler._target_.endswith("TPESampler")
    assert sweeper.direction == "maximize" and sweeper.n_trials > 0
    searched = {"model.num_heads", "model.d_k", "model.d_ff", "trainer.lr", "trainer.label_smoothing"}
    assert swept_keys(dict(sweeper.params)) == searched


@needs_sweep_plugin("submitit")
def test_the_slurm_gpu_launcher_extends_submitits_slurm_schema_for_one_gpu_per_job():
    launcher = compose_experiment("hydra/launcher=slurm_gpu", hydra=True).hydra.launcher
    assert launcher._target_.endswith("submitit_launcher.SlurmLauncher")  # the plugin's own, with its schema
    assert launcher.partition == "gpu" and launcher.gpus_per_node == 1 and launcher.tasks_per_node == 1
    assert launcher.signal_delay_s > 0 and launcher.max_num_timeout > 0  # SIGUSR2 before the limit, requeues
    with pytest.raises(Exception, match="partitoin"):  # a typo is refused by the schema, not passed to sbatch
        compose_experiment("hydra/launcher=slurm_gpu", "hydra.launcher.partitoin=x", hydra=True)


def test_heads_dk_sweep_experiment_composes_and_sweeps_heads_and_d_k():
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            cfg = compose(config_name="train", overrides=["experiment=heads_dk_sweep"], return_hydra_config=True)
            params = dict(cfg.hydra.sweeper.params)
            assert params == {"model.num_heads": "1,2,4,8", "model.d_k": "8,16,32"}
            for heads in (1, 2, 4, 8):
                for d_k in (8, 16, 32):
                    job = compose(
                        config_name="train",
                        overrides=["experiment=heads_dk_sweep", f"model.num_heads={heads}", f"model.d_k={d_k}"],
                    )
                    train_cfg = to_dataclass(job)
                    assert train_cfg.model.d_k == d_k and train_cfg.model.d_model == 64
    finally:
        GlobalHydra.instance().clear()


# -- a sweep job's name: what the sweep varies --------------------------------------------------
def job_hydra_node(overrides: list[str], sweep_dir: Path | None = None, params: dict | None = None):
    """The parts of a sweep job's ``hydra`` node that its name is made from."""
    return OmegaConf.create(
        {
            "overrides": {"task": overrides},
            "sweep": {"dir": str(sweep_dir) if sweep_dir else None},
            "sweeper": {"params": params},
            "job": {"override_dirname": ",".join(sorted(overrides)), "config": {"override_dirname": {}}},
        }
    )


def test_a_job_swept_on_the_command_line_is_named_by_the_swept_key_only(tmp_path):
    fixed = [f"{key}={value}" for key, value in TINY.items()]
    OmegaConf.save({"hydra": {"overrides": {"task": ["model.num_heads=1,2,4", *fixed]}}}, tmp_path / "multirun.yaml")
    job = job_hydra_node([*fixed, "model.num_heads=4"], tmp_path)
    assert swept_overrides(job) == "model.num_heads=4"


def test_an_experiment_grid_and_an_optuna_search_space_name_their_jobs_by_their_keys(tmp_path):
    grid = {"model.num_heads": "1,2,4,8", "model.d_k": "8,16,32"}
    job = job_hydra_node(
        ["experiment=heads_dk_sweep", "model.num_heads=2", "model.d_k=16", "data.num_train=9"], None, grid
    )
    assert swept_overrides(job) == "model.d_k=16,model.num_heads=2"
    search = {
        "model.num_heads": "choice(1,2,4)",
        "trainer.lr": "tag(log, interval(1e-4, 1e-2))",
        "trainer.label_smoothing": "interval(0.0, 0.2)",
        "model.d_model": "64",  # one value: fixed, not searched
    }
    assert swept_keys(search) == {"model.num_heads", "trainer.lr", "trainer.label_smoothing"}


def test_a_multirun_that_varies_nothing_keeps_hydras_name(tmp_path):
    OmegaConf.save({"hydra": {"overrides": {"task": ["model.num_heads=2"]}}}, tmp_path / "multirun.yaml")
    assert swept_overrides(job_hydra_node(["model.num_heads=2", "data.num_train=9"], tmp_path)) == (
        "data.num_train=9,model.num_heads=2"
    )


def test_the_sweep_folder_setting_names_jobs_by_what_varies(tmp_path):
    """conf/hydra/default.yaml's subdir, resolved for a job as a launcher's worker does."""
    register_configs()
    OmegaConf.save(
        {"hydra": {"overrides": {"task": ["model.d_k=8,16", "data.num_train=9"]}}}, tmp_path / "multirun.yaml"
    )
    subdir = yaml.safe_load((REPO / "conf" / "hydra" / "default.yaml").read_text())["sweep"]["subdir"]
    cfg = OmegaConf.create(
        {"hydra": OmegaConf.to_container(job_hydra_node(["data.num_train=9", "model.d_k=16"], tmp_path))}
    )
    cfg.hydra.job.num = 1
    cfg.hydra.sweep.subdir = subdir
    assert cfg.hydra.sweep.subdir == "1_model.d_k=16"


# -- preemption: SIGUSR2 ------------------------------------------------------------------------
class Requeued(BaseException):
    """What submitit's SIGUSR2 handler does, in a test: leave, to be started again."""


def test_sigusr2_asks_to_stop_and_reaches_the_cluster_handler_after_the_block():
    calls = []
    before = signal.signal(signal.SIGUSR2, lambda signum, frame: calls.append(signum))
    try:
        with StopRequest() as stop:
            os.kill(os.getpid(), signal.SIGUSR2)
            assert stop.signal == signal.SIGUSR2 and calls == []  # noted: the loop saves first
        assert calls == [signal.SIGUSR2]  # then the cluster's handler requeues the job
    finally:
        signal.signal(signal.SIGUSR2, before)


def test_a_job_preempted_with_sigusr2_saves_its_step_is_requeued_and_resumes(tmp_path, tiny_config):
    from minitrans.training.trainer import Trainer, train

    def cluster_handler(signum, frame):
        raise Requeued()

    run = tmp_path / "run"
    cfg = tiny_config("trainer.max_steps=6", "trainer.eval_every=6", "trainer.eval_sentences=2")
    before = signal.signal(signal.SIGUSR2, cluster_handler)
    try:
        trainer = Trainer(cfg, run)
        trainer.step_hooks.append(lambda state: state.step == 2 and os.kill(os.getpid(), signal.SIGUSR2))
        with pytest.raises(Requeued):
            trainer.fit()
    finally:
        signal.signal(signal.SIGUSR2, before)
    assert load_checkpoint(run / "checkpoints" / "last.pt")["state"]["step"] == 3  # saved before leaving
    assert train(cfg, run).steps == 6  # the requeued job resumes in the same folder and finishes
