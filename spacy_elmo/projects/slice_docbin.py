"""Keep the first N documents of a .spacy file (for the smoke workflows)."""

from pathlib import Path

import typer
from spacy.tokens import DocBin
from spacy.vocab import Vocab


def main(input_path: Path, output: Path, n_docs: int = typer.Option(..., "--n-docs")) -> None:
    docs = list(DocBin().from_disk(input_path).get_docs(Vocab()))[:n_docs]
    output.parent.mkdir(parents=True, exist_ok=True)
    DocBin(docs=docs, store_user_data=True).to_disk(output)
    print(f"{output}: {len(docs)} documents")


if __name__ == "__main__":
    typer.run(main)
