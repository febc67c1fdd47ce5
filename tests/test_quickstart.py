"""examples/quickstart.py, README's first set-up command."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pretrains a biLM in a subprocess

REPO = Path(__file__).resolve().parents[1]


def test_the_quickstart_runs_end_to_end_and_keeps_foreign_folders(tmp_path):
    """README's first set-up command: examples/quickstart.py pretrains, loads and compares (here for
    a few seconds of training: the figures are not checked, the path is)."""
    script = REPO / "examples" / "quickstart.py"

    def quickstart():
        args = [sys.executable, str(script), "--output", str(tmp_path / "qs"), "--steps", "6"]
        return subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path)

    run = quickstart()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"Writing into {(tmp_path / 'qs').resolve()}" in run.stdout
    steps = [json.loads(line).get("step") for line in (tmp_path / "qs" / "biLM" / "log.jsonl").read_text().splitlines()]
    assert max(steps) == 6  # budgeted by steps, not by the clock
    assert (tmp_path / "qs" / "biLM" / "model-best" / "weights.hdf5").is_file()
    table = [line.split() for line in run.stdout.splitlines() if line.strip().startswith(("token layer", "top biLSTM"))]
    assert len(table) == 8 and all(row[-2:] == ["1.000", "1.000"] for row in table[:4])
    again = quickstart()
    assert again.returncode == 0, again.stderr[-2000:]  # its own folder is replaced
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    refused = subprocess.run([sys.executable, str(script), "--output", str(tmp_path / "mine")], capture_output=True, text=True, timeout=60)
    assert refused.returncode != 0 and "not made by this script" in refused.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
