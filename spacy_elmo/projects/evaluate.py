"""Score a trained pipeline on a .spacy file and write every score as JSON.

Like `spacy evaluate`, but the JSON keeps all of `nlp.evaluate`'s scores (e.g. cats_micro_f,
which for exclusive classes is the accuracy).
"""

from pathlib import Path

import spacy
import typer
from spacy.training import Corpus
from .written import write_json


def main(model: Path, data: Path, output: Path) -> None:
    nlp = spacy.load(model)
    examples = list(Corpus(data)(nlp))
    scores = nlp.evaluate(examples)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json(output, scores)
    flat = {k: round(v, 4) for k, v in scores.items() if isinstance(v, float)}
    print(f"{model} on {data}: {flat}")


if __name__ == "__main__":
    typer.run(main)
