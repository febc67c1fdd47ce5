"""Convert the Stanford Sentiment Treebank (PTB trees, one per line) to a DocBin of sentences with
exclusive sentiment categories for textcat: SST-5, or SST-2 with --binary."""

import re
from pathlib import Path
from typing import Iterator, List, Tuple, Union

import typer
from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

from spacy_elmo.output_folders import write_atomically

SST5_LABELS = ("very_negative", "negative", "neutral", "positive", "very_positive")
_LEAF = re.compile(r"\(\d+ ([^()\s]+)\)")
_UNESCAPE = {"-LRB-": "(", "-RRB-": ")", "\\/": "/", "\\*": "*"}


def read_sst_trees(path: Union[str, Path]) -> Iterator[Tuple[List[str], int]]:
    """Yield (tokens, root label 0-4) for each tree (one per line)."""
    with Path(path).open(encoding="utf8") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            match = re.match(r"\((\d) ", line)
            if match is None:
                raise ValueError(f"{path}:{number}: not an SST tree: {line[:60]!r}")
            words = [_UNESCAPE.get(w, w) for w in _LEAF.findall(line)]
            yield words, int(match.group(1))


def sst_to_docbin(path: Union[str, Path], vocab: Vocab, binary: bool = False) -> DocBin:
    """SST-5 (5 exclusive classes) or, with `binary`, SST-2 (neutral dropped, pos/neg)."""
    labels = ("negative", "positive") if binary else SST5_LABELS
    doc_bin = DocBin()
    for words, label in read_sst_trees(path):
        if binary:
            if label == 2:
                continue
            label = int(label > 2)
        doc = Doc(vocab, words=words)
        doc.cats = {name: float(i == label) for i, name in enumerate(labels)}
        doc_bin.add(doc)
    return doc_bin


def main(
    input_path: Path = typer.Argument(..., help="SST trees in PTB format, e.g. train.txt", exists=True, dir_okay=False),
    output: Path = typer.Argument(..., help="The .spacy file to write"),
    binary: bool = typer.Option(False, "--binary", help="SST-2: drop neutral, negative/positive"),
) -> None:
    """Write the trees of INPUT_PATH to OUTPUT, one Doc per sentence."""
    doc_bin = sst_to_docbin(input_path, Vocab(), binary=binary)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, doc_bin.to_bytes())  # renamed into place: a link there is replaced, never written through
    typer.echo(f"Wrote {len(doc_bin)} sentences to {output}")


if __name__ == "__main__":
    typer.run(main)
