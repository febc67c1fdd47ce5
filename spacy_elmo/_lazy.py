"""Lazy attributes for package `__init__` modules, so that importing a light submodule (the
msgpack hooks srsly loads by entry point) never pulls in torch or spaCy."""

import importlib
from typing import Any, Callable, Dict


def lazy_getattr(package: str, names: Dict[str, str]) -> Callable[[str], Any]:
    """RETURNS (Callable[[str], Any]): a module `__getattr__` that imports `names[attr]`
    (a submodule relative to `package`) on first access."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
