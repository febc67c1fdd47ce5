"""The ELMo biLM in pure PyTorch (no spaCy or Thinc imports).

>>> from spacy_elmo.bilm import load_original
>>> bilm = load_original("options.json", "weights.hdf5")
>>> layers = bilm.embed([["Hello", "world", "!"]])  # [(L + 1, 3, 2P) float32 array]
"""

from .char_ids import CharBatch, sentences_to_char_ids, word_char_ids
from ..errors import ElmoFormatError, InputError
from .model import BiLM
from .char_encoder import DEFAULT_CACHE_SIZE
from .options import RELEASED_FILTERS, ElmoOptions
from .weights import find_weights_file, load_original, read_weights, save_original
from .elmoformanylangs import load_elmoformanylangs
from .folders import BilmFolder, bilm_folder

__all__ = [
    "BiLM",
    "BilmFolder",
    "bilm_folder",
    "load_elmoformanylangs",
    "CharBatch",
    "DEFAULT_CACHE_SIZE",
    "ElmoFormatError",
    "ElmoOptions",
    "InputError",
    "find_weights_file",
    "RELEASED_FILTERS",
    "load_original",
    "read_weights",
    "save_original",
    "sentences_to_char_ids",
    "word_char_ids",
]
