"""Tools that read pipelines with an `elmo` component: a usage index of a corpus (nearest usages of
a word in context, the paper's Table 4), its pipeline component, and the word-sense probe (Table 5)."""

from .._lazy import lazy_getattr

_NAMES = {
    "UsageIndex": ".index",
    "Usage": ".index",
    "build_usage_index": ".builder",
}
__all__ = list(_NAMES)
__getattr__ = lazy_getattr(__name__, _NAMES)
