"""Thinc layers and registered architectures (v1 ones, which still load, in legacy.py)."""

from . import legacy  # noqa: F401 (registers the v1 architectures)
from .bilm_model import bilm_config, build_bilm_model_v2, frozen_layer, get_bilm, wrap_bilm
from .listener import ElmoListener, build_elmo_listener_v2, build_elmo_tok2vec_v2
from .replace_listener import build_elmo_mix_v2
from .segments import configure_sentences
from .scalar_mix import LayerSelect, ScalarMix, mix_weights

__all__ = [
    "ElmoListener",
    "LayerSelect",
    "ScalarMix",
    "bilm_config",
    "build_bilm_model_v2",
    "build_elmo_listener_v2",
    "build_elmo_mix_v2",
    "build_elmo_tok2vec_v2",
    "configure_sentences",
    "frozen_layer",
    "get_bilm",
    "mix_weights",
    "wrap_bilm",
]
