"""A linear probe of frozen sentence features on the few-labels subsets: which features carry the
label when labels are few, apart from what spaCy's classifier makes of them.

    sentence_probe.py corpus/few corpus/dev.spacy metrics/sentence_probe --vectors training/few/vectors
        --bilm 'ELMo=training/bilm/model-best' --fractions 1,3,10,100 --seeds 0,1,2

Each Doc (one sentence with one exclusive category in doc.cats) becomes the mean over its tokens of
the static vectors, of the average of a biLM's layers, or both side by side. A multinomial logistic
regression (features standardized on the training subset, L2 penalty chosen by 5-fold
cross-validation on the training subset alone) is fitted per fraction and seed on
SUBSETS/train_f{pct}{run}.spacy (few_labels.py's subsets) and scored on the dev Docs. Writes
OUTPUT.json and OUTPUT.md: dev accuracy, mean ± sd over the seeds, per fraction and feature set.
"""

import json
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy
import typer
from spacy.tokens import Doc, DocBin

from .few_labels import cell, parse_fractions, summary
from .few_labels import label as fraction_label
from .seeds import parse_seeds, run_suffix
from .written import write_text

PENALTIES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
FOLDS = 5


def read_docs(path: Path, vocab) -> List[Doc]:  # type: ignore[no-untyped-def]
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run the project's few-data step first")
    return list(DocBin().from_disk(path).get_docs(vocab))


def words(doc: Doc) -> Tuple[str, ...]:
    """A Doc's words: the key its features are computed and found under."""
    return tuple(t.text for t in doc)


def gold(docs: Sequence[Doc], labels: Sequence[str]) -> numpy.ndarray:
    """The index of each Doc's category (the one with the highest value in doc.cats)."""
    out = []
    for doc in docs:
        if not doc.cats:
            raise SystemExit("a Doc without categories: the probe needs the textcat corpus (doc.cats)")
        out.append(labels.index(max(doc.cats, key=doc.cats.get)))
    return numpy.asarray(out)


