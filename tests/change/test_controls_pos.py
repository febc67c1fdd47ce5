"""Control words matched by part of speech where the corpora are tagged (`--pos`): with a tagger trained on the
shared UD English-EWT, a noun's controls are nouns; without --pos they are matched by frequency alone, which draws
adverbs and verbs for a noun (the researcher's case), and a note says so."""

import random

import pytest
import spacy
from spacy.lang.en.stop_words import STOP_WORDS

from spacy_elmo.change.controls import count_tagged
from spacy_elmo.change.verdict import count_words, draw_controls

from ..usages.test_trained_tagger import ewt_morphologizer

NOUNS = ["apple", "table", "garden", "window", "river", "doctor", "teacher", "letter"]
OTHERS = ["quickly", "slowly", "often", "never", "carefully", "happily", "suddenly", "always"]


def _corpus(rng: random.Random, n: int) -> list:
    """Sentences in which the target "house", each noun and each adverb occur about as often (the words of the
    frame in every sentence: far more often)."""
    lines = []
    for _ in range(n):
        noun, other = rng.choice(NOUNS + ["house"]), rng.choice(OTHERS)
        lines.append(f"The {noun} was {other} seen by the old man." if rng.random() < 0.5 else f"She {other} walked to the {noun}.")
    return lines


@pytest.mark.slow
def test_a_nouns_controls_are_nouns_where_the_corpora_are_tagged(shared_data):
    nlp = ewt_morphologizer(shared_data)
    a, b = _corpus(random.Random(1), 400), _corpus(random.Random(2), 400)
    plain = [count_words(side) for side in (a, b)]
    by_frequency = draw_controls(plain[0], plain[1], ["house"], 8, 0, exclude=STOP_WORDS, min_count=5)
    assert set(by_frequency) & set(OTHERS)  # frequency alone: adverbs stand in for a noun
    tagged = [count_tagged(nlp, side, "NOUN") for side in (a, b)]
    assert set(NOUNS) <= set(tagged[0]) and not set(OTHERS) & set(tagged[0])
    by_pos = draw_controls(tagged[0], tagged[1], ["house"], 8, 0, exclude=STOP_WORDS, min_count=5)
    assert by_pos and set(by_pos) <= set(NOUNS) | {"man"}


def test_controls_by_frequency_alone_are_said_to_be_so(tmp_path):
    from spacy_elmo.change.controls import corpus_controls
    from spacy_elmo.change.run import ChangeSettings

    lines = _corpus(random.Random(3), 200)
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("\n\n".join(lines) + "\n", encoding="utf8")
    notes, said = [], []
    drawn = corpus_controls(
        spacy.blank("en"), [tmp_path / "a.txt", tmp_path / "b.txt"], ["house"], ChangeSettings(controls=4), said.append, notes
    )
    assert len(drawn) == 4 and "house" not in drawn and said and said[0].startswith("Control words (4, written forms")
    assert len(notes) == 1 and "by frequency alone, not by part of speech" in notes[0] and "--pos NOUN" in notes[0]
