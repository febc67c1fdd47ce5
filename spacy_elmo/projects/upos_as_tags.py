"""Put each token's UPOS (token.pos_) in token.tag_, so that spaCy's tagger learns UPOS: the POS
probe's labels. `spacy convert -c conllu` keeps UPOS in pos_ and XPOS in tag_."""

from pathlib import Path

import typer
from spacy.tokens import DocBin
from spacy.vocab import Vocab
from .written import write_docbin


def main(input_path: Path, output: Path) -> None:
    docs = list(DocBin().from_disk(input_path).get_docs(Vocab()))
    for doc in docs:
        for token in doc:
            token.tag_ = token.pos_
    output.parent.mkdir(parents=True, exist_ok=True)
    write_docbin(output, DocBin(docs=docs))
    tags = {t.tag_ for doc in docs for t in doc}
    print(f"{output}: {len(docs)} documents, {sum(len(d) for d in docs)} tokens, {len(tags)} UPOS tags")


if __name__ == "__main__":
    typer.run(main)
