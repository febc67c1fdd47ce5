"""The hostile-user reproductions of issue 43, run as written: every user file stays, and every
answer is right or a one-line error (no wrong answer with exit 0)."""

import gzip
import json
import os
from pathlib import Path

import numpy
import pytest
import spacy
from typer.testing import CliRunner

from spacy_elmo.bilm import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.pipeline.loading import load_elmo_pipeline
from spacy_elmo.usages import UsageIndex, build_usage_index

from .helpers import tiny_bilm

TEXT = "The bank raised its rate. She sat on the bank of the river.\n\nA suit and a tie. He filed a suit against the bank.\n"


@pytest.fixture
def model(tmp_path) -> Path:
    folder = tmp_path / "M"
    save_original(tiny_bilm(seed=5), folder / "options.json", folder / "weights.hdf5")
    return folder


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT * 3, encoding="utf-8")
    return path


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _line(result) -> str:
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def _files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# 1. a build never takes a neighbouring OUTPUT.tmp for its scratch folder


@pytest.mark.slow
@pytest.mark.parametrize("command", ["index-usages", "prepare-corpus"])
def test_a_users_folder_named_like_a_scratch_folder_stays(model, corpus, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    args = (
        (lambda out: ["index-usages", model, corpus, out, "--words", "bank"])
        if command == "index-usages"
        else (lambda out: ["prepare-corpus", corpus, "--output", out, "--n-process", "1"])
    )
    assert _cli(*args("play.tmp")).exit_code == 0
    (tmp_path / "play.tmp" / "NOTES.md").write_text("mine")
    (tmp_path / "play.tmp" / "results").mkdir()
    (tmp_path / "play.tmp" / "results" / "r.txt").write_text("mine too")
    before = _files(tmp_path / "play.tmp")
    assert _cli(*args("play")).exit_code == 0
    assert _files(tmp_path / "play.tmp") == before
    assert not list(tmp_path.glob(".*.spacy-elmo-scratch"))


# 2. a folder holding only files with the tool's names is not the tool's


def test_a_folder_of_files_with_the_tools_names_is_refused(model, corpus, tmp_path):
    user = tmp_path / "u"
    user.mkdir()
    (user / "vectors.bin").write_text("mine")
    (user / "keys.json").write_text("mine")
    line = _line(_cli("index-usages", model, corpus, user, "--words", "bank"))
    assert "not made by spacy-elmo" in line
    assert (user / "vectors.bin").read_text() == "mine" and (user / "keys.json").read_text() == "mine"
    (user / "vectors.bin").unlink()
    (user / "keys.json").unlink()
    (user / "meta.json").write_text("mine")
    (user / "tokens.bin").write_text("mine")
    assert "not made by spacy-elmo" in _line(_cli("prepare-corpus", corpus, "--output", user))
    assert (user / "meta.json").read_text() == "mine"


# 3. an index inside its corpus folder is not read back as text


@pytest.mark.slow
def test_an_index_inside_its_corpus_folder_is_skipped_when_reading(model, tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "news.txt").write_text(TEXT, encoding="utf-8")
    counts = []
    for _ in range(3):
        result = _cli("index-usages", model, folder, folder / "idx", "--words", "bank")
        assert result.exit_code == 0, result.output
        counts.append(len(UsageIndex().from_disk(folder / "idx")))
    assert counts == [3, 3, 3]


# 4. non-finite or zero vectors: refused before any work, or in one line


@pytest.mark.parametrize(
    "layer, message",
    [("0,0,0", "all zero"), ("0,nan,1", "weights"), ("0,1e6,0", "not finite in float16"), ("1e308,1e308,0", "would overflow the float32")],
)
def test_layer_weights_that_give_wrong_vectors_are_refused(model, corpus, tmp_path, layer, message):
    out = tmp_path / "idx"
    line = _line(_cli("index-usages", model, corpus, out, "--words", "bank", "--layer", layer))
    assert message in line
    assert not out.exists() and not list(tmp_path.glob(".*.spacy-elmo-scratch"))


def test_an_index_with_non_finite_rows_is_refused_in_one_line(model, corpus, tmp_path):
    out = tmp_path / "idx"
    assert _cli("index-usages", model, corpus, out, "--words", "bank").exit_code == 0
    vectors = numpy.fromfile(out / "vectors.bin", dtype="float16")
    norms = numpy.load(out / "norms.npy")
    vectors[:4] = numpy.nan
    norms[0] = numpy.nan
    vectors.tofile(out / "vectors.bin")
    numpy.save(out / "norms.npy", norms)
    line = _line(_cli("neighbours", out, "She sat on the bank of the river.", "--word", "bank", "--n", "3"))
    assert "not finite" in line


def test_a_query_returns_n_usages_when_there_are_n(model, corpus, tmp_path):
    nlp = load_elmo_pipeline(model)
    index = build_usage_index(nlp, corpus, tmp_path / "idx", words=["bank"], progress=False, log=lambda _: None)
    doc = index.nlp("She sat on the bank of the river.")
    assert len(index.most_similar(doc[4], n=3)) == 3
    assert len(index.most_similar(doc[4], n=100)) == len(index.rows_of("bank")) == 9


# 5. an empty build is an error and keeps the former index


@pytest.mark.slow
def test_an_empty_build_keeps_the_former_index(model, corpus, tmp_path):
    out = tmp_path / "idx"
    assert _cli("index-usages", model, corpus, out, "--words", "bank").exit_code == 0
    before = _files(out)
    line = _line(_cli("index-usages", model, corpus, out, "--words", "bnak"))
    assert "no usage of bnak" in line and "left as it was" in line
    assert _files(out) == before
    assert _cli("neighbours", out, "She sat on the bank of the river.", "--word", "bank").exit_code == 0


# Also


def test_usage_index_imports_from_the_package():
    from spacy_elmo import UsageIndex as Imported

    assert Imported is UsageIndex


@pytest.mark.slow
def test_a_token_from_another_pipeline_is_refused(model, corpus, tmp_path):
    index = build_usage_index(load_elmo_pipeline(model), corpus, tmp_path / "idx", words=["bank"], progress=False, log=lambda _: None)
    other = tmp_path / "other"
    save_original(tiny_bilm(seed=6), other / "options.json", other / "weights.hdf5")  # same width, another biLM
    doc = load_elmo_pipeline(other)("She sat on the bank of the river.")
    with pytest.raises(InputError, match="not made by the index's pipeline"):
        index.most_similar(doc[4])
    with pytest.raises(InputError, match="biLM differs"):
        index.use_pipeline(load_elmo_pipeline(other))


def test_words_as_a_string_are_words_not_letters(model, corpus, tmp_path):
    index = build_usage_index(load_elmo_pipeline(model), corpus, tmp_path / "idx", words="bank,suit", progress=False, log=lambda _: None)
    assert sorted(index.keys) == ["bank", "suit"]


@pytest.mark.parametrize("key", ["fingerprint", "layer_weights", "match", "n_usages"])
def test_missing_meta_keys_fail_in_one_line(model, corpus, tmp_path, key):
    out = tmp_path / "idx"
    assert _cli("index-usages", model, corpus, out, "--words", "bank").exit_code == 0
    meta = json.loads((out / "meta.json").read_text())
    del meta[key]
    (out / "meta.json").write_text(json.dumps(meta))
    assert key in _line(_cli("neighbours", out, "the bank", "--word", "bank"))


def test_text_that_is_not_utf8_names_the_file_and_line(model, tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("The bank.\nCafé bank.\n".encode("latin-1"))
    line = _line(_cli("index-usages", model, path, tmp_path / "idx", "--words", "bank"))
    assert f"{path}:2" in line and "UTF-8" in line


def test_a_truncated_gzip_names_the_file(model, tmp_path):
    path = tmp_path / "cut.txt.gz"
    data = gzip.compress((TEXT * 200).encode("utf-8"))
    path.write_bytes(data[: len(data) // 2])
    line = _line(_cli("index-usages", model, path, tmp_path / "idx", "--words", "bank"))
    assert str(path) in line and "truncated or damaged" in line


def test_a_file_name_that_is_not_utf8_fails_before_any_work(model, tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "good.txt").write_text(TEXT, encoding="utf-8")
    bad = os.fsencode(str(folder)) + b"/caf\xe9.txt"
    with open(bad, "wb") as f:
        f.write(TEXT.encode("utf-8"))
    line = _line(_cli("index-usages", model, folder, tmp_path / "idx", "--words", "bank"))
    assert "not valid UTF-8" in line and "rename" in line


@pytest.mark.slow
def test_a_relative_index_path_is_refused_with_the_absolute_one_to_give(model, corpus, tmp_path, monkeypatch):
    """A saved pipeline keeps the index's path as given and is loaded from other folders: a relative
    path is refused at add_pipe, naming the absolute one; that one works from anywhere."""
    monkeypatch.chdir(tmp_path)
    build_usage_index(load_elmo_pipeline(model), corpus, "idx", words=["bank"], progress=False, log=lambda _: None)
    nlp = load_elmo_pipeline(model)
    with pytest.raises(InputError, match="relative path.*" + str(tmp_path.resolve() / "idx")):
        nlp.add_pipe("elmo_usages", config={"index": "idx"})
    nlp.add_pipe("elmo_usages", config={"index": str(tmp_path.resolve() / "idx")})
    nlp.to_disk(tmp_path / "pipe")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    doc = spacy.load(tmp_path / "pipe")("the bank")
    assert doc[1]._.elmo_usages(1)[0].text.lower() == "bank"
    (tmp_path / "idx").rename(tmp_path / "idx-moved")  # gone from where the saved pipeline names it
    monkeypatch.setattr("spacy_elmo.usages.component._OPEN", {})  # as in a new process (indexes are read once per process)
    with pytest.raises(InputError, match="usage index .*idx is not there.*index-usages.*'index'"):
        spacy.load(tmp_path / "pipe")("the bank")


def test_a_lock_file_gets_the_mode_a_plain_open_gives(tmp_path):
    """Not 0o600: a lock file holds a process id, nothing private, and another user sharing the
    folder (a team's download cache) must be able to take the lock where the umask lets them."""
    import os

    from spacy_elmo.output_folders import FolderLock, default_file_mode

    old = os.umask(0o002)
    try:
        with FolderLock(tmp_path, "a test"):
            assert (tmp_path / ".lock").stat().st_mode & 0o777 == default_file_mode() == 0o664
    finally:
        os.umask(old)
