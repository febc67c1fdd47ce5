"""A part proves what it holds: merge refuses a part whose data changed after it was written, parts of
two versions of a corpus, a DocBin with another part's record, a chunk filed under the wrong shard;
and `merge --virtual` equals the copied merge."""

import json
import shutil

import h5py
import numpy
import pytest

from spacy_elmo.errors import InputError
from spacy_elmo.shards import Shard

from .test_merge import _fail, _index_shards, _run, bilm_dir, corpus  # noqa: F401 (fixtures)


def _embed_shards(bilm_dir, lines, tmp_path, n, suffix=".hdf5", *extra):  # noqa: F811
    parts = [tmp_path / f"part{i}{suffix}" for i in range(n)]
    for i, part in enumerate(parts):
        _run("embed", bilm_dir, lines, part, "--docs-per-batch", 1, "--shard", f"{i}/{n}", "-q", *extra)
    return parts


@pytest.mark.slow
def test_a_value_changed_inside_an_hdf5_part_is_refused_naming_the_part(bilm_dir, corpus, tmp_path):  # noqa: F811
    parts = _embed_shards(bilm_dir, corpus / "lines.txt", tmp_path, 2)
    _run("merge", tmp_path / "good.hdf5", *parts, "-q")
    with h5py.File(parts[1], "r+") as f:
        f["20"][1, 0, 0] += 3.33  # line 20: chunk 1 (16 lines a chunk), shard 1
    message = _fail("merge", tmp_path / "bad.hdf5", *parts, "-q")
    assert str(parts[1]) in message and "write that part again" in message
    assert not (tmp_path / "bad.hdf5").exists() and not list(tmp_path.glob(".bad*"))


