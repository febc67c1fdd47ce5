"""spacy-elmo: ELMo (Peters et al. 2018) for spaCy v3.

The biLM itself (`spacy_elmo.bilm`) needs only PyTorch; names load on first use so that the
light modules (the msgpack hooks) import neither torch nor spaCy.
"""

from ._lazy import lazy_getattr
from .about import __version__

_NAMES = {
    "BiLM": ".bilm",
    "ElmoFormatError": ".bilm",
    "ElmoOptions": ".bilm",
    "load_original": ".bilm",
    "save_original": ".bilm",
    "Elmo": ".pipeline.component",
    "add_elmo": ".pipeline.component",
    "ElmoData": ".pipeline.elmo_data",
    "bilm_config": ".layers.bilm_model",
    "InputError": ".errors",
    "UsageIndex": ".usages.index",
    "build_usage_index": ".usages.builder",
}
__all__ = ["__version__", *_NAMES]
__getattr__ = lazy_getattr(__name__, _NAMES)
