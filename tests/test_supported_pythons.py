"""The Python versions the package claims are one list: setup.cfg's python_requires and classifiers, the README's
range, ruff's and mypy's target (the lowest) and the versions CI runs the quick suite on (the lowest and the highest)."""

import configparser
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg", encoding="utf8")
    return parser


def _claimed():
    classifiers = _setup()["metadata"]["classifiers"]
    return sorted((int(a), int(b)) for a, b in re.findall(r"Programming Language :: Python :: (\d+)\.(\d+)", classifiers))


def test_the_claimed_versions_are_a_range_from_python_requires():
    claimed = _claimed()
    lowest, highest = claimed[0], claimed[-1]
    assert claimed == [(3, minor) for minor in range(lowest[1], highest[1] + 1)], "no version left out in between"
    assert _setup()["options"]["python_requires"].strip() == f">={lowest[0]}.{lowest[1]}"
    assert lowest <= sys.version_info[:2] <= highest, f"this Python ({sys.version.split()[0]}) is one the package claims"


def test_the_readme_tools_and_ci_say_the_same_versions():
    lowest, highest = _claimed()[0], _claimed()[-1]
    low, high = f"{lowest[0]}.{lowest[1]}", f"{highest[0]}.{highest[1]}"
    readme = (ROOT / "README.md").read_text(encoding="utf8")
    assert f"Python {low} to {high}" in readme and re.search(r"Python 3\.\d\+", readme) is None
    assert f'target-version = "py{lowest[0]}{lowest[1]}"' in (ROOT / "pyproject.toml").read_text(encoding="utf8")
    assert _setup()["mypy"]["python_version"].strip() == low
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf8")
    assert re.search(rf"^for version in {re.escape(low)} {re.escape(high)}; do$", ci, flags=re.M), "CI's quick suites"
