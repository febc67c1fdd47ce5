"""Lexical semantic change against human judgments: a WUG dataset (DWUG EN: 46 words, 100 usages from each of
two periods) scored with a biLM's usage vectors, per layer.

For each representation of a usage (the token layer alone, each biLSTM layer, the average of all layers, the
average of the biLSTM layers, the biLSTM layers side by side), plain or standardized (each dimension centred and
scaled over all the dataset's usages), and each measure (APD, PRT, their mean rank, and the Jensen-Shannon
divergence of the periods' distributions over 8 clusters of the word's usages), and for two mean ranks over
several representations, it reports:
- Spearman's rho against the graded change (stats/opt/stats_groupings.csv, `change_graded`), over all words and
  over each of two fixed halves (words in sorted order, alternately: half A, half B);
- accuracy against the binary change (`change_binary`) at the measure's own threshold: the score that best
  separates half A, applied to half B (and to all words);
- Spearman's rho of the cosine of each judged usage pair against its mean human judgment (1-4).
The setting of the best Spearman on half A is then read on half B, as an estimate unbiased by the choice.

    python semantic_change.py WUG_DIR OUT --bilm NAME=PATH [--bilm NAME=PATH ...]

Writes OUT/change.json, OUT/change.md and OUT/change.png (with matplotlib); the usage vectors are kept in
OUT/vectors-NAME.npz, so that a second run only scores.
"""

import csv
import io
import json
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import numpy
import typer

from spacy_elmo.change.measures import apd, cluster_jsd, prt
from spacy_elmo.change.gold import bootstrap_interval, ranks, spearman  # noqa: F401  (the other scripts import them from here)
from spacy_elmo.change.wug import read_dataset
from .written import write_bytes, write_figure, write_text

Vectors = Dict[str, Tuple[numpy.ndarray, numpy.ndarray]]  # word -> (period 1, period 2) usage vectors (n, L + 1, D)


def read_gold(wug_dir: Path) -> Dict[str, Dict[str, str]]:
    """The dataset's stats/opt/stats_groupings.csv: each word's row (`change_graded`, `change_binary`, ...)."""
    with open(wug_dir / "stats" / "opt" / "stats_groupings.csv", encoding="utf8", newline="") as f:
        return {row["lemma"]: row for row in csv.DictReader(f, delimiter="\t")}


def read_graded(wug_dir: Path) -> Dict[str, float]:
    """Each word's graded change (`change_graded`)."""
    return {word: float(row["change_graded"]) for word, row in read_gold(wug_dir).items()}


def halves_of(words: Sequence[str]) -> Dict[str, Sequence[str]]:
    """All the words, and the fixed halves A and B: the words in sorted order, alternately."""
    ordered = sorted(words)
    return {"all": ordered, "A": ordered[0::2], "B": ordered[1::2]}


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> float:
    """The threshold (score > threshold: changed) with the highest accuracy on these words; the lowest such."""
    candidates = sorted(set(scores))
    cuts = [candidates[0] - 1.0] + [(a + b) / 2 for a, b in zip(candidates, candidates[1:])] + [candidates[-1] + 1.0]
    accuracy = [numpy.mean([(s > c) == bool(y) for s, y in zip(scores, labels)]) for c in cuts]
    return float(cuts[int(numpy.argmax(accuracy))])


def representations(n_layers: int) -> Dict[str, Callable[[numpy.ndarray], numpy.ndarray]]:
    reps: Dict[str, Callable[[numpy.ndarray], numpy.ndarray]] = {"token layer": lambda e: e[:, 0]}
    for layer in range(1, n_layers):
        reps[f"layer {layer}"] = lambda e, k=layer: e[:, k]
    reps["average of all"] = lambda e: e.mean(1)
    reps["average of biLSTM layers"] = lambda e: e[:, 1:].mean(1)
    reps["biLSTM layers side by side"] = lambda e: e[:, 1:].reshape(len(e), -1)
    return reps


