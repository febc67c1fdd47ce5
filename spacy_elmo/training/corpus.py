"""Raw text as sentences of tokens: the files, the numbering of lines and documents, and the rule
that cuts text into sentences.

Text comes from `.txt` / `.txt.gz` (one paragraph or sentence per line), `.jsonl` (a "text"
field) or spaCy `.spacy` files, is tokenized by the spaCy language's own tokenizer (the
tokenization the pipeline will see) and split into sentences by the rule-based sentencizer;
whitespace tokens are dropped and sentences longer than `max_length` are cut into pieces.

Training reads a prepared corpus (`prepared.py`), made once by this same rule; `Corpus` streams
sentences directly, for dev text and perplexity. spaCy is imported only to tokenize.
"""
import gzip
import io
import json
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple, Union

import numpy

from ..bilm.errors import InputError

Sentence = List[str]
PathLike = Union[str, Path]


def corpus_files(path: PathLike) -> List[Path]:
    """The corpus files at `path` (a file, or every supported file in a folder, sorted)."""
    path = Path(path)
    suffixes = (".txt", ".gz", ".jsonl", ".spacy")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in suffixes)
    elif path.is_file():
        files = [path]
    else:
        raise FileNotFoundError(f"Corpus not found: {path} (give a .txt, .txt.gz, .jsonl or .spacy file, or a folder of them)")
    if not files:
        raise InputError(f"No .txt, .txt.gz, .jsonl or .spacy files in {path}: give a file or a folder that holds some")
    return files


def read_texts(
    path: Path, lang_vocab, progress: Optional[Callable[[int], None]] = None  # type: ignore[no-untyped-def]
) -> Iterator[Tuple[str, bool]]:
    """(text, starts_new_document) pairs: records of .jsonl and .spacy files are documents;
    in text files, documents are blocks separated by blank lines.

    progress (Optional[Callable[[int], None]]): called now and then with the number of bytes of
        the file (compressed, for .gz) read since the last call.
    """
    if path.suffix == ".spacy":
        from spacy.tokens import DocBin

        for doc in DocBin().from_disk(path).get_docs(lang_vocab):
            yield doc.text, True
        if progress is not None:
            progress(path.stat().st_size)
        return
    is_jsonl = path.suffix == ".jsonl" or path.name.endswith(".jsonl.gz")
    new_doc = True
    with path.open("rb") as raw:
        binary = gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw
        reported = 0
        for number, line in enumerate(io.TextIOWrapper(binary, encoding="utf8"), start=1):  # type: ignore[arg-type]
            if progress is not None and number % 1000 == 0:
                position = raw.tell()
                progress(position - reported)
                reported = position
            if is_jsonl:
                if line.strip():
                    yield _jsonl_text(line, path, number), True
            elif line.strip():
                yield line.rstrip("\n"), new_doc
                new_doc = False
            else:
                new_doc = True
        if progress is not None:
            progress(path.stat().st_size - reported)


def _jsonl_text(line: str, path: Path, number: int) -> str:
    try:
        text = json.loads(line)["text"]
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{path}:{number}: expected a JSON object with a 'text' field (a string)") from None
    if not isinstance(text, str):
        raise InputError(f"{path}:{number}: 'text' must be a string, got {type(text).__name__}")
    try:
        text.encode("utf8")
    except UnicodeEncodeError as err:  # a lone surrogate escape such as "\\ud800"
        raise InputError(f"{path}:{number}: the text holds {text[err.start]!r}, which is not a Unicode character "
                         "(a lone surrogate escape): fix or remove that line") from None
    return text


def numbered_texts(
    files: List[Path], lang_vocab, progress: Optional[Callable[[int], None]] = None  # type: ignore[no-untyped-def]
) -> Iterator[Tuple[int, int, str]]:
    """(line, document, text) for every text that is not blank: lines count those texts, in
    file order; documents are numbered across files as `read_texts` delimits them."""
    line, doc = -1, -1
    for path in files:
        for text, new_doc in read_texts(path, lang_vocab, progress):
            doc += int(new_doc)
            if text.strip():
                line += 1
                yield line, doc, text


