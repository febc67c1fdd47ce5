"""The training and dev perplexity curves of a pretraining run, as a PNG."""

from pathlib import Path

import srsly


def can_plot() -> bool:
    """Whether matplotlib can be imported (it comes with the `plot` extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot_log(log_path: Path, png_path: Path) -> bool:
    """Draw train and dev perplexity against training time from log.jsonl. Returns False (and
    draws nothing) when matplotlib is not installed or there is nothing to draw."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    if not log_path.is_file():
        return False
    rows = list(srsly.read_jsonl(log_path))
    train = [(r["elapsed_s"] / 60, r["train_ppl"]) for r in rows if "train_ppl" in r]
    dev = [(r["elapsed_s"] / 60, r["dev_ppl"]) for r in rows if "dev_ppl" in r]
    if not train and not dev:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for points, label in ((train, "train"), (dev, "dev")):
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], label=label, marker="o" if label == "dev" else None, markersize=3)
    ax.set_yscale("log")
    ax.set_xlabel("training time (minutes)")
    ax.set_ylabel("perplexity (average of both directions)")
    ax.legend()
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=110)
    plt.close(fig)
    return True
