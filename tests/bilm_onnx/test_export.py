"""The ONNX export: every layer equal to the PyTorch biLM's, for each format the package reads, over
batches of mixed lengths; int8 close; the metadata a runtime needs; bad input refused."""

import json
import os

import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.bilm import bilm_folder, load_original, save_original
from spacy_elmo.bilm.fingerprint import bilm_fingerprint
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError

from ..helpers import tiny_bilm, wikipedia_sentences

pytest.importorskip("onnx", reason="the ONNX export needs onnx: pip install 'spacy-elmo[onnx]'")
pytest.importorskip("onnxruntime", reason="running an export needs onnxruntime: pip install 'spacy-elmo[onnx]'")

from spacy_elmo.bilm_onnx.export import export_onnx  # noqa: E402
from spacy_elmo.bilm_onnx.graph import build_graph  # noqa: E402
from spacy_elmo.bilm_onnx.runtime import FORMAT, OnnxBiLM  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures")
MIXED = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Zürich", "naïve", "東京", "☃", "x" * 80, "\u200b"],
    ["Yes"],
    [],
    ["a"] * 23,
]


def _layers_alone(bilm, sentences):
    """The PyTorch biLM's layers of each sentence run alone (the reference a batch must match)."""
    with torch.no_grad():
        return [bilm(bilm.batch([s])).numpy()[:, 0] for s in sentences]


def _exported(bilm, tmp_path, int8=False):
    path = tmp_path / ("int8.onnx" if int8 else "fp32.onnx")
    export_onnx(bilm, path, int8=int8)
    return OnnxBiLM(path, threads=1)


def _assert_batch_equals_each_alone(bilm, exported, sentences, atol=1e-5):
    alone = _layers_alone(bilm, sentences)
    layers = exported.run(**exported.batch(sentences))
    for row, (sentence, expected) in enumerate(zip(sentences, alone)):
        n = len(sentence) + 2
        numpy.testing.assert_allclose(layers[:, row, :n], expected, rtol=0, atol=atol)
        assert not layers[:, row, n:].any()  # padding stays 0
        numpy.testing.assert_allclose(exported.run(**exported.batch([sentence]))[:, 0], expected, rtol=0, atol=atol)


@pytest.mark.slow
def test_the_parity_fixture_every_layer_in_batches_of_mixed_lengths(elmo_fixture, tmp_path):
    bilm = load_original(elmo_fixture / "options.json", elmo_fixture / "lm_weights.hdf5")
    exported = _exported(bilm, tmp_path)
    groups = json.loads((elmo_fixture / "sentences.json").read_text(encoding="utf8"))
    sentences = [s.split() for group in groups for s in group]
    _assert_batch_equals_each_alone(bilm, exported, sentences + MIXED)
    ours = exported.embed(sentences, batch_size=7)
    for sentence, theirs, layers in zip(sentences, bilm.embed(sentences), ours):
        assert layers.shape == (3, len(sentence), 32)
        numpy.testing.assert_allclose(layers, theirs, rtol=0, atol=1e-5)


def test_elmoformanylangs_with_its_word_embedding_and_learned_vocabulary(tmp_path):
    bilm = bilm_folder(os.path.join(FIXTURES, "elmoformanylangs", "model")).load()
    assert bilm.options.word_dim > 0
    exported = _exported(bilm, tmp_path)
    assert "word_ids" in exported.input_names and exported.metadata["spacy_elmo.inputs"] == "char_ids,word_ids"
    sentences = json.loads(open(os.path.join(FIXTURES, "elmoformanylangs", "sentences.json"), encoding="utf8").read())
    _assert_batch_equals_each_alone(bilm, exported, [list(s) if isinstance(s, list) else s.split() for s in sentences] + MIXED)


def test_a_tensorflow_checkpoint(tmp_path):
    bilm = bilm_folder(os.path.join(FIXTURES, "tf", "checkpoint")).load()
    _assert_batch_equals_each_alone(bilm, _exported(bilm, tmp_path), MIXED)


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"use_skip_connections": False, "activation": "tanh", "n_highway": 2},
        {"proj_clip": None, "cell_clip": None},
        {"projection_dim": 24},
    ],
)
def test_variants_of_the_architecture(settings, tmp_path):
    """Without skip connections, tanh, two highway layers, no clipping, no LSTM projection (P = C)."""
    bilm = tiny_bilm(seed=5, **settings)
    _assert_batch_equals_each_alone(bilm, _exported(bilm, tmp_path), MIXED)


