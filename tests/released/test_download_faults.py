"""Downloads that cannot be fooled: a misbehaving server, a stale partial file, a link or a lying
record never leaves a model that loads wrong, and a failed download never costs the model that
worked. Each test is a reproduction of a failure seen before these rules (against a real local
server; see mirror_server.py)."""

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spacy_elmo.bilm import InputError, load_original, save_original
from spacy_elmo.released import cached_folder, download, resolve_bilm
from spacy_elmo.released.download import RECORD, cache_state

from ..helpers import tiny_bilm
from .conftest import EFML
from spacy_elmo.bilm.elmoformanylangs import PACKAGED_CONFIGS as PACKAGED_EFML_CONFIGS
from .mirror_server import MirrorServer

WEIGHTS = "small/weights.hdf5"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _layers(folder: Path) -> numpy.ndarray:
    return load_original(folder / "options.json", folder / "weights.hdf5").embed([["a", "b", "c"]])[0]


def _new_version(mirror: MirrorServer, seed: int) -> Path:
    """The server's files replaced by another biLM of the same size (another ETag)."""
    folder = mirror.root / "small"
    save_original(tiny_bilm(seed=seed), folder / "options.json", folder / "weights.hdf5")
    return folder


def _cut_halfway(mirror: MirrorServer) -> int:
    size = (mirror.root / WEIGHTS).stat().st_size
    mirror.cut[WEIGHTS] = size // 2
    with pytest.raises(InputError, match="stopped at"):
        download("small", mirror=mirror.url, progress=False)
    return size


def _assert_true_file(cache: Path, server_folder: Path) -> None:
    assert _sha(cache / "small" / "weights.hdf5") == _sha(server_folder / "weights.hdf5")
    numpy.testing.assert_allclose(_layers(cache / "small"), _layers(server_folder), atol=1e-6)


# --- transfers ----------------------------------------------------------------------------------


def test_a_resume_after_the_file_changed_on_the_server_fetches_the_new_file_whole(mirror, cache):
    _cut_halfway(mirror)
    changed = _new_version(mirror, seed=11)  # same size, other bytes, other ETag: If-Range gets a 200
    download("small", mirror=mirror.url, progress=False)
    _assert_true_file(cache, changed)


@pytest.mark.parametrize("server", ["ignores If-Range", "lies with the old ETag"])
def test_a_resume_after_the_file_changed_is_not_spliced_whatever_the_server_says(mirror, cache, server):
    _cut_halfway(mirror)
    old_etag = '"' + hashlib.sha256((mirror.root / WEIGHTS).read_bytes()).hexdigest()[:20] + '"'
    changed = _new_version(mirror, seed=11)  # same size, other bytes
    if server == "ignores If-Range":
        mirror.ignore_if_range.add(WEIGHTS)  # a 206 of the new file, with the new file's ETag
    else:
        mirror.etag[WEIGHTS] = old_etag  # the new file under the old ETag: If-Range is satisfied
    download("small", mirror=mirror.url, progress=False)
    _assert_true_file(cache, changed)


def test_a_resume_of_the_same_file_appends_after_checking_a_few_earlier_ranges(mirror, cache):
    size = _cut_halfway(mirror)
    mirror.requests.clear()
    download("small", mirror=mirror.url, progress=False)
    _assert_true_file(cache, mirror.root / "small")
    ranges = [r for path, r in mirror.requests if path == WEIGHTS]
    assert ranges[-1] == f"bytes={size // 2}-" and 2 <= len(ranges) - 1 <= 4  # probes, then the rest only


@pytest.mark.slow
def test_a_resume_from_another_mirror_starts_over(mirror, cache, tmp_path):
    _cut_halfway(mirror)
    other_root = tmp_path / "other"
    (other_root / "small").mkdir(parents=True)
    save_original(tiny_bilm(seed=12), other_root / "small" / "options.json", other_root / "small" / "weights.hdf5")
    other = MirrorServer(other_root)
    try:
        download("small", mirror=other.url, progress=False)
        assert [r for r in other.requests if r[1]] == []  # no range asked of a server that did not send the head
    finally:
        other.close()
    _assert_true_file(cache, other_root / "small")


def test_a_206_from_the_wrong_offset_is_not_appended(mirror, cache):
    size = _cut_halfway(mirror)
    mirror.wrong_offset[WEIGHTS] = size // 4  # a proxy answering another range
    download("small", mirror=mirror.url, progress=False)
    _assert_true_file(cache, mirror.root / "small")


