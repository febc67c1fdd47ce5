"""The few-labels workflow (the paper's section 5.4): training subsets, and the table and plot.

    few_labels.py conll-subsets assets/train.conll corpus/few --fractions 1,3,10,30,100 --seeds 0,1,2
    few_labels.py docbin-subsets corpus/train.spacy corpus/few --fractions 1,3,10,30,100 --seeds 0,1,2
    few_labels.py report metrics/few --score ents_f --row 'baseline + vectors=baseline_vectors' ...

A subset is drawn per fraction and seed (`random.Random(f"{fraction}/{seed}")`), whole CoNLL news
articles (the file is split at its -DOCSTART- lines before conversion, which then makes Docs of 10
sentences as `spacy convert -n 10` does) or whole Docs of a .spacy file (SST: one sentence each); 100%
is the whole split. Files: OUTPUT/train_f{pct}{run}.spacy, {run} as in seeds.py ("" for seed 0, "_sN").
The report reads metrics/few/f{pct}/{row}{run}.json (evaluate.py) and writes few_labels.md,
.json and, with matplotlib, few_labels.png beside the metrics folder.
"""

import json
import math
import random
import statistics
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import typer

from .seeds import parse_seeds, run_suffix
from .smoke import SMOKE_RUN
from .written import write_docbin, write_figure, write_text

app = typer.Typer(add_completion=False)


def parse_fractions(text: str) -> List[float]:
    try:
        fractions = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"fractions: expected percentages like 1,3,10,30,100, got {text!r}") from None
    if not fractions or any(not 0 < f <= 100 for f in fractions):
        raise SystemExit(f"fractions: expected percentages in (0, 100], got {text!r}")
    return fractions


def label(fraction: float) -> str:
    """1 -> "1", 0.5 -> "0.5": the fraction as it appears in file names."""
    return f"{fraction:g}"


def choose(n_items: int, fraction: float, seed: int) -> List[int]:
    """The items of a subset: round(fraction% of n_items), at least one, in file order."""
    if fraction >= 100:
        return list(range(n_items))
    k = max(1, round(n_items * fraction / 100))
    return sorted(random.Random(f"{label(fraction)}/{seed}").sample(range(n_items), k))


def conll_articles(text: str) -> List[str]:
    """The news articles of a CoNLL-2003 file, each from its -DOCSTART- line to the next."""
    articles: List[List[str]] = []
    for line in text.splitlines():
        if line.startswith("-DOCSTART-"):
            articles.append([])
        if articles:
            articles[-1].append(line)
    return [
        "\n".join(lines).strip() + "\n" for lines in articles if any(line.strip() and not line.startswith("-DOCSTART-") for line in lines)
    ]


@app.command("conll-subsets")
def conll_subsets(train: Path, output: Path, fractions: str = typer.Option(...), seeds: str = typer.Option(...)) -> None:
    """Subsets of whole articles of a CoNLL-2003 IOB file, converted as `spacy convert -c ner -n 10`."""
    from spacy.tokens import DocBin
    from spacy.training.converters import conll_ner_to_docs

    articles = conll_articles(train.read_text(encoding="utf8"))
    output.mkdir(parents=True, exist_ok=True)
    for fraction in parse_fractions(fractions):
        for seed in parse_seeds(seeds):
            chosen = choose(len(articles), fraction, seed)
            docs = conll_ner_to_docs("\n".join(articles[i] for i in chosen), n_sents=10, no_print=True)
            _write(
                DocBin(docs=docs),
                output / f"train_f{label(fraction)}{run_suffix(seed)}.spacy",
                f"{len(chosen)} of {len(articles)} articles",
            )


@app.command("docbin-subsets")
def docbin_subsets(train: Path, output: Path, fractions: str = typer.Option(...), seeds: str = typer.Option(...)) -> None:
    """Subsets of whole Docs of a .spacy file (SST: sentences), user data kept."""
    import spacy
    from spacy.tokens import DocBin

    docs = list(DocBin().from_disk(train).get_docs(spacy.blank("en").vocab))
    output.mkdir(parents=True, exist_ok=True)
    for fraction in parse_fractions(fractions):
        for seed in parse_seeds(seeds):
            chosen = choose(len(docs), fraction, seed)
            _write(
                DocBin(docs=[docs[i] for i in chosen], store_user_data=True),
                output / f"train_f{label(fraction)}{run_suffix(seed)}.spacy",
                f"{len(chosen)} of {len(docs)} docs",
            )


def _write(doc_bin, path: Path, what: str) -> None:  # type: ignore[no-untyped-def]
    write_docbin(path, doc_bin)
    print(f"{path}: {what}")


def reaches(fractions: Sequence[float], scores: Sequence[float], target: float) -> Optional[float]:
    """The fraction at which the curve first reaches `target`, linear in log-fraction between the
    measured points; None when it never does."""
    points = sorted(zip(fractions, scores))
    if not points:
        return None
    if points[0][1] >= target:
        return points[0][0]
    for (f0, s0), (f1, s1) in zip(points, points[1:]):
        if s0 < target <= s1:
            t = (target - s0) / (s1 - s0)
            return math.exp(math.log(f0) + t * (math.log(f1) - math.log(f0)))
    return None


