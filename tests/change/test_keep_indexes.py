"""`change --keep-indexes DIR`: the indexes of the sides kept in a folder of ours; given again after an interruption,
the indexes it finished are used and the others built; an index there of other sides, or a folder not ours, is
refused and left as it was."""

import json
import shutil

import pytest
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.change.run import KEPT_SIDES, ChangeSettings, run_change
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.output_folders import KEPT_INDEXES, USAGE_INDEX, is_own

from ..helpers import tiny_bilm

A_TEXT = "The bank raised its rate.\n\nShe sat on the bank of the river.\n\nA plane and a bank.\n"
B_TEXT = "The plane was late.\n\nThe bank closed early.\n\nHe flew the plane to the bank.\n"


@pytest.fixture(scope="module")
def bilm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("keep") / "bilm"
    folder.mkdir()
    save_original(tiny_bilm(seed=3), folder / "options.json", folder / "weights.hdf5")
    return folder


def _sides(tmp_path):
    (tmp_path / "a.txt").write_text(A_TEXT, encoding="utf8")
    (tmp_path / "b.txt").write_text(B_TEXT, encoding="utf8")
    return tmp_path / "a.txt", tmp_path / "b.txt"


def _run(bilm, a, b, keep, said):
    settings = ChangeSettings(model=str(bilm), keep_indexes=keep, min_usages=1, controls=0, draws=10)
    return run_change(a, b, ["bank", "plane"], settings, log=said.append)


def test_an_interrupted_run_uses_the_index_it_finished_and_builds_the_other(bilm, tmp_path):
    a, b = _sides(tmp_path)
    keep = tmp_path / "kept"
    said: list = []
    first = _run(bilm, a, b, keep, said)
    assert is_own(keep, KEPT_INDEXES) and is_own(keep / "A", USAGE_INDEX) and is_own(keep / "B", USAGE_INDEX)
    assert set(json.loads((keep / KEPT_SIDES).read_text())) == {"A", "B"}
    built_a = (keep / "A" / "meta.json").stat().st_mtime_ns
    shutil.rmtree(keep / "B")  # as if the run had been stopped while it indexed B
    said.clear()
    again = _run(bilm, a, b, keep, said)
    assert any(line.startswith(f"Using the index kept in {keep / 'A'}") for line in said), said
    assert any(line.startswith(f"Indexing the corpus {b}") for line in said), said
    assert (keep / "A" / "meta.json").stat().st_mtime_ns == built_a  # A untouched
    assert [(r.word, r.scores) for r in again.rows] == [(r.word, r.scores) for r in first.rows]
    # done: a third run embeds nothing
    said.clear()
    _run(bilm, a, b, keep, said)
    assert not any(line.startswith("Indexing") for line in said) and sum(line.startswith("Using the index") for line in said) == 2


def test_an_index_kept_of_other_sides_is_refused_and_left_as_it_was(bilm, tmp_path):
    a, b = _sides(tmp_path)
    keep = tmp_path / "kept"
    _run(bilm, a, b, keep, [])
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (keep / "B").iterdir())
    b.write_text(B_TEXT + "\nThe bank and the plane again.\n", encoding="utf8")  # the corpus changed since
    with pytest.raises(InputError, match="holds an index of other sides, words or settings"):
        _run(bilm, a, b, keep, [])
    with pytest.raises(InputError, match="holds an index of other sides"):  # other words are other indexes too
        run_change(a, b, ["bank"], ChangeSettings(model=str(bilm), keep_indexes=keep, min_usages=1, controls=0), log=lambda _: None)
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (keep / "B").iterdir()) == before


def test_a_folder_not_made_by_keep_indexes_is_refused(bilm, tmp_path):
    a, b = _sides(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("a user's", encoding="utf8")
    with pytest.raises(InputError, match="was not made by --keep-indexes"):
        _run(bilm, a, b, mine, [])
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    out = CliRunner().invoke(
        app, ["change", str(a), str(b), str(tmp_path / "out.tsv"), "--model", str(bilm), "--words", "bank", "--keep-indexes", str(mine)]
    )
    assert out.exit_code == 2 and "was not made by --keep-indexes" in " ".join(out.output.split())
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
