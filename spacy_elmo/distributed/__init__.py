"""Running past one machine: the parts of a sharded run joined (`merge`), and the shards run on a
Ray cluster (`embed --ray`, `index-usages --ray`, and `ElmoBatchEmbedder` for Ray Data)."""

from .._lazy import lazy_getattr

_NAMES = {
    "merge_parts": ".merge",
    "run_embed": ".ray_jobs",
    "run_index_usages": ".ray_jobs",
    "ElmoBatchEmbedder": ".ray_data",
}
__all__ = list(_NAMES)
__getattr__ = lazy_getattr(__name__, _NAMES)
