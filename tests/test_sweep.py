"""A Hydra multirun of scripts/train.py end to end: one folder per job, named after its
overrides, each with its own TensorBoard events; an impossible combination is refused with a
clear line while the other jobs run; compare.py reads the result. Also: the ready-made
heads × d_k sweep composes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from minitrans.core.hydra_config import register_configs, to_dataclass
from minitrans.runs.compare import compare

ROOT = Path(__file__).resolve().parents[1]

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
}


@pytest.mark.slow
def test_multirun_gives_one_readable_folder_per_job_refuses_the_impossible_one_and_compares(tmp_path):
    sweep = tmp_path / "sweep"
    # The tiny settings stay out of the folder names, so that only the swept key shows.
    hidden = ",".join([*TINY, "data.cache_dir", "experiment", "trainer.device", "trainer.progress"])
    command = [
        sys.executable,
        "scripts/train.py",
        "-m",
        "model.num_heads=1,2,3",  # 3 does not divide d_model=16: refused, the sweep goes on
        *[f"{key}={value}" for key, value in TINY.items()],
        f"data.cache_dir={tmp_path / 'cache'}",
        f"hydra.sweep.dir={sweep}",
        f"hydra.job.config.override_dirname.exclude_keys=[{hidden}]",
    ]
    env = os.environ | {"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "skipping job model.num_heads=3: model.num_heads: d_model=16 is not divisible by num_heads=3" in output

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


def test_heads_dk_sweep_experiment_composes_and_sweeps_heads_and_d_k():
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
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
