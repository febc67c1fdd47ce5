"""A result written without --overwrite never replaces a file that appeared while the command computed (another
run's, a user's): it is published by taking a free name at that instant, else the command fails and the file stays."""

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_elmo.bilm import load_original, save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.output_folders import publish_file, temporary_path, write_atomically

from .helpers import tiny_bilm

THEIRS = "another run's result\n"


def test_publishing_takes_only_a_free_name(tmp_path):
    target = tmp_path / "out.json"
    write_atomically(target, "ours", overwrite=False)
    assert target.read_text() == "ours"
    with pytest.raises(InputError, match="appeared while this command ran"):
        write_atomically(target, "second", overwrite=False)
    assert target.read_text() == "ours" and [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left
    tmp = temporary_path(target)
    tmp.write_text("replacing")
    publish_file(tmp, target, overwrite=True)
    assert target.read_text() == "replacing" and not tmp.exists()


def test_change_never_replaces_an_output_that_appeared_meanwhile(tmp_path, monkeypatch):
    from spacy_elmo.change import run as change_run

    from .change.test_wug_route import bilm_and_wug

    bilm, wug = bilm_and_wug(tmp_path)
    out = tmp_path / "change.json"
    real = change_run.run_change

    def slow(*args, **kwargs):
        result = real(*args, **kwargs)
        out.write_text(THEIRS)  # it appears after the start's check, before the result is written
        return result

    monkeypatch.setattr(change_run, "run_change", slow)
    run = CliRunner().invoke(app, ["change", str(wug), str(wug), str(out), "--model", str(bilm), "--min-usages", "2", "-q"])
    assert run.exit_code == 1 and "appeared while this command ran" in run.output
    assert out.read_text() == THEIRS


def test_convert_and_save_original_never_replace_a_file_that_appeared(tmp_path):
    source = tmp_path / "src"
    save_original(tiny_bilm(seed=1), source / "options.json", source / "weights.hdf5")
    out = tmp_path / "out"
    out.mkdir()
    (out / "weights.hdf5").write_text(THEIRS)  # as if a second convert to the same new folder finished first
    with pytest.raises(InputError, match="appeared while this command ran"):
        save_original(
            load_original(source / "options.json", source / "weights.hdf5"), out / "options.json", out / "weights.hdf5", overwrite=False
        )
    assert (out / "weights.hdf5").read_text() == THEIRS and sorted(p.name for p in out.iterdir()) == ["weights.hdf5"]
    first = CliRunner().invoke(app, ["convert", str(source), str(tmp_path / "new")])
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(app, ["convert", str(source), str(tmp_path / "new")])
    assert second.exit_code == 1 and "exists" in second.output


def test_embed_never_replaces_a_file_that_appeared(tmp_path, monkeypatch):
    import spacy

    from spacy_elmo.pipeline import export
    from spacy_elmo.pipeline.export import write_layers

    out = tmp_path / "layers.hdf5"
    real = export._write_hdf5

    def appearing(*args, **kwargs):
        counts = real(*args, **kwargs)
        out.write_text(THEIRS)
        return counts

    monkeypatch.setattr(export, "_write_hdf5", appearing)
    doc = spacy.blank("en")("a b")
    import numpy

    from spacy_elmo.pipeline.elmo_data import ElmoData, register_extensions

    register_extensions()
    doc._.elmo = ElmoData(numpy.ones((2, 2, 4), dtype="float32"))
    with pytest.raises(InputError, match="appeared while this command ran"):
        write_layers([doc], out, "all", overwrite=False)
    assert out.read_text() == THEIRS
    monkeypatch.undo()
    written = tmp_path / "again.hdf5"
    write_layers([doc], written, "all", overwrite=False)
    assert Path(written).is_file()


def test_a_killed_writers_temporary_is_removed_by_the_next_run_and_nothing_else(tmp_path):
    """kill -9 runs no clean-up: the temporary a killed process was writing stays, until the next run that writes the
    same output on this machine removes it. A running process's temporary, another machine's and a user's file stay."""
    import signal
    import subprocess
    import sys

    probe = tmp_path / "probe"
    probe.write_text("")
    try:
        os.setxattr(probe, "user.spacy-elmo.probe", b"1")
    except (AttributeError, OSError):
        pytest.skip("this file system keeps no extended attributes: a killed writer's temporary carries no mark and stays")
    probe.unlink()
    target = tmp_path / "out.hdf5"
    code = (
        "import os, signal, sys; from spacy_elmo.output_folders import temporary_path; "
        "t = temporary_path(sys.argv[1]); t.write_bytes(b'x' * 4096); print(t, flush=True); os.kill(os.getpid(), signal.SIGKILL)"
    )
    killed = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL
    left = Path(killed.stdout.strip())
    assert left.is_file() and left.parent == tmp_path
    running = temporary_path(target)  # this process's own: never taken for a killed one's
    others = [tmp_path / ".out.hdf5.otherhost-1.abc.tmp", tmp_path / ".out.hdf5.notes.tmp", tmp_path / "out.hdf5.1.tmp"]
    for other in others:
        other.write_text("not ours to remove")
    assert not left.exists()  # removed when this process made its temporary of the same output
    temporary_path(target).unlink()
    assert running.is_file() and all(other.read_text() == "not ours to remove" for other in others)


def test_a_users_file_named_like_a_killed_writers_temporary_stays_and_is_said(tmp_path):
    """The audit's loss: a user's plain files whose names fit the pattern of a dead writer's temporaries on this
    host (99998, 99999: no such process) were removed by the next writer. A name is no proof: they stay, in one line."""
    import warnings

    from spacy_elmo.output_folders import _writer_tag

    target = tmp_path / "out.onnx"
    host = _writer_tag(0)[: -len("-0")]
    users = [tmp_path / f".out.onnx.{host}-99999.mine.tmp", tmp_path / f".out.onnx.{host}-99998.tmp"]
    users[0].write_text("notes")
    users[1].write_text("k")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        temporary_path(target).unlink()
    assert [u.read_text() for u in users] == ["notes", "k"]
    lines = [str(w.message) for w in said if "did not make it" in str(w.message)]
    assert len(lines) == 2 and all("left as it is" in line for line in lines)


def test_an_output_with_a_long_name_is_written(tmp_path):
    """The audit's case: an output named with ~231 bytes or more failed with a traceback after the work, its
    temporary's name (the output's, the host, the process, a random part) past the file system's 255 bytes."""
    target = tmp_path / ("l" * 200 + "é" * 20 + ".json")  # 245 bytes
    write_atomically(target, "{}\n")
    assert target.read_text() == "{}\n" and [p.name for p in tmp_path.iterdir()] == [target.name]
    write_atomically(target, "[]\n")  # again: its temporaries are found by the same shortened name
    assert target.read_text() == "[]\n"
