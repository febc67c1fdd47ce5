"""Crafted archives: every checksum read, headers within limits, odd layouts refused in one line."""

import io
import tarfile
import zipfile

import pytest

from spacy_elmo import save_original
from spacy_elmo.errors import InputError
from spacy_elmo.released.unpack import unpack_model

from ..helpers import tiny_bilm


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    save_original(tiny_bilm(seed=1), folder / "options.json", folder / "weights.hdf5")
    return {name: (folder / name).read_bytes() for name in ("options.json", "weights.hdf5")}


def _tar(path, members, **options):
    with tarfile.open(path, "w:gz", **options) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    return path


def _unpack(archive, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    return unpack_model(archive, scratch, "test-model")


def test_a_byte_changed_inside_the_gzip_stream_is_refused(model_files, tmp_path):
    members = [(f"m/{n}", d) for n, d in model_files.items()]
    archive = _tar(tmp_path / "m.tar.gz", members, compresslevel=0)  # stored blocks: a changed byte inflates without error
    assert (_unpack(archive, tmp_path) / "weights.hdf5").read_bytes() == model_files["weights.hdf5"]
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0x40
    archive.write_bytes(bytes(data))
    with pytest.raises(InputError, match="damaged"):
        _unpack(archive, tmp_path / "again")


@pytest.mark.parametrize("kind", ["long name", "pax header"])
def test_a_huge_header_is_refused_before_it_is_read(model_files, tmp_path, kind):
    members = [(f"m/{n}", d) for n, d in model_files.items()]
    path = tmp_path / "m.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT if kind == "long name" else tarfile.PAX_FORMAT) as tf:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo("m/" + "x" * 100_000 if kind == "long name" else "m/other")
        if kind == "pax header":
            info.pax_headers = {"comment": "y" * 100_000}
        tf.addfile(info, io.BytesIO(b""))
    with pytest.raises(InputError, match=f"holds a {kind} of 1.*refused"):
        _unpack(path, tmp_path)


@pytest.mark.parametrize("second", [("m/options.json/x", b"1"), ("m/options.json", None)])
def test_a_file_and_a_folder_of_one_name_are_refused(model_files, tmp_path, second):
    archive = _tar(tmp_path / "m.tar.gz", [*[(f"m/{n}", d) for n, d in model_files.items()], second])
    with pytest.raises(InputError, match="as a file and as a folder"):
        _unpack(archive, tmp_path)


def test_an_encrypted_zip_member_is_refused(model_files, tmp_path):
    path = tmp_path / "m.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in model_files.items():
            zf.writestr(f"m/{name}", data)
    data = bytearray(path.read_bytes())
    entry = data.index(b"PK\x01\x02")  # the central directory's entries
    while entry >= 0:
        name_length = int.from_bytes(data[entry + 28 : entry + 30], "little")
        if data[entry + 46 : entry + 46 + name_length] == b"m/weights.hdf5":
            data[entry + 8] |= 0x1  # "encrypted", as a zip with a password says
        entry = data.find(b"PK\x01\x02", entry + 4)
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="encrypted member"):
        _unpack(path, tmp_path)


def test_a_member_without_a_name_is_refused(model_files, tmp_path):
    archive = _tar(tmp_path / "m.tar.gz", [*[(f"m/{n}", d) for n, d in model_files.items()], ("", b"x")])
    with pytest.raises(InputError, match="no name"):
        _unpack(archive, tmp_path)
