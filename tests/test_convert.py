"""`convert` writes only fresh files of its own: no link followed, no foreign folder."""

import os

import pytest
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app

from .helpers import tiny_bilm


@pytest.fixture
def bilm_dir(tmp_path):
    folder = tmp_path / "bilm"
    folder.mkdir()
    save_original(tiny_bilm(seed=4), folder / "options.json", folder / "weights.hdf5")
    return folder


def _convert(*args):
    return CliRunner().invoke(app, ["convert", *map(str, args)])


def test_convert_replaces_a_link_never_writing_through_it(bilm_dir, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text("mine", encoding="utf8")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(tmp_path / "nowhere.json", out / "options.json")  # dangling
    result = _convert(bilm_dir, out)
    assert result.exit_code == 1 and "exists" in result.output
    os.unlink(out / "options.json")
    os.symlink(outside, out / "options.json")
    result = _convert(bilm_dir, out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert outside.read_text(encoding="utf8") == "mine" and not (out / "options.json").is_symlink()
    assert not (tmp_path / "nowhere.json").exists()
    assert (out / "options.json").read_bytes() == (bilm_dir / "options.json").read_bytes()


def test_convert_refuses_a_folder_with_other_files(bilm_dir, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf8")
    result = _convert(bilm_dir, out)
    assert result.exit_code == 1 and "holds other files (notes.txt)" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
