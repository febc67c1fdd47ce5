"""Train floret static vectors on raw text, tokenized as spaCy tokenizes it, for `spacy init vectors
--mode floret` (spaCy's own subword vectors: every word gets a vector, and the table stays small)."""

from pathlib import Path
from typing import Iterator, List

import spacy
import typer

from spacy_elmo.output_folders import publish_file, temporary_path
from spacy_elmo.text_corpus import read_texts


def _lines(paths: List[Path], vocab) -> Iterator[str]:  # type: ignore[no-untyped-def]
    for path in paths:
        for text, _ in read_texts(path, vocab):
            if text.strip():
                yield text.strip()


def main(
    output: Path,
    inputs: List[Path],
    dim: int = typer.Option(300, help="Vector width"),
    epochs: int = typer.Option(5, help="Passes over the text"),
    buckets: int = typer.Option(50000, help="Rows of the hashed table (spaCy's md packages: 50,000)"),
    min_count: int = typer.Option(5, help="Ignore words seen fewer times"),
    threads: int = typer.Option(2, help="floret's threads"),
) -> None:
    """Write OUTPUT (a .floret table) from INPUTS (.txt, .txt.gz, .jsonl or .spacy, as `spacy-elmo
    pretrain` reads them)."""
    try:
        import floret  # only this script needs it
    except ImportError:
        raise SystemExit("Error: training static vectors needs floret: pip install floret") from None

    output.parent.mkdir(parents=True, exist_ok=True)
    # the tokenized text and the table are written beside OUTPUT as temporaries of fresh names (never a file that
    # is there): a failure leaves a former OUTPUT as it was
    tokens_path, table_path = temporary_path(output), temporary_path(output)
    nlp = spacy.blank("en")
    try:
        with tokens_path.open("w", encoding="utf8") as file_:
            for doc in nlp.tokenizer.pipe(_lines(inputs, nlp.vocab), batch_size=1000):
                file_.write(" ".join(t.text for t in doc if not t.is_space) + "\n")
        model = floret.train_unsupervised(
            str(tokens_path),
            model="cbow",
            mode="floret",
            hashCount=2,
            bucket=buckets,
            minn=4,
            maxn=5,
            dim=dim,
            epoch=epochs,
            minCount=min_count,
            thread=threads,
            verbose=0,
        )
        model.save_floret_vectors(str(table_path))
        publish_file(table_path, output)
    finally:
        tokens_path.unlink(missing_ok=True)
        table_path.unlink(missing_ok=True)


if __name__ == "__main__":
    typer.run(main)
