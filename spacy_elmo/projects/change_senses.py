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

    python python -m spacy_elmo.projects.change_senses WUG OUT.json --bilm NAME=IDX1,IDX2 [--bilm ...] [--rule ...]
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
from .written import write_text

LAYERS = ("0", "1", "2", "average")


def halves_of(words: List[str]) -> Dict[str, List[str]]:
    ordered = sorted(words)
    return {"all": ordered, "A": ordered[0::2], "B": ordered[1::2]}


def pattern_substitutes(dataset: Dict, model: str, subs: Substitutes, k: int = 20) -> Dict[str, numpy.ndarray]:
    """Each usage's substitutes with Amrami & Goldberg's (2018) symmetric pattern: the forward LM's prediction
    after "... TARGET and" and the backward LM's before "and TARGET ...", multiplied and divided by the prior;
    the target's forms left out. RETURNS: usage identifier -> its k substitute ids."""
    import torch

    from spacy_elmo.bilm.context_prediction import context_log_probs
    from spacy_elmo.training.checkpoint import load_model_dir

    bilm, _, _ = load_model_dir(model)
    out = {}
    prior = torch.from_numpy(subs.log_prior.astype(numpy.float32)) if subs.log_prior is not None else 0.0
    for word, (uses, _) in dataset.items():
        forward_in = [list(u.tokens[: u.index + 1]) + ["and", "x"] for u in uses]
        backward_in = [["x", "and"] + list(u.tokens[u.index :]) for u in uses]
        forward, _ = context_log_probs(bilm, subs.softmax, forward_in, [u.index + 2 for u in uses])
        _, backward = context_log_probs(bilm, subs.softmax, backward_in, [0] * len(uses))
        scores = forward + backward - prior
        forms = {u.tokens[u.index] for u in uses} | {word.split("_")[0]}
        scores[:, subs.left_out(forms)] = float("-inf")
        top = scores.topk(k, dim=1).indices.numpy()
        out.update({u.identifier: row for u, row in zip(uses, top)})
    return out


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
        reps = [*LAYERS, *(f"context:{layer}" for layer in LAYERS)] + (["substitutes", "pattern substitutes"] if subs is not None else [])
        patterns = None
        for rep in reps:
            if not only or rep in only:
                if rep == "pattern substitutes" and patterns is None:
                    patterns = pattern_substitutes(dataset, base[0].meta["model"], subs)
                a, b = (i.with_layer("context:top" if rep.endswith("substitutes") else rep) for i in base)
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
                    if rep.endswith("substitutes"):
                        if rep == "substitutes":
                            ids_found, _ = subs.top(both, forms=set(forms) | {w})
                        else:
                            ids_found = numpy.stack([patterns[i] for i in ids])
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
    write_text(out, json.dumps(rows, indent=1, default=lambda v: None if isinstance(v, float) and not math.isfinite(v) else v) + "\n")


if __name__ == "__main__":
    typer.run(main)
