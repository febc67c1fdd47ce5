"""Shards that add up to the single run: `--shard I/N` on index-usages and embed, joined by
`spacy-elmo merge`, against one run over the whole corpus, byte for byte; and the refusals."""

import shutil
import json
import random

import h5py
import numpy
import pytest
from spacy.tokens import DocBin
from spacy.vocab import Vocab
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.shards import Shard

from ..helpers import tiny_bilm

WORDS = "the bank river play suit court city a of rate state wore filed sat near old new big small".split()


def _documents(n: int, seed: int = 0) -> list:
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        sentences = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))).capitalize() + "." for _ in range(rng.randint(1, 4))]
        docs.append(" ".join(sentences))
    return docs


@pytest.fixture(scope="module")
def bilm_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bilm")
    save_original(tiny_bilm(seed=5), folder / "options.json", folder / "weights.hdf5")
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """35 documents separated by blank lines (for index-usages), and 37 lines of them (for embed). A chunk is
    16 nlp.pipe batches (shards.py): with --docs-per-batch 1 or 2, shards of 16 or 32 documents."""
    folder = tmp_path_factory.mktemp("corpus")
    docs = _documents(35)
    (folder / "docs.txt").write_text("\n\n".join(docs) + "\n", encoding="utf8")
    (folder / "lines.txt").write_text("\n".join(docs[:33] + [""] + docs[:3]) + "\n", encoding="utf8")  # a blank line, repeats
    return folder


def _run(*args) -> str:
    if args[0] in ("embed", "index-usages"):  # parts equal a single run at the same threads (docs/scale.md)
        args += ("--threads", 1)
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def _fail(*args) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    return result.output


def _index_shards(bilm_dir, corpus, tmp_path, n, *extra):
    parts = []
    for i in range(n):
        parts.append(tmp_path / f"part{i}")
        _run("index-usages", bilm_dir, corpus / "docs.txt", parts[-1], "--shard", f"{i}/{n}", "--docs-per-batch", 1, "-q", *extra)
    return parts


@pytest.mark.slow
def test_three_index_shards_merge_into_the_single_runs_index(bilm_dir, corpus, tmp_path):
    _run("index-usages", bilm_dir, corpus / "docs.txt", tmp_path / "single", "--docs-per-batch", 1, "-q")
    parts = _index_shards(bilm_dir, corpus, tmp_path, 3)
    sizes = [json.loads((p / "meta.json").read_text())["n_usages"] for p in parts]
    assert all(sizes) and len(set(sizes)) > 1  # every shard did some of the work
    _run("merge", tmp_path / "merged", *parts, "-q")
    single, merged = tmp_path / "single", tmp_path / "merged"
    names = sorted(p.name for p in single.iterdir() if p.name not in (".lock", "meta.json"))
    assert names == sorted(p.name for p in merged.iterdir() if p.name not in (".lock", "meta.json"))
    for name in names:
        assert (single / name).read_bytes() == (merged / name).read_bytes(), name
    a, b = (json.loads((f / "meta.json").read_text()) for f in (single, merged))
    assert a.pop("seconds") >= 0 and b.pop("seconds") >= 0
    assert a == b and "shard" not in b


@pytest.mark.slow
def test_an_empty_shard_is_a_part_and_merges(bilm_dir, corpus, tmp_path):
    """With --words, a shard may hold no usage: its part is written, and the merge equals the single run."""
    _run("index-usages", bilm_dir, corpus / "docs.txt", tmp_path / "single", "--docs-per-batch", 40, "-q", "--words", "bank")
    parts = _index_shards(bilm_dir, corpus, tmp_path, 2, "--words", "bank", "--docs-per-batch", 40)
    assert json.loads((parts[1] / "meta.json").read_text())["n_usages"] == 0  # 35 documents: all in chunk 0 (640 documents)
    _run("merge", tmp_path / "merged", *parts, "-q")
    assert (tmp_path / "single" / "vectors.bin").read_bytes() == (tmp_path / "merged" / "vectors.bin").read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("layers", ["--all", "--top"])
