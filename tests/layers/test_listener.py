"""ElmoListener.v2 and replace_listeners on a tiny pipeline built here (no shared data needed)."""

import numpy
import pytest
import spacy
import torch
from spacy.training import Example
from thinc.api import Config

from spacy_elmo.layers import get_bilm
from spacy_elmo.layers.doc_digest import doc_digest
from spacy_elmo.layers.listener import ElmoListener

from ..helpers import tiny_bilm, tiny_model_config

TAGGED = [
    ("The cat sat on the mat .", "DET NOUN VERB ADP DET NOUN PUNCT"),
    ("Dogs bark loudly !", "NOUN VERB ADV PUNCT"),
    ("A bird sings .", "DET NOUN VERB PUNCT"),
]

CONFIG = """
[nlp]
lang = "en"
pipeline = ["elmo", "tagger"]

[components]

[components.elmo]
factory = "elmo"
frozen = true

[components.tagger]
factory = "tagger"

[components.tagger.model]
@architectures = "spacy.Tagger.v2"

[components.tagger.model.tok2vec]
@architectures = "spacy-elmo.ElmoTok2Vec.v2"

[components.tagger.model.tok2vec.input_elmo]
@architectures = "spacy-elmo.ElmoListener.v2"
upstream = "elmo"
projection_dim = ${components.elmo.model.projection_dim}
n_layers = ${components.elmo.model.n_layers}

[components.tagger.model.tok2vec.input_elmo.mix]
@layers = "spacy-elmo.ScalarMix.v2"
layer_norm = true
dropout = 0.0
l2 = 0.0

[components.tagger.model.tok2vec.embed]
@architectures = "spacy.MultiHashEmbed.v2"
width = 12
attrs = ["NORM", "SHAPE"]
rows = [100, 50]
include_static_vectors = false
"""


def _nlp(frozen: bool = True, configure=None):
    """The tiny tagger of CONFIG on a tiny biLM; `configure` may edit the config first."""
    config = Config().from_str(CONFIG, interpolate=False)
    config["components"]["elmo"]["model"] = tiny_model_config()
    config["components"]["elmo"]["frozen"] = frozen
    if configure is not None:
        configure(config)
    nlp = spacy.util.load_model_from_config(Config().from_str(config.to_str()), auto_fill=True)
    get_bilm(nlp.get_pipe("elmo").model).load_state_dict(tiny_bilm(seed=4).state_dict())
    return nlp


def _examples(nlp):
    return [Example.from_dict(nlp.make_doc(text), {"tags": tags.split()}) for text, tags in TAGGED]


def _train(nlp, steps: int = 3):
    examples = _examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(steps):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    return examples


def _listener(nlp) -> ElmoListener:
    return nlp.get_pipe("tagger").model.get_ref("tok2vec").get_ref("listener")


def test_widths_follow_the_bilm_block():
    nlp = _nlp()
    listener = _listener(nlp)
    options = nlp.get_pipe("elmo").options
    assert (listener.get_dim("nO"), listener.get_dim("nL")) == (2 * options.projection_dim, options.n_layers + 1)
    tok2vec = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    assert tok2vec.get_dim("nO") == 16 + 12  # known before initialization
    assert nlp.get_pipe("elmo").listening_components == ["tagger"]


@pytest.mark.parametrize("frozen", [True, False])
def test_training_drops_the_batch_and_updates_only_what_it_should(frozen):
    nlp = _nlp(frozen)
    before = {k: v.clone() for k, v in nlp.get_pipe("elmo").bilm.state_dict().items()}
    examples = _examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    losses = {}
    for _ in range(3):
        nlp.update(examples, sgd=optimizer, drop=0.0, losses=losses)
        listener = _listener(nlp)
        assert listener._outputs is None and listener._backprop is None, "the batch is kept after backprop"
    after = nlp.get_pipe("elmo").bilm.state_dict()
    moved = any(not torch.equal(before[k], after[k]) for k in before)
    assert moved == (not frozen)
    assert losses["tagger"] > 0


def test_a_batch_the_elmo_component_did_not_see_is_refused():
    nlp = _nlp()
    examples = _train(nlp, steps=1)
    listener = _listener(nlp)
    docs = [eg.predicted for eg in examples]
    listener.receive(listener.get_batch_id(docs), [numpy.zeros((3, len(d), 16), dtype="float32") for d in docs], lambda d: [])
    with pytest.raises(ValueError, match="did not\\s+just process"):
        listener(docs[:1], is_train=True)


