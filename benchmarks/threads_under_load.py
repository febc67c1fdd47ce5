"""Speed when other work shares the cores, for pretraining and for the inference commands.

Pretraining (`--jobs pretrain`): `spacy-elmo pretrain cpu` for a few steps, idle and beside a busy process
per core but one, with each threads setting and OpenMP wait policy; tokens/s is the median of the windows
the trainer logs.

Inference (`--jobs embed index-usages`): the command over the first `--lines` lines of the text with the
shared small biLM, in seconds of wall time:
- alone; two `--shard I/2` started together (docs/scale.md) against the single run;
- beside a busy process per core but one;
- with a busy process that starts a third of the way into the run (the threads must follow it);
each with the default threads (0: they follow the machine) and with `--threads N` fixed.

The Python APIs (`--jobs api`): `BiLM.embed` (PyTorch, fp32 and int8) and `OnnxBiLM.embed` (ONNX Runtime, the
same biLM exported at fp32 and int8), each in a process of its own over the first `--lines` lines split on spaces,
tokens/s idle and beside a busy process per core but one, with the default threads (they follow the machine:
bilm/threads.py, machine_load.py) and with the threads fixed to the cores.

    python benchmarks/threads_under_load.py                               # pretraining, Reuters, 30 steps a run
    python benchmarks/threads_under_load.py --jobs embed index-usages --lines 1000
    python benchmarks/threads_under_load.py --jobs api --lines 500

Prints the CPU class first.
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "raw" / "reuters21578.txt.gz"
DEFAULT_MODEL = ROOT.parent / "shared" / "models" / "elmo-small-wiki-reuters"
BUSY = [sys.executable, "-c", "while True: pass"]
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


def inference(job: str, model: Path, text: Path, output: Path, threads: int, shard: Optional[str] = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "spacy_elmo", job, str(model), str(text), str(output), "-q"]
    command += ["--top"] if job == "embed" else []
    command += ["--threads", str(threads)] if threads else []
    command += ["--shard", shard] if shard else []
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_all(runs: List[subprocess.Popen], started: float) -> float:
    for run in runs:
        _, err = run.communicate(timeout=3600)
        if run.returncode:
            raise SystemExit(f"a run failed: {err[-2000:]}")
    return time.perf_counter() - started


def inference_table(job: str, model: Path, text: Path, tmp: Path, cores: int) -> None:
    n = [0]

    def out() -> Path:
        n[0] += 1
        return tmp / f"{job}-{n[0]}{'.hdf5' if job == 'embed' else ''}"

    def alone(threads: int) -> float:
        started = time.perf_counter()
        return wait_all([inference(job, model, text, out(), threads)], started)

    def shards(threads: int) -> float:
        started = time.perf_counter()
        return wait_all([inference(job, model, text, out(), threads, f"{i}/2") for i in range(2)], started)

    def beside(threads: int, delay: float) -> float:
        started = time.perf_counter()
        run = inference(job, model, text, out(), threads)
        time.sleep(delay)
        hogs = [subprocess.Popen(BUSY) for _ in range(max(cores - 1, 1))]
        try:
            return wait_all([run], started)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()

    single = alone(0)
    print(f"| {job} | alone | default (0) | {single:.1f} | 1.00 |", flush=True)
    rows = [("alone", f"--threads {cores}", lambda: alone(cores))]
    rows += [
        ("two shards together", "default (0)", lambda: shards(0)),
        ("two shards together", f"--threads {cores}", lambda: shards(cores)),
    ]
    rows += [("two shards together", "--threads 1", lambda: shards(1))]
    for label, threads in (("default (0)", 0), (f"--threads {cores}", cores), ("--threads 1", 1)):
        rows.append(("beside a busy process", label, lambda t=threads: beside(t, 0.0)))
    for label, threads in (("default (0)", 0), (f"--threads {cores}", cores)):
        rows.append(("a busy process from a third in", label, lambda t=threads: beside(t, single / 3)))
    for what, label, measure in rows:
        seconds = measure()
        print(f"| {job} | {what} | {label} | {seconds:.1f} | {single / seconds:.2f} |", flush=True)


API_PROGRAM = """
import sys, time
runtime, precision, threads, model, text = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
sentences = [line.split() for line in open(text, encoding="utf8") if line.split()]
if runtime == "pytorch":
    import torch
    from spacy_elmo.bilm import load_original
    if threads:
        torch.set_num_threads(threads)
    bilm = load_original(model + "/options.json", model + "/weights.hdf5", cache_size=0)
    bilm.precision = precision
    embed = bilm.embed
