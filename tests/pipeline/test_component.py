"""The `elmo` component: outputs, segmentation, set-up routes and serialization."""

import subprocess
import sys
import warnings

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc, DocBin
from thinc.api import Config

from spacy_elmo import ElmoFormatError, add_elmo, load_original, save_original
from spacy_elmo.pipeline import ElmoData

from ..helpers import tiny_bilm, tiny_model_config

TEXT = "The cat sat on the mat. It was 🙂 happy!  Zürich, 日本語 and naïve words.\n\nA very" + " long" * 5


@pytest.fixture
def elmo_files(tmp_path):
    bilm = tiny_bilm(seed=11)
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    return tmp_path / "options.json", tmp_path / "weights.hdf5"


@pytest.fixture
def nlp(elmo_files):
    nlp = spacy.blank("en")
    add_elmo(nlp, *elmo_files, model_config={"window_size": 8})
    return nlp


def test_sentences_run_separately_and_match_the_bilm(elmo_files):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    add_elmo(nlp, *elmo_files)
    doc = nlp(TEXT)
    assert len(list(doc.sents)) > 2
    bilm = load_original(*elmo_files)
    expected = bilm.embed([[t.text for t in sent] for sent in doc.sents])
    assert doc._.elmo.layers.shape == (3, len(doc), 16)
    for sent, layers in zip(doc.sents, expected):
        numpy.testing.assert_allclose(doc._.elmo.layers[:, sent.start : sent.end], layers, atol=1e-5)
    numpy.testing.assert_array_equal(doc[3]._.elmo, doc._.elmo.layers[:, 3])


def test_docs_without_sentences_run_in_windows(nlp, elmo_files):
    doc = nlp(TEXT)
    assert not doc.has_annotation("SENT_START")
    words = [t.text for t in doc]
    windows = [words[i : i + 8] for i in range(0, len(words), 8)]
    expected = numpy.concatenate(load_original(*elmo_files).embed(windows), axis=1)
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)


def test_batch_of_docs_equals_docs_alone(nlp):
    texts = [TEXT, "", "Short one.", "   ", TEXT[::-1]]
    docs = list(nlp.pipe(texts, batch_size=3))
    for text, doc in zip(texts, docs):
        numpy.testing.assert_allclose(doc._.elmo.layers, nlp(text)._.elmo.layers, atol=1e-5)


def test_odd_inputs(nlp):
    empty = nlp("")
    assert empty._.elmo.layers.shape == (3, 0, 16)
    for text in ["   ", "\n\n\t", "🙂" * 40, "a" * 500, "\u200b\u0301 \ufeff", "Ελληνικά العربية हिन्दी"]:
        doc = nlp(text)
        assert doc._.elmo.layers.shape == (3, len(doc), 16)
        assert numpy.isfinite(doc._.elmo.layers).all()
    words = ["word"] * 3000
    huge = nlp(Doc(nlp.vocab, words=words))
    assert huge._.elmo.layers.shape == (3, 3000, 16)
    # Windows of 8 identical tokens: every window gives the same vectors.
    numpy.testing.assert_allclose(huge._.elmo.layers[:, :8], huge._.elmo.layers[:, 8:16], atol=1e-6)


@pytest.mark.slow
def test_float16_storage(elmo_files):
    nlp = spacy.blank("en")
    add_elmo(nlp, *elmo_files, config={"dtype": "float16"})
    doc = nlp(TEXT)
    assert doc._.elmo.layers.dtype == numpy.float16
    with pytest.raises(ValueError, match="dtype"):
        spacy.blank("en").add_pipe("elmo", config={"dtype": "int8"})


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_docbin_round_trip(elmo_files, dtype):
    nlp = spacy.blank("en")
    add_elmo(nlp, *elmo_files, config={"dtype": dtype})
    docs = [nlp(TEXT), nlp("")]
    data = DocBin(store_user_data=True, docs=docs).to_bytes()
    restored = list(DocBin().from_bytes(data).get_docs(nlp.vocab))
    for doc, back in zip(docs, restored):
        assert isinstance(back._.elmo, ElmoData)
        assert back._.elmo.layers.dtype == numpy.dtype(dtype)
        numpy.testing.assert_array_equal(back._.elmo.layers, doc._.elmo.layers)


def test_to_disk_from_disk_keeps_weights_inside_and_never_unpickles(nlp, elmo_files, tmp_path, monkeypatch):
    expected = nlp(TEXT)._.elmo.layers
    nlp.to_disk(tmp_path / "pipeline")
    for path in elmo_files:
        path.unlink()  # no reference back to the original files
    assert "weights.hdf5" not in (tmp_path / "pipeline" / "config.cfg").read_text()

    def refuse(*args, **kwargs):
        raise AssertionError("torch.load must not be used to read a pipeline")

    monkeypatch.setattr(torch, "load", refuse)
    loaded = spacy.load(tmp_path / "pipeline")
    numpy.testing.assert_array_equal(loaded(TEXT)._.elmo.layers, expected)