def embed(wug: Dict, name: str, model: str, out: Path) -> Vectors:
    cache = out / f"vectors-{name}.npz"
    if cache.exists():
        data = numpy.load(cache)
        return {w: (data[f"{w}/1"], data[f"{w}/2"]) for w in wug}
    from spacy_elmo.pipeline.loading import load_elmo_pipeline
    from spacy_elmo.change.wug import embed_uses

    nlp = load_elmo_pipeline(model)
    vectors: Vectors = {}
    for word, (uses, _) in wug.items():
        embedded = embed_uses(nlp, uses)
        groups = numpy.array([u.grouping for u in uses])
        vectors[word] = (embedded[groups == "1"], embedded[groups == "2"])
        print(f"{name}: {word} {len(vectors[word][0])} + {len(vectors[word][1])} usages", flush=True)
    arrays = io.BytesIO()
    numpy.savez(arrays, **{f"{w}/{g + 1}": v[g] for w, v in vectors.items() for g in (0, 1)})
    write_bytes(cache, arrays.getvalue())
    return vectors


def pair_cosines(wug: Dict, vectors: Vectors, rep: Callable, transform: Callable) -> Tuple[List[float], List[float]]:
    cosines, judged = [], []
    for word, (uses, judgments) in wug.items():
        both = numpy.concatenate([vectors[word][0], vectors[word][1]])
        ids = [u.identifier for u in uses if u.grouping == "1"] + [u.identifier for u in uses if u.grouping == "2"]
        row = {identifier: i for i, identifier in enumerate(ids)}
        unit = transform(rep(both))
        unit = unit / numpy.linalg.norm(unit, axis=1, keepdims=True)
        for (a, b), judgment in judgments.items():
            if a in row and b in row:
                cosines.append(float(unit[row[a]] @ unit[row[b]]))
                judged.append(judgment)
    return cosines, judged


