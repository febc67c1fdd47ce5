"""Two gloo processes under torchrun train one tiny model; only rank 0 writes files."""
import json
import subprocess
import sys
from pathlib import Path

from .test_pretrain import CONFIGS, TEXT, TINY


def test_torchrun_two_processes(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf8")
    overrides = {**TINY, "paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 6, "system.threads": 1}
    args = []
    for key, value in overrides.items():
        args += [f"--{key}", json.dumps(value) if not isinstance(value, str) else value]
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
        "--master_port", "29531", "-m", "spacy_elmo", "pretrain", str(CONFIGS / "pretrain_cpu.cfg"),
        "--output", str(tmp_path / "out"), *args,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = Path(tmp_path / "out")
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    steps = [row["step"] for row in log if "loss" in row]
    assert steps == sorted(set(steps)) and steps[-1] == 6  # one writer: no duplicated lines
    assert (out / "model-last" / "weights.hdf5").is_file()
    assert "Done: 6 steps" in result.stdout