def test_to_bytes_from_bytes(nlp):
    expected = nlp(TEXT)._.elmo.layers
    other = spacy.blank("en")
    other.add_pipe("elmo", config={"model": nlp.config["components"]["elmo"]["model"]})
    assert numpy.abs(other(TEXT)._.elmo.layers - expected).max() > 1e-3  # random weights
    other.from_bytes(nlp.to_bytes())
    numpy.testing.assert_array_equal(other(TEXT)._.elmo.layers, expected)


def test_saved_weights_must_match_the_config(nlp):
    data = nlp.to_bytes()
    other = spacy.blank("en")
    model = dict(nlp.config["components"]["elmo"]["model"])
    model["projection_dim"] = 6
    other.add_pipe("elmo", config={"model": model})
    with pytest.raises(ElmoFormatError, match="projection_dim"):
        other.from_bytes(data)


CONFIG = """
[nlp]
lang = "en"
pipeline = ["elmo"]

[components]

[components.elmo]
factory = "elmo"

[initialize]

[initialize.components]

[initialize.components.elmo]
options_file = ${paths.options}
weights_file = ${paths.weights}

[paths]
options = null
weights = null
"""


def _config(**overrides) -> Config:
    config = Config().from_str(CONFIG, overrides=overrides)
    config["components"]["elmo"]["model"] = tiny_model_config(window_size=8)
    return config


def test_config_file_route_loads_weights_at_initialize(nlp, elmo_files):
    options, weights = elmo_files
    config = _config(**{"paths.options": str(options), "paths.weights": str(weights)})
    from_config = spacy.util.load_model_from_config(config, auto_fill=True)
    from_config.initialize()
    numpy.testing.assert_allclose(from_config(TEXT)._.elmo.layers, nlp(TEXT)._.elmo.layers, atol=1e-6)


def test_initialize_rejects_mismatched_or_missing_files(elmo_files, tmp_path):
    options, weights = elmo_files
    tiny_bilm(projection_dim=6).options.to_file(tmp_path / "other.json")
    for overrides, message in [
        ({"paths.options": str(tmp_path / "other.json"), "paths.weights": str(weights)}, "differ from the component"),
        ({"paths.options": str(options), "paths.weights": str(tmp_path / "missing.hdf5")}, "missing.hdf5"),
        ({"paths.options": str(options), "paths.weights": None}, "no weights_file"),
    ]:
        config = _config(**overrides)
        pipeline = spacy.util.load_model_from_config(config, auto_fill=True)
        with pytest.raises((ElmoFormatError, ValueError), match=message):
            pipeline.initialize()


def test_plain_add_pipe_builds_a_random_small_bilm():
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo")
    assert (elmo.options.cell_dim, elmo.options.projection_dim, elmo.options.n_highway) == (1024, 128, 1)
    assert elmo.model.get_dim("nO") == 256
    with pytest.warns(UserWarning, match="random weights"):
        doc = nlp("Random weights still give finite vectors.")
    assert doc._.elmo.layers.shape == (3, len(doc), 256)


def test_fixture_through_the_pipeline(elmo_fixture):
    nlp = spacy.blank("en")
    add_elmo(nlp, elmo_fixture / "options.json", elmo_fixture / "lm_weights.hdf5")
    words = "The U.S. Centers for Disease Control and Prevention initially advised school systems .".split()
    doc = nlp(Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * (len(words) - 1)))
    expected = load_original(elmo_fixture / "options.json", elmo_fixture / "lm_weights.hdf5").embed([words])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)


def test_elmo_data_validates():
    with pytest.raises(ValueError, match="3d"):
        ElmoData(numpy.zeros((2, 3), dtype="float32"))
    with pytest.raises(ValueError, match="float32 or float16"):
        ElmoData(numpy.zeros((2, 3, 4), dtype="float64"))


def test_pipe_with_two_processes(nlp, start_method):
    texts = [f"Text number {i}. It has two sentences." for i in range(12)] + [""]
    together = list(nlp.pipe(texts, n_process=2, batch_size=4))
    for text, doc in zip(texts, together):
        assert isinstance(doc._.elmo, ElmoData)
        # workers may use another thread count, hence another float summation order
        numpy.testing.assert_allclose(doc._.elmo.layers, nlp(text)._.elmo.layers, atol=1e-5)