@pytest.mark.slow
def test_a_biLM_from_spacy_elmo_pretrain_matches_and_is_no_further_from_float64_than_pytorch(shared_bilm, shared_data, tmp_path):
    """The shared small biLM (spacy-elmo pretrain): its token layer reaches |values| ~ 20, where two
    float32 computations differ by ~2e-5, so the test asks for 3e-6 of the layer's largest value (2.3e-6 on layer 1:
    PyTorch's projection runs through oneDNN, batch-invariant, ONNX Runtime's through MLAS) and no more error
    against a float64 run than PyTorch's own float32 has."""
    bilm = load_original(shared_bilm / "options.json", shared_bilm / "weights.hdf5")
    exported = _exported(bilm, tmp_path)
    sentences = wikipedia_sentences(shared_data, 60)
    theirs, ours = bilm.embed(sentences), exported.embed(sentences, batch_size=16)
    exact = load_original(shared_bilm / "options.json", shared_bilm / "weights.hdf5").double()
    with torch.no_grad():
        truth = [exact(exact.batch([s])).numpy()[:, 0, 1 : len(s) + 1] for s in sentences]
    for layer in range(3):
        largest = max(float(numpy.abs(t[layer]).max()) for t in theirs)
        assert max(float(numpy.abs(a[layer] - b[layer]).max()) for a, b in zip(theirs, ours)) <= 3e-6 * largest
        torch_error = max(float(numpy.abs(a[layer] - t[layer]).max()) for a, t in zip(theirs, truth))
        onnx_error = max(float(numpy.abs(a[layer] - t[layer]).max()) for a, t in zip(ours, truth))
        assert onnx_error <= max(1.5 * torch_error, 1e-5), (layer, onnx_error, torch_error)
    int8 = _exported(bilm, tmp_path, int8=True).embed(sentences, batch_size=16)
    for a, b in zip(theirs, int8):
        cosine = (a * b).sum(-1) / numpy.linalg.norm(a, axis=-1) / numpy.linalg.norm(b, axis=-1)
        assert cosine.min() >= 0.999


@pytest.mark.parametrize(
    "source", ["tiny", "elmo-small-wiki-reuters", "elmo-small-wiki-reuters-cont", pytest.param("original", marks=pytest.mark.slow)]
)
@pytest.mark.slow
def test_int8_layers_are_the_same_alone_and_in_any_batch(source, shared_bilm, shared_data, tmp_path):
    """Each token's row quantized over its own range, as PyTorch's int8 does: a sentence's int8 layers bit for bit
    the same alone, in one batch and in batches of five (before: 0.069 apart on the cont biLM's layer 1)."""
    from spacy_elmo.bilm import BiLM, ElmoOptions

    if source == "tiny":
        bilm = tiny_bilm(seed=2, cell_dim=64, projection_dim=16)
    elif source == "original":
        torch.manual_seed(4)
        bilm = BiLM(ElmoOptions(cell_dim=4096, projection_dim=512, n_highway=2), cache_size=0)
    else:
        folder = shared_bilm.parent / source
        if not (folder / "weights.hdf5").is_file():
            pytest.skip(f"needs the shared biLM at {folder}")
        bilm = load_original(folder / "options.json", folder / "weights.hdf5")
    int8 = _exported(bilm, tmp_path, int8=True)
    sentences = wikipedia_sentences(shared_data, 12) + [s for s in MIXED if s]
    together = int8.embed(sentences, batch_size=len(sentences))
    in_fives = int8.embed(sentences[::-1], batch_size=5)[::-1]
    for sentence, a, b in zip(sentences, together, in_fives):
        numpy.testing.assert_array_equal(int8.embed([sentence])[0], a)
        numpy.testing.assert_array_equal(a, b)


