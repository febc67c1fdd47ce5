"""More measures of semantic change from the usage vectors that semantic_change.py keeps (OUT/vectors-NAME.npz):
each biLSTM layer's forward and backward halves apart; the energy distance (APD across the periods less the mean
APD within each); APD over the dispersion within the periods; and all of them after removing the top 1, 3 or 10
principal components of all the dataset's usages ("all-but-the-top", Mu & Viswanath 2018); and the nearest
neighbours across the periods (kNN-k across: each usage's mean cosine distance to its k nearest usages of the other
period, averaged over both periods: high where one period has usages the other has nothing like). Reported as
semantic_change.py reports: Spearman against the graded change over all words, with a 95% bootstrap interval
(words drawn with replacement), and over the fixed halves A and B, sorted by half A (the choice is made there and
read on B).

    python change_measures.py WUG_DIR OUT NAME [NAME ...]

Writes OUT/more-measures.md.
"""

from pathlib import Path
from typing import Callable, Dict, List

import numpy
import typer

from .semantic_change import bootstrap_interval, halves_of, read_graded, spearman
from .written import write_text

Rep = Callable[[numpy.ndarray], numpy.ndarray]


def _unit(x: numpy.ndarray) -> numpy.ndarray:
    return x / numpy.linalg.norm(x, axis=1, keepdims=True)


def across(a: numpy.ndarray, b: numpy.ndarray) -> float:
    """APD: the mean cosine distance over the pairs of one usage from each period."""
    return 1.0 - float((_unit(a) @ _unit(b).T).mean())


def within(a: numpy.ndarray) -> float:
    """The mean cosine distance over the pairs of two different usages of one period."""
    u = _unit(a)
    s = u @ u.T
    n = len(a)
    return 1.0 - float((s.sum() - numpy.trace(s)) / (n * (n - 1)))


def nearest_across(a: numpy.ndarray, b: numpy.ndarray, k: int) -> float:
    """kNN-k across: the mean cosine distance of each usage to its k nearest usages of the other period,
    averaged over the two periods."""
    distance = 1.0 - _unit(a) @ _unit(b).T
    k_a, k_b = min(k, len(b)), min(k, len(a))
    from_a = numpy.sort(distance, axis=1)[:, :k_a].mean()
    from_b = numpy.sort(distance.T, axis=1)[:, :k_b].mean()
    return float((from_a + from_b) / 2)


def representations(n_layers: int, width: int) -> Dict[str, Rep]:
    half = width // 2  # a biLSTM layer: forward then backward
    reps: Dict[str, Rep] = {"token layer": lambda e: e[:, 0], "average of all": lambda e: e.mean(1)}
    for k in range(1, n_layers):
        reps[f"layer {k}"] = lambda e, k=k: e[:, k]
        reps[f"layer {k} forward"] = lambda e, k=k: e[:, k, :half]
        reps[f"layer {k} backward"] = lambda e, k=k: e[:, k, half:]
    return reps


def main(wug_dir: Path, out: Path, names: List[str]) -> None:
    gold = read_graded(wug_dir)
    lines = ["| biLM | representation | measure | rho all | 95% low | 95% high | rho A | rho B |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for name in names:
        data = numpy.load(out / f"vectors-{name}.npz", allow_pickle=False)
        words = sorted({key.split("/")[0] for key in data.files})
        vectors = {w: (data[f"{w}/1"], data[f"{w}/2"]) for w in words}
        halves = halves_of(words)
        first = vectors[words[0]][0]
        rows = []
        for rep_name, rep in representations(first.shape[1], first.shape[2]).items():
            pooled = numpy.concatenate([rep(vectors[w][p]) for w in words for p in (0, 1)])
            centre = pooled.mean(0)
            _, _, components = numpy.linalg.svd(pooled - centre, full_matrices=False)
            transforms: Dict[str, Rep] = {"": lambda x: x}
            for top in (1, 3, 10):
                transforms[f", all-but-the-top {top}"] = lambda x, p=components[:top]: (x - centre) - ((x - centre) @ p.T) @ p
            for suffix, transform in transforms.items():
                pairs = {w: (transform(rep(vectors[w][0])), transform(rep(vectors[w][1]))) for w in words}
                measures = {
                    "APD": {w: across(a, b) for w, (a, b) in pairs.items()},
                    "energy distance": {w: across(a, b) - (within(a) + within(b)) / 2 for w, (a, b) in pairs.items()},
                    "APD / within": {w: across(a, b) / numpy.sqrt(within(a) * within(b)) for w, (a, b) in pairs.items()},
                    "kNN-1 across": {w: nearest_across(a, b, 1) for w, (a, b) in pairs.items()},
                    "kNN-10 across": {w: nearest_across(a, b, 10) for w, (a, b) in pairs.items()},
                }
                for measure, scores in measures.items():
                    rho = {h: spearman([scores[w] for w in ws], [gold[w] for w in ws]) for h, ws in halves.items()}
                    low, high = bootstrap_interval([scores[w] for w in words], [gold[w] for w in words])
                    rows.append(
                        (
                            rho["A"],
                            f"| {name} | {rep_name}{suffix} | {measure} | {rho['all']:.3f} | {low:.3f} | {high:.3f} | "
                            f"{rho['A']:.3f} | {rho['B']:.3f} |",
                        )
                    )
        lines += [row for _, row in sorted(rows, key=lambda r: -r[0])]
    write_text(out / "more-measures.md", "\n".join(lines) + "\n")
    print(f"Wrote {out / 'more-measures.md'} ({len(lines) - 2} settings)")


if __name__ == "__main__":
    typer.run(main)
