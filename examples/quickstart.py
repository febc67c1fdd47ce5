"""spacy-elmo end to end in a few minutes, on text that ships with the repository (generated here):
pretrain a small biLM with `spacy-elmo pretrain`, load it into a spaCy pipeline as the `elmo`
component, and show what a contextual layer does that a context-free one cannot: words with two
senses ("bank", "bat", "spring", "match") get vectors that follow their sense.

    python examples/quickstart.py                      # writes ./quickstart-output (400 steps: 3-4 minutes on 2 cores)
    python examples/quickstart.py --steps 100 --output /tmp/qs

The budget is in steps, so a run gives the same biLM (and the same table) on any machine as fast
or slow as it is, for the same PyTorch and thread count.

The text is generated from templates (seeded), so it is public by construction: each ambiguous word
appears in sentences of either sense, among filler sentences. The comparison runs on sentences
generated anew, with another seed.
"""

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

MARKER = ".quickstart"

SENSES: Dict[str, Tuple[List[str], List[str]]] = {
    "bank": (
        [
            "She {v} {money} at the bank {when} .",
            "The bank {raised} its interest rates {when} .",
            "He opened an account at the bank near the {shop} .",
        ],
        [
            "They {walk} along the bank of the {river} {when} .",
            "The {flood} washed away the bank of the {river} .",
            "Reeds grow on the muddy bank of the {river} .",
        ],
    ),
    "bat": (
        [
            "The bat {fly} out of the dark {cave} {when} .",
            "A small bat hung from the roof of the {cave} .",
            "The bat hunts insects at night .",
        ],
        [
            "He swung the bat and hit the ball {when} .",
            "The player dropped his bat on the {field} .",
            "She bought a new cricket bat {when} .",
        ],
    ),
    "spring": (
        ["Flowers bloom in the spring {when} .", "The birds return every spring to the {river} .", "In spring the {field} turns green ."],
        [
            "The spring in the {device} broke {when} .",
            "He replaced the rusty spring of the {device} .",
            "A steel spring holds the {device} shut .",
        ],
    ),
    "match": (
        [
            "He struck a match to light the {fire} .",
            "She lit the {fire} with a single match {when} .",
            "The match burned down to his fingers .",
        ],
        ["The team won the match {when} .", "They watched the football match on the {field} .", "The match ended in a draw {when} ."],
    ),
}
SLOTS = {
    "v": ["deposited", "withdrew", "saved", "borrowed"],
    "money": ["money", "cash", "her salary", "some coins"],
    "when": ["yesterday", "on Monday", "last week", "in the morning", "before noon", "this year"],
    "raised": ["raised", "cut", "changed"],
    "shop": ["shop", "station", "market", "school"],
    "walk": ["walked", "sat", "fished", "rested"],
    "river": ["river", "stream", "lake", "canal"],
    "flood": ["flood", "storm", "current", "rain"],
    "fly": ["flew", "came", "darted"],
    "cave": ["cave", "barn", "tunnel"],
    "field": ["field", "pitch", "grass"],
    "device": ["clock", "mattress", "door", "watch"],
    "fire": ["fire", "candle", "stove", "lamp"],
}
FILLER = [
    "The {who} {did} the {what} {when} .",
    "A {who} saw the {what} near the {shop} .",
    "The {what} was on the table {when} .",
]
FILLER_SLOTS = {
    "who": ["teacher", "child", "farmer", "doctor", "driver", "student", "cook"],
    "did": ["painted", "found", "cleaned", "carried", "sold", "moved"],
    "what": ["chair", "box", "letter", "bottle", "book", "basket", "coat"],
}
N_PROBE = 12  # sentences per sense in the comparison, generated with another seed


def sentence(rng: random.Random) -> str:
    if rng.random() < 0.3:
        template, slots = rng.choice(FILLER), {**SLOTS, **FILLER_SLOTS}
    else:
        template, slots = rng.choice(rng.choice(list(SENSES.values()))[rng.randrange(2)]), SLOTS
    return template.format(**{key: rng.choice(values) for key, values in slots.items()})


def probe_sentences(word: str, sense: int, rng: random.Random) -> List[str]:
    return [rng.choice(SENSES[word][sense]).format(**{k: rng.choice(v) for k, v in SLOTS.items()}) for _ in range(N_PROBE)]