def test_three_hdf5_shards_merge_into_the_single_runs_file_byte_for_byte(bilm_dir, corpus, tmp_path, layers):
    lines = corpus / "lines.txt"
    _run("embed", bilm_dir, lines, tmp_path / "single.hdf5", layers, "--docs-per-batch", 2, "-q")
    parts = [tmp_path / f"part{i}.hdf5" for i in range(3)]
    for i, part in enumerate(parts):  # chunks of 32 lines: 0-31 and 32-36; shard 2 holds none
        _run("embed", bilm_dir, lines, part, layers, "--docs-per-batch", 2, "--shard", f"{i}/3", "-q")
    _run("merge", tmp_path / "merged.hdf5", *parts[::-1], "-q")  # the order given does not matter
    assert (tmp_path / "single.hdf5").read_bytes() == (tmp_path / "merged.hdf5").read_bytes()
    with h5py.File(tmp_path / "merged.hdf5", "r") as f:
        index = json.loads(f["sentence_to_index"][0])
        assert len(f) == 38 and "shard" not in f  # 37 lines and sentence_to_index
    assert index[lines.read_text().split("\n")[0]] == "34"  # a repeated line: its last occurrence


@pytest.mark.slow
def test_docbin_shards_merge_into_the_single_runs_docs(bilm_dir, corpus, tmp_path):
    lines = corpus / "lines.txt"
    _run("embed", bilm_dir, lines, tmp_path / "single.spacy", "--docs-per-batch", 1, "-q")
    parts = [tmp_path / f"part{i}.spacy" for i in range(2)]
    for i, part in enumerate(parts):
        _run("embed", bilm_dir, lines, part, "--docs-per-batch", 1, "--shard", f"{i}/2", "-q")
    _run("merge", tmp_path / "merged.spacy", *parts, "-q")
    vocab = Vocab()
    single = list(DocBin().from_disk(tmp_path / "single.spacy").get_docs(vocab))
    merged = list(DocBin().from_disk(tmp_path / "merged.spacy").get_docs(vocab))
    assert [d.text for d in single] == [d.text for d in merged] and len(single) == 37
    for a, b in zip(single, merged):
        numpy.testing.assert_array_equal(a._.elmo.layers, b._.elmo.layers)
    assert (tmp_path / "single.spacy").read_bytes() == (tmp_path / "merged.spacy").read_bytes()


@pytest.mark.slow
def test_merge_refuses_parts_that_do_not_add_up(bilm_dir, corpus, tmp_path):
    parts = _index_shards(bilm_dir, corpus, tmp_path, 3)
    assert "shard 2/3 missing" in _fail("merge", tmp_path / "m1", parts[0], parts[1])
    assert "both shard 1/3" in _fail("merge", tmp_path / "m2", parts[0], parts[1], parts[1], parts[2])
    other_layer = tmp_path / "other"
    _run("index-usages", bilm_dir, corpus / "docs.txt", other_layer, "--shard", "2/3", "--docs-per-batch", 1, "-q", "--layer", "1")
    assert "different layer_weights" in _fail("merge", tmp_path / "m3", parts[0], parts[1], other_layer)
    other_bilm = tmp_path / "bilm2"
    other_bilm.mkdir()
    save_original(tiny_bilm(seed=6), other_bilm / "options.json", other_bilm / "weights.hdf5")
    foreign = tmp_path / "foreign"
    _run("index-usages", other_bilm, corpus / "docs.txt", foreign, "--shard", "2/3", "--docs-per-batch", 1, "-q")
    assert "different fingerprint" in _fail("merge", tmp_path / "m4", parts[0], parts[1], foreign)
    chunked = tmp_path / "chunked"
    _run("index-usages", bilm_dir, corpus / "docs.txt", chunked, "--shard", "2/3", "--docs-per-batch", 2, "-q")
    assert "documents per chunk" in _fail("merge", tmp_path / "m5", parts[0], parts[1], chunked)
    whole = tmp_path / "whole"
    _run("index-usages", bilm_dir, corpus / "docs.txt", whole, "-q")
    assert "not a shard's part" in _fail("merge", tmp_path / "m6", whole, parts[1])
    assert not any((tmp_path / f"m{i}").exists() for i in range(1, 7))


