"""The results table (markdown + JSON) and plot of a project: one row per system.

Reads, for each row NAME=DIR and each seed: metrics/DIR{run}.json (evaluate.py),
training/DIR{run}/log.jsonl (spaCy's ConsoleLogger.v3) and the step times in metrics/times.json
(timed.py), {run} as seeds.py names the seed's runs. Several seeds: the rows give
means, the score's standard deviation and each seed's score; the plot shows the first seed's curves.
"""

import statistics
from pathlib import Path
from typing import Dict, List, Optional

import srsly
import typer
from .seeds import parse_seeds, run_suffix
from .smoke import SMOKE_RUN
from .written import write_figure, write_json, write_text


def main(
    metrics: Path = typer.Argument(..., help="The project's metrics folder"),
    score: str = typer.Option(..., help="The score to compare, e.g. ents_f or cats_micro_f"),
    score_name: str = typer.Option(..., help="Its name in the table, e.g. 'F1' or 'accuracy'"),
    title: str = typer.Option(..., help="Title of the table and plot"),
    row: List[str] = typer.Option(..., help="NAME=DIR, the first row is the baseline"),
    training: Path = typer.Option(Path("training"), help="The project's training folder"),
    seeds: str = typer.Option("0", help="Comma-separated seeds of every row (run folders as seeds.py names them)"),
    smoke: bool = typer.Option(False, "--smoke", help="A smoke run's table: said in the table that its figures measure nothing"),
) -> None:
    times = _read_json(metrics / "times.json") or {}
    rows = []
    for spec in row:
        name, _, folder = spec.partition("=")
        runs = [_run(metrics, training, folder + run_suffix(seed), seed, score, times) for seed in parse_seeds(seeds)]
        values = [r["score"] for r in runs]
        rows.append(
            {
                "name": name,
                "folder": folder,
                "score": statistics.mean(values),
                "sd": statistics.stdev(values) if len(values) > 1 else None,
                "predict_words_per_s": _mean([r["predict_words_per_s"] for r in runs]),
                "train_minutes": _mean([r["train_minutes"] for r in runs], 1),
                "train_cpu_minutes": _mean([r["train_cpu_minutes"] for r in runs], 1),
                "steps": _mean([r["steps"] for r in runs], 0),
                "best_step": _mean([r["best_step"] for r in runs], 0),
                "curve": runs[0]["curve"],
                "runs": runs,
            }
        )
    for r in rows:
        r["delta"] = r["score"] - rows[0]["score"]
    pretraining = _pretraining(training)
    result = {"title": title, "score": score, "score_name": score_name, "rows": rows, "pretraining": pretraining, "smoke": smoke}
    write_json(metrics / "results.json", result)
    table = _markdown(result)
    write_text(metrics / "results.md", table)
    print(table)
    try:
        _plot(result, metrics / "results.png")
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'spacy-elmo[plot]')")


def _run(metrics: Path, training: Path, folder: str, seed: int, score: str, times: Dict) -> Dict:
    """One seed's figures: its dev score (evaluate.py), log and training time."""
    scores = _read_json(metrics / f"{folder}.json")
    if scores is None:
        raise typer.BadParameter(f"{metrics / folder}.json is missing: run the evaluate step first")
    log = _read_jsonl(training / folder / "log.jsonl")
    return {
        "seed": seed,
        "folder": folder,
        "score": 100 * scores[score],
        "predict_words_per_s": scores.get("speed"),
        "train_minutes": _minutes(times.get(f"train-{folder}"), "wall_s"),
        "train_cpu_minutes": _minutes(times.get(f"train-{folder}"), "cpu_s"),
        "steps": log[-1]["step"] if log else None,
        "best_step": max(log, key=lambda e: e["score"])["step"] if log else None,
        "curve": [(e["step"], _logged(e, score)) for e in log],
    }