def test_int8_is_close_and_smaller(tmp_path):
    bilm = tiny_bilm(seed=2, cell_dim=64, projection_dim=16)
    fp32, int8 = _exported(bilm, tmp_path), _exported(bilm, tmp_path, int8=True)
    assert int8.precision == "int8" and os.path.getsize(tmp_path / "int8.onnx") < os.path.getsize(tmp_path / "fp32.onnx")
    a, b = fp32.run(**fp32.batch(MIXED)), int8.run(**int8.batch(MIXED))
    real = numpy.linalg.norm(a, axis=-1) > 0
    cosine = (a * b).sum(-1)[real] / (numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1))[real]
    assert 0.99 < cosine.min() < 1.0  # quantized: close, not equal


def test_the_metadata_says_what_a_runtime_needs(tmp_path):
    bilm = tiny_bilm(seed=1)
    exported = _exported(bilm, tmp_path)
    meta = exported.metadata
    assert meta["spacy_elmo.format"] == FORMAT
    assert meta["spacy_elmo.weights_sha256"] == bilm_fingerprint(bilm)
    assert json.loads(meta["spacy_elmo.options"]) == bilm.options.to_config(all_fields=True)
    assert (meta["spacy_elmo.vocab"], meta["spacy_elmo.inputs"]) == ("utf8", "char_ids")
    assert int(meta["spacy_elmo.n_output_layers"]) == 3 and int(meta["spacy_elmo.output_dim"]) == 16
    assert int(meta["spacy_elmo.max_characters_per_token"]) == 50 and meta["spacy_elmo.opset"] == "17"
    import onnx

    model = onnx.load(tmp_path / "fp32.onnx")
    batch, steps = [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim[:2]]
    assert (batch, steps) == ("batch", "steps")  # dynamic


def test_the_cli_writes_once_and_refuses_what_it_should(tmp_path):
    folder = tmp_path / "bilm"
    save_original(tiny_bilm(seed=3), folder / "options.json", folder / "weights.hdf5")
    out = tmp_path / "bilm.onnx"
    run = CliRunner().invoke(app, ["convert", str(folder), str(out)])
    assert run.exit_code == 0, run.output
    assert "largest difference" in run.output
    written = out.read_bytes()
    for args, says in [
        ([str(folder), str(out)], "exists"),  # nothing replaced without --overwrite
        ([str(tmp_path), str(tmp_path / "x.onnx")], "not a biLM folder"),
        ([str(folder), str(tmp_path / "missing" / "x.onnx")], "not a folder"),
        ([str(folder), str(tmp_path / "folder_out"), "--int8"], "--int8 is for an .onnx output"),
    ]:
        run = CliRunner().invoke(app, ["convert", *args])
        assert run.exit_code == 1 and says in run.output, run.output
    assert out.read_bytes() == written and not (tmp_path / "x.onnx").exists() and not (tmp_path / "folder_out").exists()
    run = CliRunner().invoke(app, ["convert", str(folder), str(out), "--int8", "--overwrite"])
    assert run.exit_code == 0 and "least cosine" in run.output and out.read_bytes() != written
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_biLM_the_graph_cannot_express_is_refused_saying_why(tmp_path):
    from spacy_elmo.bilm.lstm import compile_cells

    bilm = tiny_bilm()
    bilm.layers[0].cell = lambda *args: None  # a replaced step, as compile_cells makes one
    with pytest.raises(InputError, match="not the package's own"):
        export_onnx(bilm, tmp_path / "x.onnx")
    bilm = tiny_bilm()
    with torch.no_grad():
        bilm.layers[1].bias[0, 0] = float("nan")
    with pytest.raises(InputError, match="NaN"):
        build_graph(bilm)
    assert not (tmp_path / "x.onnx").exists() and compile_cells is not None


def test_a_file_that_is_not_an_export_is_refused(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"not onnx")
    with pytest.raises(InputError, match="not a readable ONNX model"):
        OnnxBiLM(tmp_path / "bad.onnx")
    with pytest.raises(InputError, match="not found"):
        OnnxBiLM(tmp_path / "missing.onnx")
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    onnx.save(
        helper.make_model(
            helper.make_graph(
                [helper.make_node("Identity", ["x"], ["y"])], "g", [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])]
            )
        ),
        tmp_path / "other.onnx",
    )
    # onnx writes its newest IR version, which an older onnxruntime cannot open: the metadata is read first
    with pytest.raises(InputError, match="not a biLM exported by spacy-elmo"):
        OnnxBiLM(tmp_path / "other.onnx")


