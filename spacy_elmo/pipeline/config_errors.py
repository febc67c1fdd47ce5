"""Errors of a training config that `spacy train` says in one line: spaCy prints a ConfigValidationError raised while
it builds or initializes the pipeline as its title, without a traceback."""

from typing import Any, Optional

from confection import ConfigValidationError

from ..errors import InputError


class InitializeError(InputError, ConfigValidationError):
    """A biLM that cannot be loaded at `initialize`: an InputError to Python, and to `spacy train` an error of the
    training config, which it says in one line (its title), without a traceback."""

    def __init__(
        self,
        config: Any = None,
        errors: Any = tuple(),
        title: Optional[str] = None,
        desc: Optional[str] = None,
        parent: Optional[str] = None,
        show_config: bool = False,
    ) -> None:
        ConfigValidationError.__init__(self, config=config, errors=errors, title=title, desc=desc, parent=parent, show_config=show_config)

    def __str__(self) -> str:
        return str(self.title or "")
