"""One digest of Docs' tokens: what identifies a batch for the listeners and a Doc's layers in
the component's cache."""

import hashlib
from typing import Sequence

from spacy.attrs import ORTH
from spacy.tokens import Doc


def doc_digest(docs: Sequence[Doc], attrs: Sequence[int] = (ORTH,)) -> bytes:
    """A 16-byte digest of every token of every Doc, in order: each Doc's length and its `attrs`
    (sums of ids would collide: spaCy #7885).

    docs (Sequence[Doc]): the Docs.
    attrs (Sequence[int]): token attributes to include, e.g. (ORTH, SENT_START).
    RETURNS (bytes): the digest.
    """
    digest = hashlib.blake2b(digest_size=16)
    for doc in docs:
        digest.update(len(doc).to_bytes(8, "little"))
        digest.update(doc.to_array(list(attrs)).tobytes())
    return digest.digest()