@pytest.mark.slow
def test_merge_refuses_embeddings_of_other_settings(bilm_dir, corpus, tmp_path):
    lines = corpus / "lines.txt"
    _run("embed", bilm_dir, lines, tmp_path / "a.hdf5", "--shard", "0/2", "-q")
    _run("embed", bilm_dir, lines, tmp_path / "b.hdf5", "--shard", "1/2", "--top", "-q")
    assert "different layers: top vs all" in _fail("merge", tmp_path / "m.hdf5", tmp_path / "a.hdf5", tmp_path / "b.hdf5")
    _run("embed", bilm_dir, lines, tmp_path / "single.hdf5", "-q")
    assert "not a shard's part" in _fail("merge", tmp_path / "m.hdf5", tmp_path / "a.hdf5", tmp_path / "single.hdf5")
    assert "exists" in _fail("merge", tmp_path / "single.hdf5", tmp_path / "a.hdf5")
    assert not (tmp_path / "m.hdf5").exists()


@pytest.mark.parametrize("text", ["3/3", "-1/2", "1", "a/b", "0/0", "1/2/3"])
def test_a_bad_shard_is_one_line(text):
    with pytest.raises(InputError, match="give I/N"):
        Shard.parse(text)
    assert Shard.parse("2/5").owns(7) and not Shard.parse("2/5").owns(8) and Shard.parse(None).whole


