"""The easy mistakes past one machine end in one line, before any work: a Ray address with nothing
there or of no form, a worker count below one, a part's approximate search, a linked output folder;
the parts an interrupted Ray driver left behind are removed by the next run."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.distributed.ray_jobs import PARTS_SUFFIX, check_reachable, remove_stale_parts
from spacy_elmo.errors import InputError
from spacy_elmo.released.transfer import PartialFile

from .test_merge import _fail, _index_shards, _run, bilm_dir, corpus  # noqa: F401 (fixtures)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def test_a_ray_address_with_nothing_there_is_one_line_in_seconds():
    started = time.monotonic()
    with pytest.raises(InputError, match=r"cannot be reached .*ray start --head"):
        check_reachable(f"127.0.0.1:{_closed_port()}")
    assert time.monotonic() - started < 10
    for bad in ("notahost", "host:port", "1.2.3.4:", ":6379", "http://x:1/"):
        with pytest.raises(InputError, match="HOST:PORT"):
            check_reachable(bad)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_reachable(f"127.0.0.1:{server.getsockname()[1]}")  # something answers: Ray takes over


@pytest.mark.slow
def test_the_cli_says_so_before_ray_starts(bilm_dir, corpus, tmp_path):  # noqa: F811
    pytest.importorskip("ray", reason="the --ray door needs the [ray] extra: pip install 'spacy-elmo[ray]'")
    lines = str(corpus / "lines.txt")
    for address in (f"127.0.0.1:{_closed_port()}", "notahost"):
        result = CliRunner().invoke(app, ["embed", str(bilm_dir), lines, str(tmp_path / "x.hdf5"), "--ray", address])
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(app, ["embed", str(bilm_dir), lines, str(tmp_path / "x.hdf5"), "--ray", "auto", "--workers", "-1"])
    assert result.exit_code == 2 and "--workers" in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x.hdf5").exists() and not list(tmp_path.glob(f"*{PARTS_SUFFIX}"))


def test_the_parts_of_a_driver_killed_with_9_are_removed_by_the_next_run(tmp_path):
    output = tmp_path / "out.hdf5"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folders = {}
    for name, driver in (
        ("dead", {"host": socket.gethostname(), "pid": dead.pid}),
        ("alive", {"host": socket.gethostname(), "pid": os.getpid()}),
    ):
        folders[name] = tmp_path / f".out.hdf5.{name}{PARTS_SUFFIX}"
        folders[name].mkdir()
        (folders[name] / "part-00000-of-00004.hdf5").write_bytes(b"finished part")
        (folders[name] / "driver.json").write_text(json.dumps(driver))
    folders["other host"] = tmp_path / f".out.hdf5.x{PARTS_SUFFIX}"
    folders["other host"].mkdir()
    (folders["other host"] / "driver.json").write_text(json.dumps({"host": "elsewhere", "pid": dead.pid}))
    folders["not ours"] = tmp_path / f".out.hdf5.y{PARTS_SUFFIX}"
    folders["not ours"].mkdir()
    (tmp_path / f".other.hdf5.z{PARTS_SUFFIX}").mkdir()
    assert remove_stale_parts(output) == 1
    assert not folders["dead"].exists()
    assert all(folders[name].exists() for name in ("alive", "other host", "not ours"))
    assert (tmp_path / f".other.hdf5.z{PARTS_SUFFIX}").exists()


def test_a_parts_approximate_search_is_refused_before_the_work(bilm_dir, corpus, tmp_path):  # noqa: F811
    args = ["index-usages", str(bilm_dir), str(corpus / "docs.txt"), str(tmp_path / "part"), "--shard", "0/2", "--ann", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "index-ann MERGED" in result.output and not (tmp_path / "part").exists()


@pytest.mark.slow
def test_a_linked_output_folder_is_never_written_through(bilm_dir, corpus, tmp_path):  # noqa: F811
    _run("index-usages", bilm_dir, corpus / "docs.txt", tmp_path / "real", "-q", "--words", "bank")
    before = {p.name: p.read_bytes() for p in (tmp_path / "real").iterdir() if p.is_file()}
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    assert "symbolic link" in _fail("index-usages", bilm_dir, corpus / "docs.txt", tmp_path / "link", "-q")
    parts = _index_shards(bilm_dir, corpus, tmp_path, 2)
    assert "symbolic link" in _fail("merge", tmp_path / "link", *parts, "-q")
    assert {p.name: p.read_bytes() for p in (tmp_path / "real").iterdir() if p.is_file()} == before


def test_a_partial_download_record_keeps_no_password():
    record = PartialFile("https://user:s3cret@mirror.example/small/weights.hdf5", '"etag"', 10).to_dict()
    assert "s3cret" not in json.dumps(record) and "user" not in json.dumps(record)
    assert record["url"] == "https://mirror.example/small/weights.hdf5"


@pytest.mark.slow
def test_shards_that_hold_nothing_are_said(bilm_dir, corpus, tmp_path):  # noqa: F811
    """35 documents in chunks of 16 x 40: one chunk for two shards, and the command says so."""
    args = ["index-usages", str(bilm_dir), str(corpus / "docs.txt"), str(tmp_path / "p"), "--shard", "1/2", "--docs-per-batch", "40"]
    result = CliRunner().invoke(app, [*args, "--words", "bank"])
    assert result.exit_code == 0 and "35 documents make 1 chunk of 640" in result.output and "1 shard(s) hold nothing" in result.output
    args = ["embed", str(bilm_dir), str(corpus / "lines.txt"), str(tmp_path / "p.hdf5"), "--shard", "0/4", "--docs-per-batch", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "37 documents make 3 chunks of 16" in result.output, result.output
    result = CliRunner().invoke(app, [*args[:-4], "--shard", "0/2", "--docs-per-batch", "1", "--overwrite"])
    assert result.exit_code == 0 and "Note" not in result.output


def test_workers_past_the_clusters_cpus_are_capped_and_said():
    from spacy_elmo.distributed.ray_jobs import worker_count

    said = []
    assert worker_count(1000, 2, said.append) == 2 and "the cluster has 2 CPUs, so 2 workers" in said[0]
    assert worker_count(0, 8, said.append) == 8 and worker_count(3, 8, said.append) == 3 and len(said) == 1
    with pytest.raises(InputError, match="--workers -1"):
        worker_count(-1, 2)