class SentenceSplitter:
    """The one rule that turns texts into sentences of tokens.

    lang (str): the spaCy language whose tokenizer to use.
    max_length (int): longer sentences are cut into pieces of at most this many tokens.
    """

    def __init__(self, lang: str = "en", max_length: int = 100) -> None:
        if max_length < 1:
            raise ValueError(f"[corpus] max_length must be >= 1, got {max_length}")
        import spacy  # here, so that training from a prepared corpus needs no spaCy

        self.nlp = spacy.blank(lang)
        self.nlp.add_pipe("sentencizer")
        self.max_length = max_length

    def split(self, texts: List[str]) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
        """Tokenize and split texts, vectorized over all their tokens.

        RETURNS (Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]): the orth hashes of every
            kept token (uint64, sentences one after the other), each sentence's length and the
            index of the text it comes from.
        """
        from spacy.attrs import IS_SPACE, ORTH, SENT_START

        orths, starts, spaces, text_ids = [], [], [], []
        for i, doc in enumerate(self.nlp.pipe(texts, batch_size=256)):
            if not len(doc):
                continue
            array = doc.to_array([ORTH, SENT_START, IS_SPACE])
            start = array[:, 1] == 1
            start[0] = True
            orths.append(array[:, 0])
            starts.append(start)
            spaces.append(array[:, 2] != 0)
            text_ids.append(numpy.full(len(doc), i, dtype=numpy.int64))
        if not orths:
            empty = numpy.zeros(0, dtype=numpy.int64)
            return numpy.zeros(0, dtype=numpy.uint64), empty, empty
        keep = ~numpy.concatenate(spaces)
        sentence = numpy.cumsum(numpy.concatenate(starts))[keep]
        orth = numpy.concatenate(orths)[keep]
        text_of = numpy.concatenate(text_ids)[keep]
        n = len(orth)
        if n == 0:
            empty = numpy.zeros(0, dtype=numpy.int64)
            return orth, empty, empty
        first = numpy.flatnonzero(numpy.r_[True, sentence[1:] != sentence[:-1]])
        sizes = numpy.diff(numpy.r_[first, n])
        position = numpy.arange(n) - numpy.repeat(first, sizes)
        pieces = numpy.flatnonzero(position % self.max_length == 0)
        lengths = numpy.diff(numpy.r_[pieces, n])
        return orth, lengths, text_of[pieces]

    def sentences(self, texts: List[str]) -> Iterator[Sentence]:
        """The sentences of `texts` as lists of token texts."""
        orth, lengths, _ = self.split(texts)
        strings = self.nlp.vocab.strings
        words = [strings[int(h)] for h in orth]
        start = 0
        for n in lengths.tolist():
            yield words[start : start + n]
            start += n


class Corpus:
    """Sentences of tokens from raw text, streamed (nothing is held but one batch of texts).

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
        self.splitter = SentenceSplitter(lang, max_length)
        self.rank, self.world_size = rank, world_size
        self.hold_out, self.only_held_out = hold_out, only_held_out

    def _lines(self) -> Iterator[str]:
        kept = -1
        for _, doc, text in numbered_texts(self.files, self.splitter.nlp.vocab):
            if is_held_out(doc, self.hold_out) != self.only_held_out:
                continue
            kept += 1
            if kept % self.world_size == self.rank:
                yield text

    def __iter__(self) -> Iterator[Sentence]:
        texts: List[str] = []
        for text in self._lines():
            texts.append(text)
            if len(texts) >= 256:
                yield from self.splitter.sentences(texts)
                texts = []
        if texts:
            yield from self.splitter.sentences(texts)


def is_held_out(doc, hold_out: int):  # type: ignore[no-untyped-def]
    """Whether document number(s) `doc` (an int or an array) belong to the dev part when every
    `hold_out`-th document is held out (none when hold_out is 0)."""
    if hold_out <= 0:
        return numpy.zeros(numpy.shape(doc), dtype=bool) if isinstance(doc, numpy.ndarray) else False
    return doc % hold_out == 0
