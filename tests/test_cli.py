import h5py
import json
import numpy
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_elmo import load_original, save_original
from spacy_elmo.cli import app

from .helpers import tiny_bilm


def test_embed_from_original_files_to_hdf5_and_docbin(tmp_path):
    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "in.txt").write_text("The cat sat.\n\nZürich 🙂 is nice.\n", encoding="utf8")
    runner = CliRunner()
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "out.hdf5"), "--no-sentences"])
    assert result.exit_code == 0, result.output
    assert "2 documents" in result.output
    bilm = load_original(tmp_path / "options.json", tmp_path / "weights.hdf5")
    tokenizer = spacy.blank("en").tokenizer
    with h5py.File(tmp_path / "out.hdf5", "r") as f:
        index = json.loads(f["sentence_to_index"][0])
        assert index == {"The cat sat.": "0", "Zürich 🙂 is nice.": "1"}
        for text, key in index.items():
            words = [t.text for t in tokenizer(text)]
            numpy.testing.assert_allclose(f[key][()], bilm.embed([words])[0], atol=1e-5)
    result = runner.invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "out.spacy"), "--dtype", "float16"])
    assert result.exit_code == 0, result.output
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")  # registers the extensions
    docs = list(DocBin().from_disk(tmp_path / "out.spacy").get_docs(nlp.vocab))
    assert [d.text for d in docs] == ["The cat sat.", "Zürich 🙂 is nice."]
    assert docs[1]._.elmo.layers.dtype == numpy.float16
    assert docs[1]._.elmo.layers.shape == (3, len(docs[1]), 16)


def test_embed_explains_a_wrong_model_folder(tmp_path):
    (tmp_path / "in.txt").write_text("text\n")
    result = CliRunner().invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5")])
    assert result.exit_code != 0
    assert "options.json" in result.output


def test_embed_gpu_id_without_a_gpu_says_how_to_run_on_cpu(tmp_path):
    from thinc.api import get_current_ops, set_current_ops

    save_original(tiny_bilm(seed=5), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "in.txt").write_text("text\n")
    ops = get_current_ops()
    try:
        result = CliRunner().invoke(app, ["embed", str(tmp_path), str(tmp_path / "in.txt"), str(tmp_path / "o.hdf5"), "--gpu-id", "0"])
    finally:
        set_current_ops(ops)
    if result.exit_code == 0:  # a machine with cupy and a GPU: the run must have worked
        assert (tmp_path / "o.hdf5").exists()
    else:
        assert "--gpu-id -1" in result.output
        assert not (tmp_path / "o.hdf5").exists()