def test_onnxruntimes_whole_reason_is_given_where_it_cannot_open_a_file(tmp_path):
    """An IR version newer than the installed onnxruntime reads: its reason whole (not cut at 200 characters, where
    onnxruntime's source location hid it), in one line, with what to do."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    export_onnx(tiny_bilm(seed=2), tmp_path / "m.onnx")
    model = onnx.load(str(tmp_path / "m.onnx"))
    model.ir_version = 99
    onnx.save(model, str(tmp_path / "future.onnx"))
    with pytest.raises(InputError, match="IR version 99") as err:
        OnnxBiLM(tmp_path / "future.onnx")
    said = str(err.value)
    assert "Unsupported model IR version: 99, max supported IR version" in said and "pip install -U onnxruntime" in said
    assert "\n" not in said


def test_the_docs_table_of_metadata_is_the_runtimes():
    from spacy_elmo.bilm_onnx.runtime import METADATA_DOC

    page = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "onnx.md"), encoding="utf8").read()
    import re

    rows = dict(re.findall(r"^\| `(spacy_elmo\.\w+)` \| (.*) \|$", page, flags=re.M))
    assert rows == {key: text.replace("'spacy-elmo bilm onnx v1'", "`spacy-elmo bilm onnx v1`") for key, text in METADATA_DOC.items()}


@pytest.mark.slow
def test_a_pipeline_folder_exports_its_components_biLM(tmp_path):
    import spacy

    from spacy_elmo import add_elmo

    folder = tmp_path / "bilm"
    save_original(tiny_bilm(seed=9), folder / "options.json", folder / "weights.hdf5")
    nlp = spacy.blank("en")
    add_elmo(nlp, folder)
    nlp.to_disk(tmp_path / "pipeline")
    run = CliRunner().invoke(app, ["convert", str(tmp_path / "pipeline"), str(tmp_path / "p.onnx")])
    assert run.exit_code == 0, run.output
    exported = OnnxBiLM(tmp_path / "p.onnx")
    assert exported.weights_sha256 == bilm_fingerprint(nlp.get_pipe("elmo").bilm)
    assert "spaCy pipeline" in exported.metadata["spacy_elmo.source"]
    doc = nlp("A cat sat .")
    numpy.testing.assert_allclose(exported.embed([[t.text for t in doc]])[0], doc._.elmo.layers, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_a_pipeline_with_two_elmo_components_exports_the_one_named(tmp_path):
    """Two elmo components: convert says how to name one (--component), and exports the named one's biLM."""
    import spacy

    from spacy_elmo import add_elmo

    nlp = spacy.blank("en")
    for seed, name in [(9, "elmo"), (10, "elmo_news")]:
        folder = tmp_path / f"bilm{seed}"
        save_original(tiny_bilm(seed=seed), folder / "options.json", folder / "weights.hdf5")
        add_elmo(nlp, folder, name=name)
    nlp.to_disk(tmp_path / "pipeline")
    run = CliRunner().invoke(app, ["convert", str(tmp_path / "pipeline"), str(tmp_path / "p.onnx")])
    assert run.exit_code == 1 and "name the one to export, e.g. --component elmo" in run.output
    run = CliRunner().invoke(app, ["convert", str(tmp_path / "pipeline"), str(tmp_path / "p.onnx"), "--component", "elmo_news"])
    assert run.exit_code == 0, run.output
    assert OnnxBiLM(tmp_path / "p.onnx").weights_sha256 == bilm_fingerprint(nlp.get_pipe("elmo_news").bilm)
    run = CliRunner().invoke(app, ["convert", str(tmp_path / "pipeline"), str(tmp_path / "q.onnx"), "--component", "tagger"])
    assert run.exit_code == 1 and "no elmo component 'tagger'" in run.output and not (tmp_path / "q.onnx").exists()
