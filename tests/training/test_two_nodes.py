"""Two nodes simulated on one machine: two torchrun commands, one process each, meeting at a
rendezvous on a loopback port, stop with a checkpoint when either node gets SIGTERM, and resume
to the weights of the script's own two processes on one node, bit for bit."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TRAIN_SCRIPT, TWO_PROCESS_RUN, assert_bitwise_equal, last_weights, script_env

from minitrans.core.checkpoint import load_checkpoint
from minitrans.training.launch import free_port

STEPS = 60
assert f"trainer.max_steps={STEPS}" in TWO_PROCESS_RUN


def settings(tiny_overrides, run: Path) -> list[str]:
    """The reference run's settings (conftest.TWO_PROCESS_RUN) but its process count: torchrun's."""
    return [*tiny_overrides, *[s for s in TWO_PROCESS_RUN if s != "trainer.processes=2"], f"hydra.run.dir={run}"]


def start_nodes(tiny_overrides, run: Path, per_node: tuple[list[str], list[str]] = ([], [])) -> list[subprocess.Popen]:
    """``torchrun --nnodes=2 --nproc_per_node=1 --node_rank=N --master_addr=127.0.0.1
    --master_port=PORT scripts/train.py ...`` for N = 0 and 1, as each node of a cluster runs it
    (``per_node``: what each node's command line adds)."""
    port = free_port()
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes=2",
                "--nproc_per_node=1",
                f"--node_rank={node}",
                "--master_addr=127.0.0.1",
                f"--master_port={port}",
                str(TRAIN_SCRIPT),
                *settings(tiny_overrides, run),
                *per_node[node],
            ],
            env=script_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for node in (0, 1)
    ]


def finish(nodes: list[subprocess.Popen], timeout: float = 300) -> list[tuple[int, str]]:
    outputs = [node.communicate(timeout=timeout) for node in nodes]
    return [(node.returncode, out + err) for node, (out, err) in zip(nodes, outputs)]


def step_of(run: Path) -> int:
    try:
        return load_checkpoint(run / "checkpoints" / "last.pt")["state"]["step"]
    except Exception:  # not written yet, or being replaced
        return -1


def stop_one_node(tiny_overrides, run: Path, node: int) -> int:
    """Start both nodes, SIGTERM node ``node``'s torchrun once a checkpoint past the last one
    is written, and return the step the run stopped at."""
    before = step_of(run)
    nodes = start_nodes(tiny_overrides, run)
    deadline = time.monotonic() + 240
    while step_of(run) <= max(before, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    nodes[node].send_signal(signal.SIGTERM)
    results = finish(nodes)
    assert any(code != 0 for code, _ in results), results  # stopped, not finished
    assert "stopped by SIGTERM after step" in results[0][1], results[0][1][-3000:]  # rank 0 says so
    stopped = step_of(run)
    assert before < stopped < STEPS
    return stopped


@pytest.mark.slow
def test_two_nodes_stop_on_sigterm_to_either_and_resume_to_the_one_node_run_bitwise(
    tmp_path, tiny_overrides, two_process_reference
):
    reference, _ = two_process_reference  # trained once by conftest.py, as scripts/train.py on one node
    run = tmp_path / "two-nodes"
    stop_one_node(tiny_overrides, run, node=1)  # the node without rank 0
    stop_one_node(tiny_overrides, run, node=0)
    results = finish(start_nodes(tiny_overrides, run))
    assert [code for code, _ in results] == [0, 0], results[0][1][-3000:] + results[1][1][-3000:]
    log = (run / "train.log").read_text()
    assert log.count("2 process(es)") == 3 and log.count("resumed from") == 2
    assert (run / "summary.json").read_text().count('"bleu"') >= 1
    assert_bitwise_equal(last_weights(run), last_weights(reference))


@pytest.mark.slow
@pytest.mark.parametrize(
    "per_node, named",
    [
        ((["seed=0"], ["seed=1"]), ["(seed: 0 on rank 0, 1 on rank 1)"]),
        (
            (["trainer.max_steps=5", "model.d_ff=64"], ["model.d_ff=96"]),
            ["(model.d_ff: 64 on rank 0, 96 on rank 1; ", "; trainer.max_steps: 5 on rank 0, 60 on rank 1)"],
        ),
    ],
    ids=["seed", "max_steps-and-d_ff"],
)
def test_nodes_started_with_different_settings_are_refused_in_one_line_naming_them(
    per_node, named, tmp_path, tiny_overrides
):
    """Another seed on one node would shard other batch orders and train on silently; another
    model or step count would fail inside a collective with nothing naming the cause."""
    run = tmp_path / "apart"
    results = finish(start_nodes(tiny_overrides, run, per_node), timeout=180)
    for code, output in results:
        assert code != 0, output[-3000:]
        errors = [line for line in output.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, output[-3000:]
        assert errors[0].startswith("error: the training processes were started with different settings (")
        assert all(part in errors[0] for part in named), errors[0]
        assert errors[0].endswith("start every node with the same command line")
    assert not (run / "checkpoints").exists()
