"""ELMo as spaCy vectors: token/span/doc vectors and similarity through user hooks."""

import warnings

import numpy
import pytest
import spacy

from spacy_elmo import add_elmo, save_original
from spacy_elmo.pipeline.vectors import layer_weights

from ..helpers import tiny_bilm


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny")
    save_original(tiny_bilm(seed=3), folder / "options.json", folder / "weights.hdf5")
    return folder / "options.json", folder / "weights.hdf5"


def _nlp(files, vectors):
    nlp = spacy.blank("en")
    add_elmo(nlp, *files, config={"vectors": vectors})
    return nlp


def _cos(a, b):
    return float(a @ b / (numpy.linalg.norm(a) * numpy.linalg.norm(b)))


@pytest.mark.parametrize("vectors,weights", [("top", [0, 0, 1]), ("average", [1 / 3] * 3), ([0.2, 0.5, 0.3], [0.2, 0.5, 0.3])])
def test_vectors_are_the_weighted_layers(tiny_files, vectors, weights):
    nlp = _nlp(tiny_files, vectors)
    doc, other = nlp("The cat sat on the mat."), nlp("A dog barked.")
    layers = doc._.elmo.layers
    token_vectors = numpy.einsum("l,lnd->nd", numpy.asarray(weights, dtype="float32"), layers)
    numpy.testing.assert_allclose(doc[2].vector, token_vectors[2], rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(doc[1:4].vector, token_vectors[1:4].mean(0), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(doc.vector, token_vectors.mean(0), rtol=1e-5, atol=1e-6)
    assert doc.vector.shape == (16,) and doc.has_vector and doc[0].has_vector and doc[0:2].has_vector
    assert doc[0].vector_norm == pytest.approx(numpy.linalg.norm(token_vectors[0]), rel=1e-5)
    assert doc.vector_norm == pytest.approx(numpy.linalg.norm(token_vectors.mean(0)), rel=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # spaCy's W007 / W008 (no vectors) must not come
        assert doc.similarity(other) == pytest.approx(_cos(doc.vector, other.vector), rel=1e-5)
        assert doc[1].similarity(doc[5]) == pytest.approx(_cos(token_vectors[1], token_vectors[5]), rel=1e-5)
        assert doc[0:3].similarity(other[0:2]) == pytest.approx(_cos(doc[0:3].vector, other[0:2].vector), rel=1e-5)
        assert doc[1].similarity(other) == pytest.approx(_cos(token_vectors[1], other.vector), rel=1e-5)


def test_without_the_setting_spacy_vectors_stay(tiny_files):
    doc = _nlp(tiny_files, None)("The cat sat.")
    assert doc[0].vector.shape == (0,) and "vector" not in doc.user_hooks


def test_empty_doc_and_span_have_zero_vectors(tiny_files):
    nlp = _nlp(tiny_files, "top")
    doc = nlp("")
    assert doc.vector.shape == (16,) and not doc.vector.any() and not doc.has_vector
    assert nlp("Hello there")[1:1].vector.shape == (16,)


def test_bad_settings_are_explained():
    with pytest.raises(ValueError, match="'top', 'average'"):
        layer_weights("bottom", 3)
    with pytest.raises(ValueError, match="2 weights given for a biLM with 3 layers"):
        layer_weights([0.5, 0.5], 3)


@pytest.mark.slow
def test_the_same_word_in_two_senses_is_farther_apart(shared_bilm):
    """The paper's point (its Table 4: "play", and Section 5.3): the biLM's top layer separates
    word senses; the context-free token layer cannot (the same word gets the same vector)."""
    options, weights = shared_bilm / "options.json", shared_bilm / "weights.hdf5"
    top, token_layer = spacy.blank("en"), spacy.blank("en")
    add_elmo(top, options, weights, config={"vectors": "top"})
    add_elmo(token_layer, options, weights, config={"vectors": [1.0, 0.0, 0.0]})
    cases = [
        ("suit", "He wore a suit to the wedding .", "She bought a new suit for the interview .", "Do what you like , suit yourself ."),
        (
            "stick",
            "He hit the ball with a stick .",
            "She picked up a stick from the ground .",
            "Just stick to the plan and you will be fine .",
        ),
    ]
    for word, sense_a, sense_a_again, sense_b in cases:
        for nlp in (top, token_layer):
            a, a2, b = (next(t for t in nlp(text) if t.text == word) for text in (sense_a, sense_a_again, sense_b))
            same, other = a.similarity(a2), a.similarity(b)
            if nlp is top:
                assert same > other + 0.2, (word, same, other)
            else:
                assert same == pytest.approx(1.0, abs=1e-5) and other == pytest.approx(1.0, abs=1e-5)


def test_vectors_come_back_from_worker_processes(tiny_files, start_method):
    """nlp.pipe(n_process=2) rebuilds Docs from bytes, which carry doc._.elmo but not the user
    hooks: doc.vector was (0,) and similarity 0.0 there."""
    nlp = _nlp(tiny_files, "top")
    texts = ["He wore a suit to the wedding .", "She bought a new suit .", "Suit yourself ."]
    alone = [nlp(t) for t in texts]
    together = list(nlp.pipe(texts, n_process=2, batch_size=1))
    for a, b in zip(alone, together):
        assert b.vector.shape == (16,)
        numpy.testing.assert_allclose(b.vector, a.vector, atol=1e-5)
        numpy.testing.assert_allclose(b[1].vector, a[1].vector, atol=1e-5)
    assert together[0].similarity(together[1]) == pytest.approx(alone[0].similarity(alone[1]), abs=1e-5)
    assert together[0][3].similarity(together[1][4]) == pytest.approx(alone[0][3].similarity(alone[1][4]), abs=1e-5)


@pytest.mark.parametrize("weights", [[1e39, 0.0, 0.0], [float("nan"), 0.0, 1.0], [0.0, 0.0, 0.0], [1e7, 0.0, 0.0]])
def test_layer_weights_that_overflow_are_refused(weights):
    with pytest.raises(ValueError, match="finite"):
        layer_weights(weights, 3)


@pytest.mark.slow
def test_worker_processes_do_not_warn_that_the_vector_hooks_are_lost(tiny_files):
    """spaCy warns (W109) when a worker serializes a Doc with user hooks; ours come back on the main side,
    so the workers drop them first. A user's own hook is still warned about. (A process of its own: under
    pytest a forked worker's warnings land in pytest's record, not on stderr.)"""
    import subprocess
    import sys

    script = """
import sys, spacy
from spacy_elmo import add_elmo
nlp = spacy.blank("en")
add_elmo(nlp, sys.argv[1], sys.argv[2], config={"vectors": "top"})
if sys.argv[3] == "own hook":
    @spacy.Language.component("own_hook")
    def own_hook(doc):
        doc.user_hooks["mine"] = len
        return doc
    nlp.add_pipe("own_hook")
docs = list(nlp.pipe(["He wore a suit .", "Suit yourself ."], n_process=2, batch_size=1))
print(docs[0].vector.shape[0], docs[1][0].has_vector)
"""
    for case, warned in (("ours only", False), ("own hook", True)):
        run = subprocess.run([sys.executable, "-c", script, *map(str, tiny_files), case], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert run.stdout.split() == ["16", "True"]
        assert ("W109" in run.stderr) == warned, (case, run.stderr)
