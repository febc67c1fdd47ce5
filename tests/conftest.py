import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

# "auto" follows the CPU's flags in the tests, and nothing is written to the user's cache folder; the
# tests of measuring (tests/bilm/test_measured.py) turn it on with a cache folder of their own.
os.environ.setdefault("SPACY_ELMO_MEASURE", "0")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ELMO_FIXTURE = SHARED_DATA / "elmo-fixtures" / "allennlp"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    if any("gpu" in item.keywords for item in items):
        import torch

        if not torch.cuda.is_available():
            skip_gpu = pytest.mark.skip(reason="gpu: needs CUDA (on a machine with a GPU: pytest -m gpu, or benchmarks/gpu_check.sh)")
            for item in items:
                if "gpu" in item.keywords:
                    item.add_marker(skip_gpu)
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _stray_threads(before: set) -> list:
    """Threads started during a test that still run a moment after it ended."""
    deadline = time.monotonic() + 2.0
    while True:
        stray = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not stray or time.monotonic() > deadline:
            return stray
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def leaves_the_process_as_it_found_it():
    """No test leaves a signal handler, a Ray session or a running thread behind: a process forked
    later (by a library, a user's program) would inherit it (docs/safety.md, "Processes")."""
    import torch

    from spacy_elmo.bilm.threads import follower

    handlers = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    threads = set(threading.enumerate())
    torch_threads = torch.get_num_threads()
    follower_state = {k: list(v) if isinstance(v, list) else v for k, v in vars(follower).items()}
    yield
    # torch's threads as they were: a test's --threads N is the command's, not the next test's
    torch.set_num_threads(torch_threads)
    vars(follower).update(follower_state)
    problems = []
    for signum, handler in handlers.items():
        if signal.getsignal(signum) is not handler:
            problems.append(f"the {signal.Signals(signum).name} handler changed to {signal.getsignal(signum)!r}")
            signal.signal(signum, handler)
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        problems.append("a Ray session is still running")
        ray.shutdown()
    stray = _stray_threads(threads)
    if stray:
        problems.append(f"threads still running: {', '.join(t.name for t in stray)}")
    if problems:
        pytest.fail("the test left the process changed: " + "; ".join(problems), pytrace=False)


# How nlp.pipe(n_process=N) starts its workers is the user's Python's default: "fork" on Linux up to 3.13, which
# 3.12 and 3.13 warn against in a process with threads (torch's and ONNX Runtime's are running by then);
# "forkserver" from 3.14 on, and "spawn" on macOS and Windows, which send the pipeline to each worker pickled.
FORK_WARNS = sys.version_info >= (3, 12)


@pytest.fixture(params=["fork", "forkserver"])
def start_method(request):
    """nlp.pipe's workers started each way that spaCy's users get by default (see FORK_WARNS)."""
    import multiprocessing

    if request.param == "fork" and FORK_WARNS:
        pytest.skip("Python 3.12+ warns against fork() in a process with threads: its workers are tested with forkserver here")
    if request.param not in multiprocessing.get_all_start_methods():
        pytest.skip(f"this platform has no {request.param!r} start method")
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method(request.param, force=True)
    yield request.param
    multiprocessing.set_start_method(before, force=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"needs the shared data folder at {SHARED_DATA} (not part of a fresh clone)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def elmo_fixture() -> Path:
    if not ELMO_FIXTURE.is_dir():
        pytest.skip(f"needs the AllenNLP ELMo parity fixture at {ELMO_FIXTURE} (not part of a fresh clone)")
    return ELMO_FIXTURE


SHARED_BILM = Path(__file__).resolve().parents[1].parent / "shared" / "models" / "elmo-small-wiki-reuters"


@pytest.fixture(scope="session")
def shared_bilm() -> Path:
    """The biLM of the released small size pretrained by this project (../shared/models)."""
    if not (SHARED_BILM / "weights.hdf5").is_file():
        pytest.skip(f"needs the shared biLM at {SHARED_BILM} (not part of a fresh clone)")
    return SHARED_BILM


# The built wheel, and a folder where pip installed it alone (PYTHONPATH=that folder runs it, ahead
# of the checkout): for the tests of what a pip user gets (slow).
@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy: an in-tree build/ folder could hold modules deleted since.
    source = out / "source"
    everywhere = shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__")

    def left_out(folder: str, names: list) -> set:
        at_the_top = {"tests", "projects"} if Path(folder) == REPO_ROOT else set()  # spacy_elmo/projects/ goes in
        return set(everywhere(folder, names)) | (at_the_top & set(names))

    shutil.copytree(REPO_ROOT, source, ignore=left_out)
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=out)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (path,) = out.glob("spacy_elmo-*.whl")
    return path


@pytest.fixture(scope="session")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return target