def summary(values: Sequence[float]) -> Dict:
    """The mean, sd (0 for one run) and runs of a fraction's scores over the seeds."""
    return {"mean": statistics.mean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0, "scores": list(values)}


def cell(point: Dict) -> str:
    """A table cell of `summary`: "71.00 ± 1.41 (n=2)"."""
    return f"{point['mean']:.2f} ± {point['sd']:.2f} (n={len(point['scores'])})"


def _rows(metrics: Path, score: str, rows: List[Tuple[str, str]], fractions: List[float], seeds: List[int]) -> List[Dict]:
    out = []
    for name, folder in rows:
        points = []
        for fraction in fractions:
            values = []
            for seed in seeds:
                path = metrics / f"f{label(fraction)}" / f"{folder}{run_suffix(seed)}.json"
                if path.is_file():
                    values.append(100 * float(json.loads(path.read_text(encoding="utf8"))[score]))
            if values:
                points.append({"fraction": fraction, **summary(values)})
        out.append({"name": name, "folder": folder, "points": points})
    return out


@app.command("report")
def report(
    metrics: Path,
    score: str = typer.Option(..., help="The score, e.g. ents_f or cats_micro_f"),
    score_name: str = typer.Option("score"),
    title: str = typer.Option("Few labels"),
    fractions: str = typer.Option("1,3,10,30,100"),
    seeds: str = typer.Option("0,1,2", help="The seeds to read (a missing run is left out and the n column says so)"),
    row: List[str] = typer.Option(..., help="'NAME=FOLDER'; the first row is the reference"),
    smoke: bool = typer.Option(False, "--smoke", help="A smoke run's table: said in the table that its figures measure nothing"),
) -> None:
    """metrics/few_labels.md and .json (mean ± sd per fraction and row, the difference to the first row,
    where each other row reaches the first row's 10% and 100% scores) and few_labels.png."""
    pairs = [tuple(r.split("=", 1)) for r in row]
    measured = _rows(metrics, score, pairs, parse_fractions(fractions), parse_seeds(seeds))  # type: ignore[arg-type]
    reference = {p["fraction"]: p["mean"] for p in measured[0]["points"]}
    lines = [
        f"# {title}",
        "",
        f"{score_name} (dev), mean ± sd over seeds (n = runs); difference to '{measured[0]['name']}'"
        + (" (smoke: meaningless)." if smoke else "."),
        "",
        *([SMOKE_RUN, ""] if smoke else []),
        "| fraction | " + " | ".join(r["name"] for r in measured) + " |",
        "|---:|" + "---:|" * len(measured),
    ]
    for fraction in parse_fractions(fractions):
        cells = []
        for r in measured:
            point = next((p for p in r["points"] if p["fraction"] == fraction), None)
            if point is None:
                cells.append("-")
                continue
            text = cell(point)
            if r is not measured[0] and fraction in reference:
                text += f" **{point['mean'] - reference[fraction]:+.2f}**" + (" (smoke)" if smoke else "")
            cells.append(text)
        lines.append(f"| {label(fraction)}% | " + " | ".join(cells) + " |")
    first = measured[0]["name"]
    lines += [
        "",
        f"Where each row reaches '{first}''s scores at 10% and at 100% of the data (linear in log-fraction between "
        "measured fractions):" + (" not computed for a smoke run." if smoke else ""),
        "",
    ]
    for r in measured[1:]:
        fs, ms = [p["fraction"] for p in r["points"]], [p["mean"] for p in r["points"]]
        found = []
        for at in (10.0, 100.0):
            if at in reference and not smoke:
                f = reaches(fs, ms, reference[at])
                where = f"reached at {f:.2g}% of the data" if f is not None else "not reached at any fraction measured"
                found.append(f"'{first}''s {label(at)}% score ({reference[at]:.2f}) {where}")
        r["reaches"] = found
        if found:
            lines.append(f"- {r['name']}: " + "; ".join(found))
    out_md = metrics.parent / "few_labels.md"
    write_text(out_md, "\n".join(lines) + "\n")
    write_text(metrics.parent / "few_labels.json", json.dumps({"title": title, "score": score, "rows": measured}, indent=2) + "\n")
    print("\n".join(lines))
    _plot(measured, metrics.parent / "few_labels.png", title, score_name)


def _plot(measured: List[Dict], path: Path, title: str, score_name: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{path} not drawn: the plot needs matplotlib (pip install 'spacy-elmo[projects]'); the table is written")
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in measured:
        if r["points"]:
            ax.errorbar(
                [p["fraction"] for p in r["points"]],
                [p["mean"] for p in r["points"]],
                yerr=[p["sd"] for p in r["points"]],
                marker="o",
                capsize=3,
                label=r["name"],
            )
    ax.set_xscale("log")
    fractions = sorted({p["fraction"] for r in measured for p in r["points"]})
    ax.set_xticks(fractions, [f"{label(f)}%" for f in fractions])
    ax.minorticks_off()
    ax.set_xlabel("share of the training split (%)")
    ax.set_ylabel(f"{score_name} (dev)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)
    print(f"Wrote {path}")


if __name__ == "__main__":
    app()
