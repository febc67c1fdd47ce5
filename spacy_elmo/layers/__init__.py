"""Thinc layers and registered architectures."""
from .bilm_model import bilm_config, build_bilm_model, get_bilm, wrap_bilm

__all__ = ["bilm_config", "build_bilm_model", "get_bilm", "wrap_bilm"]
