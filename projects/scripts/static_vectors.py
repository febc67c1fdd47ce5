"""Train floret static vectors on raw text, tokenized as spaCy tokenizes it, for `spacy init vectors --mode floret`."""
import gzip
from pathlib import Path
from typing import Iterator, List

import spacy
import typer


def _lines(paths: List[Path]) -> Iterator[str]:
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf8") as file_:
            for line in file_:
                line = line.strip()
                if line:
                    yield line


def main(
    output: Path,
    inputs: List[Path],
    dim: int = typer.Option(300, help="Vector width"),
    epochs: int = typer.Option(5, help="Passes over the text"),
    buckets: int = typer.Option(50000, help="Rows of the hashed table (spaCy's md packages: 50,000)"),
    min_count: int = typer.Option(5, help="Ignore words seen fewer times"),
    threads: int = typer.Option(2, help="floret's threads"),
) -> None:
    """Write OUTPUT (a .floret table) from INPUTS (plain or .gz, one paragraph per line)."""
    import floret  # only this script needs it: `pip install floret`

    output.parent.mkdir(parents=True, exist_ok=True)
    tokens_path = output.with_name(output.name + ".tokens.txt")
    tokenizer = spacy.blank("en").tokenizer
    with tokens_path.open("w", encoding="utf8") as file_:
        for doc in tokenizer.pipe(_lines(inputs), batch_size=1000):
            file_.write(" ".join(t.text for t in doc if not t.is_space) + "\n")
    model = floret.train_unsupervised(
        str(tokens_path), model="cbow", mode="floret", hashCount=2, bucket=buckets, minn=4, maxn=5,
        dim=dim, epoch=epochs, minCount=min_count, thread=threads, verbose=0,
    )
    model.save_floret_vectors(str(output))
    tokens_path.unlink()


if __name__ == "__main__":
    typer.run(main)
