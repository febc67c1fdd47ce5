"""`spacy-elmo neighbours` as a user meets it: a word the index does not hold, and a usage found again."""

import warnings

import pytest

from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.usages import UsageIndex

from ..helpers import tiny_bilm


@pytest.mark.slow
def test_an_unindexed_word_is_said_with_the_flag_and_no_cosine_passes_1(tmp_path):
    save_original(tiny_bilm(seed=3), tmp_path / "options.json", tmp_path / "weights.hdf5")
    (tmp_path / "corpus.txt").write_text("The bank raised its rate.\n\nShe sat on the bank of the river.\n", encoding="utf8")
    runner = CliRunner()
    result = runner.invoke(app, ["index-usages", str(tmp_path), str(tmp_path / "corpus.txt"), str(tmp_path / "index"), "-w", "bank", "-q"])
    assert result.exit_code == 0, result.output
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = runner.invoke(app, ["neighbours", str(tmp_path / "index"), "A new suit.", "--word", "suit"])
    assert result.exit_code == 0, result.output
    assert "no usage of 'suit' (--any-word searches" in result.output and "same_word" not in result.output
    index = UsageIndex().from_disk(tmp_path / "index")
    doc = index.nlp("The bank raised its rate.")
    found = index.most_similar(doc[1], n=2)
    assert found[0].sentence == "The bank raised its rate." and all(-1.0 <= u.score <= 1.0 for u in found)
