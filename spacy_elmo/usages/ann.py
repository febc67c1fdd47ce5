"""Approximate search of a usage index with FAISS (the optional extra `[ann]`), for indexes whose
vectors outgrow memory.

`build_ann` (ann_build.py) adds `ann.faiss` + `ann.json` to an index folder: an inverted file over the unit
vectors (`nlist` k-means lists) whose entries are product-quantized codes (`m` bytes a usage: 32
for 256-wide vectors, a sixteenth of the float16 vectors). A query scans the `nprobe` lists
nearest to it and takes the `refine` best candidates by their codes; their exact cosines are then
computed from `vectors.bin` (memory-mapped, so only those rows are read) and the best `n` of
them returned, scored and ordered exactly as the exact search scores them. Why this type: the
table in docs/results.md ("Approximate search"); benchmarks/usage_index_speed.py --ann measures it.
"""

import json
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import numpy

from ..digests import bytes_sha256
from ..errors import InputError
from .layout import ANN_INDEX, ANN_META, META, TIMINGS

DEFAULT_NPROBE = 32
DEFAULT_REFINE = 400
BUILD_AGAIN = "build it again (spacy-elmo index-ann INDEX)"


def faiss_module() -> Any:
    """RETURNS: the faiss module; an InputError naming the extra where it is not installed."""
    try:
        import faiss
    except ImportError:
        raise InputError("approximate search needs FAISS: pip install 'spacy-elmo[ann]' (faiss-cpu)") from None
    return faiss


def meta_digest(index_path: Path) -> str:
    """RETURNS (str): the SHA-256 of what the index's meta.json says it holds (its timings left out, so
    that a merged index and the single run's are one build): an ANN index belongs to one build."""
    meta = json.loads((index_path / META).read_text(encoding="utf8"))
    held = {k: v for k, v in meta.items() if k not in TIMINGS} if isinstance(meta, dict) else meta
    return bytes_sha256(json.dumps(held, sort_keys=True, ensure_ascii=False).encode("utf8"))


def _raw_meta_digest(index_path: Path) -> str:
    """The digest ann.json held before timings were left out (an ANN index built by an earlier spacy-elmo)."""
    return bytes_sha256((index_path / META).read_bytes())


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
            raise InputError(f"{path / ANN_META} is damaged: {BUILD_AGAIN}") from None
        if not isinstance(record, dict) or record.get("index_meta") not in (meta_digest(path), _raw_meta_digest(path)):
            raise InputError(f"{path / ANN_META} belongs to another build of the index: {BUILD_AGAIN}")
        file = path / ANN_INDEX
        if not file.is_file() or file.stat().st_size != record.get("ann_bytes"):
            raise InputError(f"{file} is missing or not the size {ANN_META} records: {BUILD_AGAIN}")
        data = file.read_bytes()
        if "ann_sha256" in record and bytes_sha256(data) != record["ann_sha256"]:
            raise InputError(f"{file} is not the file {ANN_META} records (changed or damaged): {BUILD_AGAIN}")
        faiss = faiss_module()
        try:
            ann = faiss.deserialize_index(numpy.frombuffer(data, dtype="uint8"))
        except RuntimeError:
            raise InputError(f"{file} is damaged (FAISS cannot read it): {BUILD_AGAIN}") from None
        if ann.ntotal != n_usages or ann.d != dim:
            raise InputError(f"{file} holds {ann.ntotal} vectors {ann.d} wide, the index {n_usages} x {dim}: {BUILD_AGAIN}")
        record = {**record, "path": str(file)}
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
        found = found[found >= 0]
        if len(found) and int(found.max()) >= self.ann.ntotal:  # ids that name no usage: a file rewritten by hand
            raise InputError(f"{self.record.get('path', ANN_INDEX)} names usages the index does not have (damaged): {BUILD_AGAIN}")
        return numpy.sort(found)

    def describe(self) -> Tuple[str, int, int]:
        return str(self.record.get("type")), self.nprobe, self.refine
