"""The package's errors, in one place: each is a user's to act on, and its message names the file
or setting, what is wrong and what to do. The command line prints them as one line (no traceback)
and exits with status 1."""


class InputError(ValueError):
    """Bad input a user can fix: a missing, damaged or mismatched file, an output folder that is
    not spacy-elmo's own, a setting out of range."""


class ElmoFormatError(InputError):
    """A missing, malformed or mismatched biLM file (options.json, weights.hdf5, an
    ELMoForManyLangs folder)."""


class OutputFolderError(InputError):
    """An output folder that is not this tool's to write, or is in use."""


class CorpusError(InputError):
    """A corpus file that cannot be read as text: not UTF-8, a damaged archive, a bad record."""
