"""`spacy-elmo verify` and the virtual merge's sources: an output checked against the digests it carries; a virtual
merge names its parts relative to its own folder and never reads another file of a part's name."""

import os
import shutil

import h5py
import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app

from .test_merge import _fail, _index_shards, _run, bilm_dir, corpus  # noqa: F401 (fixtures)
from .test_part_records import _embed_shards


def _verify(path):
    return CliRunner().invoke(app, ["verify", str(path)])


def test_a_whole_usage_index_carries_digests_and_verify_finds_a_flipped_byte(bilm_dir, corpus, tmp_path):  # noqa: F811
    _run("index-usages", bilm_dir, corpus / "docs.txt", tmp_path / "idx", "-q", "--words", "bank,river")
    result = _verify(tmp_path / "idx")
    assert result.exit_code == 0 and "match their digests" in result.output
    vectors = tmp_path / "idx" / "vectors.bin"
    data = bytearray(vectors.read_bytes())
    data[7] ^= 0x01
    vectors.write_bytes(bytes(data))
    result = _verify(tmp_path / "idx")
    assert result.exit_code == 1 and "vectors.bin is not the file the index was written with" in result.output


@pytest.mark.slow
@pytest.mark.parametrize("key, value", [("layer_weights", [0.0, 1.0, 0.0]), ("fingerprint", "0" * 64), ("n_usages", 3), ("words", ["x"])])
def test_verify_finds_an_edited_meta_json(bilm_dir, corpus, tmp_path, key, value):  # noqa: F811
    import json

    _run("index-usages", bilm_dir, corpus / "docs.txt", tmp_path / "idx", "-q", "--words", "bank,river")
    meta_path = tmp_path / "idx" / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert _verify(tmp_path / "idx").exit_code == 0 and "its meta.json and the" in _verify(tmp_path / "idx").output
    meta[key] = value
    meta_path.write_text(json.dumps(meta))
    result = _verify(tmp_path / "idx")
    assert result.exit_code == 1 and "meta.json is not what the index was written with" in result.output


@pytest.mark.slow
def test_embed_and_merge_outputs_verify_and_a_changed_value_is_found(bilm_dir, corpus, tmp_path):  # noqa: F811
    lines = corpus / "lines.txt"
    _run("embed", bilm_dir, lines, tmp_path / "whole.hdf5", "--docs-per-batch", 1, "-q")
    parts = _embed_shards(bilm_dir, lines, tmp_path, 2)
    _run("merge", tmp_path / "merged.hdf5", *parts, "-q")
    for path in (tmp_path / "whole.hdf5", tmp_path / "merged.hdf5", parts[0]):
        result = _verify(path)
        assert result.exit_code == 0 and "datasets match" in result.output, result.output
    # the merge is still the single run, byte for byte, digest included
    assert (tmp_path / "whole.hdf5").read_bytes() == (tmp_path / "merged.hdf5").read_bytes()
    with h5py.File(tmp_path / "merged.hdf5", "r+") as f:
        f["3"][0, 0, 0] += 1.0
    result = _verify(tmp_path / "merged.hdf5")
    assert result.exit_code == 1 and "are not those its digest names" in result.output


@pytest.mark.slow
def test_a_virtual_merge_finds_its_parts_beside_it_and_refuses_a_moved_or_replaced_one(bilm_dir, corpus, tmp_path):  # noqa: F811
    lines = corpus / "lines.txt"
    work = tmp_path / "work"
    work.mkdir()
    parts = _embed_shards(bilm_dir, lines, work, 2)
    _run("merge", work / "virtual.hdf5", *parts, "--virtual", "-q")
    _run("merge", work / "copied.hdf5", *parts, "-q")
    assert _verify(work / "virtual.hdf5").exit_code == 0
    with h5py.File(work / "virtual.hdf5", "r") as f:  # named relative to the merged file's folder, not by an absolute path
        assert {f[n].virtual_sources()[0].file_name for n in f.keys() if n.isdigit() and f[n].is_virtual} == {"part0.hdf5", "part1.hdf5"}
    # the folder moved as a whole: the merged file still reads its parts (relative to its own folder), from anywhere
    moved = tmp_path / "moved"
    shutil.move(work, moved)
    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        with h5py.File(moved / "virtual.hdf5", "r") as v, h5py.File(moved / "copied.hdf5", "r") as c:
            for name in (n for n in c.keys() if n.isdigit()):
                numpy.testing.assert_array_equal(v[name][()], c[name][()])
        # a part gone, and a file of its name in the reader's working folder: verify refuses, never reads that one
        shutil.copy(moved / "part1.hdf5", tmp_path / "part0.hdf5")
        (moved / "part0.hdf5").rename(moved / "elsewhere.hdf5")
        result = _verify(moved / "virtual.hdf5")
        assert result.exit_code == 1 and "part0.hdf5 (part 0/2) beside it, which is not there" in result.output
        # a replaced part (another part's bytes under its name)
        shutil.copy(moved / "part1.hdf5", moved / "part0.hdf5")
        result = _verify(moved / "virtual.hdf5")
        said = ("not the part it was merged from", "not those it was merged from")  # another size, or the same size
        assert result.exit_code == 1 and any(s in result.output for s in said)
        # read without the package: a missing part reads as NaN, not as plausible zeros
        (moved / "part0.hdf5").unlink()
        os.chdir(moved)
        with h5py.File(moved / "virtual.hdf5", "r") as v:
            assert numpy.isnan(v["0"][()]).all()
    finally:
        os.chdir(here)


