"""Two gloo processes (under torchrun, or started by [system] processes) train one tiny model; only
rank 0 writes files; a resumed run goes on as an uninterrupted one."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from .test_pretrain import CONFIGS, TEXT, TINY


@pytest.mark.slow
def test_torchrun_two_processes(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf8")
    overrides = {**TINY, "paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 6, "system.threads": 1}
    args = []
    for key, value in overrides.items():
        args += [f"--{key}", json.dumps(value) if not isinstance(value, str) else value]
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        "29531",
        "-m",
        "spacy_elmo",
        "pretrain",
        str(CONFIGS / "pretrain_cpu.cfg"),
        "--output",
        str(tmp_path / "out"),
        *args,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = Path(tmp_path / "out")
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    steps = [row["step"] for row in log if "loss" in row]
    assert steps == sorted(set(steps)) and steps[-1] == 6  # one writer: no duplicated lines
    assert (out / "model-last" / "weights.hdf5").is_file()
    assert "Done: 6 steps" in result.stdout


def _pretrain_cmd(corpus: Path, output: Path, max_steps: int, resume: bool = False) -> list:
    overrides = {
        **TINY,
        "paths.train": str(corpus),
        "paths.dev": str(corpus),
        "training.max_steps": max_steps,
        "training.checkpoint_every": 1,
        "training.eval_every": 1000,
        "system.threads": 1,
    }
    args = []
    for key, value in overrides.items():
        args += [f"--{key}", json.dumps(value) if not isinstance(value, str) else value]
    cmd = [sys.executable, "-m", "spacy_elmo", "pretrain", str(CONFIGS / "pretrain_cpu.cfg"), "--output", str(output), *args]
    return cmd + (["--resume"] if resume else [])


@pytest.mark.slow
def test_kill_9_then_resume_matches_an_uninterrupted_run(tmp_path):
    import signal
    import time

    import torch

    from spacy_elmo.training.checkpoint import load_checkpoint

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf8")
    steps = 40
    subprocess.run(_pretrain_cmd(corpus, tmp_path / "straight", steps), check=True, capture_output=True, timeout=300)
    victim = subprocess.Popen(_pretrain_cmd(corpus, tmp_path / "killed", steps), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline and victim.poll() is None:
        checkpoint = load_checkpoint(tmp_path / "killed")  # always whole: written by atomic rename
        if checkpoint is not None and checkpoint["step"] >= 3:
            break
        time.sleep(0.01)
    victim.send_signal(signal.SIGKILL)  # in the middle of whatever it is doing
    victim.wait()
    killed_at = load_checkpoint(tmp_path / "killed")["step"]
    assert 3 <= killed_at < steps
    subprocess.run(_pretrain_cmd(corpus, tmp_path / "killed", steps, resume=True), check=True, capture_output=True, timeout=300)
    a, b = load_checkpoint(tmp_path / "straight"), load_checkpoint(tmp_path / "killed")
    assert b["step"] == steps and a["position"] == b["position"]
    for name, value in a["model"].items():
        torch.testing.assert_close(b["model"][name], value, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_two_processes_of_its_own_resume_as_an_uninterrupted_run(tmp_path):
    """[system] processes = 2: spacy-elmo starts the processes itself; each process's corpus
    position and random state are checkpointed, so 3 steps + a resume to 6 equal 6 straight steps."""
    from spacy_elmo.errors import InputError
    from spacy_elmo.training.checkpoint import load_checkpoint
    from spacy_elmo.training.pretrain import pretrain

    from .test_pretrain import _config

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf8")
    settings = {"system.processes": 2, "system.threads": 1, "training.checkpoint_every": 1, "training.dropout": 0.3}
    lines = []
    straight = pretrain(_config(corpus, **settings, **{"training.max_steps": 6}), tmp_path / "straight", log=lines.append)
    assert straight["step"] == 6 and any(line.startswith("Prepared") for line in lines)  # rank 0 logs to the caller
    pretrain(_config(corpus, **settings, **{"training.max_steps": 3}), tmp_path / "resumed", log=lambda s: None)
    resumed = pretrain(_config(corpus, **settings, **{"training.max_steps": 6}), tmp_path / "resumed", resume=True, log=lambda s: None)
    assert resumed["step"] == 6 and resumed["tokens"] == straight["tokens"]
    a, b = load_checkpoint(tmp_path / "straight"), load_checkpoint(tmp_path / "resumed")
    assert len(a["ranks"]) == 2 and not torch.equal(a["ranks"][0]["rng"]["torch"], a["ranks"][1]["rng"]["torch"])  # own masks
    for x, y in zip(a["ranks"], b["ranks"]):
        assert torch.equal(x["rng"]["torch"], y["rng"]["torch"])
    assert [r["position"] for r in a["ranks"]] == [r["position"] for r in b["ranks"]]
    for name, value in a["model"].items():
        torch.testing.assert_close(b["model"][name], value, rtol=0, atol=1e-6)
    log = [json.loads(line) for line in (tmp_path / "straight" / "log.jsonl").read_text().splitlines()]
    steps = [row["step"] for row in log if "loss" in row]
    assert steps == sorted(set(steps))  # one writer
    # resumed by one process: refused, nothing changed
    before = (tmp_path / "resumed" / "checkpoint.pt").read_bytes()
    one = {**settings, "system.processes": 1, "training.max_steps": 8}
    with pytest.raises(InputError, match="written by 2 training processes and this run has 1"):
        pretrain(_config(corpus, **one), tmp_path / "resumed", resume=True, log=lambda s: None)
    assert (tmp_path / "resumed" / "checkpoint.pt").read_bytes() == before


@pytest.mark.slow
def test_an_error_in_the_processes_is_said_in_one_line(tmp_path):
    from spacy_elmo.errors import OutputFolderError
    from spacy_elmo.training.pretrain import pretrain

    from .test_pretrain import _config

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT, encoding="utf8")
    config = _config(corpus, **{"system.processes": 2, "system.threads": 1, "training.max_steps": 2})
    pretrain(config, tmp_path / "run", log=lambda s: None)
    with pytest.raises(OutputFolderError, match="holds a pretraining run"):  # raised in rank 0, said here
        pretrain(config, tmp_path / "run", log=lambda s: None)


@pytest.mark.slow
@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_ctrl_c_or_sigterm_saves_a_checkpoint_and_says_where(tmp_path, signum):
    import signal
    import time

    from spacy_elmo.training.checkpoint import load_checkpoint

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf8")
    cmd = _pretrain_cmd(corpus, tmp_path / "run", 100_000)
    cmd[cmd.index("--training.checkpoint_every") + 1] = "100000"  # no checkpoint but the one the signal asks for
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not any("loss" in line for line in _log_lines(tmp_path / "run")):
        time.sleep(0.05)
    run.send_signal(getattr(signal, signum))
    out, _ = run.communicate(timeout=120)
    assert run.returncode == (130 if signum == "SIGINT" else 143), out[-2000:]
    checkpoint = load_checkpoint(tmp_path / "run")
    assert checkpoint is not None and checkpoint["step"] >= 1
    assert f"{signum} at step {checkpoint['step']}: the checkpoint is saved in" in out and "--resume" in out


def _log_lines(run: Path) -> list:
    path = run / "log.jsonl"
    return path.read_text().splitlines() if path.is_file() else []
