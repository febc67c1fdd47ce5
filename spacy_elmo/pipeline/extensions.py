"""The Doc and Token extensions set by the `elmo` component."""
from typing import Optional

import numpy
import srsly
from spacy.tokens import Doc, Token

from .elmo_data import decode_elmo_data, encode_elmo_data


def _token_elmo(token: Token) -> Optional[numpy.ndarray]:
    data = token.doc._.elmo
    return None if data is None else data.layers[:, token.i]


def register_extensions() -> None:
    """Add `doc._.elmo` (ElmoData) and `token._.elmo` (an (L + 1, 2P) view) unless present,
    and the msgpack hooks (also registered by entry point, for processes that never import us).
    """
    if not Doc.has_extension("elmo"):
        Doc.set_extension("elmo", default=None)
    if not Token.has_extension("elmo"):
        Token.set_extension("elmo", getter=_token_elmo)
    srsly.msgpack_encoders.register("spacy-elmo.ElmoData", func=encode_elmo_data)
    srsly.msgpack_decoders.register("spacy-elmo.ElmoData", func=decode_elmo_data)