@pytest.mark.slow
def test_batch_size_and_token_cache_are_component_settings(tmp_path):
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"model": tiny_model_config(window_size=3), "batch_size": 2, "token_cache_size": 7})
    assert elmo.model.attrs["batch_size"] == 2 and elmo.bilm.cache_size == 7
    layers = nlp("a b c d e f g h").__getattribute__("_").elmo.layers
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components": {"elmo": {"batch_size": 5}}})
    assert loaded.get_pipe("elmo").model.attrs["batch_size"] == 5, "the loaded config wins over the saved attrs"
    numpy.testing.assert_allclose(loaded("a b c d e f g h")._.elmo.layers, layers, atol=1e-6)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        spacy.blank("en").add_pipe("elmo", config={"batch_size": 0})


def test_one_set_of_defaults_the_released_small_size():
    from spacy_elmo.bilm import ElmoOptions
    from spacy_elmo.layers.bilm_model import build_bilm_model_v2, build_bilm_model_v3

    elmo = spacy.blank("en").add_pipe("elmo")
    assert elmo.options == ElmoOptions()
    assert (ElmoOptions().cell_dim, ElmoOptions().projection_dim, ElmoOptions().n_highway) == (1024, 128, 1)
    import inspect

    v3 = inspect.signature(build_bilm_model_v3).parameters
    assert {name: v3[name].default for name in ElmoOptions.names()} == ElmoOptions.defaults()
    # v2 is the UTF-8 biLM: the learned-input settings are v3's alone
    v2 = inspect.signature(build_bilm_model_v2).parameters
    assert {name: v2[name].default for name in ElmoOptions.utf8_names()} == {
        name: value for name, value in ElmoOptions.defaults().items() if name in ElmoOptions.utf8_names()
    }
    assert not {"char_vocab", "word_dim", "n_words"} & set(v2)


def test_option_differences_are_named():
    from spacy_elmo.bilm import ElmoFormatError, ElmoOptions

    small, other = ElmoOptions(), ElmoOptions(projection_dim=64, n_characters=261, filters=((1, 4),))
    assert small.differences(other) == [
        "projection_dim 128 vs 64",
        "filters [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]] vs [[1, 4]]",
    ]
    with pytest.raises(ElmoFormatError, match="^It differs: projection_dim 128 vs 64, filters .* Fix it.$"):
        small.check_matches(other, "It differs", "Fix it.")
    small.check_matches(ElmoOptions(n_characters=261), "never", "raised")


@pytest.mark.slow
def test_a_random_biLM_is_never_silent(elmo_files, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"model": tiny_model_config()})
    with pytest.warns(UserWarning, match="random weights"):
        nlp.initialize()
    with pytest.warns(UserWarning, match="random weights"):
        spacy.blank("en").add_pipe("elmo", config={"model": tiny_model_config()})(Doc(nlp.vocab, words=["a"]))
    # Saved random, loaded random: still said.
    nlp.to_disk(tmp_path / "random")
    with pytest.warns(UserWarning, match="random weights"):
        spacy.load(tmp_path / "random")("The cat.")
    # Loaded weights, or a pipeline saved with them: nothing to say.
    loaded = spacy.blank("en")
    add_elmo(loaded, *elmo_files)
    loaded.to_disk(tmp_path / "loaded")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded("The cat.")
        spacy.load(tmp_path / "loaded")("The cat.")


def test_a_truncated_model_file_is_named(nlp, tmp_path):
    nlp.to_disk(tmp_path / "p")
    model = tmp_path / "p" / "elmo" / "model"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    with pytest.raises(ElmoFormatError, match=r"elmo[/\\]model .*truncated or damaged"):
        spacy.load(tmp_path / "p")


@pytest.mark.slow
def test_docbin_reads_elmo_data_in_a_fresh_process(nlp, tmp_path):
    """The reader never built an elmo component: decoding the data registers doc._.elmo."""
    doc = nlp("The cat sat.")
    DocBin(store_user_data=True, docs=[doc]).to_disk(tmp_path / "d.spacy")
    numpy.save(tmp_path / "expected.npy", doc._.elmo.layers)
    script = (
        "import sys, numpy, spacy; from spacy.tokens import DocBin\n"
        "import spacy_elmo\n"
        f"doc = next(DocBin().from_disk({str(tmp_path / 'd.spacy')!r}).get_docs(spacy.blank('en').vocab))\n"
        f"numpy.testing.assert_array_equal(doc._.elmo.layers, numpy.load({str(tmp_path / 'expected.npy')!r}))\n"
        "print(doc[1]._.elmo.shape)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "(3, 16)"


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.1, 0.01])
def test_lr_scale_scales_the_fine_tuned_biLMs_steps(elmo_files, scale):
    from thinc.api import Adam

    def one_step(lr_scale: float) -> dict:
        nlp = spacy.blank("en")
        elmo = add_elmo(nlp, *elmo_files, config={"frozen": False, "lr_scale": lr_scale})
        before = {name: p.detach().clone() for name, p in elmo.bilm.named_parameters()}
        docs = [nlp.make_doc("The cat sat on the mat ."), nlp.make_doc("A dog !")]
        layers, backprop = elmo.model.begin_update(docs)
        backprop([numpy.ones_like(x) for x in layers])
        elmo.finish_update(Adam(0.001, L2=0.01))
        return {name: (p.detach() - before[name]).numpy() for name, p in elmo.bilm.named_parameters()}

    full, scaled = one_step(1.0), one_step(scale)
    moved = [name for name, step in full.items() if numpy.abs(step).max() > 0]
    assert len(moved) > len(full) // 2, "the gradient reached the biLM's parameters"
    for name in moved:
        # Adam's first step is about lr per weight; float32 rounds weights near 1 to 6e-8
        assert numpy.abs(full[name]).max() > 5e-4
        numpy.testing.assert_allclose(scaled[name], scale * full[name], rtol=1e-2, atol=2e-7, err_msg=name)