def test_prediction_reads_the_docs_layers_and_explains_a_missing_component():
    nlp = _nlp()
    _train(nlp)
    doc = nlp("The cat sings .")
    assert doc._.elmo is not None and len([t.tag_ for t in doc]) == 4
    without = nlp.make_doc("The cat sings .")
    with pytest.raises(ValueError, match="Put an 'elmo' component"):
        nlp.get_pipe("tagger")(without)


@pytest.mark.slow
def test_replace_listeners_gives_a_standalone_tagger_that_predicts_the_same(tmp_path):
    for frozen in (True, False):
        nlp = _nlp(frozen)
        _train(nlp)
        texts = ["The bird sat .", "Cats bark !"]
        expected = [[t.tag_ for t in doc] for doc in nlp.pipe(texts)]
        scores = nlp.get_pipe("tagger").model.predict(list(nlp.pipe(texts)))
        nlp.replace_listeners("elmo", "tagger", ["model.tok2vec.input_elmo"])
        block = nlp.config["components"]["tagger"]["model"]["tok2vec"]["input_elmo"]
        assert block["@architectures"] == "spacy-elmo.ElmoMix.v2" and block["frozen"] is frozen
        assert nlp.get_pipe("elmo").listening_components == []
        nlp.remove_pipe("elmo")
        docs = [nlp.make_doc(t) for t in texts]
        numpy.testing.assert_allclose(nlp.get_pipe("tagger").model.predict(docs)[0], scores[0], atol=1e-5)
        nlp.to_disk(tmp_path / str(frozen))
        loaded = spacy.load(tmp_path / str(frozen))
        assert [[t.tag_ for t in doc] for doc in loaded.pipe(texts)] == expected


def test_a_mix_block_with_other_widths_is_refused():
    config = Config().from_str(CONFIG, interpolate=False)
    config["components"]["elmo"]["model"] = tiny_model_config()
    config["components"]["tagger"]["model"]["tok2vec"]["input_elmo"]["mix"]["width"] = 10
    with pytest.raises(ValueError, match="width = 10, but the biLM gives 16"):
        spacy.util.load_model_from_config(Config().from_str(config.to_str()), auto_fill=True)


def test_doc_digest_tells_tokens_and_sentences_apart():
    from spacy.attrs import ORTH, SENT_START

    nlp = spacy.blank("en")
    a, b, c = nlp("a b c"), nlp("a bc"), nlp("a b c")
    assert doc_digest([a]) == doc_digest([c]) != doc_digest([b])
    assert doc_digest([a, b]) != doc_digest([b, a])
    c[2].is_sent_start = True
    assert doc_digest([a]) == doc_digest([c]) and doc_digest([a], (ORTH, SENT_START)) != doc_digest([c], (ORTH, SENT_START))


def _nlp_v2(input_elmo: bool, output_elmo: bool, same_mix: bool = False):
    """The tiny tagger with ElmoTok2Vec.v2: an encoder of width 12, ELMo at its input, output or both."""

    def configure(config: Config) -> None:
        tok2vec = config["components"]["tagger"]["model"]["tok2vec"]
        listener = tok2vec.pop("input_elmo")
        tok2vec["@architectures"] = "spacy-elmo.ElmoTok2Vec.v2"
        tok2vec["encode"] = {
            "@architectures": "spacy.MaxoutWindowEncoder.v2",
            "width": 12,
            "depth": 1,
            "window_size": 1,
            "maxout_pieces": 2,
        }
        if input_elmo:
            tok2vec["input_elmo"] = listener
        if output_elmo:
            tok2vec["output_elmo"] = {**listener, "mix": {**listener["mix"], "layer_norm": same_mix}}

    return _nlp(configure=configure)


