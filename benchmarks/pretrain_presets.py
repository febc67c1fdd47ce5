"""Which biLM a CPU should pretrain: candidates trained for the same wall time, compared by dev
perplexity over one held-out text and one vocabulary.

Every candidate is `spacy-elmo pretrain` of a base preset with a few settings changed, on the same
prepared corpus (both files of ../shared/data/raw by default, prepared once into --work; every
50th document held out, the first 2,000 held-out sentences scored), with the base preset's
[corpus] and [vocab] (20,000 words), so that the perplexities are over the same words and compare
across sizes. Candidates run one after another, each with the whole machine for --minutes
(evaluations included): two threads, or two processes of one thread each (torch.distributed.run,
gloo) where the candidate says so. Leave the machine idle while it runs.

    python benchmarks/pretrain_presets.py --minutes 10
    python benchmarks/pretrain_presets.py --minutes 120 --only cpu cpu-2proc
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

from compare_runs import dev_curve
from pretrain_speed import logged_speed

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "raw"

# name -> (what differs, overrides of the base preset, processes)
CANDIDATES: Dict[str, Dict[str, Any]] = {
    "cpu": {"about": "the `cpu` preset as shipped (2 threads)", "overrides": {}, "processes": 1},
    "cpu-2proc": {
        "about": "two processes of one thread (2 x 2,048-token batches per update)",
        "overrides": {"system.threads": 1},
        "processes": 2,
    },
    "cpu-2proc-1024": {
        "about": "two processes of one thread, 1,024-token batches each (2,048 per update, as the preset)",
        "overrides": {"system.threads": 1, "training.batch_tokens": 1024},
        "processes": 2,
    },
    "cpu-lr0.004": {"about": "learning rate 0.004", "overrides": {"training.learn_rate": 0.004}, "processes": 1},
    "cpu-batch1024": {"about": "1,024-token batches", "overrides": {"training.batch_tokens": 1024}, "processes": 1},
    "cpu-c384": {
        "about": "a narrower LSTM: C 384 (P 128)",
        "overrides": {"bilm.cell_dim": 384},
        "processes": 1,
    },
}


def run_candidate(name: str, spec: Dict[str, Any], base: str, prepared: Path, output: Path, minutes: float, threads: int) -> Dict[str, Any]:
    """Pretrain one candidate for `minutes`; RETURNS its figures, read from its log.jsonl."""
    overrides = {
        "paths.train": str(prepared),
        "training.max_minutes": minutes,
        "training.max_steps": 0,
        "training.eval_every": 10**9,  # scored at the start and the end only
        "system.threads": threads,
        **spec["overrides"],
    }
    args: List[str] = []
    for key, value in overrides.items():
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    command = [sys.executable, "-m", "spacy_elmo", "pretrain", base, "--output", str(output), *args]
    env = dict(os.environ)
    if spec["processes"] > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(spec["processes"])]
        command = launcher + command[1:]
        env["OMP_NUM_THREADS"] = str(overrides["system.threads"])
    if (output / "log.jsonl").exists():
        command.append("--overwrite")
    started = time.perf_counter()
    with open(output.parent / f"{output.name}.out", "w", encoding="utf8") as stream:
        subprocess.run(command, check=True, stdout=stream, stderr=subprocess.STDOUT, env=env)
    wall = time.perf_counter() - started
    curve = dev_curve(output)
    rows = [json.loads(line) for line in (output / "log.jsonl").read_text(encoding="utf8").splitlines() if line.strip()]
    last = [row for row in rows if "tokens" in row][-1]
    return {
        "candidate": name,
        "about": spec["about"],
        "dev_ppl": curve[-1][1],
        "steps": last["step"],
        "tokens": last["tokens"],
        "tokens_per_s": last["tokens"] / last["elapsed_s"],  # evaluations and start-up included
        "training_tokens_per_s": _training_speed(output),
        "minutes": last["elapsed_s"] / 60,
        "wall_minutes": wall / 60,
    }


def _training_speed(run: Path) -> Optional[float]:
    """Tokens/s in training (the log windows after the first), None for a run too short to have two."""
    try:
        return logged_speed(run / "log.jsonl")
    except ValueError:
        return None


def _rate(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:,.0f}"


def prepared_corpus(text: Path, work: Path) -> Path:
    from spacy_elmo.training.prepared import is_prepared, prepare_corpus

    if is_prepared(text):
        return text
    folder = work / "prepared"
    if is_prepared(folder):
        return folder
    return prepare_corpus(text, folder, n_process=2, log=print).folder


def table(results: List[Dict[str, Any]], minutes: float) -> str:
    lines = [
        f"| candidate | what differs | dev ppl after {minutes:g} min | tokens seen | training tokens/s | updates |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in sorted(results, key=lambda r: r["dev_ppl"]):
        figures = f"{r['dev_ppl']:.1f} | {r['tokens'] / 1e6:.2f}M | {_rate(r['training_tokens_per_s'])} | {r['steps']:,}"
        lines.append(f"| `{r['candidate']}` | {r['about']} | {figures} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=10.0, help="wall time of each candidate")
    parser.add_argument("--base", default="cpu", help="the preset the candidates change")
    parser.add_argument("--only", nargs="+", default=None, choices=sorted(CANDIDATES), help="run these candidates only")
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT, help="raw text (file or folder) or a prepared folder")
    parser.add_argument("--work", type=Path, default=Path("pretrain-presets"), help="where the corpus is prepared and the runs go")
    parser.add_argument("--threads", type=int, default=2, help="threads of a one-process candidate")
    args = parser.parse_args(argv)
    if not args.text.exists():
        raise SystemExit(f"{args.text} not found: pass --text with raw text or a prepared corpus")
    from spacy_elmo.output_folders import claim_folder, write_atomically

    claim_folder(args.work, "pretrain-presets", ", or pass another --work")  # a folder of ours: its files are ours to replace
    prepared = prepared_corpus(args.text, args.work)
    # results of earlier invocations with the same --work and --minutes are kept (a candidate run again replaces its row)
    saved = args.work / "results.json"
    results = [r for r in json.loads(saved.read_text(encoding="utf8")) if r.get("minutes_budget") == args.minutes] if saved.exists() else []
    for name in args.only or list(CANDIDATES):
        print(f"{name}: {args.minutes:g} minutes ...", flush=True)
        result = run_candidate(name, CANDIDATES[name], args.base, prepared, args.work / name, args.minutes, args.threads)
        print(
            f"  dev perplexity {result['dev_ppl']:.1f} after {result['tokens']:,} tokens "
            f"({_rate(result['training_tokens_per_s'])} tokens/s in training)",
            flush=True,
        )
        result["minutes_budget"] = args.minutes
        results = [r for r in results if r["candidate"] != name] + [result]
        write_atomically(saved, json.dumps(results, indent=1))
    print(table(results, args.minutes))


if __name__ == "__main__":
    main()