@pytest.mark.slow
def test_a_merged_usage_index_and_a_docbin_part_verify(bilm_dir, corpus, tmp_path):  # noqa: F811
    parts = _index_shards(bilm_dir, corpus, tmp_path, 2, "--words", "bank")
    _run("merge", tmp_path / "merged", *parts, "-q")
    assert _verify(tmp_path / "merged").exit_code == 0 and _verify(parts[1]).exit_code == 0
    docbins = _embed_shards(bilm_dir, corpus / "lines.txt", tmp_path, 2, ".spacy")
    assert _verify(docbins[0]).exit_code == 0
    docbins[0].write_bytes(docbins[0].read_bytes()[:-3])
    result = _verify(docbins[0])
    assert result.exit_code == 1 and "not the DocBin its record" in result.output
    _run("embed", bilm_dir, corpus / "lines.txt", tmp_path / "whole.spacy", "-q")
    result = _verify(tmp_path / "whole.spacy")  # a whole DocBin: no digest, its layers read and checked, not a pass
    assert result.exit_code == 1 and "carries no digest" in result.output and "37 documents read" in result.output
    assert "could not be checked" in result.output
    (tmp_path / "whole.spacy").write_bytes((tmp_path / "whole.spacy").read_bytes()[:-40])
    assert "not a readable DocBin" in _fail("verify", tmp_path / "whole.spacy")
    with h5py.File(tmp_path / "foreign.hdf5", "w") as f:  # written by another program: no digest to check against
        f["0"] = numpy.zeros((2, 3))
    assert "carries no digest" in _fail("verify", tmp_path / "foreign.hdf5")


@pytest.mark.parametrize("what", ["missing", "text file"])
def test_verify_of_something_else_is_one_line(tmp_path, what):
    path = tmp_path / ("x.hdf5" if what == "missing" else "x.txt")
    if what == "text file":
        path.write_text("hello\n")
    result = _verify(path)
    assert (
        result.exit_code == 1
        and "Traceback" not in result.output
        and ("does not exist" in result.output or "verify checks" in result.output)
    )


@pytest.mark.parametrize("damage", ["swap", "flip"])
def test_verify_finds_an_edited_sentence_to_index(bilm_dir, corpus, tmp_path, damage):  # noqa: F811
    """The audit's case: two texts' datasets swapped in sentence_to_index, or a byte of a key flipped, passed verify,
    and a reader then attached one sentence's layers to another."""
    import json

    _run("embed", bilm_dir, corpus / "lines.txt", tmp_path / "out.hdf5", "-q")
    assert "sentence_to_index" in _verify(tmp_path / "out.hdf5").output
    with h5py.File(tmp_path / "out.hdf5", "r+") as f:
        mapping = json.loads(f["sentence_to_index"][0])
        texts = list(mapping)
        if damage == "swap":
            mapping[texts[0]], mapping[texts[1]] = mapping[texts[1]], mapping[texts[0]]
        else:
            mapping[texts[0][:-1] + chr(ord(texts[0][-1]) ^ 1)] = mapping.pop(texts[0])
        f["sentence_to_index"][0] = json.dumps(mapping)
    result = _verify(tmp_path / "out.hdf5")
    assert result.exit_code == 1 and "'sentence_to_index' is not the one written" in result.output


def test_verify_of_a_pipeline_folder_says_it_does_not_read_pipelines(tmp_path):
    """The audit's case: `verify PIPELINE_FOLDER` said the folder was "built before digests were written"."""
    import spacy

    spacy.blank("en").to_disk(tmp_path / "pipeline")
    result = _verify(tmp_path / "pipeline")
    assert result.exit_code == 1 and "is not a usage index" in result.output and "built before" not in result.output
