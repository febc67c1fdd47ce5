"""What a digest covers, for the records that prove what a file holds: the texts a run read, the
arrays a part wrote, a file's bytes. All SHA-256."""

import hashlib
from pathlib import Path

import numpy


class CorpusDigest:
    """The SHA-256 of the texts a run reads, each as it comes (documents of every shard: a shard
    reads them all), and their count: two shards of one corpus read the same."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.n_docs = 0

    def add(self, text: str, new_doc: bool = True) -> None:
        data = text.encode("utf8", "surrogatepass")
        self._sha.update(b"D" if new_doc else b"+")
        self._sha.update(len(data).to_bytes(8, "little") + data)
        self.n_docs += new_doc

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


class DataDigest:
    """The SHA-256 of a part's arrays in the order written: each one's number, type, shape and bytes."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()

    def add(self, number: int, array: numpy.ndarray) -> None:
        array = numpy.ascontiguousarray(array)
        self._sha.update(f"{number}:{array.dtype.str}:{array.shape};".encode())
        self._sha.update(array.data if array.flags.c_contiguous and array.size else array.tobytes())  # no copy where it can

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def bytes_sha256(data: bytes) -> str:
    """RETURNS (str): the SHA-256 of bytes already in memory (a file read whole anyway)."""
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """RETURNS (str): the SHA-256 of a file's bytes, read a megabyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