def test_a_200_to_a_range_request_replaces_the_partial_file(mirror, cache):
    _cut_halfway(mirror)
    mirror.ignore_range.add(WEIGHTS)
    download("small", mirror=mirror.url, progress=False)
    _assert_true_file(cache, mirror.root / "small")


def test_without_a_validator_a_partial_file_is_not_resumed(mirror, cache):
    mirror.no_validator.add(WEIGHTS)
    _cut_halfway(mirror)
    changed = _new_version(mirror, seed=13)
    download("small", mirror=mirror.url, progress=False)
    assert [r for r in mirror.requests if r[1]] == []
    _assert_true_file(cache, changed)


@pytest.mark.slow
def test_a_redirect_to_another_port_is_followed(mirror, cache, tmp_path):
    other = MirrorServer(mirror.root)
    try:
        mirror.redirect[WEIGHTS] = f"{other.url}/{WEIGHTS}"
        download("small", mirror=mirror.url, progress=False)
        assert (WEIGHTS, "") in other.requests
    finally:
        other.close()
    _assert_true_file(cache, mirror.root / "small")


def test_a_published_digest_that_differs_is_refused(mirror, cache, monkeypatch):
    import dataclasses

    from spacy_elmo.released import catalogue

    entry = catalogue.CATALOGUE["small"]
    published = dataclasses.replace(entry, digests=(("weights.hdf5", "0" * 64),))
    monkeypatch.setitem(catalogue.CATALOGUE, "small", published)
    with pytest.raises(InputError, match="sha256 .* not the 0000000000000000... its source publishes"):
        download("small", mirror=mirror.url, progress=False)
    assert cached_folder("small") is None and not (cache / ".small.download").exists()
    right = dataclasses.replace(entry, digests=(("weights.hdf5", _sha(mirror.root / WEIGHTS)),))
    monkeypatch.setitem(catalogue.CATALOGUE, "small", right)
    assert download("small", mirror=mirror.url, progress=False).path == cache / "small"


# --- never lose the model that works ------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["404", "html", "cut", "garbage"])
def test_a_failed_force_leaves_the_previous_model_loading_offline(mirror, cache, fault):
    download("small", mirror=mirror.url, progress=False)
    before = _layers(cache / "small")
    if fault == "404":
        mirror.status[WEIGHTS] = 404
    elif fault == "html":
        mirror.html.add(WEIGHTS)
    elif fault == "cut":
        mirror.cut[WEIGHTS] = 100
    else:
        (mirror.root / WEIGHTS).write_bytes(b"\x89HDF\r\n" + bytes(5000))
    with pytest.raises(InputError) as info:
        download("small", mirror=mirror.url, force=True, progress=False)
    assert "\n" not in str(info.value) and "is unchanged" in str(info.value)
    numpy.testing.assert_allclose(_layers(resolve_bilm("small", mirror="http://127.0.0.1:9").path), before)
    assert cache_state("small") == "yes"  # the model in place (a cut download waits beside it)


@pytest.mark.slow
def test_models_says_partial_and_yes_only_when_they_are_true(mirror, cache):
    mirror.status[WEIGHTS] = 404
    with pytest.raises(InputError, match="HTTP 404"):
        download("small", mirror=mirror.url, progress=False)
    assert cache_state("small") == ""
    del mirror.status[WEIGHTS]
    _cut_halfway(mirror)
    assert cache_state("small") == "partial"
    download("small", mirror=mirror.url, progress=False)
    assert cache_state("small") == "yes"
    record = json.loads((cache / "small" / RECORD).read_text())
    record["files"]["weights.hdf5"] = "not a digest"
    (cache / "small" / RECORD).write_text(json.dumps(record))
    assert cache_state("small") == "damaged"


_KILLER = """
import os, signal, sys
import spacy_elmo.released
d = sys.modules["spacy_elmo.released.download"]
t = sys.modules["spacy_elmo.released.transfer"]
step, calls = int(sys.argv[1]), [0]
def counted(real):
    def call(*args, **kwargs):
        calls[0] += 1
        if calls[0] == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return call
d.os.replace = counted(os.replace)       # every rename of a file or folder
d._write_record = counted(d._write_record)
t.open_no_follow = counted(t.open_no_follow)
d.download(sys.argv[2], mirror=sys.argv[3], force=True, progress=False)
"""


