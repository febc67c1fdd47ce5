"""A biLM's identity: the digest of its weights."""

import hashlib
from typing import Any


def bilm_fingerprint(bilm: Any) -> str:
    """RETURNS (str): a SHA-256 of the biLM's weights (names, shapes, values): equal for the same
    biLM loaded from the original files or from a saved pipeline, different after fine-tuning."""
    digest = hashlib.sha256()
    for name, tensor in sorted(bilm.state_dict().items()):
        array = tensor.detach().float().cpu().contiguous().numpy()
        digest.update(f"{name}:{tuple(array.shape)};".encode("utf8"))
        digest.update(array.tobytes())
    return digest.hexdigest()
