"""Semantic change from lexical substitutes: at each usage of a word, what the biLM's own language models
predict from the context alone (`spacy_elmo.bilm.context_prediction`; the biLM must come with its softmax,
vocab.txt + softmax.pt, as `spacy-elmo pretrain` writes it). A usage's substitute distribution combines the
forward LM's p(w | left context) and the backward LM's p(w | right context): their product or their mixture
(or one direction alone), each divided by the unigram prior to the power beta (beta 1 favours the rarer,
more specific words; Arefyev & Zhikov 2020), over the vocabulary less the markers, <UNK> and the target's own
forms. A word's change is then:
- JSD of means: the Jensen-Shannon divergence of the two periods' mean distributions;
- APD cosine / APD Hellinger: the mean distance over pairs of one usage from each period, 1 - the cosine of
  the distributions, or 1 - their Bhattacharyya coefficient;
- APD top-10 bags: the same over each usage's 10 likeliest substitutes as a bag of words weighted by idf over
  the word's usages.
Reported as semantic_change.py reports: Spearman against the graded change over all words and the fixed halves
A and B, sorted by half A.

    python change_substitutes.py WUG_DIR OUT NAME=PATH

Writes OUT/substitutes-NAME.md and .json.
"""

import itertools
import json
from pathlib import Path
from typing import Dict, List, Tuple

import torch
import typer

from .semantic_change import halves_of, read_graded, spearman
from spacy_elmo.bilm.context_prediction import context_log_probs
from spacy_elmo.training.checkpoint import load_model_dir
from spacy_elmo.change.measures import jensen_shannon
from spacy_elmo.change.wug import read_dataset
from .written import write_text

BETAS = (0.0, 0.5, 1.0)
COMBINATIONS = ("product", "mixture", "forward", "backward")
TOP = 10


def substitutes(
    forward: torch.Tensor, backward: torch.Tensor, combination: str, beta: float, log_prior: torch.Tensor, left_out: torch.Tensor
) -> torch.Tensor:
    """(n, V) substitute distributions of n usages from the two directions' log-probabilities."""
    if combination == "product":
        scores = forward + backward
    elif combination == "mixture":
        scores = torch.logaddexp(forward, backward)
    else:
        scores = (forward if combination == "forward" else backward).clone()
    scores -= beta * log_prior
    return torch.softmax(scores.masked_fill_(left_out, float("-inf")), dim=1)


def measures(p: torch.Tensor, first: torch.Tensor) -> Dict[str, float]:
    """The change measures between the usages of period 1 (rows where `first`) and the others."""
    second = ~first
    unit = p / p.norm(dim=1, keepdim=True)
    root = p.sqrt()
    top = torch.zeros_like(p).scatter_(1, p.topk(TOP, dim=1).indices, 1.0)
    bags = top * torch.log(len(p) / (1 + top.sum(0)))
    bags = bags / bags.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return {
        "JSD of means": jensen_shannon(p[first].mean(0).numpy(), p[second].mean(0).numpy()),
        "APD cosine": 1.0 - float((unit[first] @ unit[second].T).mean()),
        "APD Hellinger": 1.0 - float((root[first] @ root[second].T).mean()),
        f"APD top-{TOP} bags": 1.0 - float((bags[first] @ bags[second].T).mean()),
    }


def main(wug_dir: Path, out: Path, bilm: str = typer.Argument(..., help="NAME=PATH: a biLM folder with vocab.txt + softmax.pt")) -> None:
    name, _, path = bilm.partition("=")
    model, vocab, softmax = load_model_dir(path)
    if vocab is None or softmax is None:
        raise SystemExit(f"{path} has no vocab.txt / softmax.pt: substitutes need the biLM's softmax")
    counts = torch.tensor(vocab.counts, dtype=torch.float64).clamp_min(1)
    log_prior = (counts / counts.sum()).log().float()
    wug = read_dataset(wug_dir)
    gold = read_graded(wug_dir)
    words = sorted(w for w in wug if w in gold)
    halves = halves_of(words)
    scores: Dict[Tuple[str, float, str], Dict[str, float]] = {}
    for word in words:
        uses = wug[word][0]
        forward, backward = context_log_probs(model, softmax, [u.tokens for u in uses], [u.index for u in uses])
        left_out = torch.zeros(len(vocab), dtype=torch.bool)
        left_out[[vocab.bos_id, vocab.eos_id, vocab.unk_id]] = True
        for token in {u.tokens[u.index] for u in uses}:
            for form in (token, token.lower(), token.capitalize()):
                if form in vocab.ids:
                    left_out[vocab.ids[form]] = True
        first = torch.tensor([u.grouping == "1" for u in uses])
        for combination, beta in itertools.product(COMBINATIONS, BETAS):
            p = substitutes(forward, backward, combination, beta, log_prior, left_out.expand_as(forward))
            for measure, value in measures(p, first).items():
                scores.setdefault((combination, beta, measure), {})[word] = value
        print(f"{name}: {word} {len(uses)} usages", flush=True)
    rows: List[Dict] = []
    for (combination, beta, measure), by_word in scores.items():
        rho = {h: spearman([by_word[w] for w in ws], [gold[w] for w in ws]) for h, ws in halves.items()}
        rows.append({"combination": combination, "beta": beta, "measure": measure, **{f"spearman_{h}": r for h, r in rho.items()}})
    rows.sort(key=lambda r: -r["spearman_A"])
    out.mkdir(parents=True, exist_ok=True)
    write_text(out / f"substitutes-{name}.json", json.dumps({"bilm": name, "words": len(words), "results": rows}, indent=1) + "\n")
    lines = ["| biLM | substitutes | beta | measure | rho all | rho A | rho B |", "|---|---|---:|---|---:|---:|---:|"]
    for r in rows:
        rhos = " | ".join(f"{r[f'spearman_{h}']:.3f}" for h in halves)
        lines.append(f"| {name} | {r['combination']} | {r['beta']} | {r['measure']} | {rhos} |")
    write_text(out / f"substitutes-{name}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    typer.run(main)
