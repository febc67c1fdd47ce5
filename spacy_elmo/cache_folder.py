"""The package's cache folder: downloaded models (released/) and the machine's measurements (bilm/measured.py)."""

import os
from pathlib import Path
from typing import Optional

from .errors import InputError
from .types import PathLike

CACHE_ENV = "SPACY_ELMO_CACHE"


def cache_dir(cache: Optional[PathLike] = None) -> Path:
    """RETURNS (Path): the cache folder: `cache`, else $SPACY_ELMO_CACHE, else
    $XDG_CACHE_HOME/spacy-elmo, else ~/.cache/spacy-elmo."""
    if cache is not None and str(cache) == "":
        raise InputError("An empty cache path names no folder (it would be the working folder): give a folder, e.g. --cache models")
    if cache is not None:
        folder = Path(cache)
    elif os.environ.get(CACHE_ENV):
        folder = Path(os.environ[CACHE_ENV])
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base) / "spacy-elmo"
    if folder.exists() and not folder.is_dir():
        raise InputError(f"The cache {folder} is a file, not a folder: give another cache folder (--cache, ${CACHE_ENV})")
    return folder
