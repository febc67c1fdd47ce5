"""Streaming a raw-text corpus as batches of tokenized sentences, deterministically.

Text comes from `.txt` / `.txt.gz` (one paragraph or sentence per line), `.jsonl` (a "text"
field) or spaCy `.spacy` files, is tokenized by the spaCy language's own tokenizer (the
tokenization the pipeline will see) and split into sentences by the rule-based sentencizer.
Nothing is held in memory but one pool of sentences.

Batches are made pool by pool: `pool_size` sentences, sorted by length, cut into batches of at
most `batch_tokens` tokens, shuffled with a seed derived from (seed, epoch, pool). A position is
(epoch, pool, batch), so a resumed run regenerates the same batches and skips to the next one.
With several processes, process r of n reads the lines i with i % n == r.
"""
import gzip
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator, List, Sequence, Tuple, Union

import spacy
from spacy.tokens import DocBin

Sentence = List[str]
PathLike = Union[str, Path]


@dataclass
class CorpusPosition:
    epoch: int = 0
    pool: int = 0
    batch: int = 0  # batches of this pool already used

    def to_dict(self) -> dict:
        return asdict(self)


def corpus_files(path: PathLike) -> List[Path]:
    """The corpus files at `path` (a file, or every supported file in a folder, sorted)."""
    path = Path(path)
    suffixes = (".txt", ".gz", ".jsonl", ".spacy")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in suffixes)
    elif path.is_file():
        files = [path]
    else:
        raise FileNotFoundError(f"Corpus not found: {path}")
    if not files:
        raise ValueError(f"No .txt, .txt.gz, .jsonl or .spacy files in {path}")
    return files


def read_texts(path: Path, lang_vocab) -> Iterator[Tuple[str, bool]]:  # type: ignore[no-untyped-def]
    """(text, starts_new_document) pairs: records of .jsonl and .spacy files are documents;
    in text files, documents are blocks separated by blank lines."""
    if path.suffix == ".spacy":
        for doc in DocBin().from_disk(path).get_docs(lang_vocab):
            yield doc.text, True
        return
    is_jsonl = path.suffix == ".jsonl" or path.name.endswith(".jsonl.gz")
    opener = gzip.open if path.suffix == ".gz" else open
    new_doc = True
    with opener(path, "rt", encoding="utf8") as f:  # type: ignore[operator]
        for number, line in enumerate(f, start=1):
            if is_jsonl:
                if line.strip():
                    try:
                        yield json.loads(line)["text"], True
                    except (ValueError, KeyError) as err:
                        raise ValueError(f"{path}:{number}: expected a JSON object with a 'text' field") from err
            elif line.strip():
                yield line.rstrip("\n"), new_doc
                new_doc = False
            else:
                new_doc = True


class Corpus:
    """Sentences of tokens from raw text.

    path (PathLike): a file or a folder of files.
    lang (str): the spaCy language whose tokenizer to use.
    max_length (int): longer sentences are cut into pieces of at most this many tokens.
    rank, world_size (int): this process reads lines i with i % world_size == rank.
    hold_out (int): leave out every document d with d % hold_out == 0 (the dev part), 0 for none.
    only_held_out (bool): read only those held-out documents instead.
    """

    def __init__(
        self,
        path: PathLike,
        lang: str = "en",
        max_length: int = 100,
        rank: int = 0,
        world_size: int = 1,
        hold_out: int = 0,
        only_held_out: bool = False,
    ) -> None:
        self.files = corpus_files(path)
        self.nlp = spacy.blank(lang)
        self.nlp.add_pipe("sentencizer")
        self.max_length = max_length
        self.rank, self.world_size = rank, world_size
        self.hold_out, self.only_held_out = hold_out, only_held_out

    def _lines(self) -> Iterator[str]:
        line, doc = -1, -1
        for path in self.files:
            for text, new_doc in read_texts(path, self.nlp.vocab):
                doc += int(new_doc)
                if not text.strip():
                    continue
                held_out = self.hold_out > 0 and doc % self.hold_out == 0
                if held_out != self.only_held_out:
                    continue
                line += 1
                if line % self.world_size == self.rank:
                    yield text

    def __iter__(self) -> Iterator[Sentence]:
        for doc in self.nlp.pipe(self._lines(), batch_size=256):
            for sent in doc.sents:
                words = [t.text for t in sent if not t.is_space]
                for start in range(0, len(words), self.max_length):
                    if words[start : start + self.max_length]:
                        yield words[start : start + self.max_length]


def _pools(corpus: Corpus, pool_size: int) -> Iterator[List[Sentence]]:
    pool: List[Sentence] = []
    for sentence in corpus:
        pool.append(sentence)
        if len(pool) >= pool_size:
            yield pool
            pool = []
    if pool:
        yield pool


def length_batches(sentences: Sequence[Sentence], batch_tokens: int) -> List[List[Sentence]]:
    """Sort sentences by length and cut them into batches whose padded size (longest sentence,
    markers included, times the number of sentences) is at most `batch_tokens`; a longer
    sentence gets a batch of its own."""
    batches: List[List[Sentence]] = []
    current: List[Sentence] = []
    for sentence in sorted(sentences, key=len):
        # sorted ascending: the newcomer is the longest of the batch
        if current and (len(sentence) + 2) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current = []
        current.append(sentence)
    if current:
        batches.append(current)
    return batches


def pool_batches(pool: Sequence[Sentence], batch_tokens: int, seed: int) -> List[List[Sentence]]:
    """`length_batches` of a pool, in an order shuffled by `seed`."""
    batches = length_batches(pool, batch_tokens)
    random.Random(seed).shuffle(batches)
    return batches


def training_batches(
    corpus: Corpus, batch_tokens: int, pool_size: int, seed: int, start: CorpusPosition
) -> Iterator[Tuple[List[Sentence], CorpusPosition]]:
    """Endless batches from `start` on, each with the position just after it."""
    epoch = start.epoch
    while True:
        n_pools = 0
        for pool_index, pool in enumerate(_pools(corpus, pool_size)):
            n_pools += 1
            if (epoch, pool_index) < (start.epoch, start.pool):
                continue
            batches = pool_batches(pool, batch_tokens, seed * 1_000_003 + epoch * 10_007 + pool_index)
            first = start.batch if (epoch, pool_index) == (start.epoch, start.pool) else 0
            for b in range(first, len(batches)):
                yield batches[b], CorpusPosition(epoch, pool_index, b + 1)
        if n_pools == 0:
            raise ValueError("The training corpus holds no sentences")
        epoch += 1
