import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.layers.segments import Segment, batches_by_length, doc_segments, punct_sentence_spans


def _doc(words, sent_starts=None):
    return Doc(spacy.blank("en").vocab, words=words, sent_starts=sent_starts)


@pytest.mark.parametrize(
    "words,spans",
    [
        (["Hello", "world", ".", "Bye", "!", "Ok"], [(0, 3), (3, 5), (5, 6)]),
        # closing quotes and brackets stay with the sentence they close; "?!" runs end one sentence
        (["He", "said", "no", ".", '"', "Why", "?", "!", ")", "Then"], [(0, 5), (5, 9), (9, 10)]),
        (["No", "end", "mark"], [(0, 3)]),
        (["Ends", "."], [(0, 2)]),
        (["1996-08-22", "BRUSSELS", "3.5", "%", "U.S.", "rose"], [(0, 6)]),  # dots inside tokens do not count
        ([], []),
    ],
)
def test_punct_sentence_spans(words, spans):
    assert punct_sentence_spans(words) == spans


def test_doc_boundaries_win_over_punctuation_and_windows_cut_long_sentences():
    words = ["a", ".", "b", "c", "d", "e", "f", "."]
    annotated = _doc(words, sent_starts=[True, False, False, True, False, False, False, False])
    plain = _doc(words)
    assert doc_segments([annotated], 4, punct_sentences=True) == [Segment(0, 0, 3), Segment(0, 3, 7), Segment(0, 7, 8)]
    assert doc_segments([plain], 4) == [Segment(0, 0, 4), Segment(0, 4, 8)]
    assert doc_segments([plain], 4, punct_sentences=True) == [Segment(0, 0, 2), Segment(0, 2, 6), Segment(0, 6, 8)]
    assert not plain.has_annotation("SENT_START")  # the Doc is left as it was


@pytest.mark.slow
def test_segments_cover_every_token_once_and_batches_keep_every_segment():
    docs = [_doc(["x"] * n + ["."] * (n % 2)) for n in (0, 1, 7, 30, 2)]
    segments = doc_segments(docs, 5, punct_sentences=True)
    for i, doc in enumerate(docs):
        covered = sorted(t for s in segments if s.doc == i for t in range(s.start, s.end))
        assert covered == list(range(len(doc)))
    batches = list(batches_by_length(segments, 3))
    assert sorted(s for b in batches for s in b) == sorted(segments)
    assert all(len(b) <= 3 for b in batches)