@pytest.mark.parametrize("input_elmo,output_elmo", [(True, True), (False, True), (True, False)])
def test_tok2vec_v2_joins_elmo_at_the_input_the_output_or_both(input_elmo, output_elmo):
    from spacy_elmo.layers.scalar_mix import mix_weights

    nlp = _nlp_v2(input_elmo, output_elmo)
    tok2vec = nlp.get_pipe("tagger").model.get_ref("tok2vec")
    assert tok2vec.get_dim("nO") == 12 + (16 if output_elmo else 0)
    listeners = nlp.get_pipe("elmo").listeners
    assert len(listeners) == input_elmo + output_elmo
    _train(nlp, steps=4)
    assert all(listener._outputs is None for listener in listeners)
    docs = list(nlp.pipe(["The bird sat .", "Cats bark !"]))
    vectors = tok2vec.predict(docs)
    assert [v.shape for v in vectors] == [(4, tok2vec.get_dim("nO")), (3, tok2vec.get_dim("nO"))]
    mixes = [mix_weights(node)[0] for node in tok2vec.walk() if node.name == "scalar_mix"]
    assert len(mixes) == len(listeners)
    if input_elmo and output_elmo:
        # two mixes with their own weights (after 4 Adam steps their values can agree closely)
        first, second = [node for node in tok2vec.walk() if node.name == "scalar_mix"]
        before = second.get_param("w").copy()
        first.set_param("w", first.get_param("w") + 1.0)
        numpy.testing.assert_array_equal(second.get_param("w"), before)
        with pytest.raises(ValueError, match="must equal"):
            # without ELMo at the input, the embedding goes into the encoder as it is
            config = nlp.config.copy()
            config["components"]["tagger"]["model"]["tok2vec"].pop("input_elmo")
            config["components"]["tagger"]["model"]["tok2vec"]["embed"]["width"] = 10
            spacy.util.load_model_from_config(config, auto_fill=True)


@pytest.mark.slow
def test_tok2vec_v2_replace_listeners_keeps_both_mixes(tmp_path):
    nlp = _nlp_v2(True, True, same_mix=True)
    _train(nlp)
    texts = ["The bird sat .", "Cats bark !"]
    scores = nlp.get_pipe("tagger").model.predict(list(nlp.pipe(texts)))
    paths = ["model.tok2vec.input_elmo", "model.tok2vec.output_elmo"]
    nlp.replace_listeners("elmo", "tagger", paths)
    nlp.remove_pipe("elmo")
    docs = [nlp.make_doc(t) for t in texts]
    numpy.testing.assert_allclose(nlp.get_pipe("tagger").model.predict(docs)[0], scores[0], atol=1e-5)
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    numpy.testing.assert_allclose(loaded.get_pipe("tagger").model.predict(docs)[0], scores[0], atol=1e-5)
    different = _nlp_v2(True, True, same_mix=False)
    _train(different, steps=1)
    with pytest.raises(ValueError, match="does not say which one"):
        different.replace_listeners("elmo", "tagger", paths)


def test_tok2vec_v2_needs_some_elmo():
    from spacy_elmo.layers.listener import build_elmo_tok2vec_v2

    with pytest.raises(ValueError, match="spacy.Tok2Vec.v2"):
        build_elmo_tok2vec_v2(embed=None)  # type: ignore[arg-type]


def test_a_config_with_elmo_tok2vec_v1_builds_the_same_model_and_replaces_its_listener():
    """Configs written before ElmoTok2Vec.v2 became the shipped one (v1, its listener under `elmo`)
    give the same model, with the same weights the same predictions, and replace_listeners works."""
    v1_text = CONFIG.replace("ElmoTok2Vec.v2", "ElmoTok2Vec.v1").replace("tok2vec.input_elmo", "tok2vec.elmo")
    docs_texts = ["The bird sat .", "Cats bark !"]
    predictions = []
    for text in (CONFIG, v1_text):
        config = Config().from_str(text, interpolate=False)
        config["components"]["elmo"]["model"] = tiny_model_config()
        nlp = spacy.util.load_model_from_config(Config().from_str(config.to_str()), auto_fill=True)
        get_bilm(nlp.get_pipe("elmo").model).load_state_dict(tiny_bilm(seed=4).state_dict())
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc("A b"), {"tags": ["X", "Y"]})])
        predictions.append((nlp, nlp.get_pipe("tagger").model.predict(list(nlp.pipe(docs_texts)))))
    (v2_nlp, v2_scores), (v1_nlp, v1_scores) = predictions
    assert [n.name for n in v1_nlp.get_pipe("tagger").model.walk()] == [n.name for n in v2_nlp.get_pipe("tagger").model.walk()]
    v1_nlp.get_pipe("tagger").model.from_bytes(v2_nlp.get_pipe("tagger").model.to_bytes())
    numpy.testing.assert_allclose(v1_nlp.get_pipe("tagger").model.predict(list(v1_nlp.pipe(docs_texts)))[0], v2_scores[0], atol=1e-6)
    v1_nlp.replace_listeners("elmo", "tagger", ["model.tok2vec.elmo"])
    assert v1_nlp.config["components"]["tagger"]["model"]["tok2vec"]["elmo"]["@architectures"] == "spacy-elmo.ElmoMix.v2"
