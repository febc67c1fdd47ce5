"""The component's runtime = "onnx": the same Doc layers as the PyTorch biLM, a graph made again when
the weights change, settings checked, a saved pipeline keeps the setting."""

import numpy
import pytest
import spacy
import torch

from spacy_elmo import add_elmo, save_original

from ..helpers import tiny_bilm

pytest.importorskip("onnx", reason="runtime 'onnx' needs onnx: pip install 'spacy-elmo[onnx]'")
pytest.importorskip("onnxruntime", reason="runtime 'onnx' needs onnxruntime: pip install 'spacy-elmo[onnx]'")

TEXTS = ["The cat sat on the mat. It was happy!", "Short.", "", "Odd Unicode: naïve café ☃ \u200b東京 " + "x" * 70 + "."]


@pytest.fixture
def bilm_dir(tmp_path):
    folder = tmp_path / "bilm"
    save_original(tiny_bilm(seed=11), folder / "options.json", folder / "weights.hdf5")
    return folder


def _nlp(bilm_dir, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    add_elmo(nlp, bilm_dir, config=config)
    return nlp


def _layers(nlp, texts=TEXTS):
    return [doc._.elmo.layers for doc in nlp.pipe(texts, batch_size=2)]


@pytest.mark.slow
def test_onnx_gives_the_pytorch_layers_on_the_doc(bilm_dir):
    torch_layers = _layers(_nlp(bilm_dir))
    nlp = _nlp(bilm_dir, runtime="onnx")
    for a, b in zip(torch_layers, _layers(nlp)):
        assert a.shape == b.shape
        numpy.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
    assert nlp.get_pipe("elmo").onnx._session is not None  # it ran through ONNX Runtime
    int8 = _layers(_nlp(bilm_dir, runtime="onnx", precision="int8"))
    a, b = numpy.concatenate([x.reshape(-1, 16) for x in torch_layers]), numpy.concatenate([x.reshape(-1, 16) for x in int8])
    cosine = (a * b).sum(-1) / numpy.linalg.norm(a, axis=-1) / numpy.linalg.norm(b, axis=-1)
    assert cosine.min() > 0.99 and not numpy.array_equal(a, b)


def test_changed_weights_make_a_new_graph(bilm_dir):
    nlp = _nlp(bilm_dir, runtime="onnx")
    texts = [t for t in TEXTS if t]
    before = _layers(nlp, texts)
    elmo = nlp.get_pipe("elmo")
    with torch.no_grad():
        for p in elmo.bilm.parameters():
            p.mul_(0.5)  # in place, as a fine-tuning step changes them
    elmo.bilm.clear_caches()  # for the PyTorch biLM below (weights edited by hand); the ONNX runner needs no call
    after = _layers(nlp, texts)
    torch_now = elmo.model.predict(
        [nlp.get_pipe("sentencizer")(nlp.make_doc(t)) for t in texts]
    )  # the component's PyTorch biLM as it is now
    for a, b, c in zip(before, after, torch_now):
        assert not numpy.allclose(a, b)
        numpy.testing.assert_allclose(b, c, rtol=0, atol=1e-5)


@pytest.mark.parametrize("route", ["data assigned", "data in place", "numpy view", "vector_to_parameters"])
def test_weights_changed_by_any_route_make_a_new_graph(bilm_dir, route):
    """A version counter misses these: thinc's optimizer assigns `param.data`; `.data.mul_`, a numpy view and
    `vector_to_parameters` write without it. The runner follows the weights' content."""
    nlp = _nlp(bilm_dir, runtime="onnx")
    texts = [t for t in TEXTS if t]
    before = _layers(nlp, texts)
    elmo = nlp.get_pipe("elmo")
    params = list(elmo.bilm.parameters())
    if route == "data assigned":
        for p in params:
            p.data = p.data * 0.5
    elif route == "data in place":
        for p in params:
            p.data.mul_(0.5)
    elif route == "numpy view":
        for p in params:
            p.detach().numpy()[...] *= 0.5
    else:
        vector = torch.nn.utils.parameters_to_vector(params)
        torch.nn.utils.vector_to_parameters(vector * 0.5, params)
    elmo.bilm.clear_caches()
    after = _layers(nlp, texts)
    torch_now = elmo.model.predict([nlp.get_pipe("sentencizer")(nlp.make_doc(t)) for t in texts])
    for a, b, c in zip(before, after, torch_now):
        assert not numpy.allclose(a, b)
        numpy.testing.assert_allclose(b, c, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_settings_are_checked_and_saved(bilm_dir, tmp_path):
    with pytest.raises(ValueError, match="runtime must be one of"):
        _nlp(bilm_dir, runtime="tensorflow")
    with pytest.raises(ValueError, match="runs at precision 'fp32' or 'int8'"):
        _nlp(bilm_dir, runtime="onnx", precision="bf16")
    nlp = _nlp(bilm_dir, runtime="onnx")
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("elmo").settings.runtime == "onnx"
    for a, b in zip(_layers(nlp), _layers(loaded)):
        numpy.testing.assert_array_equal(a, b)


@pytest.mark.timeout(300)
def test_two_processes_after_the_parent_ran_give_the_same_layers(bilm_dir, start_method):
    """The parent's ONNX Runtime session does not go into the workers (its threads would not be there)."""
    import pickle

    nlp = _nlp(bilm_dir, runtime="onnx")
    texts = [f"Text number {i}. It has two sentences." for i in range(8)]
    alone = _layers(nlp, texts)  # the parent has a session now
    assert pickle.loads(pickle.dumps(nlp.get_pipe("elmo").onnx))._session is None
    for doc, expected in zip(nlp.pipe(texts, n_process=2, batch_size=2), alone):
        numpy.testing.assert_allclose(doc._.elmo.layers, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_inspect_and_the_component_say_what_computes_the_layers(bilm_dir, tmp_path, precision):
    """A pipeline saved with runtime "onnx" and precision "int8" was said to run "in fp32" (the torch biLM's own
    precision, which only fine-tunes): what runs is ONNX Runtime at int8 (issue 105)."""
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    _nlp(bilm_dir, runtime="onnx", precision=precision).to_disk(tmp_path / "pipeline")
    elmo = spacy.load(tmp_path / "pipeline").get_pipe("elmo")
    assert elmo.precision == precision and elmo.bilm.precision == "fp32"
    said = CliRunner().invoke(app, ["inspect", str(tmp_path / "pipeline")]).output.splitlines()[0]
    assert said.startswith(f"elmo: the layers are computed by ONNX Runtime at {precision} (runtime = 'onnx', precision = '{precision}'")
