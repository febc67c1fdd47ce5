"""Raw text as sentences of tokens: the rule that cuts text into sentences.

Text (read by `spacy_elmo.text_corpus`) is tokenized by the spaCy language's own tokenizer (the
tokenization the pipeline will see) and split into sentences by the rule-based sentencizer;
whitespace tokens are dropped and sentences longer than `max_length` are cut into pieces.

Training reads a prepared corpus (`prepared.py`), made once by this same rule; `Corpus` streams
sentences directly, for dev text and perplexity. spaCy is imported only to tokenize.
"""

from typing import Iterator, List, Tuple, cast

import numpy

from ..text_corpus import corpus_files, numbered_texts
from ..types import PathLike

Sentence = List[str]


class SentenceSplitter:
    """The one rule that turns texts into sentences of tokens.

    lang (str): the spaCy language whose tokenizer to use.
    max_length (int): longer sentences are cut into pieces of at most this many tokens.
    """

    def __init__(self, lang: str = "en", max_length: int = 100) -> None:
        if max_length < 1:
            raise ValueError(f"[corpus] max_length must be >= 1, got {max_length}")
        import spacy  # here, so that training from a prepared corpus needs no spaCy
        from spacy.pipeline import Sentencizer

        self.nlp = spacy.blank(lang)
        # Of the attributes a new lexeme gets, the split reads two (and the tokenizer none):
        # computing the other 21 (shape, norm, prefix, suffix, ... with their strings) was
        # a sixth of preparing a corpus.
        from spacy.attrs import IS_PUNCT, IS_SPACE

        # (a public attribute of Vocab that spaCy's type stubs leave out)
        getters = self.nlp.vocab.lex_attr_getters  # type: ignore[attr-defined]
        self.nlp.vocab.lex_attr_getters = {attr: getters[attr] for attr in (IS_PUNCT, IS_SPACE)}  # type: ignore[attr-defined]
        self.max_length = max_length
        strings = self.nlp.vocab.strings
        self.period_orths = numpy.array(sorted(strings.add(c) for c in Sentencizer.default_punct_chars), dtype=numpy.uint64)

    def split(self, texts: List[str]) -> Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]:
        """Tokenize and split texts, vectorized over all their tokens.

        RETURNS (Tuple[numpy.ndarray, numpy.ndarray, numpy.ndarray]): the orth hashes of every
            kept token (uint64, sentences one after the other), each sentence's length and the
            index of the text it comes from.
        """
        from spacy.attrs import IS_PUNCT, IS_SPACE, ORTH
        from spacy.tokenizer import Tokenizer

        # Per text only the array is taken: the bookkeeping runs once over all of them (numpy
        # calls per text would cost more than the tokenizer).
        arrays = [doc.to_array([ORTH, IS_PUNCT, IS_SPACE]) for doc in cast(Tokenizer, self.nlp.tokenizer).pipe(texts, batch_size=256)]
        sizes = numpy.fromiter((len(a) for a in arrays), dtype=numpy.int64, count=len(arrays))
        if int(sizes.sum()) == 0:
            empty = numpy.zeros(0, dtype=numpy.int64)
            return numpy.zeros(0, dtype=numpy.uint64), empty, empty
        array = numpy.concatenate(arrays)
        start = self._sentence_starts(array[:, 0], array[:, 1] != 0, sizes)
        keep = array[:, 2] == 0
        sentence = numpy.cumsum(start)[keep]
        orth = array[:, 0][keep]
        text_of = numpy.repeat(numpy.arange(len(texts), dtype=numpy.int64), sizes)[keep]
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

    def _sentence_starts(self, orth: numpy.ndarray, is_punct: numpy.ndarray, sizes: numpy.ndarray) -> numpy.ndarray:
        """spaCy's sentencizer rule (`Sentencizer.predict`, default punctuation), over all tokens
        of many texts at once: a text's first token starts a sentence, and so does a token that
        is neither punctuation nor a sentence-final character when such a character came after
        the text's previous token of that kind.

        orth (numpy.ndarray): (N,) orth hashes of the texts' tokens, one text after the other.
        is_punct (numpy.ndarray): (N,) bool.
        sizes (numpy.ndarray): tokens per text.
        RETURNS (numpy.ndarray): (N,) bool, sentence starts.
        """
        period = numpy.isin(orth, self.period_orths)
        word = ~period & ~is_punct
        periods_through = numpy.cumsum(period)  # sentence-final characters up to each token
        offsets = numpy.r_[0, numpy.cumsum(sizes)[:-1]]
        text_start = numpy.repeat(offsets, sizes)
        words = numpy.flatnonzero(word)
        # the count at the previous word of the same text, or just before the text's first token
        before_text = periods_through[text_start[words]] - period[text_start[words]]
        previous = numpy.r_[-1, words[:-1]]
        same_text = previous >= text_start[words]
        base = numpy.where(same_text, periods_through[numpy.maximum(previous, 0)], before_text)
        start = numpy.zeros(len(orth), dtype=bool)
        start[words[periods_through[words] > base]] = True
        start[offsets[sizes > 0]] = True
        return start

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
