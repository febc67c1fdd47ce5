"""What a hostile audit found ugly, each now one line that says what to do: a string given as a sentence, tokens
that are not strings, OUT.ONNX, a report folder refused only after the work, a gold row without a value."""

import pytest
from typer.testing import CliRunner

from spacy_elmo.bilm import save_original
from spacy_elmo.change.gold import read_gold
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError

from .helpers import tiny_bilm


@pytest.mark.parametrize(
    "sentences, says",
    [
        ("Hello world", "not one string"),
        (["Hello world"], "is a string"),
        ([["a", 3]], "int 3"),
        ([["a", None]], "NoneType"),
        ([[b"x"]], "bytes"),
    ],
)
def test_sentences_that_are_not_token_lists_are_refused(sentences, says):
    with pytest.raises(InputError, match=says) as err:
        tiny_bilm().embed(sentences)
    assert "\n" not in str(err.value)


def test_an_onnx_output_in_capitals_is_an_onnx_file(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    source = tmp_path / "bilm"
    save_original(tiny_bilm(seed=1), source / "options.json", source / "weights.hdf5")
    run = CliRunner().invoke(app, ["convert", str(source), str(tmp_path / "OUT.ONNX")])
    assert run.exit_code == 0, run.output
    assert (tmp_path / "OUT.ONNX").is_file()  # a file, not an AllenNLP folder


def test_a_report_folder_that_cannot_be_used_is_refused_before_the_work(tmp_path):
    from .change.test_wug_route import bilm_and_wug

    bilm, wug = bilm_and_wug(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("mine")
    run = CliRunner().invoke(app, ["change", str(wug), str(wug), str(tmp_path / "c.json"), "--model", str(bilm), "--report", str(mine)])
    assert run.exit_code == 1 and "Indexing" not in run.output and not (tmp_path / "c.json").exists()
    assert (mine / "thesis.tex").read_text() == "mine"


def test_a_gold_row_without_a_value_says_so(tmp_path):
    stats = tmp_path / "stats_groupings.csv"
    stats.write_text("lemma\tchange_graded\tchange_binary\nbank\t\t1\n", encoding="utf8")
    with pytest.raises(InputError, match="line 2: no value where a number belongs"):
        read_gold(stats)


def test_convert_into_a_file_says_it_writes_a_folder(tmp_path):
    source = tmp_path / "M"
    save_original(tiny_bilm(seed=1), source / "options.json", source / "weights.hdf5")
    before = (source / "weights.hdf5").read_bytes()
    run = CliRunner().invoke(app, ["convert", str(source), str(source / "weights.hdf5"), "--overwrite"])
    assert run.exit_code == 1 and "is a file: convert writes" in run.output and run.output.count("\n") == 1
    assert (source / "weights.hdf5").read_bytes() == before
