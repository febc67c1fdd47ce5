"""Released models by name, against a real HTTP server on 127.0.0.1 (the standard library's) that
serves fixture files as a mirror does: MIRROR/NAME/FILE. No test reaches the internet."""

import hashlib
import json
import shutil
import socket
from pathlib import Path

import numpy
import pytest
import spacy

from spacy_elmo import add_elmo
from spacy_elmo.bilm import InputError, load_original, save_original
from spacy_elmo.released import cached_folder, download, resolve_bilm
from spacy_elmo.released.download import RECORD

from ..helpers import tiny_bilm

EFML = Path(__file__).resolve().parents[1] / "fixtures" / "elmoformanylangs"


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # closed once the socket is


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_complete_download_is_checked_recorded_and_used_offline(mirror, cache, monkeypatch):
    folder = download("small", mirror=mirror.url, progress=False)
    assert folder.path == cache / "small" and folder.format == "allennlp"
    record = json.loads((cache / "small" / RECORD).read_text())
    assert record["complete"] and record["files"]["weights.hdf5"] == _sha(mirror.root / "small" / "weights.hdf5")
    assert not list((cache / "small").glob("*.partial"))
    # offline from now on: the server is gone, the mirror points nowhere
    mirror.close()
    monkeypatch.setenv("SPACY_ELMO_MIRROR", _dead_url())
    nlp = spacy.blank("en")
    add_elmo(nlp, "small")
    expected = load_original(mirror.root / "small" / "options.json", mirror.root / "small" / "weights.hdf5").embed([["a", "b"]])[0]
    numpy.testing.assert_allclose(nlp("a b")._.elmo.layers, expected, atol=1e-6)


