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


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf8"), flags=re.S)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def test_links_between_pages_reach_their_file_and_heading():
    pages = [README, *sorted((ROOT / "docs").rglob("*.md")), *sorted((ROOT / "projects").glob("*/README.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf8"), flags=re.S)
        for target, anchor in re.findall(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
                broken.append(f"{page.relative_to(ROOT)}: {target}#{anchor}")
    assert not broken, "links to a missing file or heading:\n" + "\n".join(broken)


def test_docs_record_results_not_how_the_work_went():
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf8")
        for pattern in (r"\bsession\b", r"\bthis machine\b", r"\bissue \d+", r"\bthis (?:commit|change)\b"):
            assert not re.search(pattern, text, flags=re.I), f"{page.relative_to(ROOT)}: {pattern}"


def test_speed_guide_lists_every_benchmark():
    guide = (ROOT / "docs" / "speed.md").read_text(encoding="utf8")
    for script in sorted((ROOT / "benchmarks").iterdir()):
        if script.suffix in (".py", ".sh"):
            assert f"`benchmarks/{script.name}`" in guide, f"docs/speed.md does not list {script.name}"


def test_component_settings_table_is_the_settings_class():
    from dataclasses import fields

    from spacy_elmo.pipeline.component_settings import ElmoSettings

    page = (ROOT / "docs" / "component.md").read_text(encoding="utf8")
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", page.split("## Settings", 1)[1].split("\n## ", 1)[0], flags=re.M))
    defaults = Config({"s": {f.name: f.default for f in fields(ElmoSettings)}}).to_str().split("\n", 1)[1]
    expected = dict(line.split(" = ", 1) for line in defaults.strip().splitlines())
    assert rows == expected
