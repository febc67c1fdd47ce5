"""Building the approximate search of a usage index (see ann.py): `spacy-elmo index-ann`,
`index-usages --ann`."""

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict

import numpy

from ..errors import InputError
from ..output_folders import USAGE_INDEX, FolderLock, is_own, temporary_path, write_atomically
from ..digests import file_sha256
from ..types import PathLike
from .ann import BUILD_AGAIN, DEFAULT_NPROBE, DEFAULT_REFINE, faiss_module, meta_digest
from .index import UsageIndex
from .layout import ANN_INDEX, ANN_META

ROWS_PER_ADD = 1 << 16  # usages added to the FAISS index at a time (as float32)
MIN_USAGES = 1000  # below, an approximate search has too little to learn its codes from (and exact search is instant)
POINTS_PER_CENTROID = 39  # FAISS's k-means asks for this many training points a centroid (and warns below)


def default_lists(n_usages: int) -> int:
    """RETURNS (int): the inverted lists for `n_usages`: a power of two near 2 sqrt(n), at most
    65,536 and at most n / 64 (training points a list)."""
    lists = int(min(2 ** round(numpy.log2(2 * max(n_usages, 1) ** 0.5)), 65536))
    while lists > 1 and 64 * lists > n_usages:
        lists //= 2
    return lists


def default_bytes(dim: int) -> int:
    """RETURNS (int): the product quantizer's bytes per usage: dim / 8, a divisor of dim, 8 to 128."""
    m = min(max(dim // 8, 8), 128)
    while dim % m:
        m -= 1
    return m


def default_bits(train_size: int) -> int:
    """RETURNS (int): bits of each product-quantizer code: 8 (256 centroids) where the training usages allow
    39 a centroid, fewer (at least 4) for a smaller index."""
    return int(min(8, max(4, numpy.floor(numpy.log2(max(train_size, 1) / POINTS_PER_CENTROID)))))


def build_ann(
    index_path: PathLike,
    *,
    lists: int = 0,
    code_bytes: int = 0,
    train_size: int = 0,
    seed: int = 0,
    log: Callable[[str], Any] = print,
) -> Dict[str, Any]:
    """Build the approximate search of the usage index at `index_path` (replacing one built before).

    lists (int): inverted lists (0: `default_lists`); code_bytes (int): PQ bytes per usage (0:
        `default_bytes`); train_size (int): usages the lists and codes are trained on (0: 64 per
        list, at least 100,000 or all).
    RETURNS (Dict[str, Any]): what ann.json records.
    """
    faiss = faiss_module()
    path = Path(index_path)
    index = UsageIndex().from_disk(path, exclude=["ann"])
    n, dim = len(index), int(index.vectors.shape[1])
    lists = lists or default_lists(n)
    code_bytes = code_bytes or default_bytes(dim)
    if dim % code_bytes:
        raise InputError(f"--code-bytes {code_bytes} does not divide the vectors' width {dim}: give a divisor of {dim}")
    if n < MIN_USAGES:
        raise InputError(
            f"{path} holds {n:,} usages: an approximate search needs at least {MIN_USAGES:,} (and an index this small is "
            "searched exactly, fast)"
        )
    if n < POINTS_PER_CENTROID * lists:  # FAISS's own minimum of training points per list
        raise InputError(f"{path} holds {n:,} usages, too few for {lists} lists (39 a list): exact search is fast at this size")
    size = min(n, train_size or max(64 * lists, 100_000))
    if size < POINTS_PER_CENTROID * lists or size < 16 * POINTS_PER_CENTROID:
        raise InputError(
            f"--train-size {size:,} is too few for {lists} lists (39 training usages a list, and at least {16 * POINTS_PER_CENTROID}): "
            "give more, or 0"
        )
    bits = default_bits(size)
    started = time.perf_counter()
    if not is_own(path, USAGE_INDEX):
        raise InputError(f"{path} is not a usage index folder made by spacy-elmo: {BUILD_AGAIN}")
    with FolderLock(path, "spacy-elmo index-ann"):
        rng = numpy.random.default_rng(seed)
        sample = numpy.sort(rng.choice(n, size=size, replace=False))
        quantizer = faiss.IndexFlatIP(dim)
        ann = faiss.IndexIVFPQ(quantizer, dim, lists, code_bytes, bits, faiss.METRIC_INNER_PRODUCT)
        ann.train(_unit_rows(index, sample))
        for start in range(0, n, ROWS_PER_ADD):
            ann.add(_unit_rows(index, numpy.arange(start, min(start + ROWS_PER_ADD, n))))
        tmp = temporary_path(path / ANN_INDEX)
        try:
            faiss.write_index(ann, str(tmp))
            os.replace(tmp, path / ANN_INDEX)
        finally:
            tmp.unlink(missing_ok=True)
        record = {
            "type": f"IVF{lists},PQ{code_bytes}" + (f"x{bits}" if bits != 8 else ""),
            "lists": lists,
            "code_bytes": code_bytes,
            "bits": bits,
            "n_usages": n,
            "dim": dim,
            "index_meta": meta_digest(path),
            "ann_bytes": (path / ANN_INDEX).stat().st_size,
            "ann_sha256": file_sha256(path / ANN_INDEX),
            "train_size": size,
            "nprobe": DEFAULT_NPROBE,
            "refine": DEFAULT_REFINE,
            "seconds": round(time.perf_counter() - started, 1),
        }
        write_atomically(path / ANN_META, json.dumps(record, indent=2))
    log(f"Built the approximate search of {path} ({record['type']}, {n:,} usages) in {record['seconds']:.0f}s: {path / ANN_INDEX}")
    return record


def _unit_rows(index: Any, rows: numpy.ndarray) -> numpy.ndarray:
    block = numpy.asarray(index.vectors[rows], dtype="float32")
    return numpy.ascontiguousarray(block / numpy.maximum(numpy.linalg.norm(block, axis=1, keepdims=True), 1e-12))
