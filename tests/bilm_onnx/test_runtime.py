"""The runtime without torch: its ids are the PyTorch biLM's; in a virtual environment without torch
(and in Node.js) the same file gives the same layers."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

from spacy_elmo.bilm import bilm_folder
from spacy_elmo.bilm.char_ids import CharBatch, sentences_to_char_ids
from spacy_elmo.token_ids import UTF8, sentence_ids

from ..helpers import tiny_bilm

REPO = Path(__file__).resolve().parents[2]
NODE_EXAMPLE = REPO / "examples" / "onnx_node"
SENTENCES = [["The", "cat", "sat", "."], ["Zürich", "東京", "☃", "y" * 70], ["<S>"], []]


def _ids_of_the_torch_batch(bilm, sentences):
    """(B, T, W) char ids and (B, T) word ids as the PyTorch biLM's CharBatch holds them."""
    batch = CharBatch.from_sentences(sentences, bilm.options.max_characters_per_token, bilm.vocab)
    index = batch.index.numpy()
    chars = numpy.where(index[..., None] >= 0, batch.type_chars.numpy()[index], 0)
    words = None if batch.type_words is None else numpy.where(index >= 0, batch.type_words.numpy()[index], 0)
    return chars, words


def test_the_ids_are_the_pytorch_biLMs_utf8_and_learned():
    chars, words = sentence_ids(SENTENCES, 50)
    assert words is None and chars.dtype == numpy.int64
    numpy.testing.assert_array_equal(chars, sentences_to_char_ids(SENTENCES).numpy())
    numpy.testing.assert_array_equal(chars, _ids_of_the_torch_batch(tiny_bilm(), SENTENCES)[0])
    learned = bilm_folder(REPO / "tests" / "fixtures" / "elmoformanylangs" / "model").load()
    W = learned.options.max_characters_per_token
    chars, words = sentence_ids(SENTENCES, W, learned.vocab)
    expected_chars, expected_words = _ids_of_the_torch_batch(learned, SENTENCES)
    numpy.testing.assert_array_equal(chars, expected_chars)
    numpy.testing.assert_array_equal(words, expected_words)
    assert sentence_ids([], 50, UTF8)[0].shape == (0, 2, 50)


def _export(tmp_path, int8=False, **options):
    pytest.importorskip("onnx", reason="the ONNX export needs onnx: pip install 'spacy-elmo[onnx]'")
    pytest.importorskip("onnxruntime", reason="running an export needs onnxruntime: pip install 'spacy-elmo[onnx]'")
    from spacy_elmo.bilm_onnx.export import export_onnx
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM

    bilm = tiny_bilm(seed=7, **options)
    path = tmp_path / ("int8.onnx" if int8 else "bilm.onnx")
    export_onnx(bilm, path, int8=int8)
    return path, OnnxBiLM(path, threads=1)


TORCH_FREE_PROGRAM = """
import json, sys
import numpy
import spacy_elmo.bilm_onnx.runtime as runtime
blocked = [name for name in ("torch", "spacy", "thinc") if name in sys.modules]
try:
    import torch  # noqa: F401
    has_torch = True
except ImportError:
    has_torch = False
bilm = runtime.OnnxBiLM(sys.argv[1])
layers = bilm.embed(json.loads(sys.argv[2]))
numpy.save(sys.argv[3], numpy.concatenate([l.reshape(-1) for l in layers]))
print(json.dumps({"imported": blocked, "has_torch": has_torch}))
"""


