"""design.md's layering, read from the source: the usage index sits below semantic change, never above it."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "spacy_elmo"


def _imported_modules(path: Path) -> set:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(("." * node.level) + node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_the_usage_index_imports_nothing_of_semantic_change():
    offending = {
        f"{path.name}: {module}"
        for path in sorted((PACKAGE / "usages").glob("*.py"))
        for module in _imported_modules(path)
        if module.startswith("..change") or module.startswith("spacy_elmo.change")
    }
    assert not offending, f"usages/ reaches up into change/: {sorted(offending)}"
