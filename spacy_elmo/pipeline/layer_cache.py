"""A bounded cache of Doc layers, for a frozen, stateless biLM whose output depends only on the
Doc's tokens and segmentation (so after the first epoch, training costs little more than without)."""

from collections import OrderedDict
from typing import Optional

import numpy
from spacy.attrs import ORTH, SENT_START
from spacy.tokens import Doc

from ..layers.doc_digest import doc_digest
from .elmo_data import DTYPES


class LayerCache:
    """LRU cache of (L + 1, n_tokens, 2P) arrays keyed by a digest of a Doc's tokens and sentence
    starts, holding at most `max_mb` megabytes, stored as `dtype`.
    """

    def __init__(self, max_mb: float, dtype: str = "float32") -> None:
        if dtype not in DTYPES:
            raise ValueError(f"cache dtype must be one of {DTYPES}, got {dtype!r}")
        self.max_bytes = int(max_mb * 1024 * 1024)
        self.dtype = dtype
        self.n_bytes = 0
        self.hits = 0
        self.misses = 0
        self._store: "OrderedDict[bytes, numpy.ndarray]" = OrderedDict()

    def __len__(self) -> int:
        return len(self._store)

    @staticmethod
    def key(doc: Doc) -> bytes:
        return doc_digest([doc], (ORTH, SENT_START))

    def get(self, key: bytes) -> Optional[numpy.ndarray]:
        """RETURNS (Optional[numpy.ndarray]): the float32 layers, or None."""
        stored = self._store.get(key)
        if stored is None:
            self.misses += 1
            return None
        self.hits += 1
        self._store.move_to_end(key)
        return stored.astype("float32")

    def put(self, key: bytes, layers: numpy.ndarray) -> None:
        if self.max_bytes <= 0 or key in self._store:
            return
        stored = numpy.ascontiguousarray(layers, dtype=self.dtype)
        if stored.nbytes > self.max_bytes:
            return
        self._store[key] = stored
        self.n_bytes += stored.nbytes
        while self.n_bytes > self.max_bytes:
            _, dropped = self._store.popitem(last=False)
            self.n_bytes -= dropped.nbytes

    def clear(self) -> None:
        self._store.clear()
        self.n_bytes = 0