@pytest.mark.slow
@pytest.mark.parametrize("name", ["small", "efml-de"])
def test_kill_9_at_each_step_leaves_the_old_model_or_the_new_and_a_rerun_recovers(mirror, cache, name, tmp_path):
    """A download with --force killed at every rename, record write and file opening in turn: each
    time the cache holds the old model or the new one, whole (never a mix, never nothing), and a
    plain rerun leaves a complete, checked model without --force."""
    download(name, mirror=mirror.url, progress=False)
    old = resolve_bilm(name).load().embed([["a", "b"]])[0]
    if name == "small":
        new = tiny_bilm(seed=21).embed([["a", "b"]])[0]
        _new_version(mirror, seed=21)
    else:  # the same archive with one more file: the record changes, the layers do not
        new = old
        with zipfile.ZipFile(mirror.root / "efml-de" / "model.zip", "a") as zf:
            zf.writestr("de.model/README.txt", "another release")
    script = tmp_path / "killer.py"
    script.write_text(_KILLER)
    env = {**os.environ, "SPACY_ELMO_CACHE": str(cache)}
    for step in range(1, 80):
        run = subprocess.run([sys.executable, str(script), str(step), name, mirror.url], env=env, capture_output=True, text=True)
        killed = run.returncode == -9
        assert killed or run.returncode == 0, run.stderr[-2000:]
        now = resolve_bilm(name).load().embed([["a", "b"]])[0]  # whichever is in place loads, whole
        assert numpy.allclose(now, old, atol=1e-6) or numpy.allclose(now, new, atol=1e-6)
        download(name, mirror=mirror.url, progress=False)  # a plain rerun
        assert cache_state(name) == "yes" and not list(cache.glob(f".{name}.replaced-*"))
        if not killed:
            break
    assert step > 5
    numpy.testing.assert_allclose(resolve_bilm(name).load().embed([["a", "b"]])[0], new, atol=1e-6)
    if name == "efml-de":
        assert (cache / name / "README.txt").exists()


# --- nothing outside the folder -----------------------------------------------------------------


@pytest.mark.slow
def test_a_lock_file_that_is_a_link_is_not_followed(mirror, cache, tmp_path):
    victim = tmp_path / "bashrc"
    victim.write_text("the user's file\n")
    cache.mkdir(parents=True)
    (cache / ".small.lock").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        download("small", mirror=mirror.url, progress=False)
    assert victim.read_text() == "the user's file\n"


def test_a_run_folder_lock_that_is_a_link_is_not_followed(tmp_path):
    from spacy_elmo.output_folders import FolderLock

    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".lock").symlink_to(victim)
    with pytest.raises(InputError, match="symbolic link"):
        FolderLock(tmp_path / "run", "spacy-elmo pretrain").acquire()
    assert victim.read_text() == "keep"


@pytest.mark.slow
def test_a_dangling_link_at_the_partial_file_is_not_written_through(mirror, cache, tmp_path):
    outside = tmp_path / "outside.bin"
    folder = cache / ".small.download"
    folder.mkdir(parents=True)
    (folder / RECORD).write_text(json.dumps({"name": "small", "complete": False, "files": {}, "partial": {}, "done": []}))
    (folder / "weights.hdf5.partial").symlink_to(outside)
    with pytest.raises(InputError, match="symbolic link"):
        download("small", mirror=mirror.url, progress=False)
    assert not outside.exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["../../victim.txt", "/ABSOLUTE"])