def mean_cosine(a, b, same: bool) -> float:
    import numpy

    a = a / numpy.linalg.norm(a, axis=1, keepdims=True)
    b = b / numpy.linalg.norm(b, axis=1, keepdims=True)
    sims = a @ b.T
    if same:  # pairs of different sentences only
        return float((sims.sum() - numpy.trace(sims)) / (len(a) * (len(a) - 1)))
    return float(sims.mean())


def write_text(folder: Path, n_train: int, n_dev: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    for name, n in (("train.txt", n_train), ("dev.txt", n_dev)):
        # a paragraph of 5 sentences a line, documents of 4 paragraphs
        lines = []
        for i in range(n // 5):
            lines.append(" ".join(sentence(rng) for _ in range(5)))
            if i % 4 == 3:
                lines.append("")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=Path("quickstart-output"), help="a new folder (or one this script made)")
    parser.add_argument("--steps", type=int, default=400, help="pretraining steps of 2,048 tokens (400: 3-4 minutes on 2 cores)")
    args = parser.parse_args()
    out = args.output
    if out.exists():
        if not (out / MARKER).is_file():
            sys.exit(f"Error: {out} exists and was not made by this script: give another --output")
        shutil.rmtree(out)  # a former run of this script
    out.mkdir(parents=True)
    (out / MARKER).write_text("made by examples/quickstart.py\n")
    print(f"Writing into {out.resolve()}", flush=True)
    write_text(out / "text", n_train=40_000, n_dev=1_000)

    print(f"1. Pretraining the `cpu` preset biLM for {args.steps} steps on {out / 'text'} ...", flush=True)
    cmd = [
        sys.executable,
        "-m",
        "spacy_elmo",
        "pretrain",
        "cpu",
        "--output",
        str(out / "biLM"),
        "--paths.train",
        str(out / "text" / "train.txt"),
        "--paths.dev",
        str(out / "text" / "dev.txt"),
        "--training.max_steps",
        str(args.steps),
        "--training.max_minutes",
        "0",
        "--training.eval_every",
        "100",
        "--vocab.min_count",
        "1",
    ]
    subprocess.run(cmd, check=True)
    log = [json.loads(line) for line in (out / "biLM" / "log.jsonl").read_text().splitlines()]
    dev = [row["dev_ppl"] for row in log if "dev_ppl" in row]
    print(f"   dev perplexity {dev[0]:,.1f} at the start, {min(dev):,.1f} at the best step")

    print("2. The biLM as a spaCy component; mean cosine similarity of each word's vectors across")
    print(f"   {N_PROBE} new sentences of each sense: within one sense, and across the two senses")
    import numpy
    import spacy

    from spacy_elmo import add_elmo

    model = out / "biLM" / "model-best"
    rng = random.Random(1)
    probes = {word: [probe_sentences(word, sense, rng) for sense in (0, 1)] for word in SENSES}
    rows = []
    for name, weights in (("token layer (context-free)", [1.0, 0.0, 0.0]), ("top biLSTM layer (contextual)", "top")):
        nlp = spacy.blank("en")
        add_elmo(nlp, model / "options.json", model / "weights.hdf5", config={"vectors": weights})
        for word, senses in probes.items():
            vectors = [numpy.stack([next(t for t in doc if t.text == word).vector for doc in nlp.pipe(texts)]) for texts in senses]
            within = (mean_cosine(vectors[0], vectors[0], True) + mean_cosine(vectors[1], vectors[1], True)) / 2
            rows.append((name, word, within, mean_cosine(vectors[0], vectors[1], False)))
    print(f"   {'vectors from':32}{'word':8}{'within sense':>14}{'across senses':>15}")
    for name, word, within, across in rows:
        print(f"   {name:32}{word:8}{within:14.3f}{across:15.3f}")
    contextual = [r for r in rows if r[0].startswith("top")]
    wins = sum(within > across for _, _, within, across in contextual)
    print(
        f"   The top layer keeps each sense together ({wins} of {len(contextual)} words closer within a sense than "
        "across); the token layer gives one vector per word, whatever its sense."
    )
    print(f"Files: {out} (the biLM: {model}, original ELMo format)")


if __name__ == "__main__":
    main()
