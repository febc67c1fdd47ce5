"""The released families beyond AllenNLP's and ELMoForManyLangs': NLPL's repository, AllenNLP's contributed
models, EMBEDDIA's, DeepPavlov's and Google's TF Hub modules. Each entry downloads through a local mirror
serving fixture files under the entry's own file names and archive layout, and loads exactly."""

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy
import pytest
import srsly

from spacy_elmo import load_original, save_original
from spacy_elmo.released import CATALOGUE
from spacy_elmo.released.download import download

from ..helpers import tiny_bilm
from .mirror_server import MirrorServer

TF = Path(__file__).resolve().parents[1] / "fixtures" / "tf"
FAMILIES = {
    "nlpl": [m for m in CATALOGUE.values() if "vectors.nlpl.eu" in str(m.archive) and m.format == "allennlp"],
    "contributed": [m for m in CATALOGUE.values() if "/contributed/" in str(m.urls) or m.name.startswith("embedia-")],
    "deeppavlov": [m for m in CATALOGUE.values() if m.name.startswith("deeppavlov-")],
    "tfhub": [m for m in CATALOGUE.values() if m.name.startswith("tfhub-")],
}
NEW = [m for family in FAMILIES.values() for m in family if m.name != "pubmed"]
SENTENCES = [["The", "cat", "sat", "."], ["Hello"]]


def test_every_family_is_there_with_its_source():
    assert len(FAMILIES["nlpl"]) >= 10 and len(FAMILIES["contributed"]) >= 5
    assert len(FAMILIES["deeppavlov"]) == 3 and len(FAMILIES["tfhub"]) == 3
    assert {m.name for m in CATALOGUE.values() if m.lemmas} >= {"nlpl-196", "nlpl-199", "nlpl-212", "norelmo-210"}
    from spacy.util import get_lang_class

    for model in NEW:
        assert model.source and model.licence and model.trained_on
        get_lang_class(model.language)  # init-config --bilm NAME gives the pipeline this language


def _tiny_allennlp(folder: Path, weights_name: str) -> None:
    save_original(tiny_bilm(seed=11), folder / "options.json", folder / weights_name)


def _tar(path: Path, files: dict) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def _serve(model, root: Path, scratch: Path) -> None:
    """Fixture files for `model` under MIRROR/NAME/<its download names>, laid out as its real archive is."""
    folder = root / model.name
    folder.mkdir(parents=True)
    if not model.archive:
        _tiny_allennlp(folder, "weights.hdf5")
    elif model.format == "tensorflow":  # a TF Hub module: graph files and variables/, no options.json
        variables = TF / "tfhub" / "variables"
        files = {f"variables/{p.name}": p.read_bytes() for p in variables.iterdir()}
        files.update({"saved_model.pb": b"graph", "tfhub_module.pb": b"module", "assets/vocab.txt": b"<S>\n"})
        _tar(folder / "model.tar.gz", files)
    elif model.archive.endswith(".tar.gz"):  # EMBEDDIA's: a language folder with options.json + LANG-elmo-weights.hdf5
        _tiny_allennlp(scratch, "slovenian-elmo-weights.hdf5")
        _tar(folder / "model.tar.gz", {f"slovenian/{p.name}": p.read_bytes() for p in scratch.iterdir()})
    else:  # NLPL's zips: model.hdf5 + options.json (+ vocab.txt) at the top
        _tiny_allennlp(scratch, "model.hdf5")
        with zipfile.ZipFile(folder / "model.zip", "w") as archive:
            for path in scratch.iterdir():
                archive.write(path, path.name)
            archive.writestr("vocab.txt", "<S>\n</S>\n<UNK>\n")
            archive.writestr("meta.json", '{"id": 0}')


@pytest.mark.slow
@pytest.mark.parametrize("model", NEW, ids=[m.name for m in NEW])
def test_each_entry_downloads_through_the_mirror_and_loads_exactly(model, tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scratch").mkdir()
    _serve(model, tmp_path / "mirror", tmp_path / "scratch")
    server = MirrorServer(tmp_path / "mirror")
    try:
        found = download(model.name, mirror=server.url, progress=False)
    finally:
        server.close()
    assert found.format == model.format
    layers = found.load().embed(SENTENCES)
    if model.format == "tensorflow":
        # the options were read off the tensors, with the released models' clipping and skip connections
        options = srsly.read_json(TF / "allennlp" / "options.json")
        options["lstm"].update(cell_clip=3.0, proj_clip=3.0)
        srsly.write_json(tmp_path / "options.json", options)
        expected = load_original(tmp_path / "options.json", TF / "allennlp" / "weights.hdf5").embed(SENTENCES)
        assert sorted(p.name for p in found.path.iterdir() if not p.name.startswith(".")) == [
            "options.json",
            "variables.data-00000-of-00001",
            "variables.index",
        ]
    else:
        expected = tiny_bilm(seed=11).embed(SENTENCES)
    for ours, theirs in zip(layers, expected):
        numpy.testing.assert_allclose(ours, theirs, atol=1e-6)
    shutil.rmtree(tmp_path / "mirror")
    again = download(model.name, progress=False)  # the cache answers, offline
    assert again.path == found.path


@pytest.mark.slow
def test_a_tar_member_outside_the_folder_or_a_link_is_refused(tmp_path, monkeypatch):
    from spacy_elmo.errors import InputError

    model = CATALOGUE["deeppavlov-ru-news"]
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    for case in ("climbing", "link"):
        root = tmp_path / case
        (root / model.name).mkdir(parents=True)
        with tarfile.open(root / model.name / "model.tar.gz", "w:gz") as archive:
            if case == "climbing":
                info = tarfile.TarInfo("../escaped.txt")
                info.size = 1
                archive.addfile(info, io.BytesIO(b"x"))
            else:
                info = tarfile.TarInfo("variables/variables.index")
                info.type = tarfile.SYMTYPE
                info.linkname = "/etc/passwd"
                archive.addfile(info)
        server = MirrorServer(root)
        try:
            with pytest.raises(InputError, match="outside its folder" if case == "climbing" else "link or special file"):
                download(model.name, mirror=server.url, progress=False)
        finally:
            server.close()
        assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.slow
def test_a_lemmatized_release_sets_its_pipeline_to_read_lemmas(tmp_path, monkeypatch):
    import spacy
    from thinc.api import Config
    from typer.testing import CliRunner

    from spacy_elmo import add_elmo
    from spacy_elmo.cli import app

    model = CATALOGUE["norelmo-210"]
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(tmp_path / "cache"))
    (tmp_path / "scratch").mkdir()
    _serve(model, tmp_path / "mirror", tmp_path / "scratch")
    server = MirrorServer(tmp_path / "mirror")
    monkeypatch.setenv("SPACY_ELMO_MIRROR", server.url)
    try:
        elmo = add_elmo(spacy.blank("nb"), model.name)
        result = CliRunner().invoke(app, ["init-config", str(tmp_path / "ner.cfg"), "--pipeline", "ner", "--bilm", model.name])
    finally:
        server.close()
    assert elmo.settings.input == "lemma"
    assert result.exit_code == 0, result.output
    config = Config().from_disk(tmp_path / "ner.cfg", interpolate=False)
    assert config["components"]["elmo"]["input"] == "lemma" and config["nlp"]["lang"] == "nb"
    assert add_elmo(spacy.blank("nb"), str(found_path(tmp_path))).settings.input == "text"  # a folder says nothing


def found_path(tmp_path):
    return next(p for p in (tmp_path / "cache").iterdir() if p.name == "norelmo-210")