@pytest.mark.slow
def test_a_byte_changed_in_a_usage_index_parts_vectors_is_refused(bilm_dir, corpus, tmp_path):  # noqa: F811
    parts = _index_shards(bilm_dir, corpus, tmp_path, 2)
    vectors = parts[0] / "vectors.bin"
    data = bytearray(vectors.read_bytes())
    data[len(data) // 2] ^= 0x40
    vectors.write_bytes(bytes(data))
    message = _fail("merge", tmp_path / "merged", *parts, "-q")
    assert f"{parts[0]}/vectors.bin" in message and "changed or damaged" in message
    assert not (tmp_path / "merged").exists()


@pytest.mark.slow
@pytest.mark.parametrize("command", ["index-usages", "embed"])
def test_a_corpus_edited_between_two_shards_runs_is_refused(bilm_dir, corpus, tmp_path, command):  # noqa: F811
    """Same path, same number of documents, other words (sed -i 's/ the / a /g' between two shards)."""
    text = tmp_path / "c.txt"
    source = (corpus / "docs.txt") if command == "index-usages" else (corpus / "lines.txt")
    text.write_text(source.read_text(encoding="utf8"), encoding="utf8")
    suffix = "" if command == "index-usages" else ".hdf5"
    parts = [tmp_path / f"p{i}{suffix}" for i in range(3)]
    for i, part in enumerate(parts):
        if i == 1:
            edited = text.read_text(encoding="utf8").replace(" the ", " a ").replace(" bank ", " rate ")
            assert edited != text.read_text(encoding="utf8")
            text.write_text(edited, encoding="utf8")
        _run(command, bilm_dir, text, part, "--docs-per-batch", 1, "--shard", f"{i}/3", "-q")
    message = _fail("merge", tmp_path / f"merged{suffix}", *parts, "-q")
    assert "read different texts" in message and str(parts[1]) in message
    assert not (tmp_path / f"merged{suffix}").exists()


@pytest.mark.slow
def test_docbin_parts_with_their_records_swapped_are_refused(bilm_dir, corpus, tmp_path):  # noqa: F811
    parts = _embed_shards(bilm_dir, corpus / "lines.txt", tmp_path, 2, ".spacy")
    sidecars = [p.with_name(p.name + ".shard.json") for p in parts]
    records = [s.read_text() for s in sidecars]
    sidecars[0].write_text(records[1])
    sidecars[1].write_text(records[0])
    message = _fail("merge", tmp_path / "merged.spacy", *parts, "-q")
    assert "is not the DocBin its record" in message and not (tmp_path / "merged.spacy").exists()


@pytest.mark.slow
def test_a_chunk_given_another_shards_number_is_refused(bilm_dir, corpus, tmp_path):  # noqa: F811
    parts = _index_shards(bilm_dir, corpus, tmp_path, 3)
    meta_path = parts[1] / "meta.json"
    meta = json.loads(meta_path.read_text())
    assert [c[0] for c in meta["shard"]["chunks"]] == [1]  # 35 documents, chunks of 16: 0 and 2 elsewhere
    meta["shard"]["chunks"][0][0] = 2
    meta_path.write_text(json.dumps(meta))
    message = _fail("merge", tmp_path / "merged", *parts, "-q")
    assert "chunk 2 in shard 1/3" in message and not (tmp_path / "merged").exists()


@pytest.mark.slow
def test_a_huge_shard_count_is_refused_and_missing_shards_are_named_briefly(bilm_dir, corpus, tmp_path):  # noqa: F811
    with pytest.raises(InputError, match="at most 100,000 shards"):
        Shard.parse("0/1000000000")
    parts = _index_shards(bilm_dir, corpus, tmp_path, 3)
    message = _fail("merge", tmp_path / "merged", parts[0], "-q")
    assert "shards 1/3, 2/3 missing" in message
    meta = json.loads((parts[0] / "meta.json").read_text())
    meta["shard"]["count"] = 99_999  # a record that names many shards: a short line, not a list of them all
    (parts[0] / "meta.json").write_text(json.dumps(meta))
    message = _fail("merge", tmp_path / "merged", parts[0], "-q")
    assert "1/99999, 2/99999, 3/99999 and 99,995 more missing" in message and len(message) < 300


@pytest.mark.slow
def test_a_virtual_merge_equals_the_copied_merge_and_refers_to_the_parts(bilm_dir, corpus, tmp_path):  # noqa: F811
    parts = _embed_shards(bilm_dir, corpus / "lines.txt", tmp_path, 3, ".hdf5", "--top")
    _run("merge", tmp_path / "copied.hdf5", *parts, "-q")
    _run("merge", tmp_path / "virtual.hdf5", *parts, "--virtual", "-q")
    with h5py.File(tmp_path / "copied.hdf5", "r") as a, h5py.File(tmp_path / "virtual.hdf5", "r") as b:
        assert sorted(a) == sorted(b) and len(a) == 38
        assert json.loads(a["sentence_to_index"][0]) == json.loads(b["sentence_to_index"][0])
        for name in a:
            numpy.testing.assert_array_equal(a[name][()], b[name][()])
            assert a[name].dtype == b[name].dtype
        assert any(b[name].is_virtual for name in b)
    assert (tmp_path / "virtual.hdf5").stat().st_size < (tmp_path / "copied.hdf5").stat().st_size / 2
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(str(parts[0]), moved / parts[0].name)  # the parts must stay where they are: HDF5 then reads NaN
    with h5py.File(tmp_path / "virtual.hdf5", "r") as b:
        assert numpy.isnan(b["0"][()]).all()  # never plausible zeros
    assert "merged by copying" in _fail("merge", tmp_path / "v", *_index_shards(bilm_dir, corpus, tmp_path, 2), "--virtual")


@pytest.mark.slow
def test_a_part_records_what_ran_and_parts_that_ran_apart_are_refused(bilm_dir, corpus, tmp_path, monkeypatch):  # noqa: F811
    """The precision "auto" resolved to (not "auto"), the threads, torch and oneDNN: int8 in one part and float32 in
    the other would not add up to one run."""
    import torch

    from spacy_elmo.bilm.measured import MEASURE_ENV, onednn_version

    monkeypatch.setenv(MEASURE_ENV, "0")  # auto follows the CPU's flags: the same answer in both parts
    lines = corpus / "lines.txt"
    parts = [tmp_path / "a.hdf5", tmp_path / "b.hdf5"]
    _run("embed", bilm_dir, lines, parts[0], "--shard", "0/2", "-q", "--precision", "auto")
    _run("embed", bilm_dir, lines, parts[1], "--shard", "1/2", "-q", "--precision", "fp32")
    with h5py.File(parts[0], "r") as f:
        ran = json.loads(f["shard"][0])["ran"]
    assert ran["precision"] != ["auto"] and ran["threads"] == 1 and ran["torch"] == torch.__version__ and ran["onednn"] == onednn_version()
    if ran["precision"] != ["fp32"]:  # auto resolved to another precision than the second part's
        message = _fail("merge", tmp_path / "m.hdf5", *parts, "-q")
        assert "ran with different precision" in message and "--precision and --threads" in message
        assert not (tmp_path / "m.hdf5").exists()
    _run("embed", bilm_dir, lines, tmp_path / "c.hdf5", "--shard", "1/2", "-q", "--precision", "auto")
    _run("merge", tmp_path / "m.hdf5", parts[0], tmp_path / "c.hdf5", "-q")
    result = _run_threads(bilm_dir, lines, tmp_path)
    assert "ran with different threads (2 vs 1)" in result


def _run_threads(bilm_dir, lines, tmp_path):  # noqa: F811
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    args = ["embed", str(bilm_dir), str(lines), str(tmp_path / "t.hdf5"), "--shard", "1/2", "-q", "--precision", "auto", "--threads", "2"]
    assert CliRunner().invoke(app, args).exit_code == 0
    return _fail("merge", tmp_path / "t_m.hdf5", tmp_path / "a.hdf5", tmp_path / "t.hdf5", "-q")
