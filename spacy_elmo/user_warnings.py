"""Warnings shown at the user's own line: the first frame outside the libraries a call went through (spacy-elmo,
PyTorch, spaCy, Thinc and their helpers, importlib), whatever path led there (a setting, a device move inside
torch's Module.to, spacy.load, a config's registry call). A fixed stacklevel names a different library line on
each path. From the command line the user's line is the command's own, which says it in one line (cli/_util.py)."""

import os
import sys
import warnings
from typing import Tuple, Type

_LIBRARIES = ("spacy_elmo", "torch", "spacy", "thinc", "confection", "catalogue", "srsly", "importlib")


def _library_folders() -> Tuple[str, ...]:
    folders = []
    for name in _LIBRARIES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            folders.append(os.path.dirname(path) + os.sep)
    return tuple(folders)


def warn_at_user(message: str, category: Type[Warning] = UserWarning) -> None:
    """warnings.warn(message, category), attributed to the nearest caller outside the libraries (or to the
    spacy-elmo command that runs)."""
    folders = _library_folders()
    commands = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli") + os.sep
    frame = sys._getframe(1)
    level = 2  # 1 is the line below; 2 the caller of this function
    while frame.f_back is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(commands) or not (filename.startswith(folders) or filename.startswith("<frozen ")):
            break
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
