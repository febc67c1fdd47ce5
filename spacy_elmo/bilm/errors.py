"""Errors raised by the biLM."""


class ElmoFormatError(ValueError):
    """A missing, malformed or mismatched ELMo options or weights file."""