def test_a_record_naming_a_path_outside_the_folder_is_damaged_and_never_deleted(mirror, cache, tmp_path, name):
    download("small", mirror=mirror.url, progress=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    record = json.loads((cache / "small" / RECORD).read_text())
    record["files"][name.replace("/ABSOLUTE", str(victim))] = _sha(victim)
    (cache / "small" / RECORD).write_text(json.dumps(record))
    with pytest.raises(InputError, match="is damaged"):
        resolve_bilm("small")
    download("small", mirror=mirror.url, force=True, progress=False)
    assert victim.read_text() == "keep"
    assert cache_state("small") == "yes"


@pytest.mark.parametrize("files", [{}, "options-only"])
def test_a_record_that_says_complete_without_its_files_does_not_let_swapped_weights_load(mirror, cache, files):
    download("small", mirror=mirror.url, progress=False)
    record = json.loads((cache / "small" / RECORD).read_text())
    record["files"] = {} if files == {} else {"options.json": record["files"]["options.json"]}
    (cache / "small" / RECORD).write_text(json.dumps(record))
    save_original(tiny_bilm(seed=5), cache / "small" / "options.json", cache / "small" / "weights.hdf5")
    with pytest.raises(InputError, match=r"is damaged \(run .spacy-elmo download small --force"):
        resolve_bilm("small")


@pytest.mark.slow
def test_an_added_file_a_loader_could_read_is_a_change(mirror, cache):
    download("efml-de", mirror=mirror.url, progress=False)
    (cache / "efml-de" / "other_network.json").write_text("{}")
    with pytest.raises(InputError, match="did not download"):
        resolve_bilm("efml-de")


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["variables/", "checkpoint", "link"])
def test_a_folder_link_or_checkpoint_file_planted_in_a_cached_model_is_a_change(mirror, cache, tmp_path, planted):
    """A TensorFlow folder is read as a checkpoint_prefix finds it: `variables/variables.*` or a
    `checkpoint` file first; the cache reads a model from its recorded plain files only."""
    download("small", mirror=mirror.url, progress=False)
    folder = cache / "small"
    if planted == "variables/":
        (folder / "variables").mkdir()
        (folder / "variables" / "variables.index").write_bytes(b"x")
    elif planted == "checkpoint":
        (folder / "checkpoint").write_text('model_checkpoint_path: "other"\n')
    else:
        os.symlink(tmp_path, folder / "elsewhere")
    with pytest.raises(InputError, match=r"did not download .*download small --force"):
        resolve_bilm("small")


def test_cache_paths_that_name_no_folder_are_refused_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    for cache in ["", str(tmp_path / "a-file")]:
        (tmp_path / "a-file").write_text("x")
        result = CliRunner().invoke(app, ["download", "small", "--cache", cache])
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert "cache" in result.output.lower()
    assert list(tmp_path.iterdir()) == [tmp_path / "a-file"]


@pytest.mark.parametrize("config_path", ["/etc/passwd", "../../outside.json"])
def test_an_elmoformanylangs_config_path_outside_the_folder_is_not_read(tmp_path, config_path):
    import shutil

    from spacy_elmo.bilm import bilm_folder

    folder = tmp_path / "deep" / "model"
    shutil.copytree(EFML / "model", folder)
    config = json.loads((folder / "config.json").read_text())
    packaged = Path(config["config_path"]).name
    (tmp_path / "outside.json").write_text(json.dumps({"not": "a network config"}))
    config["config_path"] = config_path
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="names the network config"):
        bilm_folder(folder).load()
    config["config_path"] = f"../../{packaged}"  # its file name is one of the packaged configs: that one is read
    (folder / "config.json").write_text(json.dumps(config))
    (tmp_path / packaged).write_text("{}")  # a file of that name outside is never read
    reference = numpy.load(EFML / "reference.npz")
    sentences = json.loads((EFML / "sentences.json").read_text(encoding="utf-8"))
    numpy.testing.assert_allclose(bilm_folder(folder).load().embed(sentences)[0], reference["arr_0"], atol=1e-5)


def test_dictionary_ids_out_of_range_are_refused_when_the_folder_is_read(tmp_path):
    import shutil

    from spacy_elmo.bilm import bilm_folder

    folder = tmp_path / "model"
    shutil.copytree(EFML / "model", folder)
    lines = (folder / "char.dic").read_text(encoding="utf-8").splitlines()
    entry = lines[-1].split("\t")[0]
    lines[-1] = f"{entry}\t{len(lines) + 50}"
    (folder / "char.dic").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="gives id .* entries"):
        bilm_folder(folder).options()


# --- archives -----------------------------------------------------------------------------------


def _zip_model(path: Path, folders, extra=None) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for prefix in folders:
            for file in (EFML / "model").iterdir():
                zf.write(file, f"{prefix}/{file.name}")
        for name, data in (extra or {}).items():
            zf.writestr(name, data)


