"""Ray (the [ray] extra): `index-usages --ray` and `embed --ray` on a local cluster give the single
run's output, also when a worker is killed mid-shard; ElmoBatchEmbedder in Ray Data. The biLM's
products round differently with the number of threads, so the single run here uses one thread,
as each actor does (2 CPUs, 2 workers)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app

from ..helpers import tiny_bilm
from .test_merge import _documents

WORKER_TASK = "ray::_ShardWorker.run"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ray")
    save_original(tiny_bilm(seed=5, cell_dim=384, projection_dim=48), tmp / "options.json", tmp / "weights.hdf5")
    docs = _documents(480, seed=1)
    (tmp / "docs.txt").write_text("\n\n".join(docs) + "\n", encoding="utf8")
    (tmp / "lines.txt").write_text("\n".join(docs[:60]) + "\n", encoding="utf8")
    return tmp


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _cli(*args) -> str:
    if args[0] in ("embed", "index-usages"):  # as each actor runs: one thread
        args += ("--threads", 1)
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.output


def test_without_ray_the_error_names_the_extra(setup, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(app, ["embed", str(setup), str(setup / "lines.txt"), str(tmp_path / "x.hdf5"), "--ray", "auto"])
    assert result.exit_code == 1 and "pip install 'spacy-elmo[ray]'" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(
        app, ["embed", str(setup), str(setup / "lines.txt"), str(tmp_path / "x.hdf5"), "--ray", "auto", "--shard", "0/2"]
    )
    assert result.exit_code == 2 and "not both" in result.output


def test_batch_embedder_adds_each_texts_layers_and_tokens(setup):
    from spacy_elmo.distributed import ElmoBatchEmbedder
    from spacy_elmo.pipeline.loading import load_elmo_pipeline

    texts = (setup / "lines.txt").read_text().split("\n")[:5]
    out = ElmoBatchEmbedder(str(setup), layers="average")({"text": numpy.asarray(texts, dtype=object), "id": numpy.arange(5)})
    assert list(out["id"]) == list(range(5)) and out["elmo"].dtype == object
    nlp = load_elmo_pipeline(setup)
    for text, layers, tokens in zip(texts, out["elmo"], out["tokens"]):
        doc = nlp(text)
        numpy.testing.assert_allclose(layers, doc._.elmo.layers.mean(axis=0), atol=1e-5)  # another batch
        assert list(tokens) == [t.text for t in doc]


@pytest.fixture
def ray():
    return pytest.importorskip("ray", reason="the Ray tests need the [ray] extra: pip install 'spacy-elmo[ray]'")


def _worker_pids():
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().startswith(WORKER_TASK.encode()):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def _kill_a_worker_mid_shard(killed: list, stop: threading.Event) -> None:
    """Kill -9 the first actor process seen running a shard twice in a row, 50 ms apart (inside the
    shard; a shard can take less than the 0.3 s once waited here, and then no worker was killed)."""
    while not stop.is_set():
        pids = _worker_pids()
        if pids:
            time.sleep(0.05)
            running = [pid for pid in pids if pid in _worker_pids()]
            if running:
                os.kill(running[0], signal.SIGKILL)
                killed.append(running[0])
                return
        time.sleep(0.02)


def _ray_run(*args, kill: bool):
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    command = [sys.executable, "-m", "spacy_elmo", *map(str, args), "--ray", "auto", "--workers", "2", "-q"]
    killed: list = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_a_worker_mid_shard, args=(killed, stop), daemon=True)
    if kill:
        killer.start()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    finally:
        stop.set()
    assert result.returncode == 0, result.stderr[-3000:]
    return killed


@pytest.mark.slow
def test_index_usages_on_ray_with_a_worker_killed_equals_the_single_run(ray, setup, tmp_path, one_thread):
    _cli("index-usages", setup, setup / "docs.txt", tmp_path / "single", "--docs-per-batch", 4, "-q")  # 8 chunks of 64
    killed = _ray_run("index-usages", setup, setup / "docs.txt", tmp_path / "ray", "--docs-per-batch", 4, kill=True)
    assert killed, "no worker was seen running a shard"
    for name in ("vectors.bin", "norms.npy", "sentences.jsonl", "usage_key.npy", "usage_sentence.npy", "types.json", "type_vectors.bin"):
        assert (tmp_path / "single" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes(), name
    assert not list(tmp_path.glob(".ray.*"))  # the parts' scratch folder is gone


@pytest.mark.slow
def test_embed_on_ray_equals_the_single_run_byte_for_byte(ray, setup, tmp_path, one_thread):
    _cli("embed", setup, setup / "lines.txt", tmp_path / "single.hdf5", "--docs-per-batch", 1, "-q")  # 4 chunks of 16
    _ray_run("embed", setup, setup / "lines.txt", tmp_path / "ray.hdf5", "--docs-per-batch", 1, kill=False)
    assert (tmp_path / "single.hdf5").read_bytes() == (tmp_path / "ray.hdf5").read_bytes()


@pytest.mark.slow
def test_ray_data_map_batches_gives_the_pipelines_layers(ray, setup):
    from spacy_elmo.distributed import ElmoBatchEmbedder
    from spacy_elmo.pipeline.loading import load_elmo_pipeline

    texts = (setup / "lines.txt").read_text().split("\n")[:24]
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ds = ray.data.from_items([{"text": t} for t in texts])
        ds = ds.map_batches(ElmoBatchEmbedder, fn_constructor_kwargs={"model": str(setup), "layers": "top"}, concurrency=1, batch_size=8)
        rows = ds.take_all()
    finally:
        ray.shutdown()
        for s, handler in handlers.items():  # ray.init's own handlers, as a program that calls it must put back
            signal.signal(s, handler)
    nlp = load_elmo_pipeline(setup)
    assert sorted(r["text"] for r in rows) == sorted(texts)
    for row in rows:
        expected = nlp(row["text"])._.elmo.layers[-1]
        numpy.testing.assert_allclose(row["elmo"], expected, atol=1e-5)  # another process, another batch