@pytest.mark.slow
def test_merge_never_replaces_a_result_without_overwrite(bilm_dir, corpus, tmp_path):
    """An index folder at OUTPUT is a result, as a file is: kept unless --overwrite; a link (even dangling) is refused."""
    parts = _index_shards(bilm_dir, corpus, tmp_path, 2, "--words", "bank,river", "--all-layers")
    _run("merge", tmp_path / "merged", *parts, "-q")
    victim = tmp_path / "victim"
    shutil.copytree(tmp_path / "merged", victim)
    (victim / "vectors.bin").write_bytes(b"\0" * (victim / "vectors.bin").stat().st_size)  # not what the merge writes
    before = {p.name: p.read_bytes() for p in victim.iterdir() if p.is_file()}
    assert "is a folder with files in it: give a new or empty folder" in _fail("merge", victim, *parts, "-q")
    user_folder = tmp_path / "notes"
    user_folder.mkdir()
    (user_folder / "todo.txt").write_text("mine")
    assert "was not made by spacy-elmo: nothing was changed" in _fail("merge", user_folder, *parts, "-q", "--overwrite")
    assert (user_folder / "todo.txt").read_text() == "mine"
    assert {p.name: p.read_bytes() for p in victim.iterdir() if p.is_file()} == before
    _run("merge", victim, *parts, "-q", "--overwrite")
    assert (victim / "vectors.bin").read_bytes() == (tmp_path / "merged" / "vectors.bin").read_bytes()
    # every layer kept in the parts is merged as the single run keeps it
    _run(
        "index-usages",
        bilm_dir,
        corpus / "docs.txt",
        tmp_path / "single",
        "--docs-per-batch",
        1,
        "-q",
        "--words",
        "bank,river",
        "--all-layers",
    )
    assert (tmp_path / "single" / "layers.bin").read_bytes() == (victim / "layers.bin").read_bytes()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "nowhere")
    for extra in ((), ("--overwrite",)):
        assert "symbolic link" in _fail("merge", link, *parts, "-q", *extra)
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["cut sidecar", "edited sidecar", "missing dataset", "text index", "virtual missing dataset"])
def test_a_damaged_part_is_one_line(bilm_dir, corpus, tmp_path, damage):
    """What a hostile audit found as tracebacks: a cut or edited .shard.json, an HDF5 part missing a dataset, a usage
    index part whose record's index is text; each refused in one line, nothing written."""
    import os

    lines = corpus / "lines.txt"
    out = tmp_path / ("m.spacy" if "sidecar" in damage else "m.hdf5")
    extra = ["--virtual"] if damage.startswith("virtual") else []
    if "sidecar" in damage:
        parts = [tmp_path / f"p{i}.spacy" for i in range(2)]
        for i, part in enumerate(parts):
            _run("embed", bilm_dir, lines, part, "--shard", f"{i}/2", "-q")
        sidecar = next(p for p in tmp_path.iterdir() if p.name.startswith("p0") and p.name.endswith(".json"))
        text = sidecar.read_text()
        sidecar.write_text(text[: len(text) // 2] if damage == "cut sidecar" else text.replace('"index": 0', '"index": "zero"'))
    elif damage == "text index":
        parts = _index_shards(bilm_dir, corpus, tmp_path, 2, "--words", "bank")
        meta = json.loads((parts[0] / "meta.json").read_text())
        meta["shard"]["index"] = "0"
        (parts[0] / "meta.json").write_text(json.dumps(meta))
        out = tmp_path / "merged"
    else:
        parts = [tmp_path / f"p{i}.hdf5" for i in range(2)]
        for i, part in enumerate(parts):
            _run("embed", bilm_dir, lines, part, "--shard", f"{i}/2", "-q")
        with h5py.File(parts[0], "a") as f:
            del f[next(k for k in f.keys() if k.isdigit())]
    message = _fail("merge", out, *parts, *extra)
    assert any(s in message for s in ("damaged", "no dataset", "cut")), message
    assert not os.path.lexists(out)


@pytest.mark.slow
def test_int8_shards_cut_in_other_batches_merge_into_the_single_runs_layers(shared_bilm, corpus, tmp_path):  # noqa: F811
    """int8 quantizes each token's row over its own range: shards run in batches of one document give the single
    run's layers (batches of eight) bit for bit, on the shared small biLM, whose products int8 does quantize."""
    from spacy_elmo.bilm.packed_matmul import int8_available

    if not int8_available():
        pytest.skip("this PyTorch build or CPU has no exact int8 products")
    lines = corpus / "lines.txt"
    _run("embed", shared_bilm, lines, tmp_path / "single.hdf5", "--all", "--docs-per-batch", 8, "-q", "--precision", "int8")
    _run("embed", shared_bilm, lines, tmp_path / "fp32.hdf5", "--all", "--docs-per-batch", 8, "-q", "--precision", "fp32")
    parts = [tmp_path / f"part{i}.hdf5" for i in range(2)]
    for i, part in enumerate(parts):
        _run("embed", shared_bilm, lines, part, "--all", "--docs-per-batch", 1, "--shard", f"{i}/2", "-q", "--precision", "int8")
    _run("merge", tmp_path / "merged.hdf5", *parts, "-q")
    with (
        h5py.File(tmp_path / "single.hdf5", "r") as a,
        h5py.File(tmp_path / "merged.hdf5", "r") as b,
        h5py.File(tmp_path / "fp32.hdf5", "r") as c,
    ):
        numbers = [name for name in a if name.isdigit()]
        assert sorted(numbers) == sorted(name for name in b if name.isdigit()) and len(numbers) == 37
        for name in numbers:
            numpy.testing.assert_array_equal(a[name][()], b[name][()])
        assert any(not numpy.array_equal(a[name][()], c[name][()]) for name in numbers)  # int8 did run
