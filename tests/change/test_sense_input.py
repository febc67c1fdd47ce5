"""What the senses are clustered from by default (the word's own top layer, its written forms' directions out) and
what the changed usages are ranked by (the context-only vectors, forms out), each checked against the same
vectors computed by hand from the index."""

import numpy
import pytest

from spacy_elmo.change.measures import _unit
from spacy_elmo.change.sense_input import DEFAULT_SENSES, SenseInput, without_forms
from spacy_elmo.change.senses import EXAMPLES, witness, word_evidence
from spacy_elmo.change.wug import build_wug_index
from spacy_elmo.pipeline.loading import load_elmo_pipeline
from spacy_elmo.usages import UsageIndex

from .test_wug_route import bilm_and_wug


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sense_input")
    bilm, wug = bilm_and_wug(tmp)
    nlp = load_elmo_pipeline(bilm)
    for g in "12":
        build_wug_index(nlp, wug, tmp / f"all{g}", model=bilm, grouping=g, all_layers=True, progress=False, log=lambda _: None)
    return UsageIndex().from_disk(tmp / "all1"), UsageIndex().from_disk(tmp / "all2")


def _by_hand(a, b, rows, layer):
    """The rows' vectors of `layer`, A's then B's, with the directions of their written forms (lowercase) out."""
    views = (a.with_layer(layer), b.with_layer(layer))
    vectors = numpy.concatenate([numpy.asarray(v.vectors[r], dtype=numpy.float64) for v, r in zip(views, rows)])
    forms = [index.usage(int(r)).text.lower() for index, side in zip((a, b), rows) for r in side]
    return without_forms(vectors, forms), forms


def test_senses_read_the_words_own_top_layer_and_the_witness_its_context_only_vectors(indexes):
    a, b = indexes
    rows = (numpy.sort(a.rows_of("plane")), numpy.sort(b.rows_of("plane")))
    inputs = SenseInput(a, b)
    assert DEFAULT_SENSES == "top" and "the word's own vectors, layer top" in inputs.describe()
    vectors, bags, witness_vectors = inputs.word(rows, "plane")
    top, forms = _by_hand(a, b, rows, "top")
    context, _ = _by_hand(a, b, rows, "context:top")
    assert "planes" in forms  # two written forms (too few of "planes" here to move a direction: without_forms' tests)
    numpy.testing.assert_allclose(vectors, top, atol=1e-12)
    numpy.testing.assert_allclose(witness_vectors, context, atol=1e-12)
    assert len(bags) == len(forms)
    # asked of the context-only vectors, they are both the senses' input and the witness's (None: the senses' own)
    vectors, _, witness_vectors = SenseInput(a, b, "context:top").word(rows, "plane")
    numpy.testing.assert_allclose(vectors, context, atol=1e-12)
    assert witness_vectors is None


def test_the_changed_usages_follow_the_witness_vectors_given():
    rng = numpy.random.default_rng(0)
    a, b = rng.normal(size=(6, 8)), rng.normal(size=(5, 8))
    other = rng.normal(size=(11, 8))
    ev = word_evidence(a, b, sense_vectors=numpy.concatenate([a, b]), witness_vectors=other, draws=10)
    typical = witness(_unit(other), 6)  # the usages listed: the first EXAMPLES by it
    assert [r for r, _ in ev.changed["A"]] == list(numpy.argsort(-typical[:6], kind="stable")[:EXAMPLES])
    assert [c for _, c in ev.changed["B"]] == pytest.approx(sorted(typical[6:], reverse=True)[:EXAMPLES])
    assert [r for r, _ in word_evidence(a, b, draws=10).changed["A"]] != [r for r, _ in ev.changed["A"]]
    with pytest.raises(ValueError, match="witness vectors"):
        word_evidence(a, b, witness_vectors=other[:10], draws=10)
