"""README's config blocks parse as printed (spaCy configs allow no comment after a value)."""

import re
from pathlib import Path

import spacy
from thinc.api import Config

README = Path(__file__).resolve().parents[1] / "README.md"


def _ini_blocks():
    return re.findall(r"```ini\n(.*?)```", README.read_text(encoding="utf8"), flags=re.S)


def test_readme_config_blocks_parse_and_build():
    blocks = _ini_blocks()
    assert blocks, "README has no ini block"
    for block in blocks:
        config = Config().from_str(block, interpolate=False)
        for section in config.values():
            for value in section.values():
                assert not (isinstance(value, str) and "#" in value), f"a comment became part of the value {value!r}"
    model = Config().from_str(blocks[0])["components"]["elmo"]
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={k: v for k, v in model.items() if k != "factory"})
    assert nlp.get_pipe("elmo").options.projection_dim == 128
