"""Pretraining's speed when another job shares the cores: `spacy-elmo pretrain cpu` for a few steps, idle and
beside a busy process per core but one, with each threads setting and OpenMP wait policy.

    python benchmarks/threads_under_load.py                 # Reuters, 30 steps a run
    python benchmarks/threads_under_load.py --steps 20 --text corpus.txt

Prints tokens/s of each run (the median of the windows the trainer logs) and the CPU class.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "raw" / "reuters21578.txt.gz"
SETTINGS = [  # (label, --system.threads, OMP_WAIT_POLICY or None for OpenMP's default)
    ("threads 0 (the default)", 0, None),
    ("threads 1", 1, None),
    ("threads 2", 2, None),
    ("threads 2, OMP_WAIT_POLICY=PASSIVE", 2, "PASSIVE"),
]


def run(text: Path, output: Path, steps: int, threads: int, policy, prepared: Path) -> float:  # type: ignore[no-untyped-def]
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", "cpu", "--output", str(output), "--paths.train", str(prepared)]
    command += ["--training.max_steps", str(steps), "--training.max_minutes", "0", "--training.eval_every", "100000"]
    command += ["--system.threads", str(threads), "--training.checkpoint_every", "100000"]
    subprocess.run(command, check=True, capture_output=True, env=env, timeout=1200)
    rows = [json.loads(line) for line in (output / "log.jsonl").read_text().splitlines()]
    rates = sorted(float(r["tokens_per_s"]) for r in rows if "loss" in r and r.get("tokens_per_s"))
    return rates[len(rates) // 2] if rates else float("nan")  # the median of the logged windows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--only", type=int, nargs="+", default=None, help="the settings to run, by number (0: the default threads)")
    parser.add_argument("--loads", nargs="+", default=["idle", "busy"], help="idle and/or busy (a busy process per core but one)")
    args = parser.parse_args()
    from spacy_elmo.bilm.precision import cpu_class

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"CPU: {cpu_class().describe()}; {cores} cores")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prepared = tmp / "prepared"
        subprocess.run([sys.executable, "-m", "spacy_elmo", "prepare-corpus", str(args.text), "--output", str(prepared), "-q"], check=True)
        print("| other jobs | setting | tokens/s |")
        print("|---|---|---:|")
        for load in [0 if name == "idle" else max(cores - 1, 1) for name in args.loads]:
            hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(load)]
            try:
                for i, (label, threads, policy) in enumerate(SETTINGS):
                    if args.only is not None and i not in args.only:
                        continue
                    speed = run(args.text, tmp / f"run-{load}-{i}", args.steps, threads, policy, prepared)
                    print(f"| {load} busy process{'es' * (load != 1)} | {label} | {speed:,.0f} |", flush=True)
            finally:
                for hog in hogs:
                    hog.kill()
                    hog.wait()


if __name__ == "__main__":
    main()