def fit(x: numpy.ndarray, y: numpy.ndarray, n_classes: int, penalty: float):  # type: ignore[no-untyped-def]
    """Multinomial logistic regression: mean cross-entropy + penalty/2 * |W|^2, by L-BFGS."""
    import torch

    xt, yt = torch.from_numpy(x).double(), torch.from_numpy(y).long()
    w = torch.zeros(x.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([w, b], max_iter=500, tolerance_grad=1e-7, line_search_fn="strong_wolfe")

    def closure():  # type: ignore[no-untyped-def]
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(xt @ w + b, yt) + 0.5 * penalty * (w * w).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return w.detach().numpy(), b.detach().numpy()


def standardize(train: numpy.ndarray, *others: numpy.ndarray) -> List[numpy.ndarray]:
    mean, sd = train.mean(axis=0), train.std(axis=0) + 1e-6
    return [(a - mean) / sd for a in (train, *others)]


def accuracy(x: numpy.ndarray, y: numpy.ndarray, params) -> float:  # type: ignore[no-untyped-def]
    w, b = params
    return float(((x @ w + b).argmax(axis=1) == y).mean())


def choose_penalty(x: numpy.ndarray, y: numpy.ndarray, n_classes: int, seed: int) -> float:
    """The penalty with the best mean held-out accuracy over FOLDS folds of the training subset."""
    order = numpy.random.default_rng(seed).permutation(len(y))
    folds = numpy.array_split(order, min(FOLDS, len(y)))
    best, best_score = PENALTIES[0], -1.0
    for penalty in PENALTIES:
        scores = []
        for held in folds:
            kept = numpy.setdiff1d(order, held)
            xk, xh = standardize(x[kept], x[held])
            scores.append(accuracy(xh, y[held], fit(xk, y[kept], n_classes, penalty)))
        if numpy.mean(scores) > best_score:
            best, best_score = penalty, float(numpy.mean(scores))
    return best


def main(
    subsets: Path = typer.Argument(..., help="Folder of few_labels.py subsets (train_f{pct}{run}.spacy)"),
    dev: Path = typer.Argument(..., help="Dev .spacy"),
    output: Path = typer.Argument(..., help="Results, without suffix: OUTPUT.json and OUTPUT.md"),
    vectors: Path = typer.Option(..., help="spaCy pipeline or vectors folder (spacy init vectors) with the static vectors"),
    bilm: List[str] = typer.Option(..., help="NAME=FOLDER: a biLM (options.json + weights.hdf5) or pipeline with elmo; repeatable"),
    fractions: str = typer.Option("1,3,10,100", help="Percentages, as in the subsets' names"),
    seeds: str = typer.Option("0,1,2", help="Seeds of the fractions below 100"),
) -> None:
    import spacy

    from spacy_elmo.pipeline.loading import elmo_names, load_elmo_pipeline

    fraction_list, seed_list = parse_fractions(fractions), parse_seeds(seeds)
    static = spacy.load(vectors)
    if not static.vocab.vectors.shape[0]:
        raise SystemExit(f"{vectors} has no vectors: give the folder `spacy init vectors` wrote")
    dev_docs = read_docs(dev, static.vocab)
    labels = sorted({name for doc in dev_docs for name in doc.cats})
    runs: Dict[Tuple[float, int], List[Doc]] = {}
    for fraction in fraction_list:
        for seed in [0] if fraction >= 100 else seed_list:
            runs[fraction, seed] = read_docs(subsets / f"train_f{fraction_label(fraction)}{run_suffix(seed)}.spacy", static.vocab)

    texts = sorted({words(doc) for doc in dev_docs + [d for docs in runs.values() for d in docs]})
    index = {text: i for i, text in enumerate(texts)}
    if any(not text for text in texts):
        raise SystemExit("an empty Doc in the corpus: the probe needs one sentence per Doc")
    features: Dict[str, numpy.ndarray] = {}
    table = static.vocab.vectors
    features["vectors"] = numpy.stack([table.get_batch(list(text)).mean(axis=0) for text in texts]).astype("float64")
    embed_seconds = {}
    for spec in bilm:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise SystemExit(f"--bilm: expected NAME=FOLDER, got {spec!r}")
        nlp = load_elmo_pipeline(Path(folder), sentences=False)
        elmo = nlp.get_pipe(elmo_names(nlp)[0])
        started = time.perf_counter()
        docs = [Doc(nlp.vocab, words=list(text), sent_starts=[True] + [False] * (len(text) - 1)) for text in texts]
        # doc._.elmo.layers: (n_layers, n_tokens, width); the average of the layers, then of the tokens
        features[name] = numpy.stack([doc._.elmo.layers.mean(axis=0).mean(axis=0) for doc in elmo.pipe(docs, batch_size=64)]).astype(
            "float64"
        )
        features[f"vectors + {name}"] = numpy.concatenate([features["vectors"], features[name]], axis=1)
        embed_seconds[name] = round(time.perf_counter() - started, 1)

    y_dev = gold(dev_docs, labels)
    dev_rows = [index[words(doc)] for doc in dev_docs]
    # each run's rows of the feature matrices and its labels, the same for every feature set
    run_rows = {key: ([index[words(doc)] for doc in docs], gold(docs, labels)) for key, docs in runs.items()}
    results: List[Dict] = []
    for feature, matrix in features.items():
        for (fraction, seed), (rows, y) in run_rows.items():
            x = matrix[rows]
            penalty = choose_penalty(x, y, len(labels), seed)
            xs, xd = standardize(x, matrix[dev_rows])
            score = accuracy(xd, y_dev, fit(xs, y, len(labels), penalty))
            results.append(
                {"features": feature, "fraction": fraction, "seed": seed, "n_train": len(rows), "penalty": penalty, "accuracy": score}
            )
            typer.echo(f"{feature:>24} {fraction_label(fraction):>4}% seed {seed}: {100 * score:.2f} (penalty {penalty:g})")

    output.parent.mkdir(parents=True, exist_ok=True)
    write_text(f"{output}.json", json.dumps({"labels": labels, "embed_seconds": embed_seconds, "runs": results}, indent=2) + "\n")
    names = list(features)
    lines = [
        "Linear probe: dev accuracy of a logistic regression on mean-pooled frozen features "
        "(L2 chosen by 5-fold cross-validation on the training subset), mean ± sd over seeds (n).",
        "",
        "| fraction | " + " | ".join(names) + " |",
        "|---:|" + "---:|" * len(names),
    ]
    for fraction in fraction_list:
        cells = [
            cell(summary([100 * r["accuracy"] for r in results if r["features"] == feature and r["fraction"] == fraction]))
            for feature in names
        ]
        lines.append(f"| {fraction_label(fraction)}% | " + " | ".join(cells) + " |")
    write_text(f"{output}.md", "\n".join(lines) + "\n")
    typer.echo("\n".join(lines))


if __name__ == "__main__":
    typer.run(main)
