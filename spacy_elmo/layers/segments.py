"""Cutting Docs into the token sequences the biLM runs over, and batching them by length."""
from typing import Iterator, List, NamedTuple, Sequence

from spacy.tokens import Doc


class Segment(NamedTuple):
    """Tokens [start, end) of docs[doc]."""

    doc: int
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


def doc_segments(docs: Sequence[Doc], window_size: int) -> List[Segment]:
    """Sentences where a Doc has sentence boundaries, else windows of `window_size` tokens;
    sentences longer than a window are cut into windows too. Empty Docs give no segment.

    docs (Sequence[Doc]): the batch.
    window_size (int): the most tokens in one segment.
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
        else:
            spans = [(0, len(doc))]
        for start, end in spans:
            for s in range(start, end, window_size):
                segments.append(Segment(i, s, min(s + window_size, end)))
    return segments


def batches_by_length(segments: Sequence[Segment], batch_size: int) -> Iterator[List[Segment]]:
    """Group segments of similar length, at most `batch_size` per group, to keep padding low."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    ordered = sorted(segments, key=lambda seg: seg.length)
    for i in range(0, len(ordered), batch_size):
        yield ordered[i : i + batch_size]