@pytest.mark.slow
def test_an_archive_with_two_model_folders_is_refused_naming_both(mirror, cache):
    _zip_model(mirror.root / "efml-de" / "model.zip", ["de.model", "other.model"])
    with pytest.raises(InputError, match=r"several model folders \(de.model, other.model\)"):
        download("efml-de", mirror=mirror.url, progress=False)
    assert cache_state("efml-de") == "" and not (cache / ".efml-de.download").exists()


@pytest.mark.slow
def test_an_archive_that_inflates_past_the_limit_is_refused_and_removed(mirror, cache, monkeypatch):
    from spacy_elmo.released import unpack

    monkeypatch.setattr(unpack, "_FLOOR", 1 << 20)
    _zip_model(mirror.root / "efml-de" / "model.zip", ["de.model"], {"de.model/padding.bin": bytes(30 << 20)})
    with pytest.raises(InputError, match="unpacks to more than"):
        download("efml-de", mirror=mirror.url, progress=False)
    assert not (cache / ".efml-de.download").exists() and not (cache / "efml-de").exists()
    _zip_model(mirror.root / "efml-de" / "model.zip", ["de.model"])
    requests_before = len(mirror.requests)
    assert download("efml-de", mirror=mirror.url, progress=False).format == "elmoformanylangs"
    assert len(mirror.requests) > requests_before  # fetched again, not the refused archive


@pytest.mark.slow
def test_an_archive_with_a_link_is_refused(mirror, cache):
    _zip_model(mirror.root / "efml-de" / "model.zip", ["de.model"])
    with zipfile.ZipFile(mirror.root / "efml-de" / "model.zip", "a") as zf:
        info = zipfile.ZipInfo("de.model/link")
        info.external_attr = 0o120777 << 16
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(InputError, match="link or special file"):
        download("efml-de", mirror=mirror.url, progress=False)


# --- files others can read ----------------------------------------------------------------------


def test_files_spacy_elmo_writes_are_readable_as_the_umask_allows(tmp_path, mirror, cache):
    from spacy_elmo.output_folders import write_atomically

    old = os.umask(0o022)
    try:
        write_atomically(tmp_path / "config.cfg", "[x]\n")
        save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
        folder = download("small", mirror=mirror.url, progress=False).path
    finally:
        os.umask(old)
    for path in [tmp_path / "config.cfg", tmp_path / "options.json", tmp_path / "weights.hdf5", folder / "weights.hdf5"]:
        assert path.stat().st_mode & 0o777 == 0o644, path


# --- fuzzing the record, the partial file and the archive ----------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=30), inner, max_size=4),
    max_leaves=12,
)
_NAMES = st.sampled_from(["options.json", "weights.hdf5", "../victim.txt", "/tmp", "", ".", "..", "a/b", "model.hdf5"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    files=st.dictionaries(_NAMES, st.text(alphabet="0123456789abcdef", min_size=0, max_size=64) | _JSON, max_size=4),
    complete=_JSON,
    extra=st.dictionaries(st.sampled_from(["sizes", "partial", "done", "name"]), _JSON, max_size=3),
)
@pytest.mark.slow
def test_fuzzed_records_load_the_true_model_or_fail_in_one_line(mirror, cache, tmp_path, files, complete, extra):
    if not (cache / "small").exists():
        download("small", mirror=mirror.url, progress=False)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    true = _layers(mirror.root / "small")
    path = cache / "small" / RECORD
    good = path.read_text()
    path.write_text(json.dumps({"name": "small", "complete": complete, "files": files, **extra}))
    try:
        found = cached_folder("small")
        if found is not None:
            numpy.testing.assert_allclose(_layers(found.path), true, atol=1e-6)
        cache_state("small")
        download("small", mirror=mirror.url, force=True, progress=False)  # always recovers
        numpy.testing.assert_allclose(_layers(cache / "small"), true, atol=1e-6)
    except InputError as err:
        assert "\n" not in str(err)
    finally:
        assert victim.read_text() == "keep"
        if os.path.lexists(path):
            path.unlink()
        path.write_text(good)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=st.binary(max_size=4096), known=_JSON)
