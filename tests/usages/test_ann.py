"""The approximate search (FAISS, the [ann] extra): the same answers as the exact search where it
probes every list, the candidates scored exactly, and the checks that tie it to one build."""

import json

import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.usages import UsageIndex, index as index_module
from spacy_elmo.usages.ann_build import build_ann, default_bytes, default_lists

from ..distributed.test_merge import _documents
from ..helpers import tiny_bilm

faiss = pytest.importorskip("faiss", reason="the approximate search needs the [ann] extra: pip install 'spacy-elmo[ann]'")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ann")
    save_original(tiny_bilm(seed=8), tmp / "options.json", tmp / "weights.hdf5")
    (tmp / "corpus.txt").write_text("\n\n".join(_documents(160, seed=3)) + "\n", encoding="utf8")
    result = CliRunner().invoke(app, ["index-usages", str(tmp), str(tmp / "corpus.txt"), str(tmp / "index"), "-q", "--ann"])
    assert result.exit_code == 0, result.output
    return tmp


@pytest.mark.slow
def test_probing_every_list_finds_the_exact_answers(built, monkeypatch):
    index = UsageIndex().from_disk(built / "index")
    assert index.ann is not None and index.ann.record["lists"] == 32 and len(index) >= 64 * 32
    monkeypatch.setattr(index_module, "ANN_MIN_ROWS", 0)
    index.ann.nprobe = 32  # every list: only the product quantization approximates
    rng = numpy.random.default_rng(0)
    for row in rng.choice(len(index), size=20, replace=False):
        query = numpy.asarray(index.vectors[row], dtype="float32") + rng.normal(0, 0.05, index.vectors.shape[1]).astype("float32")
        assert index.nearest(query, n=5) == index.nearest(query, n=5, exact=True)
        rows = index.rows_of(index.keys[int(index.arrays["usage_key"][row])])
        assert index.nearest(query, n=3, rows=rows) == index.nearest(query, n=3, rows=rows, exact=True)


def test_a_search_with_few_lists_probed_still_scores_exactly(built, monkeypatch):
    index = UsageIndex().from_disk(built / "index")
    monkeypatch.setattr(index_module, "ANN_MIN_ROWS", 0)
    index.ann.nprobe, index.ann.refine = 1, 10
    query = numpy.asarray(index.vectors[7], dtype="float32")
    found = index.nearest(query, n=5)
    exact = {(u.sentence, u.start): u.score for u in index.nearest(query, n=len(index), exact=True)}
    assert found and all(exact[(u.sentence, u.start)] == u.score for u in found)  # true cosines, maybe not the best ones
    assert found[0].score == pytest.approx(1.0, abs=2e-3)  # the row itself is in its own list


def test_an_ann_of_another_build_is_refused_and_a_rebuild_removes_it(built, tmp_path):
    import shutil

    folder = tmp_path / "index"
    shutil.copytree(built / "index", folder)
    meta = json.loads((folder / "ann.json").read_text())
    (folder / "ann.json").write_text(json.dumps({**meta, "index_meta": "0" * 64}))
    with pytest.raises(InputError, match="another build"):
        UsageIndex().from_disk(folder)
    build_ann(folder, log=lambda _: None)  # built again: fine
    (folder / "ann.faiss").write_bytes(b"\0" * meta["ann_bytes"])
    with pytest.raises(InputError, match="damaged"):
        UsageIndex().from_disk(folder)
    result = CliRunner().invoke(app, ["index-usages", str(built), str(built / "corpus.txt"), str(folder), "-q", "--words", "bank"])
    assert result.exit_code == 0, result.output
    assert not (folder / "ann.faiss").exists() and not (folder / "ann.json").exists()
    assert UsageIndex().from_disk(folder).ann is None


def test_too_few_usages_for_the_lists_is_one_line(built):
    with pytest.raises(InputError, match="too few"):
        build_ann(built / "index", lists=4096, log=lambda _: None)


def test_defaults():
    assert default_lists(10_000_000) == 8192 and default_lists(1_000_000) == 2048 and default_lists(3000) == 32
    assert default_bytes(256) == 32 and default_bytes(1024) == 128 and default_bytes(16) == 8 and default_bytes(200) == 25


def test_a_small_index_is_one_line_and_faiss_stays_quiet(built, tmp_path, capfd):
    result = CliRunner().invoke(app, ["index-usages", str(built), str(built / "corpus.txt"), str(tmp_path / "few"), "-q", "-w", "bank"])
    assert result.exit_code == 0, result.output
    with pytest.raises(InputError, match="at least 1,000"):
        build_ann(tmp_path / "few", log=lambda _: None)
    capfd.readouterr()
    record = build_ann(built / "index", log=lambda _: None)  # a few thousand usages: fewer bits a code, no FAISS warning
    assert record["bits"] < 8 and record["type"].endswith(f"x{record['bits']}")
    assert "WARNING" not in capfd.readouterr().err
    with pytest.raises(InputError, match="train-size"):
        build_ann(built / "index", train_size=100, log=lambda _: None)


def test_an_ann_file_rewritten_at_its_size_is_refused_and_timings_are_no_part_of_a_build(built, tmp_path):
    import shutil

    folder = tmp_path / "index"
    shutil.copytree(built / "index", folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "seconds": meta["seconds"] + 100}))  # another run's timing
    assert UsageIndex().from_disk(folder).ann is not None
    data = bytearray((folder / "ann.faiss").read_bytes())
    data[-200] ^= 0x01  # inside the lists' ids or codes: FAISS would read it
    (folder / "ann.faiss").write_bytes(bytes(data))
    with pytest.raises(InputError, match="changed or damaged"):
        UsageIndex().from_disk(folder)


def test_neighbours_says_which_search_answered_and_takes_the_approximate_one_on_request(built):
    base = ["neighbours", str(built / "index"), "The bank of the river.", "-w", "bank", "--threads", "1"]
    exact = CliRunner().invoke(app, base)
    assert exact.exit_code == 0 and "exact search (--approximate" in exact.output, exact.output
    approximate = CliRunner().invoke(app, [*base, "--approximate"])
    assert approximate.exit_code == 0 and "approximate search (IVF32" in approximate.output, approximate.output
    both = CliRunner().invoke(app, [*base, "--approximate", "--exact"])
    assert both.exit_code == 2 and "not both" in both.output