def _mean(values: List[Optional[float]], digits: Optional[int] = None) -> Optional[float]:
    """The mean of the known values (None if none is known), rounded to `digits`; 0 digits: an int."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    mean = statistics.mean(known)
    return mean if digits is None else int(round(mean)) if digits == 0 else round(mean, digits)


def _pretraining(training: Path) -> Dict[str, Dict]:
    info = {}
    bilm_log = _read_jsonl(training / "bilm" / "log.jsonl")
    ready = _read_json(training / "bilm" / "ready.json")
    if ready:
        info["elmo"] = {"ready": ready["bilm"]}
    elif bilm_log:
        evals = [e for e in bilm_log if "dev_ppl" in e]
        info["elmo"] = {
            "minutes": round(bilm_log[-1]["elapsed_s"] / 60, 1),
            "tokens": bilm_log[-1]["tokens"],
            "steps": bilm_log[-1]["step"],
            "dev_perplexity": round(min(e["dev_ppl"] for e in evals), 2) if evals else None,
        }
    adapt_log = _read_jsonl(training / "bilm_adapted" / "log.jsonl")
    if adapt_log:
        evals = [e for e in adapt_log if "dev_ppl" in e]
        warmup = [e["dev_ppl"] for e in evals if e.get("softmax_warmup_end")]
        info["adapted"] = {
            "minutes": round(adapt_log[-1]["elapsed_s"] / 60, 1),
            "steps": adapt_log[-1]["step"],
            "dev_perplexity_as_given": round(warmup[0], 2) if warmup else None,
            "dev_perplexity": round(min(e["dev_ppl"] for e in evals), 2) if evals else None,
        }
    budget = _read_json(training / "spacy_pretrain" / "budget.json")
    if budget:
        info["spacy_pretrain"] = {"minutes": budget["minutes"], "words": budget["words"]}
    return info


def _markdown(result: Dict) -> str:
    name = result["score_name"]
    n_seeds = len(result["rows"][0]["runs"])
    several = n_seeds > 1
    score_head = f"dev {name}, mean ± sd of {n_seeds} seeds" if several else f"dev {name}"
    mean = " (means)" if several else ""
    smoke = result.get("smoke", False)
    versus = "vs baseline (smoke: meaningless)" if smoke else "vs baseline"
    lines = [f"### {result['title']}", ""] + ([SMOKE_RUN, ""] if smoke else [])
    lines += [
        f"| system | {score_head} | {versus} | best step / steps{mean} | training min (CPU min){mean} | predict words/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        delta = "" if r is result["rows"][0] else f"{r['delta']:+.2f}"
        speed = f"{r['predict_words_per_s']:,.0f}" if r["predict_words_per_s"] else "-"
        value = f"{r['score']:.2f} ± {r['sd']:.2f}" if several else f"{r['score']:.2f}"
        lines.append(
            f"| {r['name']} | {value} | {delta} | {r['best_step']} / {r['steps']} | "
            f"{_fmt(r['train_minutes'])} ({_fmt(r['train_cpu_minutes'])}) | {speed} |"
        )
    if several:
        lines.append("")
        for r in result["rows"]:
            each = ", ".join(f"seed {run['seed']}: {run['score']:.2f}" for run in r["runs"])
            lines.append(f"- {r['name']}: {each}")
    pre = result["pretraining"]
    if pre:
        lines.append("")
    if "elmo" in pre and "ready" in pre["elmo"]:
        lines.append(f"ELMo biLM: the ready biLM in {pre['elmo']['ready']} (not pretrained in this run).")
    elif "elmo" in pre:
        e = pre["elmo"]
        lines.append(
            f"ELMo biLM: {e['minutes']} min of pretraining, {e['steps']} steps, {e['tokens']:,} tokens, "
            f"best dev perplexity {e['dev_perplexity']}."
        )
    if "adapted" in pre:
        a = pre["adapted"]
        lines.append(
            f"Adapted biLM: {a['minutes']} min, {a['steps']} steps on the training split's text; dev perplexity on the task's "
            f"dev text {a['dev_perplexity_as_given']} with the biLM as given (after the softmax warm-up), {a['dev_perplexity']} adapted."
        )
    if "spacy_pretrain" in pre:
        s = pre["spacy_pretrain"]
        words = f"{s['words']:,}" if s["words"] else "?"
        lines.append(f"spacy pretrain (characters objective): {s['minutes']} min, {words} words.")
    return "\n".join(lines) + "\n"


def _plot(result: Dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (curves, bars) = plt.subplots(1, 2, figsize=(10, 3.8), gridspec_kw={"width_ratios": [2, 1]})
    for r in result["rows"]:
        if r["curve"]:
            steps, scores = zip(*r["curve"])
            curves.plot(steps, scores, label=r["name"])
    best = max((s for r in result["rows"] for _, s in r["curve"]), default=0.0)
    curves.set_ylim(max(0.0, best - 15), best + 1)  # the first evaluations would flatten the rest
    curves.set_xlabel("training step")
    curves.set_ylabel(f"dev {result['score_name']}")
    curves.legend()
    names = [r["name"] for r in result["rows"]]
    values = [r["score"] for r in result["rows"]]
    errors = [r.get("sd") or 0.0 for r in result["rows"]]
    bars.bar(names, values, yerr=errors, capsize=3, color=[f"C{i}" for i in range(len(names))])
    low = min(values)
    bars.set_ylim(max(0.0, low - 5), max(values) + 2)
    for i, v in enumerate(values):
        bars.text(i, v, f"{v:.1f}", ha="center", va="bottom", fontsize=9)
    bars.set_ylabel(f"dev {result['score_name']} (best model)")
    bars.tick_params(axis="x", labelsize=7, labelrotation=30)
    for label in bars.get_xticklabels():
        label.set_horizontalalignment("right")
    fig.suptitle(result["title"])
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)


def _logged(entry: Dict, score: str) -> float:
    """One evaluation's value of `score` (x 100), from ConsoleLogger.v3's "scores", which hold
    every score with a weight; "score" is their weighted sum, which spaCy uses to pick model-best."""
    return entry.get("scores", {}).get(score, 100 * entry["score"])


def _minutes(entry: Optional[Dict[str, float]], key: str) -> Optional[float]:
    """Minutes of a timed.py entry ({"wall_s": ..., "cpu_s": ...})."""
    return None if entry is None or key not in entry else round(entry[key] / 60, 1)


def _fmt(value: Optional[float]) -> str:
    return "-" if value is None else f"{value}"


def _read_json(path: Path) -> Optional[Dict]:
    return srsly.read_json(path) if path.is_file() else None


def _read_jsonl(path: Path) -> List[Dict]:
    return list(srsly.read_jsonl(path)) if path.is_file() else []


if __name__ == "__main__":
    typer.run(main)
