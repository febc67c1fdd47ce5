"""Cutting Docs into the token sequences the biLM runs over, and batching them by length.

How Docs become sequences is a registered function (`@elmo_sequences`, like spacy-transformers'
`@span_getters`), set in the `sequences` block of `spacy-elmo.BiLM.v2`.
"""

import functools
import unicodedata
from typing import Callable, Iterator, List, NamedTuple, Sequence, Tuple

import catalogue
from spacy.pipeline import Sentencizer
from spacy.tokens import Doc
from spacy.util import registry

SENTENCE_FINAL_PUNCT = frozenset(Sentencizer.default_punct_chars)

if not hasattr(registry, "elmo_sequences"):
    registry.elmo_sequences = catalogue.create("spacy", "elmo_sequences", entry_points=True)  # type: ignore[attr-defined]


class Segment(NamedTuple):
    """Tokens [start, end) of docs[doc]."""

    doc: int
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


SequenceGetter = Callable[[Sequence[Doc]], List[Segment]]


@registry.elmo_sequences("spacy-elmo.sentences.v1")  # type: ignore[attr-defined]
def configure_sentences(window_size: int = 128, punct_sentences: bool = False) -> SequenceGetter:
    """Sentences where a Doc has sentence boundaries, else windows of `window_size` tokens (see
    `doc_segments`).

    window_size (int): the most tokens in one sequence.
    punct_sentences (bool): split Docs without sentence boundaries after sentence-final punctuation.
    """
    if window_size < 1:
        raise ValueError(f"window_size must be >= 1, got {window_size}")
    return functools.partial(doc_segments, window_size=window_size, punct_sentences=punct_sentences)


def doc_segments(docs: Sequence[Doc], window_size: int, punct_sentences: bool = False) -> List[Segment]:
    """Sentences where a Doc has sentence boundaries, else windows of `window_size` tokens;
    sentences longer than a window are cut into windows too. Empty Docs give no segment.

    docs (Sequence[Doc]): the batch.
    window_size (int): the most tokens in one segment.
    punct_sentences (bool): split Docs without sentence boundaries after sentence-final
        punctuation (the rule of spaCy's sentencizer), without setting boundaries on the Doc.
    RETURNS (List[Segment]): segments covering every token exactly once.
    """
    if window_size < 1:
        raise ValueError(f"window_size must be >= 1, got {window_size}")
    segments: List[Segment] = []
    for i, doc in enumerate(docs):
        if len(doc) == 0:
            continue
        if doc.has_annotation("SENT_START"):
            spans = [(sent.start, sent.end) for sent in doc.sents]
        elif punct_sentences:
            spans = punct_sentence_spans([token.text for token in doc])
        else:
            spans = [(0, len(doc))]
        for start, end in spans:
            for s in range(start, end, window_size):
                segments.append(Segment(i, s, min(s + window_size, end)))
    return segments


def punct_sentence_spans(words: Sequence[str]) -> List[Tuple[int, int]]:
    """[start, end) of each sentence: a sentence ends after a run of sentence-final punctuation
    and any punctuation that follows it (closing quotes, brackets), as spaCy's sentencizer does."""
    spans: List[Tuple[int, int]] = []
    start, seen_end = 0, False
    for i, word in enumerate(words):
        is_end = word in SENTENCE_FINAL_PUNCT
        if seen_end and not is_end and not _is_punct(word):
            spans.append((start, i))
            start, seen_end = i, False
        elif is_end:
            seen_end = True
    if start < len(words):
        spans.append((start, len(words)))
    return spans


def _is_punct(word: str) -> bool:
    return bool(word) and all(unicodedata.category(char).startswith("P") for char in word)


def batches_by_length(segments: Sequence[Segment], batch_size: int) -> Iterator[List[Segment]]:
    """Group segments of similar length, at most `batch_size` per group, to keep padding low."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    ordered = sorted(segments, key=lambda seg: seg.length)
    for i in range(0, len(ordered), batch_size):
        yield ordered[i : i + batch_size]
