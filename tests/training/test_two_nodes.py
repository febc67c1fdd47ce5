"""Pretraining across machines as torchrun runs it: two launchers (`--nnodes 2`, c10d rendezvous)
on 127.0.0.1 stand for two nodes, one gloo process each. They train as one run; after kill -9 of
one node's process, both launchers started again with --resume reach the uninterrupted run's
checkpoint."""

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from .test_pretrain import CONFIGS, TEXT, TINY


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node(rank: int, port: int, corpus: Path, output: Path, steps: int, resume: bool) -> subprocess.Popen:
    overrides = {
        **TINY,
        "paths.train": str(corpus),
        "paths.dev": str(corpus),
        "training.max_steps": steps,
        "training.checkpoint_every": 1,
        "training.eval_every": 1000,
        "system.threads": 1,
    }
    args = [item for key, value in overrides.items() for item in (f"--{key}", value if isinstance(value, str) else json.dumps(value))]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc_per_node", "1", "--node_rank", str(rank)]
    launcher += ["--rdzv_backend", "c10d", "--rdzv_endpoint", f"127.0.0.1:{port}", "--rdzv_id", f"test-{port}", "--max_restarts", "0"]
    command = launcher + ["-m", "spacy_elmo", "pretrain", str(CONFIGS / "pretrain_cpu.cfg"), "--output", str(output), *args]
    return subprocess.Popen(command + (["--resume"] if resume else []), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _two_nodes(corpus: Path, output: Path, steps: int, resume: bool = False) -> None:
    port = _free_port()
    nodes = [_node(rank, port, corpus, output, steps, resume) for rank in (0, 1)]
    outputs = [node.communicate(timeout=300)[0] for node in nodes]
    assert all(node.returncode == 0 for node in nodes), "\n".join(o[-2000:] for o in outputs)


def _trainers(launcher_pid: int) -> list:
    """The pretraining processes a launcher started (its children running spacy_elmo)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                if int(stat.rsplit(")", 1)[1].split()[1]) == launcher_pid and b"spacy_elmo" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


@pytest.mark.slow
def test_two_nodes_train_and_resume_after_kill_9_as_an_uninterrupted_run(tmp_path):
    from spacy_elmo.training.checkpoint import load_checkpoint

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf8")
    steps = 30
    _two_nodes(corpus, tmp_path / "straight", steps)
    straight = load_checkpoint(tmp_path / "straight")
    assert straight["step"] == steps and len(straight["ranks"]) == 2
    log = [json.loads(line) for line in (tmp_path / "straight" / "log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in log if "loss" in row] == sorted({row["step"] for row in log if "loss" in row})  # one writer

    port = _free_port()
    nodes = [_node(rank, port, corpus, tmp_path / "killed", steps, resume=False) for rank in (0, 1)]
    deadline = time.time() + 240
    while time.time() < deadline:
        checkpoint = load_checkpoint(tmp_path / "killed") if (tmp_path / "killed").is_dir() else None
        if checkpoint is not None and checkpoint["step"] >= 3:
            break
        time.sleep(0.01)
    victims = _trainers(nodes[1].pid)
    assert victims, "node 1's training process was not found"
    for pid in victims:
        subprocess.run(["kill", f"-{int(signal.SIGKILL)}", str(pid)], check=True)
    for node in nodes:  # node 1 fails; node 0's process loses its peer and ends too
        try:
            node.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            node.kill()
            node.communicate()
    assert nodes[1].returncode != 0
    killed_at = load_checkpoint(tmp_path / "killed")["step"]
    assert 3 <= killed_at < steps

    _two_nodes(corpus, tmp_path / "killed", steps, resume=True)
    resumed = load_checkpoint(tmp_path / "killed")
    assert resumed["step"] == steps
    assert [r["position"] for r in straight["ranks"]] == [r["position"] for r in resumed["ranks"]]
    for name, value in straight["model"].items():
        torch.testing.assert_close(resumed["model"][name], value, rtol=0, atol=1e-6)
