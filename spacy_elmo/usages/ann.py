"""Approximate search of a usage index with FAISS (the optional extra `[ann]`), for indexes whose
vectors outgrow memory.

`build_ann` adds `ann.faiss` + `ann.json` to an index folder: an inverted file over the unit
vectors (`nlist` k-means lists) whose entries are product-quantized codes (`m` bytes a usage: 32
for 256-wide vectors, a sixteenth of the float16 vectors). A query scans the `nprobe` lists
nearest to it and takes the `refine` best candidates by their codes; their exact cosines are then
computed from `vectors.bin` (memory-mapped, so only those rows are read) and the best `n` of
them returned, scored and ordered exactly as the exact search scores them. Why this type: the
table in docs/results.md ("Approximate search"); benchmarks/usage_index_speed.py --ann measures it.
"""

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import numpy

from ..errors import InputError
from ..output_folders import USAGE_INDEX, FolderLock, is_own, temporary_path, write_atomically
from ..types import PathLike
from .layout import ANN_INDEX, ANN_META, META

DEFAULT_NPROBE = 32
DEFAULT_REFINE = 400
ROWS_PER_ADD = 1 << 16
_AGAIN = "build it again (spacy-elmo index-ann INDEX)"


def faiss_module() -> Any:
    """RETURNS: the faiss module; an InputError naming the extra where it is not installed."""
    try:
        import faiss
    except ImportError:
        raise InputError("approximate search needs FAISS: pip install 'spacy-elmo[ann]' (faiss-cpu)") from None
    return faiss


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


def meta_digest(index_path: Path) -> str:
    """RETURNS (str): the SHA-256 of the index's meta.json: an ANN index belongs to one build."""
    return hashlib.sha256((index_path / META).read_bytes()).hexdigest()


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
    from .index import UsageIndex

    faiss = faiss_module()
    path = Path(index_path)
    index = UsageIndex().from_disk(path, exclude=["ann"])
    n, dim = len(index), int(index.vectors.shape[1])
    lists = lists or default_lists(n)
    code_bytes = code_bytes or default_bytes(dim)
    if dim % code_bytes:
        raise InputError(f"--code-bytes {code_bytes} does not divide the vectors' width {dim}: give a divisor of {dim}")
    if n < 39 * lists:  # FAISS's own minimum of training points per list
        raise InputError(f"{path} holds {n:,} usages, too few for {lists} lists (39 a list): exact search is fast at this size")
    started = time.perf_counter()
    if not is_own(path, USAGE_INDEX):
        raise InputError(f"{path} is not a usage index folder made by spacy-elmo: {_AGAIN}")
    with FolderLock(path, "spacy-elmo index-ann"):
        rng = numpy.random.default_rng(seed)
        size = min(n, train_size or max(64 * lists, 100_000))
        sample = numpy.sort(rng.choice(n, size=size, replace=False))
        quantizer = faiss.IndexFlatIP(dim)
        ann = faiss.IndexIVFPQ(quantizer, dim, lists, code_bytes, 8, faiss.METRIC_INNER_PRODUCT)
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
            "type": f"IVF{lists},PQ{code_bytes}",
            "lists": lists,
            "code_bytes": code_bytes,
            "n_usages": n,
            "dim": dim,
            "index_meta": meta_digest(path),
            "ann_bytes": (path / ANN_INDEX).stat().st_size,
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


class AnnSearch:
    """The approximate search of one usage index folder (read with `load`)."""

    def __init__(self, ann: Any, record: Dict[str, Any]) -> None:
        self.ann, self.record = ann, record
        self.nprobe = int(record.get("nprobe", DEFAULT_NPROBE))
        self.refine = int(record.get("refine", DEFAULT_REFINE))

    @classmethod
    def load(cls, path: Path, n_usages: int, dim: int) -> Optional["AnnSearch"]:
        """RETURNS (Optional[AnnSearch]): the folder's approximate search, None where none was
        built. One that does not belong to this build of the index is an InputError."""
        if not (path / ANN_META).exists():
            return None
        try:
            record = json.loads((path / ANN_META).read_text(encoding="utf8"))
        except (ValueError, UnicodeDecodeError):
            raise InputError(f"{path / ANN_META} is damaged: {_AGAIN}") from None
        if not isinstance(record, dict) or record.get("index_meta") != meta_digest(path):
            raise InputError(f"{path / ANN_META} belongs to another build of the index: {_AGAIN}")
        file = path / ANN_INDEX
        if not file.is_file() or file.stat().st_size != record.get("ann_bytes"):
            raise InputError(f"{file} is missing or not the size {ANN_META} records: {_AGAIN}")
        faiss = faiss_module()
        try:
            ann = faiss.read_index(str(file))
        except RuntimeError:
            raise InputError(f"{file} is damaged (FAISS cannot read it): {_AGAIN}") from None
        if ann.ntotal != n_usages or ann.d != dim:
            raise InputError(f"{file} holds {ann.ntotal} vectors {ann.d} wide, the index {n_usages} x {dim}: {_AGAIN}")
        return cls(ann, record)

    def candidates(self, query: numpy.ndarray, n: int, rows: Optional[numpy.ndarray] = None) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): the rows (among `rows`, or all) whose codes are nearest to the
        unit vector `query`: at least `refine`, and 4 n where that is more."""
        faiss = faiss_module()
        k = max(self.refine, 4 * n)
        params = faiss.SearchParametersIVF(nprobe=self.nprobe)
        if rows is not None:
            params.sel = faiss.IDSelectorBatch(numpy.ascontiguousarray(rows, dtype="int64"))
        _, found = self.ann.search(numpy.ascontiguousarray(query[None], dtype="float32"), k, params=params)
        found = found[0]
        return numpy.sort(found[found >= 0])

    def describe(self) -> Tuple[str, int, int]:
        return str(self.record.get("type")), self.nprobe, self.refine
