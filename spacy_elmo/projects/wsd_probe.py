"""The word-sense probe (Peters et al. 2018, Table 5) on a Raganato et al. WSD set, leave-one-out:
accuracy of the nearest usage and of the nearest sense centroid per biLM layer, beside the most
frequent sense of the other usages and the upper bound. Writes OUTPUT.json and OUTPUT.md."""

import json
import math
import time
from pathlib import Path

import typer
from spacy.tokens import Doc

from spacy_elmo.pipeline.loading import elmo_names, load_elmo_pipeline
from spacy_elmo.usages import sense_probe as probe
from .written import write_text


def main(
    model: Path = typer.Argument(..., help="biLM folder (options.json + weights.hdf5) or pipeline with elmo"),
    data_xml: Path = typer.Argument(..., help="*.data.xml"),
    gold_keys: Path = typer.Argument(..., help="*.gold.key.txt"),
    output: Path = typer.Argument(..., help="Results, without suffix: OUTPUT.json and OUTPUT.md are written"),
    name: str = typer.Option("", help="The biLM's name in the table"),
) -> None:
    wsd = probe.read_wsd_set(data_xml, gold_keys)
    nlp = load_elmo_pipeline(model, sentences=False)
    elmo = nlp.get_pipe(elmo_names(nlp)[0])
    started = time.perf_counter()
    docs = [Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * (len(words) - 1)) for words in wsd.sentences]
    layers = [doc._.elmo.layers for doc in elmo.pipe(docs, batch_size=64)]
    seconds = time.perf_counter() - started
    vectors = probe.instance_vectors(wsd, layers)
    n_layers = vectors.shape[1]
    rows = []
    choices = [(f"layer {j}" + (" (token layer)" if j == 0 else f" (biLSTM {j})"), vectors[:, j]) for j in range(n_layers)]
    choices.append(("average of all layers", vectors.mean(axis=1)))
    choices.append(("average of the biLSTM layers", vectors[:, 1:].mean(axis=1)))
    right = {}
    for label, v in choices:
        nearest = probe.nearest_usage_predictions(wsd.instances, v)
        right[label] = {i: bool(set(keys) & set(wsd.instances[i].keys)) for i, keys in nearest.items()}
        rows.append(
            {
                "representation": label,
                "nearest_usage": probe.accuracy(wsd.instances, nearest),
                "nearest_centroid": probe.accuracy(wsd.instances, probe.nearest_centroid_predictions(wsd.instances, v)),
            }
        )
    mfs = probe.accuracy(wsd.instances, probe.most_frequent_sense_predictions(wsd.instances))
    bound = probe.accuracy(wsd.instances, probe.upper_bound_predictions(wsd.instances))
    n_probed = len(probe.probed(wsd.instances))
    # Layer 1 against layer 2 on the same instances: the discordant pairs and a two-sided sign test.
    one, two = right[choices[1][0]], right[choices[-3][0]]
    only_1 = sum(one[i] and not two[i] for i in one)
    only_2 = sum(two[i] and not one[i] for i in one)
    sign_p = (
        min(1.0, 2 * sum(math.comb(only_1 + only_2, k) for k in range(min(only_1, only_2) + 1)) / 2 ** (only_1 + only_2))
        if only_1 + only_2
        else 1.0
    )
    result = {
        "model": str(model),
        "name": name or model.name,
        "instances": len(wsd.instances),
        "probed": n_probed,
        "rows": rows,
        "most_frequent_sense": mfs,
        "mfs_tie_rule": probe.MFS_TIE_RULE,
        "upper_bound": bound,
        "layer1_vs_top": {"only_layer1_right": only_1, "only_top_right": only_2, "sign_test_p": sign_p},
        "embed_seconds": round(seconds, 1),
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    write_text(f"{output}.json", json.dumps(result, indent=2) + "\n")
    lines = [
        f"Word-sense probe, leave-one-out within {data_xml.name} ({n_probed:,} of {len(wsd.instances):,} instances have "
        f"another usage of their lemma and POS); biLM: {result['name']}",
        "",
        "| representation | nearest usage | nearest sense centroid |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r['representation']} | {100 * r['nearest_usage']:.1f} | {100 * r['nearest_centroid']:.1f} |" for r in rows]
    lines += [
        f"| most frequent sense of the others ({probe.MFS_TIE_RULE}) | {100 * mfs:.1f} | |",
        f"| upper bound: a same-sense usage exists | {100 * bound:.1f} | |",
        "",
        f"Nearest usage, layer 1 against layer {n_layers - 1}: {only_1} instances right only with layer 1, {only_2} only with "
        f"layer {n_layers - 1} (two-sided sign test p = {sign_p:.2g}).",
    ]
    write_text(f"{output}.md", "\n".join(lines) + "\n")
    typer.echo("\n".join(lines))


if __name__ == "__main__":
    typer.run(main)
