import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    shutil.copytree(
        REPO_ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__", "tests", "projects")
    )
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