@pytest.mark.slow
def test_the_runtime_runs_in_a_virtual_environment_without_torch(tmp_path):
    """A fresh venv as docs/onnx.md installs it: numpy and onnxruntime from the package index, the package with
    --no-deps: the runtime imports there without torch, spaCy or thinc and gives the layers the runtime gives here."""
    path, here = _export(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "numpy", "onnxruntime"], capture_output=True, text=True, timeout=900
    )
    if install.returncode != 0:
        pytest.skip(f"pip could not install numpy and onnxruntime into a fresh venv (no package index?): {install.stderr[-300:]}")
    package = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(REPO)], capture_output=True, text=True, timeout=900, cwd=tmp_path
    )
    assert package.returncode == 0, package.stderr[-2000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run(
        [str(python), "-c", TORCH_FREE_PROGRAM, str(path), json.dumps(SENTENCES), str(tmp_path / "out.npy")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {"imported": [], "has_torch": False}
    expected = numpy.concatenate([layers.reshape(-1) for layers in here.embed(SENTENCES)])
    numpy.testing.assert_allclose(numpy.load(tmp_path / "out.npy"), expected, rtol=0, atol=1e-6)


def _node_or_skip():
    if shutil.which("node") is None:
        pytest.skip("needs node (Node.js) for the onnxruntime-node example")
    if not (NODE_EXAMPLE / "node_modules" / "onnxruntime-node").is_dir():
        pytest.skip(
            f"needs onnxruntime-node in {NODE_EXAMPLE}: run `ONNXRUNTIME_NODE_INSTALL=skip npm install` there (.ci/run does where npm can)"
        )


@pytest.mark.parametrize("int8", [False, True])
def test_nodejs_gives_pythons_layers_for_fixed_char_ids(tmp_path, int8):
    _node_or_skip()
    path, here = _export(tmp_path, int8=int8)
    feed = here.batch(SENTENCES)
    ids = feed["char_ids"]
    (tmp_path / "ids.json").write_text(json.dumps({"shape": list(ids.shape), "data": ids.reshape(-1).tolist()}), encoding="utf8")
    run = subprocess.run(
        ["node", str(NODE_EXAMPLE / "embed.js"), str(path), "--ids", str(tmp_path / "ids.json"), "--out", str(tmp_path / "layers.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = json.loads((tmp_path / "layers.json").read_text(encoding="utf8"))
    expected = here.run(**feed)
    assert theirs["shape"] == list(expected.shape)
    numpy.testing.assert_allclose(numpy.asarray(theirs["data"], dtype=numpy.float32).reshape(expected.shape), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("chars", [50, 20])
def test_nodejs_makes_the_same_ids_from_text(tmp_path, chars):
    """The example's own UTF-8 ids from sentences, W read from the graph (50, or 20 where the biLM was made so): the
    first token's layers equal Python's."""
    _node_or_skip()
    path, here = _export(tmp_path, max_characters_per_token=chars)
    run = subprocess.run(
        ["node", str(NODE_EXAMPLE / "embed.js"), str(path), "Zürich is big .", "☃"], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    layers = here.embed([["Zürich", "is", "big", "."], ["☃"]])
    for line, sentence_layers in zip(lines, layers):
        first, top = [float(part.split()[-1]) for part in line.split(";")[1].split(",")[1:3]]
        assert first == pytest.approx(sentence_layers[0, 0, 0], abs=1e-4) and top == pytest.approx(sentence_layers[-1, 0, 0], abs=1e-4)


@pytest.mark.parametrize(
    "key, value, says",
    [
        ("spacy_elmo.n_output_layers", "7", "7 layers"),
        ("spacy_elmo.output_dim", "99", "layers of 99"),
        ("spacy_elmo.max_characters_per_token", "40", "40 characters"),
        (
            "spacy_elmo.vocab",
            json.dumps(
                {
                    "chars": {c: i for i, c in enumerate(["<bow>", "<eow>", "<oov>", "<pad>", "<bos>", "<eos>", "a"])},
                    "words": {"<oov>": 0, "<pad>": 1, "<bos>": 2, "<eos>": 3, "a": 4},
                }
            ),
            "inputs",
        ),
    ],
)
def test_metadata_that_lies_about_the_graph_is_refused_in_one_line(tmp_path, key, value, says):
    """OnnxBiLM checks its metadata against the graph's inputs and output: edited sizes, or a learned vocabulary
    given to a UTF-8 graph, would embed wrongly without a word."""
    onnx = pytest.importorskip("onnx")
    from spacy_elmo.bilm_onnx.export import export_onnx
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM
    from spacy_elmo.errors import InputError

    export_onnx(tiny_bilm(seed=2), tmp_path / "m.onnx")
    model = onnx.load(str(tmp_path / "m.onnx"))
    for entry in model.metadata_props:
        if entry.key == key:
            entry.value = value
    onnx.save(model, str(tmp_path / "lying.onnx"))
    with pytest.raises(InputError, match="does not match its spacy-elmo metadata") as err:
        OnnxBiLM(tmp_path / "lying.onnx")
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_graph_that_is_no_biLM_is_refused_though_it_carries_the_format(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from spacy_elmo.bilm_onnx.export import export_onnx
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM
    from spacy_elmo.errors import InputError

    export_onnx(tiny_bilm(seed=2), tmp_path / "m.onnx")
    real = onnx.load(str(tmp_path / "m.onnx"))
    node = helper.make_node("Identity", ["char_ids"], ["layers"])
    graph = helper.make_graph(
        [node],
        "not_a_bilm",
        [helper.make_tensor_value_info("char_ids", TensorProto.INT64, ["batch", "steps", 50])],
        [helper.make_tensor_value_info("layers", TensorProto.INT64, ["batch", "steps", 50])],
    )
    fake = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fake.ir_version = 8
    fake.metadata_props.extend(real.metadata_props)
    onnx.save(fake, str(tmp_path / "fake.onnx"))
    with pytest.raises(InputError, match="not one float tensor 'layers'"):
        OnnxBiLM(tmp_path / "fake.onnx")


def test_nodejs_says_what_is_wrong_in_one_line(tmp_path):
    """An empty sentence has no layers (not the </S> position's values), --ids without its files and a graph that is
    no spacy-elmo biLM each fail in one line."""
    _node_or_skip()
    path, _ = _export(tmp_path)
    script = str(NODE_EXAMPLE / "embed.js")
    empty = subprocess.run(["node", script, str(path), "The cat", " "], capture_output=True, text=True, timeout=120)
    assert empty.returncode == 0 and "(an empty sentence): no tokens, no layers" in empty.stdout, empty.stderr
    no_file = subprocess.run(["node", script, str(path), "--ids"], capture_output=True, text=True, timeout=120)
    assert no_file.returncode == 1 and "usage: node embed.js MODEL.onnx --ids ids.json --out layers.json" in no_file.stderr
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "foreign",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    foreign = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    foreign.ir_version = 8
    onnx.save(foreign, str(tmp_path / "foreign.onnx"))
    run = subprocess.run(["node", script, str(tmp_path / "foreign.onnx"), "a b"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "is not a biLM exported by spacy-elmo" in run.stderr and "toFixed" not in run.stderr


def test_a_forged_precision_in_the_metadata_is_refused_in_one_line(tmp_path):
    """The audit's case: an export whose metadata names its precision "int4" (none spacy-elmo writes) loaded."""
    onnx = pytest.importorskip("onnx")
    from spacy_elmo.bilm_onnx.export import export_onnx
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM
    from spacy_elmo.errors import InputError

    export_onnx(tiny_bilm(seed=2), tmp_path / "m.onnx")
    model = onnx.load(str(tmp_path / "m.onnx"))
    for entry in model.metadata_props:
        if entry.key == "spacy_elmo.precision":
            entry.value = "int4"
    onnx.save(model, str(tmp_path / "forged.onnx"))
    with pytest.raises(InputError, match="names its precision 'int4'") as err:
        OnnxBiLM(tmp_path / "forged.onnx")
    assert "\n" not in str(err.value)
