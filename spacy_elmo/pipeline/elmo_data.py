"""ElmoData: the per-layer ELMo vectors of one Doc, stored as `doc._.elmo`; the Doc and Token
extensions that hold it, and its msgpack hooks.

This module imports neither spaCy nor torch at import time: srsly loads its msgpack hooks through
entry points whenever anything is (de)serialized, spaCy's own import included.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

import numpy

_MSGPACK_KEY = "__spacy_elmo_data__"
DTYPES = ("float32", "float16")


@dataclass
class ElmoData:
    """The biLM layers of a Doc.

    layers (numpy.ndarray): (L + 1, n_tokens, 2P): layer 0 is the context-free token layer
        (duplicated to 2P), layer j the j-th biLSTM layer, [forward; backward].
    vector_weights (Optional[numpy.ndarray]): (L + 1,) the weights of the layers in token.vector
        when the component sets ELMo vectors (its `vectors` setting), kept with the data so that
        the vector hooks can be set again on a Doc rebuilt from bytes.
    """

    layers: numpy.ndarray
    vector_weights: Optional[numpy.ndarray] = None

    def __post_init__(self) -> None:
        if not isinstance(self.layers, numpy.ndarray) or self.layers.ndim != 3:
            shape = getattr(self.layers, "shape", None)
            raise ValueError(f"ElmoData.layers must be a 3d numpy array (L + 1, n_tokens, 2P), got {shape}")
        if self.layers.dtype.name not in DTYPES:
            raise ValueError(f"ElmoData.layers must be float32 or float16, got {self.layers.dtype}")

    @property
    def n_output_layers(self) -> int:
        """RETURNS (int): L + 1."""
        return int(self.layers.shape[0])

    @property
    def n_tokens(self) -> int:
        return int(self.layers.shape[1])

    @property
    def width(self) -> int:
        """RETURNS (int): 2P, the width of each layer."""
        return int(self.layers.shape[2])

    def to_dict(self) -> Dict[str, Any]:
        data = {"layers": self.layers}
        if self.vector_weights is not None:
            data["vector_weights"] = self.vector_weights
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ElmoData":
        weights = data.get("vector_weights")
        return cls(
            layers=numpy.asarray(data["layers"]), vector_weights=None if weights is None else numpy.asarray(weights, dtype="float32")
        )


def encode_elmo_data(obj: Any, chain: Optional[Callable[[Any], Any]] = None) -> Any:
    """srsly msgpack encoder (registered by entry point) so DocBin can write ElmoData."""
    if isinstance(obj, ElmoData):
        return {_MSGPACK_KEY: obj.to_dict()}
    return obj if chain is None else chain(obj)


def decode_elmo_data(obj: Any, chain: Optional[Callable[[Any], Any]] = None) -> Any:
    """srsly msgpack decoder (registered by entry point) so DocBin can read ElmoData."""
    if isinstance(obj, dict) and _MSGPACK_KEY in obj:
        # Docs are being read (a DocBin's user data): their `doc._.elmo` must be readable in a
        # process that never created an elmo component.
        register_extensions()
        return ElmoData.from_dict(obj[_MSGPACK_KEY])
    return obj if chain is None else chain(obj)


def _token_elmo(token: Any) -> Optional[numpy.ndarray]:
    data = token.doc._.elmo
    return None if data is None else data.layers[:, token.i]


def register_extensions() -> None:
    """Add `doc._.elmo` (ElmoData) and `token._.elmo` (an (L + 1, 2P) view) unless present,
    and the msgpack hooks (also registered by entry point, for processes that never import us).
    """
    import srsly
    from spacy.tokens import Doc, Token

    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", default=None)
    if not Token.has_extension("elmo"):
        Token.set_extension("elmo", getter=_token_elmo)
    srsly.msgpack_encoders.register("spacy-elmo.ElmoData", func=encode_elmo_data)
    srsly.msgpack_decoders.register("spacy-elmo.ElmoData", func=decode_elmo_data)