@pytest.mark.slow
def test_a_download_cut_off_halfway_resumes_where_it_stopped(mirror, cache):
    size = (mirror.root / "small" / "weights.hdf5").stat().st_size
    mirror.cut["small/weights.hdf5"] = size // 2
    with pytest.raises(InputError, match=f"stopped at {size // 2} of {size} bytes.*run `spacy-elmo download small` again"):
        download("small", mirror=mirror.url, progress=False)
    assert (cache / ".small.download" / "weights.hdf5.partial").stat().st_size == size // 2
    assert cached_folder("small") is None
    download("small", mirror=mirror.url, progress=False)
    ranges = [r for r in mirror.requests if r[1]]
    assert ranges[-1] == ("small/weights.hdf5", f"bytes={size // 2}-")  # after a few ranges before it, compared
    assert all(path == "small/weights.hdf5" and int(r.split("=")[1].split("-")[1]) < size // 2 for path, r in ranges[:-1])
    assert _sha(cache / "small" / "weights.hdf5") == _sha(mirror.root / "small" / "weights.hdf5")


def test_a_corrupt_file_is_refused_and_removed(mirror, cache):
    weights = mirror.root / "small" / "weights.hdf5"
    good = weights.read_bytes()
    weights.write_bytes(numpy.random.default_rng(0).bytes(len(good)))
    with pytest.raises(InputError, match="not a usable biLM.*removed"):
        download("small", mirror=mirror.url, progress=False)
    assert not (cache / "small").exists() and not (cache / ".small.download").exists()
    assert cached_folder("small") is None
    weights.write_bytes(good)  # the server fixed: a plain rerun fetches it again
    assert download("small", mirror=mirror.url, progress=False).path == cache / "small"


@pytest.mark.slow
def test_a_changed_file_in_the_cache_is_found_on_the_next_use(mirror, cache):
    download("small", mirror=mirror.url, progress=False)
    with (cache / "small" / "weights.hdf5").open("r+b") as f:
        f.seek(-8, 2)
        f.write(b"\x00" * 8)
    with pytest.raises(InputError, match="differs from what spacy-elmo downloaded.*--force"):
        resolve_bilm("small")
    download("small", mirror=mirror.url, force=True, progress=False)
    assert resolve_bilm("small").path == cache / "small"


@pytest.mark.slow
def test_a_server_that_is_down_fails_in_one_line_naming_the_url_and_the_command(cache):
    url = _dead_url()
    with pytest.raises(InputError) as info:
        resolve_bilm("small", mirror=url)
    message = str(info.value)
    assert f"{url}/small/options.json" in message and "spacy-elmo download small" in message and "\n" not in message


def test_not_cached_and_not_to_be_downloaded_says_how_to_fetch_it(cache):
    with pytest.raises(InputError, match="spacy-elmo download small"):
        resolve_bilm("small", download_missing=False)


@pytest.mark.slow
def test_files_a_user_put_in_the_cache_are_left_alone(mirror, cache):
    (cache / "small").mkdir(parents=True)
    (cache / "small" / "notes.txt").write_text("mine")
    (cache / "small" / "weights.hdf5").write_text("my own weights")
    with pytest.raises(InputError, match="did not download them: they are left alone"):
        download("small", mirror=mirror.url, progress=False)
    assert (cache / "small" / "weights.hdf5").read_text() == "my own weights"
    (cache / "small" / "weights.hdf5").unlink()
    download("small", mirror=mirror.url, progress=False)
    download("small", mirror=mirror.url, force=True, progress=False)
    assert (cache / "small" / "notes.txt").read_text() == "mine"
    assert "notes.txt" not in json.loads((cache / "small" / RECORD).read_text())["files"]


def test_an_elmoformanylangs_archive_is_unpacked_checked_and_loads_exactly(mirror, cache):
    folder = download("efml-de", mirror=mirror.url, progress=False)
    assert folder.format == "elmoformanylangs"
    assert not (cache / "efml-de" / "model.zip").exists() and not list((cache / "efml-de").glob(".unpacking-*"))
    sentences = json.loads((EFML / "sentences.json").read_text(encoding="utf-8"))
    reference = numpy.load(EFML / "reference.npz")
    out = folder.load().embed(sentences)
    for i, layers in enumerate(out):
        numpy.testing.assert_allclose(layers, reference[f"arr_{i}"], atol=1e-5, rtol=0)


def test_unknown_names_and_folders_say_what_works(cache, tmp_path):
    with pytest.raises(InputError, match="is not a biLM folder.*released model's name"):
        resolve_bilm("no-such-model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="is not a biLM folder"):
        resolve_bilm(tmp_path / "empty")


@pytest.mark.slow
def test_cli_models_and_download(mirror, cache):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    runner = CliRunner()
    listed = runner.invoke(app, ["models"])
    assert listed.exit_code == 0
    lines = listed.output.splitlines()
    assert all(len(line) <= 100 for line in lines)  # a 100-column terminal
    assert lines[0].split()[:7] == ["name", "lang", "format", "size", "download", "cached", "licence"]
    table = lines[1 : lines.index("")]
    names = [line.split()[0] for line in table]
    assert {"small", "medium", "original", "original-5.5b", "efml-de", "efml-zh"} <= set(names) and len(names) >= 49
    de = next(line for line in table if line.startswith("efml-de "))
    assert de.split()[1:3] == ["de", "efml"] and " MIT " in de and " no " in de
    fetched = runner.invoke(app, ["download", "small", "--mirror", mirror.url])
    assert fetched.exit_code == 0, fetched.output
    assert str(cache / "small") in fetched.output
    assert "yes" in next(line for line in runner.invoke(app, ["models"]).output.splitlines() if line.startswith("small "))
    shutil.rmtree(cache)
    failed = runner.invoke(app, ["download", "small", "--mirror", _dead_url()])
    assert failed.exit_code == 1 and "Cannot download small" in failed.output


@pytest.mark.slow
def test_init_config_with_a_name_initializes_from_the_cache(mirror, cache, tmp_path, monkeypatch):
    from thinc.api import Config
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    monkeypatch.setenv("SPACY_ELMO_MIRROR", mirror.url)
    result = CliRunner().invoke(app, ["init-config", str(tmp_path / "ner.cfg"), "--pipeline", "ner", "--bilm", "small"])
    assert result.exit_code == 0, result.output
    config = Config().from_disk(tmp_path / "ner.cfg", interpolate=False)
    assert config["initialize"]["components"]["elmo"]["bilm"] == "small"  # a name: the config works on any machine
    assert config["paths"]["elmo_options"] is None and config["paths"]["elmo_weights"] is None
    assert config["components"]["elmo"]["model"]["projection_dim"] == 8
    nlp = spacy.blank("en")
    model = {k: v for k, v in config["components"]["elmo"]["model"].items()}
    elmo = nlp.add_pipe("elmo", config={"model": model})
    elmo.initialize(lambda: [], nlp=nlp, bilm="small")
    expected = load_original(mirror.root / "small" / "options.json", mirror.root / "small" / "weights.hdf5").embed([["a", "b"]])[0]
    numpy.testing.assert_allclose(nlp("a b")._.elmo.layers, expected, atol=1e-6)


def test_the_catalogue_names_a_source_and_urls_for_every_entry():
    from spacy_elmo.released import CATALOGUE

    assert len({m.name for m in CATALOGUE.values()}) == len(CATALOGUE)
    efml = [m for m in CATALOGUE.values() if m.format == "elmoformanylangs"]
    assert len(efml) == 44 and len({m.language for m in efml}) == 44  # the languages of its README's table
    for model in CATALOGUE.values():
        assert model.source and model.trained_on and model.licence and model.parameters
        assert model.urls and all(url.startswith(("http://", "https://")) for url in model.urls.values())
        archive = {"model.tar.gz"} if str(model.archive).endswith(".tar.gz") else {"model.zip"}
        assert set(model.urls) == (archive if model.archive else {"options.json", "weights.hdf5"})


def test_an_nlpl_folder_with_model_hdf5_loads(tmp_path):
    from spacy_elmo.bilm import bilm_folder

    save_original(tiny_bilm(seed=4), tmp_path / "options.json", tmp_path / "model.hdf5")
    folder = bilm_folder(tmp_path)
    assert folder.format == "allennlp" and folder.weights_file == tmp_path / "model.hdf5"
    numpy.testing.assert_allclose(folder.load().embed([["a"]])[0], tiny_bilm(seed=4).embed([["a"]])[0], atol=1e-6)


@pytest.mark.slow
def test_a_second_download_of_the_same_name_is_refused_while_one_runs(mirror, cache):
    from spacy_elmo.output_folders import FolderLock

    cache.mkdir(parents=True)
    with FolderLock(cache, "spacy-elmo download small", name=".small.lock"):
        with pytest.raises(InputError, match="in use by process .*spacy-elmo download small"):
            download("small", mirror=mirror.url, progress=False)
    assert download("small", mirror=mirror.url, progress=False).path == cache / "small"


@pytest.mark.slow
def test_an_unpacking_cut_short_is_taken_up_again(mirror, cache):
    """A run killed while it moved the unpacked files in: the next run takes up its recorded files."""
    folder = cache / "efml-de"
    folder.mkdir(parents=True)
    shutil.copy(EFML / "model" / "config.json", folder / "config.json")
    (folder / RECORD).write_text(json.dumps({"name": "efml-de", "complete": False, "files": {}, "partial": ["config.json"]}))
    found = download("efml-de", mirror=mirror.url, progress=False)
    assert found.format == "elmoformanylangs" and cached_folder("efml-de") is not None


def test_a_copy_whose_size_differs_from_the_catalogues_exact_size_is_noted(mirror, cache, monkeypatch):
    from dataclasses import replace

    from typer.testing import CliRunner

    from spacy_elmo.cli import app
    from spacy_elmo.released.catalogue import CATALOGUE

    monkeypatch.setitem(CATALOGUE, "small", replace(CATALOGUE["small"], download="54 MB"))  # the tiny fixture is 0.1 MB
    fetched = CliRunner().invoke(app, ["download", "small", "--mirror", mirror.url])
    assert fetched.exit_code == 0 and "Note: the catalogue gives small as 54 MB, and this copy is 0." in fetched.output
    monkeypatch.setitem(CATALOGUE, "small", replace(CATALOGUE["small"], download="~54 MB"))  # an estimate: no note
    again = CliRunner().invoke(app, ["download", "small", "--mirror", mirror.url])
    assert again.exit_code == 0 and "Note:" not in again.output
