"""Every registered name is an entry point, and each resolves in a fresh process."""

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

SETUP_CFG = Path(__file__).resolve().parents[1] / "setup.cfg"
REGISTRIES = {"spacy_architectures": "architectures", "spacy_layers": "layers", "spacy_loggers": "loggers", "spacy_elmo_sequences": None}


def _entry_points() -> dict:
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    section = parser["options.entry_points"]
    return {group: dict(line.split(" = ") for line in section[group].strip().splitlines()) for group in REGISTRIES}


def test_every_registered_name_is_an_entry_point():
    """Names registered by decorators when the whole package is imported: none missing from
    setup.cfg (ElmoTok2Vec.v2 was, and failed to resolve until listener.py was imported)."""
    import spacy_elmo.layers  # noqa: F401 (registers)
    import spacy_elmo.pipeline  # noqa: F401
    import spacy_elmo.training.logger  # noqa: F401
    from spacy.util import registry

    points = _entry_points()
    for group, name in REGISTRIES.items():
        if name is None:
            continue
        ours = {key for key in getattr(registry, name).get_all() if key.startswith("spacy-elmo.")}
        assert ours <= set(points[group]), f"{group}: {sorted(ours - set(points[group]))} not in setup.cfg"


@pytest.mark.slow
def test_every_entry_point_resolves_in_a_fresh_process():
    names = [(REGISTRIES[group], name) for group, entries in _entry_points().items() if REGISTRIES[group] for name in entries]
    code = (
        "import sys\nfrom spacy.util import registry\n"
        f"for reg, name in {names!r}:\n"
        "    getattr(registry, reg).get(name)\n"
        "print('resolved', len(" + repr(names) + "))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"resolved {len(names)}" in run.stdout
