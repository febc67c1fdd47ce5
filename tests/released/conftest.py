"""The released-model tests' fixtures: a local mirror (see mirror_server.py) and a fresh cache."""

import zipfile
from pathlib import Path

import pytest

from spacy_elmo.bilm import save_original

from ..helpers import tiny_bilm
from .mirror_server import MirrorServer

EFML = Path(__file__).resolve().parents[1] / "fixtures" / "elmoformanylangs"


@pytest.fixture
def mirror(tmp_path):
    root = tmp_path / "mirror"
    (root / "small").mkdir(parents=True)
    save_original(tiny_bilm(seed=3), root / "small" / "options.json", root / "small" / "weights.hdf5")
    (root / "efml-de").mkdir()
    with zipfile.ZipFile(root / "efml-de" / "model.zip", "w") as zf:
        for path in (EFML / "model").iterdir():
            zf.write(path, f"de.model/{path.name}")
    server = MirrorServer(root)
    yield server
    server.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("SPACY_ELMO_CACHE", str(folder))
    monkeypatch.delenv("SPACY_ELMO_MIRROR", raising=False)
    return folder
