"""Run `spacy pretrain` for a fixed wall-clock budget and keep the last complete weights.

`spacy pretrain` counts epochs, not time; the ELMo biLM is pretrained for a number of minutes.
This runs it for the same number of minutes (weights are saved every `n_save_every` batches),
stops it, and copies the newest complete weights to OUTPUT/model-budget.bin.
"""

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import srsly
import typer
from .written import write_json


def main(
    ctx: typer.Context,
    config: Path,
    output: Path,
    minutes: float = typer.Option(..., help="Wall-clock budget"),
) -> None:
    """Run `spacy pretrain CONFIG OUTPUT [overrides]` for MINUTES, then keep its newest weights."""
    output.mkdir(parents=True, exist_ok=True)
    for old in output.glob("model*.bin"):
        old.unlink()
    # `spacy pretrain` needs every setting spelled out, which `spacy train` would fill in itself.
    filled = output / "config.filled.cfg"
    fill = [sys.executable, "-m", "spacy", "init", "fill-config", str(config), str(filled), "--pretraining"]
    subprocess.run(fill, check=True)
    cmd = [sys.executable, "-m", "spacy", "pretrain", str(filled), str(output), *ctx.args]
    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    try:
        proc.wait(timeout=minutes * 60)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait()
    else:
        if proc.returncode != 0:
            sys.exit(proc.returncode)
    elapsed = time.monotonic() - start
    weights = _newest_complete(output)
    if weights is None:
        sys.exit(f"No weights were saved within {minutes} minutes: lower pretraining.n_save_every.")
    shutil.copyfile(weights, output / "model-budget.bin")
    log = list(srsly.read_jsonl(output / "log.jsonl")) if (output / "log.jsonl").exists() else []
    summary = {"minutes": round(elapsed / 60, 2), "weights": weights.name, "words": log[-1]["nr_word"] if log else None}
    write_json(output / "budget.json", summary)
    print(summary)


def _newest_complete(output: Path):
    # A file being written when the process stopped is shorter than the complete ones before it.
    saved: List[Path] = sorted(output.glob("model*.bin"), key=lambda p: p.stat().st_mtime)
    if len(saved) >= 2 and saved[-1].stat().st_size != saved[-2].stat().st_size:
        return saved[-2]
    return saved[-1] if saved else None


if __name__ == "__main__":
    app = typer.Typer(add_completion=False)
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(main)
    app()
