"""spaCy behaviour: the `elmo` component and the ElmoData it stores on each Doc."""

from .._lazy import lazy_getattr

_NAMES = {
    "Elmo": ".component",
    "add_elmo": ".component",
    "make_elmo": ".component",
    "ElmoData": ".elmo_data",
}
__all__ = list(_NAMES)
__getattr__ = lazy_getattr(__name__, _NAMES)
