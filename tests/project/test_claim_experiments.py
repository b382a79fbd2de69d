"""The claim experiments (conf/experiment/claim_*.yaml, docs/claims.md): each sweeps exactly its
teaching switch, every job composes and builds, each trains to a step budget (no time budget, so
its figures do not depend on the machine), and a tiny run of one goes through train.py -m and
compare.py's learning curves."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import REPO
from helpers.compose import compose_experiment

from minitrans.core.hydra_config import to_dataclass
from minitrans.core.hydra_sweep import swept_keys
from minitrans.models.build import VocabSizes, build_model
from minitrans.runs.compare import compare

SWEEPS = {
    "claim_scaling": ("model.attention_scale", ["sqrt_dk", "none"]),
    "claim_mask": ("model.causal_mask", ["true", "false"]),
    "claim_positions": ("model.positions", ["sinusoidal", "learned", "none"]),
    "claim_context": ("model.cross_attention", ["attention", "fixed_mean"]),
}


@pytest.mark.parametrize("experiment", sorted(SWEEPS))
def test_each_claim_experiment_sweeps_its_switch_alone_to_a_step_budget(experiment):
    key, values = SWEEPS[experiment]
    params = dict(compose_experiment(f"experiment={experiment}", hydra=True).hydra.sweeper.params)
    assert swept_keys(params) == {key}
    assert params[key].split(",") == values
    pinned = [f"{name}={value}" for name, value in params.items() if name != key]
    for value in values:  # every job, with the values the sweep pins beside it
        cfg = to_dataclass(compose_experiment(f"experiment={experiment}", *pinned, f"{key}={value}"))
        assert str(getattr(cfg.model, key.split(".")[1])).lower() == value
        assert cfg.trainer.max_minutes is None and cfg.trainer.max_steps <= 1200
        assert cfg.trainer.eval_every * 5 <= cfg.trainer.max_steps  # points enough for a learning curve
        build_model(cfg.model, VocabSizes(cfg.data.vocab_size, cfg.data.vocab_size))


def test_claim_scaling_has_wide_heads_and_claim_context_three_length_buckets():
    scaling = to_dataclass(compose_experiment("experiment=claim_scaling", "model.num_heads=2", "model.d_k=256"))
    assert scaling.model.d_k == 256
    context = to_dataclass(compose_experiment("experiment=claim_context", "model.num_heads=4", "model.d_k=null"))
    assert context.data.max_words > 20  # buckets 4-10, 11-20, 21-30: BLEU by length has a shape


TINY = [
    "model.d_model=16", "model.d_ff=32", "model.num_encoder_layers=1", "model.num_decoder_layers=1",
    "data.num_train=200", "data.num_valid=10", "data.num_test=10", "data.max_words=8", "data.vocab_size=320",
    "trainer.max_steps=4", "trainer.eval_every=2", "trainer.eval_sentences=4", "trainer.sample_sentences=1",
    "trainer.batch_tokens=400", "trainer.warmup_steps=1", "trainer.progress=false", "trainer.num_threads=1",
    "trainer.processes=1",
]  # fmt: skip


@pytest.mark.slow
def test_claim_mask_runs_as_one_command_and_compare_draws_its_learning_curves(tmp_path):
    sweep = tmp_path / "sweep"
    command = [sys.executable, "scripts/train.py", "-m", "experiment=claim_mask", *TINY,
               f"data.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep}"]  # fmt: skip
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = (done.stdout + done.stderr).splitlines()
    assert sum("model.causal_mask=false: the decoder sees" in line for line in printed) == 1  # the unmasked job only
    result = compare([sweep])
    assert [run.job for run in result.runs] == ["0_model.causal_mask=True", "1_model.causal_mask=False"]
    assert sweep / "learning_curves.png" in result.files
