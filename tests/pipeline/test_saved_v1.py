"""A pipeline saved by the release before BiLM.v2 / ElmoListener.v2 (tests/fixtures/pipeline_v1)
loads and computes what that release computed."""

from pathlib import Path

import numpy
import pytest
import spacy

from spacy_elmo.layers import get_bilm

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pipeline_v1"
TEXTS = ["The cat sat on the mat.", "Zürich 🙂 is nice! Really? Yes.", ""]


def test_a_v1_pipeline_loads_and_gives_identical_layers_and_tags():
    nlp = spacy.load(FIXTURE / "pipeline")
    assert nlp.config["components"]["elmo"]["model"]["@architectures"] == "spacy-elmo.BiLM.v1"
    expected = numpy.load(FIXTURE / "expected.npz")
    elmo = nlp.get_pipe("elmo")
    # its own block's runtime settings stay in force
    assert elmo.model.attrs["batch_size"] == 3 and get_bilm(elmo.model).cache_size == 100
    for i, doc in enumerate(nlp.pipe(TEXTS)):
        if len(doc):
            # equal up to float32 rounding: the order of BLAS sums depends on the thread count
            numpy.testing.assert_allclose(doc._.elmo.layers, expected[f"layers_{i}"], rtol=0, atol=2e-6)
        assert [t.tag_ for t in doc] == expected[f"tags_{i}"].tolist()


@pytest.mark.slow
def test_a_v1_pipeline_saved_again_loads_the_same(tmp_path):
    nlp = spacy.load(FIXTURE / "pipeline")
    nlp.to_disk(tmp_path / "again")
    again = spacy.load(tmp_path / "again")
    doc, doc_again = nlp(TEXTS[1]), again(TEXTS[1])
    numpy.testing.assert_array_equal(doc._.elmo.layers, doc_again._.elmo.layers)
    assert [t.tag_ for t in doc] == [t.tag_ for t in doc_again]
