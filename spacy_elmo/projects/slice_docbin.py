"""Keep the first N documents of a .spacy file (for the smoke workflows)."""

from pathlib import Path

import typer
from spacy.tokens import DocBin
from spacy.vocab import Vocab
from .written import write_docbin


def main(input_path: Path, output: Path, n_docs: int = typer.Option(..., "--n-docs")) -> None:
    docs = list(DocBin().from_disk(input_path).get_docs(Vocab()))[:n_docs]
    output.parent.mkdir(parents=True, exist_ok=True)
    write_docbin(output, DocBin(docs=docs, store_user_data=True))
    print(f"{output}: {len(docs)} documents")


if __name__ == "__main__":
    typer.run(main)
