"""Errors a user can act on: each message names the file or setting, what is wrong and what to do.

The command line prints them as one line (no traceback) and exits with status 1.
"""


class InputError(ValueError):
    """Bad input a user can fix: a missing, damaged or mismatched file, an output folder that is
    not spacy-elmo's own, a setting out of range."""


class ElmoFormatError(InputError):
    """A missing, malformed or mismatched ELMo options or weights file."""
