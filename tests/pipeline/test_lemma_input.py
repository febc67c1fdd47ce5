"""input = "lemma": a biLM trained on lemmatized text reads each token's lemma."""

import numpy
import pytest
import spacy
from spacy.language import Language

from spacy_elmo import add_elmo, save_original

from ..helpers import tiny_bilm

LEMMAS = {"cats": "cat", "sat": "sit", "mats": "mat", "were": "be"}


@Language.component("test_lemmas")
def _lemmas(doc):
    for token in doc:
        token.lemma_ = LEMMAS.get(token.text, token.text)
    return doc


@pytest.fixture
def files(tmp_path):
    save_original(tiny_bilm(seed=8), tmp_path / "options.json", tmp_path / "weights.hdf5")
    return tmp_path / "options.json", tmp_path / "weights.hdf5"


def test_the_biLM_reads_lemmas_where_the_setting_says_so(files):
    nlp = spacy.blank("en")
    nlp.add_pipe("test_lemmas")
    add_elmo(nlp, *files, config={"input": "lemma"})
    doc = nlp("The cats sat on mats")
    expected = tiny_bilm(seed=8).embed([["The", "cat", "sit", "on", "mat"]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-6)
    as_text = spacy.blank("en")
    add_elmo(as_text, *files)
    assert not numpy.allclose(as_text("The cats sat on mats")._.elmo.layers, expected, atol=1e-3)


def test_without_lemmas_the_error_says_to_add_a_lemmatizer(files):
    nlp = spacy.blank("en")
    add_elmo(nlp, *files, config={"input": "lemma"})
    with pytest.raises(ValueError, match="lemmatizer before the elmo component"):
        nlp("The cats sat")


def test_an_unknown_input_is_refused(files):
    with pytest.raises(ValueError, match="input must be one of"):
        add_elmo(spacy.blank("en"), *files, config={"input": "lemmas"})