def test_fuzzed_partial_files_end_with_the_true_file(mirror, cache, head, known):
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    folder = cache / ".small.download"
    folder.mkdir(parents=True)
    record = {"name": "small", "complete": False, "files": {}, "partial": {"weights.hdf5": known}, "done": []}
    (folder / RECORD).write_text(json.dumps(record))
    (folder / "weights.hdf5.partial").write_bytes(head)
    download("small", mirror=mirror.url, progress=False)
    assert _sha(cache / "small" / "weights.hdf5") == _sha(mirror.root / WEIGHTS)


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_archives_unpack_the_true_model_or_fail_in_one_line(mirror, cache, data):
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    archive = mirror.root / "efml-de" / "model.zip"
    _zip_model(archive, ["de.model"])
    raw = bytearray(archive.read_bytes())
    for _ in range(data.draw(st.integers(0, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    archive.write_bytes(bytes(raw))
    try:
        folder = download("efml-de", mirror=mirror.url, progress=False)
        reference = numpy.load(EFML / "reference.npz")
        sentences = json.loads((EFML / "sentences.json").read_text(encoding="utf-8"))
        numpy.testing.assert_allclose(folder.load().embed(sentences)[0], reference["arr_0"], atol=1e-5)
    except InputError as err:
        assert "\n" not in str(err)
        assert not (cache / ".efml-de.download").exists()


@pytest.mark.slow
def test_an_archive_holding_a_file_twice_is_refused(mirror, cache):
    import warnings

    _zip_model(mirror.root / "efml-de" / "model.zip", ["de.model"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate it is asked to write
        with zipfile.ZipFile(mirror.root / "efml-de" / "model.zip", "a") as zf:
            zf.writestr("de.model/config.json", "{}")
    with pytest.raises(InputError, match="holds de.model/config.json twice"):
        download("efml-de", mirror=mirror.url, progress=False)
    assert not (cache / ".efml-de.download").exists()


@pytest.mark.slow
def test_a_withdrawn_model_answered_with_404_names_what_to_use_instead(mirror, cache):
    with pytest.raises(InputError, match="HTTP 404.*use pt-wikipedia or pt-brwac"):
        download("pt", mirror=mirror.url, progress=False)


@pytest.mark.slow
def test_a_mirrors_password_is_never_shown(mirror, cache):
    mirror.status["small/options.json"] = 404
    with_password = mirror.url.replace("http://", "http://someone:s3cret@")
    with pytest.raises(InputError) as caught:
        download("small", mirror=with_password, progress=False)
    assert "someone:***@" in str(caught.value) and "s3cret" not in str(caught.value)


@pytest.mark.slow
def test_a_read_only_cache_that_holds_the_model_is_used_and_one_that_does_not_is_one_line(mirror, cache, monkeypatch):
    import errno

    from spacy_elmo.output_folders import FolderLock

    download("small", mirror=mirror.url, progress=False)

    def read_only(self):
        raise OSError(errno.EROFS, "Read-only file system", str(self.path))

    monkeypatch.setattr(FolderLock, "acquire", read_only)
    assert download("small", progress=False).path == cache / "small"
    with pytest.raises(InputError, match="cannot be written \\(Read-only file system\\).*--cache"):
        download("small", force=True, progress=False)
    with pytest.raises(InputError, match="cannot be written"):
        download("efml-de", mirror=mirror.url, progress=False)


def test_a_linked_elmoformanylangs_network_config_is_called_a_link(tmp_path):
    import shutil

    from spacy_elmo.bilm import bilm_folder

    folder = tmp_path / "model"
    shutil.copytree(EFML / "model", folder)
    config = json.loads((folder / "config.json").read_text())
    name = Path(config["config_path"]).name
    network = (folder / name if (folder / name).is_file() else PACKAGED_EFML_CONFIGS / name).read_text()
    (tmp_path / "elsewhere.json").write_text(network)
    os.symlink(tmp_path / "elsewhere.json", folder / "my_network.json")
    config["config_path"] = "my_network.json"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(InputError, match="my_network.json is a symbolic link"):
        bilm_folder(folder).load()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["folder", "file URL"])
def test_a_folder_mirror_offline_is_checked_as_a_server(mirror, cache, how):
    root = mirror.root
    mirror.close()  # nothing is served: the files come from the folder
    source = str(root) if how == "folder" else root.as_uri()
    found = download("small", mirror=source, progress=False)
    _assert_true_file(cache, root / "small")
    assert found.path == cache / "small"
    with pytest.raises(InputError, match="no such file in the mirror folder"):
        download("medium", mirror=source, progress=False)
    with pytest.raises(InputError, match="neither a URL nor a folder"):
        download("medium", mirror=str(root / "nowhere"), progress=False)
