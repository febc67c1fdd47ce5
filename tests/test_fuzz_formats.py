"""Fuzzing every file format the package reads (hypothesis): a usage index, a prepared corpus, a
pretraining run's checkpoint and model folder, options.json + weights.hdf5, an ELMoForManyLangs
folder and the download record. Each damaged copy (truncated, random bytes of the same size,
flipped bytes, NaN/inf in arrays, lying or missing metadata, non-UTF-8 text) must give the right
answer or an InputError (FileNotFoundError for a missing file) in one line that names the file:
never a traceback of another kind, never a wrong answer, and nothing outside the copy changes.
`pytest --runslow` runs more examples."""

import json
import shutil
from pathlib import Path
from typing import Callable, Dict

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spacy_elmo.bilm import bilm_folder, save_original
from spacy_elmo.errors import InputError
from spacy_elmo.released import cached_folder
from spacy_elmo.released.download import RECORD, _sha256
from spacy_elmo.training.checkpoint import load_checkpoint, load_model_dir
from spacy_elmo.training.prepared import PreparedCorpus, prepare_corpus
from spacy_elmo.usages import UsageIndex

from .helpers import tiny_bilm

EFML = Path(__file__).resolve().parent / "fixtures" / "elmoformanylangs" / "model"
TEXT = "The bank raised its rate. She sat on the bank of the river.\n\nA suit and a tie. He filed a suit.\n"


def _examples(fast: int) -> int:
    import sys

    return fast * 4 if "--runslow" in sys.argv else fast


# --- how a file is damaged ----------------------------------------------------------------------


@st.composite
def damages(draw) -> Callable[[Path], None]:
    kind = draw(st.sampled_from(["truncate", "random", "flip", "non_utf8", "empty", "delete"]))
    cut = draw(st.floats(0.0, 0.99))
    seed = draw(st.integers(0, 2**31 - 1))
    n_flips = draw(st.integers(1, 16))

    def damage(path: Path) -> None:
        data = path.read_bytes()
        rng = numpy.random.default_rng(seed)
        if kind == "truncate":
            path.write_bytes(data[: int(len(data) * cut)])
        elif kind == "random":
            path.write_bytes(rng.bytes(len(data)))
        elif kind == "flip" and data:
            array = bytearray(data)
            for i in rng.integers(0, len(array), size=n_flips):
                array[int(i)] ^= int(rng.integers(1, 256))
            path.write_bytes(bytes(array))
        elif kind == "non_utf8":
            path.write_bytes(data[: int(len(data) * cut)] + b"\xff\xfe\xc3" + data[int(len(data) * cut) :])
        elif kind == "empty":
            path.write_bytes(b"")
        else:
            path.unlink()

    damage.kind = kind  # type: ignore[attr-defined]
    return damage


JSON_LIES = [
    lambda d, k: d.pop(k),
    lambda d, k: d.__setitem__(k, None),
    lambda d, k: d.__setitem__(k, "text"),
    lambda d, k: d.__setitem__(k, -7),
    lambda d, k: d.__setitem__(k, 10**9),
    lambda d, k: d.__setitem__(k, [float("nan")]),
]


def _snapshot(folder: Path) -> Dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _check(read: Callable[[Path], None], original: Path, work: Path, name: str, damage: Callable[[Path], None], outside: Path) -> None:
    """Damage `name` in a fresh copy of `original` and read it: the right answer or one line."""
    copy = work / "copy"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(original, copy)
    before_outside = _snapshot(outside)
    damage(copy / name)
    try:
        read(copy)
    except (InputError, FileNotFoundError) as err:
        message = str(err)
        assert "\n" not in message.strip(), message
        assert str(copy) in message, f"the message does not name the file: {message}"
    assert _snapshot(outside) == before_outside


# --- the formats ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    import spacy

    from spacy_elmo import add_elmo
    from spacy_elmo.usages import build_usage_index

    root = tmp_path_factory.mktemp("artifacts")
    bilm = root / "bilm"
    save_original(tiny_bilm(seed=9), bilm / "options.json", bilm / "weights.hdf5")
    corpus = root / "corpus.txt"
    corpus.write_text(TEXT * 4, encoding="utf-8")
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    add_elmo(nlp, str(bilm))
    build_usage_index(nlp, corpus, root / "index", words=["bank", "suit"], progress=False, log=lambda _: None)
    prepare_corpus(corpus, root / "prepared", n_process=1, progress=False, log=lambda _: None)
    run = _tiny_run(root / "run", corpus)
    cache = root / "cache" / "small"
    shutil.copytree(bilm, cache)
    record = {"name": "small", "complete": True, "partial": [], "files": {n: _sha256(cache / n) for n in ("options.json", "weights.hdf5")}}
    (cache / RECORD).write_text(json.dumps(record))
    return {"bilm": bilm, "index": root / "index", "prepared": root / "prepared", "run": run, "cache": root / "cache", "efml": EFML}


