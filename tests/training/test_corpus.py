"""Sentence splitting, vectorized over all tokens of a chunk of texts, against the sentences of
each text's Doc taken one by one."""

import itertools

import pytest
import spacy

from spacy_elmo.text_corpus import corpus_files, numbered_texts
from spacy_elmo.training.corpus import SentenceSplitter

ODD = [
    "  leading spaces.",
    "trailing spaces.   ",
    "\ttab\tseparated\t",
    "a\rcarriage return",
    "Mr. Smith went home.",
    '"Quoted." Then more',
    "(Paren.)",
    "...",
    "!!!",
    "?",
    "é ü ß 中文。日本語！",
    "👍🏽 emoji",
    "http://example.com/a.b?c=d.",
    "no period",
    "'",
    "U.S. and U.K. talks",
    "x" * 300,
    " . ",
    "a\u00a0b",
    "\u200b",
    "line\u2028separator",
    "tail\n",
    "mid\n\nline",
    "One. Two. Three. Four. Five. Six. Seven. Eight words in this one sentence here now.",
]


def _reference(texts, max_length):
    """One Doc per text: its sentences without space tokens, cut into max_length pieces."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    out = []
    for i, doc in enumerate(nlp.pipe(texts)):
        for sent in doc.sents:
            words = [t.text for t in sent if not t.is_space]
            out.extend((i, words[s : s + max_length]) for s in range(0, len(words), max_length))
    return out


def _split(texts, max_length):
    splitter = SentenceSplitter("en", max_length)
    orth, lengths, text_of = splitter.split(texts)
    words = [splitter.nlp.vocab.strings[int(h)] for h in orth]
    starts = list(itertools.accumulate(lengths.tolist(), initial=0))
    return [(int(t), words[a:b]) for t, a, b in zip(text_of, starts, starts[1:])]


@pytest.mark.slow
def test_split_equals_each_texts_own_sentences():
    texts = ODD * 3 + list(reversed(ODD))
    assert _split(texts, 5) == _reference(texts, 5)
    assert _split(texts, 100) == _reference(texts, 100)


@pytest.mark.parametrize("texts", [[], [" "], ["", "  ", "\t"], [" ", "A b.", "", "c"], ["", "x"]])
def test_empty_and_blank_texts(texts):
    assert _split(texts, 3) == _reference(texts, 3)


@pytest.mark.slow
@pytest.mark.parametrize("name,n_texts", [("reuters21578.txt.gz", 20000), ("enwiki-20M.txt.gz", 3000)])
def test_real_text_splits_as_each_text_alone(shared_data, name, n_texts):
    path = shared_data / "raw" / name
    texts = [t for _, _, t in itertools.islice(numbered_texts(corpus_files(path), spacy.blank("en").vocab), n_texts)]
    assert _split(texts, 100) == _reference(texts, 100)
