"""The user docs as printed: config blocks parse (spaCy configs allow no comment after a value), the
README stays a front page, and no user example points at this repository's own shared data."""

import re
from pathlib import Path

import spacy
from thinc.api import Config

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = sorted((ROOT / "docs").glob("*.md"))
USER_DOCS = [README] + [page for page in GUIDE if page.name not in ("results.md", "layout.md")]


def _ini_blocks():
    return [block for page in [README, *GUIDE] for block in re.findall(r"```ini\n(.*?)```", page.read_text(encoding="utf8"), flags=re.S)]


def test_config_blocks_parse_and_build():
    blocks = _ini_blocks()
    assert blocks, "neither README nor docs/ has an ini block"
    for block in blocks:
        config = Config().from_str(block, interpolate=False)
        for section in config.values():
            for value in section.values():
                assert not (isinstance(value, str) and "#" in value), f"a comment became part of the value {value!r}"
    model = Config().from_str(blocks[0])["components"]["elmo"]
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={k: v for k, v in model.items() if k != "factory"})
    assert nlp.get_pipe("elmo").options.projection_dim == 128


def test_readme_is_a_front_page_and_examples_need_no_shared_folder():
    text = README.read_text(encoding="utf8")
    assert len(text.splitlines()) <= 200
    assert "## Quick start" in text and text.index("## Quick start") < text.index("## Development")
    for page in USER_DOCS:
        for block in re.findall(r"```(?:bash|python)\n(.*?)```", page.read_text(encoding="utf8"), flags=re.S):
            assert "../shared" not in block, f"{page.name}: a user example names ../shared"
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
