"""Usage representations for semantic change and senses, measured against people on a WUG dataset.

For each biLM (two usage indexes of its groupings, built with `spacy-elmo index-usages BILM WUG OUT --grouping G
--all-layers`) and each representation (the target's own vectors or the context-only ones, per layer and the
average), over the dataset's words:
- APD's Spearman rho against `change_graded` (all words, half A, half B: the words in sorted order, alternately),
  with the 95% bootstrap interval over all words;
- the usage-pair rho: the cosine of each judged pair against its mean judgment (1-4);
- the senses (`spacy_elmo.change.senses.sense_clusters`, for each sense rule given) against people's clusters
  (clusters/opt, noise left out) and against the target's surface form (its exact text: case and inflection), as
  the mean adjusted Rand index over the words, on all, half A and half B;
- binary accuracy of the senses' rule (k = 1, n = 5) against `change_binary`.

    python projects/scripts/change_senses.py WUG OUT.json --bilm NAME=IDX1,IDX2 [--bilm ...] [--rule ...]
"""

import json
import math
from pathlib import Path
from typing import Dict, List

import numpy
import typer

from spacy_elmo.change.measures import apd
from spacy_elmo.change.gold import bootstrap_interval, read_gold, spearman
from spacy_elmo.usages.index import UsageIndex
from spacy_elmo.change.senses import SenseRule, adjusted_rand, binary_change, sense_clusters
from spacy_elmo.change.substitutes import Substitutes, substitute_bags
from spacy_elmo.change.wug import read_dataset

LAYERS = ("0", "1", "2", "average")


def halves_of(words: List[str]) -> Dict[str, List[str]]:
    ordered = sorted(words)
    return {"all": ordered, "A": ordered[0::2], "B": ordered[1::2]}


def main(
    wug: Path = typer.Argument(..., help="The WUG dataset's root"),
    out: Path = typer.Argument(..., help="Where the rows go (JSON)"),
    bilm: List[str] = typer.Option(..., help="NAME=INDEX_1,INDEX_2: a biLM's indexes of groupings 1 and 2"),
    only: List[str] = typer.Option([], help="Only these representations (default: every one)"),
    rule: List[str] = typer.Option(["silhouette"], help="Sense rules: 'silhouette' (k 2-8) or 'min=T' (k = 1 below silhouette T)"),
) -> None:
    gold = read_gold(wug)
    dataset = read_dataset(wug)
    judgments = {w.split("_")[0].lower(): j for w, (_, j) in dataset.items()}
    rows = []
    for spec in bilm:
        name, paths = spec.split("=", 1)
        base = [UsageIndex().from_disk(p) for p in paths.split(",")]
        subs = Substitutes.of_model(base[0].meta["model"])
        reps = [*LAYERS, *(f"context:{layer}" for layer in LAYERS)] + (["substitutes"] if subs is not None else [])
        for rep in reps:
            if not only or rep in only:
                a, b = (i.with_layer("context:top" if rep == "substitutes" else rep) for i in base)
                words = sorted(w for w in gold.graded if len(a.rows_of(w)) and len(b.rows_of(w)))
                halves = halves_of(words)
                scores, cosines, judged = {}, [], []
                vectors = {}
                for w in words:
                    va = numpy.asarray(a.vectors[a.rows_of(w)], dtype="float64")
                    vb = numpy.asarray(b.vectors[b.rows_of(w)], dtype="float64")
                    scores[w] = apd(va, vb)
                    ids = [a.sentences[int(a.arrays["usage_sentence"][r])]["id"] for r in a.rows_of(w)]
                    ids += [b.sentences[int(b.arrays["usage_sentence"][r])]["id"] for r in b.rows_of(w)]
                    forms = [a.usage(int(r)).text for r in a.rows_of(w)] + [b.usage(int(r)).text for r in b.rows_of(w)]
                    both = numpy.concatenate([va, vb])
                    if rep == "substitutes":
                        ids_found, _ = subs.top(both, forms=set(forms) | {w})
                        both, _ = substitute_bags(ids_found)
                        scores[w] = apd(both[: len(va)], both[len(va) :])
                    unit = both / numpy.linalg.norm(both, axis=1, keepdims=True)
                    vectors[w] = (unit, ids, forms, len(va))
                    at = {i: k for k, i in enumerate(ids)}
                    for (x, y), judgment in judgments.get(w, {}).items():
                        if x in at and y in at:
                            cosines.append(float(unit[at[x]] @ unit[at[y]]))
                            judged.append(judgment)
                row = {"bilm": name, "representation": rep, "words": len(words), "usage_pairs_rho": spearman(cosines, judged)}
                for half, ws in halves.items():
                    row[f"apd_rho_{half}"] = spearman([scores[w] for w in ws], [gold.graded[w] for w in ws])
                row["apd_interval"] = bootstrap_interval([scores[w] for w in words], [gold.graded[w] for w in words])
                for r in rule:
                    sense_rule = SenseRule.parse(r)
                    ari_people, ari_forms, binary_right, counts = {}, {}, {}, []
                    for w in words:
                        unit, ids, forms, n_a = vectors[w]
                        labels = sense_clusters(unit, rule=sense_rule).labels
                        people = gold.clusters.get(w, {})
                        shared = [k for k, i in enumerate(ids) if i in people]
                        if len(shared) >= 2:
                            ari_people[w] = adjusted_rand([labels[k] for k in shared], [people[ids[k]] for k in shared])
                        ari_forms[w] = adjusted_rand(labels, forms)
                        k = int(labels.max()) + 1
                        counts.append(k)
                        fa = numpy.bincount(labels[:n_a], minlength=k).tolist()
                        fb = numpy.bincount(labels[n_a:], minlength=k).tolist()
                        if w in gold.binary:
                            binary_right[w] = binary_change(fa, fb) == gold.binary[w]
                    for half, ws in halves.items():
                        row[f"{r}:ari_people_{half}"] = float(numpy.mean([ari_people[w] for w in ws if w in ari_people]))
                        row[f"{r}:ari_forms_{half}"] = float(numpy.mean([ari_forms[w] for w in ws]))
                    row[f"{r}:binary_accuracy"] = float(numpy.mean(list(binary_right.values())))
                    row[f"{r}:senses_mean"] = float(numpy.mean(counts))
                rows.append(row)
                print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    out.write_text(json.dumps(rows, indent=1, default=lambda v: None if isinstance(v, float) and not math.isfinite(v) else v) + "\n")


if __name__ == "__main__":
    typer.run(main)