def main(
    wug_dir: Path = typer.Argument(..., help="The dataset's root: data/WORD/uses.csv, stats/opt/stats_groupings.csv"),
    out: Path = typer.Argument(..., help="Folder for the figures and the kept vectors"),
    bilm: List[str] = typer.Option(..., "--bilm", help="NAME=PATH (a biLM folder, pipeline or released name); repeat"),
    seed: int = typer.Option(0, help="The seed of the clusters' first centres"),
) -> None:
    """Score the dataset's change and usage pairs with each biLM."""
    out.mkdir(parents=True, exist_ok=True)
    wug = read_dataset(wug_dir)
    gold = read_gold(wug_dir)
    words = sorted(w for w in wug if w in gold)
    graded = {w: float(gold[w]["change_graded"]) for w in words}
    binary = {w: int(gold[w]["change_binary"]) for w in words}
    halves = halves_of(words)
    half_a, half_b = halves["A"], halves["B"]
    results = []

    def row(name: str, rep_name: str, variant: str, measure: str, by_word: Dict[str, float], usage_rho: float, pairs: int) -> Dict:
        threshold = best_threshold([by_word[w] for w in half_a], [binary[w] for w in half_a])
        return {
            "bilm": name,
            "representation": rep_name,
            "vectors": variant,
            "measure": measure,
            "spearman_all": spearman([by_word[w] for w in words], [graded[w] for w in words]),
            "spearman_a": spearman([by_word[w] for w in half_a], [graded[w] for w in half_a]),
            "spearman_b": spearman([by_word[w] for w in half_b], [graded[w] for w in half_b]),
            "accuracy_b": float(numpy.mean([(by_word[w] > threshold) == bool(binary[w]) for w in half_b])),
            "accuracy_all": float(numpy.mean([(by_word[w] > threshold) == bool(binary[w]) for w in words])),
            "usage_pairs_spearman": usage_rho,
            "usage_pairs": pairs,
        }

    for spec in bilm:
        name, _, model = spec.partition("=")
        vectors = embed({w: wug[w] for w in words}, name, model, out)
        n_layers = next(iter(vectors.values()))[0].shape[1]
        kept: Dict[Tuple[str, str, str], Dict[str, float]] = {}
        for rep_name, rep in representations(n_layers).items():
            every = numpy.concatenate([rep(numpy.concatenate(vectors[w])) for w in words])
            centre, scale = every.mean(0), every.std(0) + 1e-6
            transforms = {"plain": lambda x: x, "standardized": lambda x, c=centre, s=scale: (x - c) / s}
            for variant, transform in transforms.items():
                scores: Dict[str, Dict[str, float]] = {"APD": {}, "PRT": {}, "JSD of 8 clusters": {}}
                for w in words:
                    a, b = transform(rep(vectors[w][0])), transform(rep(vectors[w][1]))
                    scores["APD"][w] = apd(a, b)
                    scores["PRT"][w] = prt(a, b)
                    scores["JSD of 8 clusters"][w] = cluster_jsd(a, b, 8, seed)
                mean_rank = (ranks([scores["APD"][w] for w in words]) + ranks([scores["PRT"][w] for w in words])) / 2
                scores["APD+PRT ranks"] = dict(zip(words, mean_rank.tolist()))
                cosines, judged = pair_cosines({w: wug[w] for w in words}, vectors, rep, transform)
                usage_rho = spearman(cosines, judged)
                for measure, by_word in scores.items():
                    kept[(rep_name, variant, measure)] = by_word
                    results.append(row(name, rep_name, variant, measure, by_word, usage_rho, len(cosines)))
        # mean ranks over several representations' scores (plain vectors)
        top = f"layer {n_layers - 1}"
        ensembles = {
            "APD of layers 1..L and their average": [(f"layer {k}", "APD") for k in range(1, n_layers)] + [("average of all", "APD")],
            f"APD and PRT of the average, APD of {top}": [("average of all", "APD"), ("average of all", "PRT"), (top, "APD")],
        }
        for label, parts in ensembles.items():
            mean_rank = sum(ranks([kept[(rep_name, "plain", measure)][w] for w in words]) for rep_name, measure in parts) / len(parts)
            results.append(row(name, "mean rank", "plain", label, dict(zip(words, mean_rank.tolist())), float("nan"), 0))
    summary = {
        "words": len(words),
        "half_a": half_a,
        "half_b": half_b,
        "majority_binary_accuracy_b": max(numpy.mean([binary[w] for w in half_b]), 1 - numpy.mean([binary[w] for w in half_b])),
        "results": results,
    }
    for name in {r["bilm"] for r in results}:
        own = [r for r in results if r["bilm"] == name]
        chosen = max(own, key=lambda r: r["spearman_a"] if r["spearman_a"] == r["spearman_a"] else -2.0)
        summary[f"chosen_on_a:{name}"] = chosen
    # a measure that gives every word the same score ranks nothing: its rho is undefined (null, "n/a")
    write_text(out / "change.json", json.dumps(_no_nan(summary), indent=1) + "\n")
    lines = [
        f"DWUG-style evaluation, {len(words)} words (half A {len(half_a)}, half B {len(half_b)}); "
        f"APD over every pair; clusters seeded with {seed}.",
        "",
        "| biLM | representation | vectors | measure | rho all | rho A | rho B | acc B | acc all | usage pairs rho |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rhos = " | ".join(_figure(r[k], 3) for k in ("spearman_all", "spearman_a", "spearman_b"))
        lines.append(
            f"| {r['bilm']} | {r['representation']} | {r['vectors']} | {r['measure']} | {rhos} | {_figure(r['accuracy_b'], 2)} | "
            f"{_figure(r['accuracy_all'], 2)} | {_figure(r['usage_pairs_spearman'], 3)} |"
        )
    write_text(out / "change.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    _plot(results, out / "change.png")


def _figure(value: float, digits: int) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def _no_nan(value):  # type: ignore[no-untyped-def]
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


def _plot(results: List[Dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{path} was not written: matplotlib is not installed (pip install matplotlib, or pip install '.[projects]')")
        return
    rows = [r for r in results if r["measure"] == "APD" and r["vectors"] == "plain"]
    bilms = sorted({r["bilm"] for r in rows})
    reps = list(dict.fromkeys(r["representation"] for r in rows))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / len(bilms)
    for k, name in enumerate(bilms):
        values = [next(r["spearman_all"] for r in rows if r["bilm"] == name and r["representation"] == rep) for rep in reps]
        ax.bar([i + (k - (len(bilms) - 1) / 2) * width for i in range(len(reps))], values, width=width, label=name)
    ax.set_xticks(range(len(reps)))
    ax.set_xticklabels(reps, fontsize=8)
    ax.set_ylabel("Spearman vs graded change")
    ax.set_title("APD of plain usage vectors, per representation")
    ax.legend(fontsize=8)
    fig.tight_layout()
    write_figure(fig, path)
    plt.close(fig)


if __name__ == "__main__":
    typer.run(main)
