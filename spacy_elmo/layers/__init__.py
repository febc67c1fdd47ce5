"""Thinc layers and registered architectures."""
from .bilm_model import bilm_config, build_bilm_model, frozen_layer, get_bilm, wrap_bilm
from .listener import ElmoListener, build_elmo_listener, build_elmo_listener_v2, build_elmo_tok2vec
from .segments import configure_sentences
from .scalar_mix import LayerSelect, ScalarMix, mix_weights

__all__ = [
    "ElmoListener",
    "LayerSelect",
    "ScalarMix",
    "bilm_config",
    "build_bilm_model",
    "build_elmo_listener",
    "build_elmo_listener_v2",
    "configure_sentences",
    "build_elmo_tok2vec",
    "frozen_layer",
    "get_bilm",
    "mix_weights",
    "wrap_bilm",
]
