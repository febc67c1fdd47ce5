"""Dev perplexity against wall-clock minutes of several pretraining runs (their log.jsonl): a table
at fixed times and one plot, to compare settings (e.g. float32 against bf16) at equal time.

    spacy-elmo prepare-corpus ../shared/data/raw --output prepared
    OMP_NUM_THREADS=1 spacy-elmo pretrain cpu --output run_no --paths.train prepared \\
        --training.mixed_precision no --training.max_minutes 30 --system.threads 1 &
    OMP_NUM_THREADS=1 spacy-elmo pretrain cpu --output run_bf16 --paths.train prepared \\
        --training.mixed_precision bf16 --training.max_minutes 30 --system.threads 1 &
    wait; python benchmarks/compare_runs.py run_no run_bf16 --labels float32 bf16 --png compare.png
"""

import argparse
import json
from pathlib import Path
from typing import List, Optional, Tuple


def dev_curve(run: Path) -> List[Tuple[float, float, int]]:
    """(minutes, dev perplexity, tokens seen) of every evaluation in run/log.jsonl."""
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text(encoding="utf8").splitlines() if line.strip()]
    return [(r["elapsed_s"] / 60, r["dev_ppl"], r["tokens"]) for r in rows if "dev_ppl" in r]


def at_minute(curve: List[Tuple[float, float, int]], minute: float) -> Optional[Tuple[float, float, int]]:
    """The last evaluation at or before `minute`."""
    done = [point for point in curve if point[0] <= minute + 1e-9]
    return done[-1] if done else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="pretraining output folders")
    parser.add_argument("--labels", nargs="+", default=None)
    parser.add_argument("--every", type=float, default=5.0, help="table rows every this many minutes")
    parser.add_argument("--png", type=Path, default=None, help="also draw the curves here (needs matplotlib)")
    args = parser.parse_args()
    labels = args.labels or [run.name for run in args.runs]
    if len(labels) != len(args.runs):
        raise SystemExit("give one --labels entry per run")
    if args.png is not None and args.png.exists():
        raise SystemExit(f"{args.png} exists: give a new file name for the plot")
    curves = [dev_curve(run) for run in args.runs]
    if any(not curve for curve in curves):
        raise SystemExit("a run has no dev evaluation in its log.jsonl")
    end = min(curve[-1][0] for curve in curves)
    print("dev perplexity (tokens seen) at the last evaluation by each time")
    print(f"{'minutes':>8} " + " ".join(f"{label:>24}" for label in labels))
    minute = args.every
    while minute <= end + 1e-9:
        cells = []
        for curve in curves:
            point = at_minute(curve, minute)
            cells.append(f"{point[1]:10.1f} ({point[2] / 1e6:5.2f}M tok)" if point else f"{'-':>24}")
        print(f"{minute:8.1f} " + " ".join(f"{cell:>24}" for cell in cells))
        minute += args.every
    print(
        "last    "
        + " ".join(f"{c[-1][1]:10.1f} ({c[-1][2] / 1e6:5.2f}M tok)" for c in curves)
        + "   at minutes "
        + ", ".join(f"{c[-1][0]:.1f}" for c in curves)
    )
    if args.png is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for curve, label in zip(curves, labels):
            ax.plot([p[0] for p in curve[1:]], [p[1] for p in curve[1:]], marker="o", markersize=3, label=label)
        ax.set_yscale("log")
        ax.set_xlabel("wall-clock minutes (evaluations included)")
        ax.set_ylabel("dev perplexity")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"plot: {args.png}")


if __name__ == "__main__":
    main()
