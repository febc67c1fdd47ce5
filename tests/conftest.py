from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ELMO_FIXTURE = SHARED_DATA / "elmo-fixtures" / "allennlp"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
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
