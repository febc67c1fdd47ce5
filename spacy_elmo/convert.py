"""Converting the Stanford Sentiment Treebank (PTB trees) to spaCy's DocBin for textcat."""
import re
from pathlib import Path
from typing import Iterator, List, Tuple, Union

from spacy.tokens import Doc, DocBin
from spacy.vocab import Vocab

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