def test_lr_scale_must_be_positive():
    with pytest.raises(ValueError, match="lr_scale must be positive"):
        spacy.blank("en").add_pipe("elmo", config={"model": tiny_model_config(), "frozen": False, "lr_scale": 0.0})


def test_a_saved_pipeline_with_nan_weights_is_refused(nlp, tmp_path):
    """64 bytes of \\xff in the float data of elmo/model: NaN layers before, with no warning."""
    nlp.to_disk(tmp_path / "p")
    model = tmp_path / "p" / "elmo" / "model"
    data = model.read_bytes()
    middle = len(data) // 2
    model.write_bytes(data[:middle] + b"\xff" * 64 + data[middle + 64 :])
    with pytest.raises(ElmoFormatError, match=r"elmo[/\\]model holds NaN or infinite values"):
        spacy.load(tmp_path / "p")


def test_a_damaged_cfg_is_named_as_the_cfg(nlp, tmp_path):
    nlp.to_disk(tmp_path / "p")
    cfg = tmp_path / "p" / "elmo" / "cfg"
    cfg.write_text(cfg.read_text()[:10])
    with pytest.raises(ElmoFormatError, match=r"elmo[/\\]cfg is damaged"):
        spacy.load(tmp_path / "p")


@pytest.mark.slow
def test_settings_overridden_at_load_take_effect_everywhere(elmo_files, tmp_path):
    """Saved frozen with a 10 MB cache, loaded with frozen = false and cache_mb = 0: the config,
    the settings, the cache and the replace-listener hook all say so (a saved cfg used to keep the
    saved values); cfg holds only has_weights."""
    nlp = spacy.blank("en")
    add_elmo(nlp, *elmo_files, config={"frozen": True, "cache_mb": 10})
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components": {"elmo": {"frozen": False, "cache_mb": 0}}})
    elmo = loaded.get_pipe("elmo")
    assert loaded.config["components"]["elmo"]["frozen"] is False
    assert elmo.frozen is False and elmo.settings.frozen is False
    assert elmo.settings.cache_mb == 0 and elmo.cache.max_bytes == 0
    assert elmo.model.attrs["replace_listener_cfg"].keywords["frozen"] is False
    assert elmo.has_weights and elmo.cfg == {"has_weights": True}
    again = spacy.load(tmp_path / "p")
    assert again.get_pipe("elmo").frozen is True and again.get_pipe("elmo").settings.cache_mb == 10
    assert again.get_pipe("elmo").cache.max_bytes == 10 * 2**20


@pytest.mark.slow
def test_forked_children_get_one_thread_only_once_an_elmo_component_exists():
    """Importing the package leaves forked children alone; building an elmo component gives them
    one torch thread (a child of a multi-threaded parent would hang on its first parallel op)."""
    script = (
        "import os, torch\n"
        "import spacy, spacy_elmo\n"
        "torch.set_num_threads(2)\n"
        "def child_threads():\n"
        "    r, w = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.write(w, str(torch.get_num_threads()).encode()); os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "    return int(os.read(r, 8))\n"
        "before = child_threads()\n"
        "spacy.blank('en').add_pipe('elmo', config={'model': " + repr(tiny_model_config()) + "})\n"
        "print(before, child_threads())\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["2", "1"]


def test_naming_a_biLM_at_add_pipe_says_where_it_is_named():
    """The spacy-transformers habit, add_pipe("elmo", config={"bilm": "small"}), gets one clear
    error naming add_elmo and [initialize], not a ConfigValidationError."""
    import spacy

    from spacy_elmo.errors import InputError

    nlp = spacy.blank("en")
    with pytest.raises(InputError, match=r"add_elmo\(nlp, 'small'\).*\[initialize.components.elmo\] bilm = 'small'"):
        nlp.add_pipe("elmo", config={"bilm": "small"})
    assert nlp.pipe_names == []
    nlp.add_pipe("elmo")  # no bilm: the component as before
    assert nlp.config["components"]["elmo"]["bilm"] is None