else:
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM
    embed = OnnxBiLM(model, threads=threads or None).embed
embed(sentences[:8])
started = time.perf_counter()
embed(sentences, batch_size=32)
print(sum(len(s) for s in sentences) / (time.perf_counter() - started))
"""


def api_table(model: Path, text: Path, tmp: Path, cores: int) -> None:
    """tokens/s of BiLM.embed and OnnxBiLM.embed, idle and beside busy processes, default and fixed threads."""
    from spacy_elmo.bilm import load_original
    from spacy_elmo.bilm_onnx.export import export_onnx

    bilm = load_original(model / "options.json", model / "weights.hdf5", cache_size=0)
    exported = {precision: tmp / f"bilm-{precision}.onnx" for precision in ("fp32", "int8")}
    for precision, path in exported.items():
        export_onnx(bilm, path, int8=precision == "int8")
    print("| API | precision | other work | threads | tokens/s |")
    print("|---|---|---|---|---:|")
    for load in (0, max(cores - 1, 1)):
        hogs = [subprocess.Popen(BUSY) for _ in range(load)]
        try:
            for runtime in ("pytorch", "onnx"):
                for precision in ("fp32", "int8"):
                    for threads in (0, cores):
                        where = str(model) if runtime == "pytorch" else str(exported[precision])
                        command = [sys.executable, "-c", API_PROGRAM, runtime, precision, str(threads), where, str(text)]
                        speed = float(subprocess.run(command, check=True, capture_output=True, text=True, timeout=1200).stdout.split()[-1])
                        api = "BiLM.embed (PyTorch)" if runtime == "pytorch" else "OnnxBiLM.embed (ONNX Runtime)"
                        setting = "default (follows the machine)" if threads == 0 else f"{threads} (fixed)"
                        other = "idle" if load == 0 else f"{load} busy process{'es' * (load != 1)}"
                        print(f"| {api} | {precision} | {other} | {setting} | {speed:,.0f} |", flush=True)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()


def first_lines(args: argparse.Namespace, path: Path) -> None:
    """Write the first `--lines` non-empty lines of `--text` to `path`, and say so."""
    opened = gzip.open(args.text, "rt", encoding="utf8") if args.text.suffix == ".gz" else args.text.open(encoding="utf8")
    with opened as f:
        lines = [line for line in (next(f, "") for _ in range(args.lines)) if line.strip()]
    path.write_text("".join(lines), encoding="utf8")
    print(f"{len(lines)} lines of {args.text}; biLM {args.model}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="+", default=["pretrain"], choices=["pretrain", "embed", "index-usages", "api"])
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT)
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the biLM of the inference jobs")
    parser.add_argument("--lines", type=int, default=1000, help="lines of the text the inference jobs read")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--only", type=int, nargs="+", default=None, help="the settings to run, by number (0: the default threads)")
    parser.add_argument("--loads", nargs="+", default=["idle", "busy"], help="idle and/or busy (a busy process per core but one)")
    args = parser.parse_args()
    from spacy_elmo.bilm.precision import cpu_class

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"CPU: {cpu_class().describe()}; {cores} cores")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        inference_jobs = [job for job in args.jobs if job not in ("pretrain", "api")]
        if inference_jobs:
            first_lines(args, tmp / "text.txt")
            print("| command | other work | threads | seconds | speed vs alone |")
            print("|---|---|---|---:|---:|")
            for job in inference_jobs:
                inference_table(job, args.model, tmp / "text.txt", tmp, cores)
        if "api" in args.jobs:
            first_lines(args, tmp / "api.txt")
            api_table(args.model, tmp / "api.txt", tmp, cores)
        if "pretrain" in args.jobs:
            pretrain_table(args, tmp, cores)


def pretrain_table(args: argparse.Namespace, tmp: Path, cores: int) -> None:
    prepared = tmp / "prepared"
    subprocess.run([sys.executable, "-m", "spacy_elmo", "prepare-corpus", str(args.text), "--output", str(prepared), "-q"], check=True)
    print("| other jobs | setting | tokens/s |")
    print("|---|---|---:|")
    for load in [0 if name == "idle" else max(cores - 1, 1) for name in args.loads]:
        hogs = [subprocess.Popen(BUSY) for _ in range(load)]
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
