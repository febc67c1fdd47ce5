"""The threads of a process follow the other work on the machine, and an explicit number is never changed."""

import subprocess
import sys
import time

import numpy
import pytest
import torch

from spacy_elmo import machine_load
from spacy_elmo.bilm import threads as threads_module
from spacy_elmo.bilm.threads import _Follower, busy_cores, others_running


@pytest.fixture
def machine(monkeypatch):
    """A 2-core machine whose other work the test sets (`machine.others`), and a clock it moves."""

    class Machine:
        others = 0
        now = 1000.0

    m = Machine()
    for module in (threads_module, machine_load):  # the load is read in machine_load, followed in threads
        monkeypatch.setattr(module, "usable_cores", lambda: 2)
        monkeypatch.setattr(module, "_physical_cores", lambda: 2)
        monkeypatch.setattr(module, "others_running", lambda: m.others)
    monkeypatch.setattr(threads_module.time, "monotonic", lambda: m.now)
    monkeypatch.setattr(threads_module.time, "sleep", lambda s: None)
    for name in threads_module.ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    torch.set_num_threads(2)
    return m


def _batches(follower, m, n, every_s=0.5):
    for _ in range(n):
        m.now += every_s
        follower.between_batches()


def test_threads_follow_a_load_that_comes_and_goes(machine):
    follower = _Follower()
    assert follower.start() == "" and torch.get_num_threads() == 2
    machine.others = 1  # another job starts mid-run
    _batches(follower, machine, 2)
    assert torch.get_num_threads() == 2  # not before the looks agree
    _batches(follower, machine, 3)
    assert torch.get_num_threads() == 1
    machine.others = 0  # it ends
    _batches(follower, machine, 4)
    assert torch.get_num_threads() == 2 and follower.changes == 2


def test_a_short_blip_does_not_switch(machine):
    follower = _Follower()
    follower.start()
    for others in (1, 0, 1, 0, 0, 1, 0):
        machine.others = others
        _batches(follower, machine, 1)
    assert torch.get_num_threads() == 2 and follower.changes == 0


def test_a_job_starting_beside_busy_work_takes_the_free_cores(machine):
    machine.others = 1
    follower = _Follower()
    why = follower.start()
    assert torch.get_num_threads() == 1 and "1 of the 2 cores are busy" in why and "--threads" in why


@pytest.mark.parametrize("how", ["fix", "torch", "env"])
def test_an_explicit_number_is_never_changed(machine, monkeypatch, how):
    follower = _Follower()
    follower.start()
    if how == "fix":
        follower.fix(2)
    elif how == "torch":
        torch.set_num_threads(2)
        follower.last_set = 1  # the program set 2 after the follower set 1
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", "2")
    machine.others = 1
    _batches(follower, machine, 10)
    assert torch.get_num_threads() == 2 and follower.changes == 0
    assert follower.start() == "" and torch.get_num_threads() == 2


def test_a_count_set_before_import_is_the_programs(machine):
    torch.set_num_threads(1)  # neither the cores nor the physical cores: somebody chose it
    follower = _Follower()
    assert follower.set_by_user()
    follower.start()
    assert torch.get_num_threads() == 1


def test_several_processes_of_one_job_share_the_cores_and_stay(machine):
    machine.others = 1  # the other process of the same run
    follower = _Follower()
    follower.start(processes=2)
    assert torch.get_num_threads() == 1
    machine.others = 0
    _batches(follower, machine, 10)
    assert torch.get_num_threads() == 1


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_busy_process_is_seen_as_other_work():
    assert others_running() is not None
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert busy_cores(samples=9, every_s=0.02) >= 1
    finally:
        busy.kill()
        busy.wait()


def test_the_plain_biLM_api_follows_the_load_like_the_component(machine, monkeypatch):
    """BiLM.embed, README's "biLM alone", takes the free cores and follows them between its batches, as the elmo
    component does; a number the program set stays."""
    from ..helpers import tiny_bilm

    follower = _Follower()
    monkeypatch.setattr(threads_module, "follower", follower)
    bilm = tiny_bilm(seed=0)
    machine.others = 1  # busy beside it from the start
    clock = iter(range(10**6))
    monkeypatch.setattr(threads_module.time, "monotonic", lambda: machine.now + next(clock))
    bilm.embed([["a", "b"]] * 8, batch_size=1)
    assert torch.get_num_threads() == 1
    machine.others = 0
    bilm.embed([["a", "b"]] * 8, batch_size=1)
    assert torch.get_num_threads() == 2
    machine.others = 1
    bilm.embed_words(["a", "b", "c"] * 4, batch_size=1)  # the token layer alone (usage indexes, merges) follows too
    assert torch.get_num_threads() == 1
    machine.others = 0
    bilm.embed_words(["a", "b", "c"] * 4, batch_size=1)
    assert torch.get_num_threads() == 2
    # the substitutes' language models (change's sense names) too: they kept the threads under load before
    from spacy_elmo.bilm.context_prediction import context_log_probs
    from spacy_elmo.bilm.language_model import SharedSoftmax

    softmax = SharedSoftmax(bilm.options.projection_dim, 7, "full").eval()
    machine.others = 1
    context_log_probs(bilm, softmax, [["a", "b"]] * 8, [0] * 8, batch_size=1)
    assert torch.get_num_threads() == 1
    follower.fix(1)
    bilm.embed([["a", "b"]] * 8, batch_size=1)
    assert torch.get_num_threads() == 1


def test_the_onnx_runtime_follows_the_load_and_refuses_impossible_numbers(machine, monkeypatch, tmp_path):
    pytest.importorskip("onnxruntime", reason="needs ONNX Runtime (pip install 'spacy-elmo[onnx]')")
    from spacy_elmo.bilm_onnx.export import export_onnx
    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM
    from spacy_elmo.errors import InputError

    from ..helpers import tiny_bilm

    export_onnx(tiny_bilm(seed=0), tmp_path / "m.onnx")
    for wrong in (0, -1, 100000, 2.5, True):
        with pytest.raises(InputError, match="give 1 to 1024 threads"):
            OnnxBiLM(tmp_path / "m.onnx", threads=wrong)
    clock = iter(range(10**6))
    monkeypatch.setattr(machine_load.time, "monotonic", lambda: machine.now + 2 * next(clock))
    machine.others = 1
    model = OnnxBiLM(tmp_path / "m.onnx")
    assert model.threads == 1  # the free core at the start
    machine.others = 0
    first = model.embed([["a", "b"]] * 4, batch_size=1)
    assert model.threads == 2  # two looks agreed: a new session with both cores
    assert numpy.allclose(first[0], model.embed([["a", "b"]])[0], atol=1e-6)
    fixed = OnnxBiLM(tmp_path / "m.onnx", threads=1)
    fixed.embed([["a", "b"]] * 4, batch_size=1)
    assert fixed.threads == 1