def _tiny_run(out: Path, corpus: Path) -> Path:
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    from .training.test_pretrain import CONFIGS, TINY

    settings_ = {**TINY, "paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 2}
    args = ["pretrain", str(CONFIGS / "pretrain_cpu.cfg"), "--output", str(out)]
    for key, value in settings_.items():
        args += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def _read_index(folder: Path) -> None:
    index = UsageIndex().from_disk(folder)
    query = numpy.random.default_rng(0).normal(size=index.vectors.shape[1]).astype("float32")
    found = index.nearest(query, n=3)
    assert len(found) == min(3, len(index)) and all(numpy.isfinite(u.score) and -1.001 <= u.score <= 1.001 for u in found)
    assert all(u.sentence[u.start : u.end] == u.text for u in found)


def _read_prepared(folder: Path) -> None:
    prepared = PreparedCorpus(folder)
    for i in range(len(prepared)):
        assert prepared.sentence(i)


def _read_checkpoint(folder: Path) -> None:
    load_checkpoint(folder)


def _read_model(folder: Path) -> None:
    bilm, _, _ = load_model_dir(folder / "model-best")
    assert all(numpy.isfinite(layers).all() for layers in bilm.embed([["a", "bank"]]))


def _read_bilm(folder: Path) -> None:
    assert all(numpy.isfinite(layers).all() for layers in bilm_folder(folder).load().embed([["a", "bank"]]))


def _read_cached(folder: Path) -> None:
    found = cached_folder("small", folder)
    if found is not None:
        found.load()


FORMATS = {
    "index": (
        "index",
        _read_index,
        [
            "meta.json",
            "vectors.bin",
            "norms.npy",
            "usage_key.npy",
            "usage_start.npy",
            "sentences.jsonl",
            "keys.json",
            "types.json",
            "type_vectors.bin",
        ],
    ),
    "prepared": (
        "prepared",
        _read_prepared,
        ["meta.json", "tokens.bin", "lengths.npy", "lines.npy", "docs.npy", "words.bin", "word_offsets.npy"],
    ),
    "checkpoint": ("run", _read_checkpoint, ["checkpoint.pt"]),
    "model": (
        "run",
        _read_model,
        ["model-best/options.json", "model-best/weights.hdf5", "model-best/vocab.txt", "model-best/softmax.pt", "model-best/softmax.json"],
    ),
    "bilm": ("bilm", _read_bilm, ["options.json", "weights.hdf5"]),
    "elmoformanylangs": ("efml", _read_bilm, ["config.json", "cnn_tiny.json", "char.dic", "word.dic", "token_embedder.pkl", "encoder.pkl"]),
    "download": ("cache", _read_cached, ["small/" + RECORD, "small/options.json", "small/weights.hdf5"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_damaged_files_answer_right_or_fail_in_one_line(fmt, artifacts, tmp_path_factory):
    key, read, names = FORMATS[fmt]
    original = artifacts[key]
    read(original)  # the undamaged copy reads
    work = tmp_path_factory.mktemp(f"fuzz-{fmt}")

    @settings(max_examples=_examples(12), deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
    @given(name=st.sampled_from(names), damage=damages())
    def run(name, damage):
        _check(read, original, work, name, damage, original)

    run()


JSON_FILES = {
    "index": (
        "index",
        _read_index,
        "meta.json",
        ["n_usages", "dim", "n_sentences", "n_types", "type_dim", "fingerprint", "layer_weights", "match", "format", "kind"],
    ),
    "prepared": ("prepared", _read_prepared, "meta.json", ["key", "tokens", "sentences"]),
    "bilm": ("bilm", _read_bilm, "options.json", ["lstm", "char_cnn"]),
    "elmoformanylangs": ("efml", _read_bilm, "cnn_tiny.json", ["encoder", "token_embedder"]),
    "download": ("cache", _read_cached, "small/" + RECORD, ["complete", "files", "name"]),
}


@pytest.mark.parametrize("fmt", list(JSON_FILES))
def test_lying_metadata_answers_right_or_fails_in_one_line(fmt, artifacts, tmp_path_factory):
    key, read, name, keys = JSON_FILES[fmt]
    original = artifacts[key]
    work = tmp_path_factory.mktemp(f"lies-{fmt}")

    @settings(max_examples=_examples(12), deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
    @given(field=st.sampled_from(keys), lie=st.sampled_from(JSON_LIES))
    def run(field, lie):
        def damage(path: Path) -> None:
            data = json.loads(path.read_text(encoding="utf-8"))
            lie(data, field)
            path.write_text(json.dumps(data), encoding="utf-8")

        _check(read, original, work, name, damage, original)

    run()


@pytest.mark.parametrize("name, dtype", [("vectors.bin", "float16"), ("type_vectors.bin", "float16"), ("norms.npy", None)])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), 0.0])
def test_non_finite_or_zero_index_values_are_refused(artifacts, tmp_path, name, dtype, value):
    def damage(path: Path) -> None:
        if dtype is None:
            array = numpy.load(path)
            array[:2] = value
            numpy.save(path, array)
        else:
            array = numpy.fromfile(path, dtype=dtype)
            array[: max(1, len(array) // 3)] = value
            array.tofile(path)

    _check(_read_index, artifacts["index"], tmp_path, name, damage, artifacts["index"])


def test_non_utf8_file_names_in_a_corpus_fail_in_one_line(artifacts, tmp_path):
    import os

    folder = tmp_path / "corpus"
    folder.mkdir()
    with open(os.fsencode(str(folder)) + b"/\xff.txt", "wb") as f:
        f.write(TEXT.encode("utf-8"))
    with pytest.raises(InputError, match="not valid UTF-8"):
        prepare_corpus(folder, tmp_path / "out", n_process=1, progress=False, log=lambda _: None)
    assert not (tmp_path / "out").exists()
