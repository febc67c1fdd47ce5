"""Writing a usage index folder: streamed into a scratch folder beside OUTPUT, then moved into
OUTPUT (see `output_folders`: a user's files in OUTPUT stay, meta.json arrives last)."""

import json
import time
from pathlib import Path
from typing import IO, Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy
import srsly

from ..errors import InputError
from ..output_folders import check_claimable, publish_files, remove_own, scratch_folder
from ..digests import bytes_sha256, file_sha256
from ..types import PathLike
from .layout import ARRAYS, CONTEXT, FILES, FORMAT_VERSION, LAYERS, META, TIMINGS, USAGE_INDEX

_HINT = " for the index (a usage index built before is replaced)"


DATA_FILES = ("vectors.bin", "sentences.jsonl", "keys.json", "types.json", "type_vectors.bin", *ARRAYS)


def data_files(folder: Path) -> Tuple[str, ...]:
    """RETURNS (Tuple[str, ...]): the data files of an index folder: DATA_FILES, and layers.bin and context.bin
    where it has them."""
    return (*DATA_FILES, *(name for name in (LAYERS, CONTEXT) if (folder / name).is_file()))


META_DIGEST = "meta_sha256"


def meta_digest(meta: Dict[str, Any]) -> str:
    """RETURNS (str): the SHA-256 of what meta.json says the index holds (its keys sorted; this digest and the
    timings left out, so that merged shards equal the single run's index)."""
    kept = {k: v for k, v in meta.items() if k != META_DIGEST and k not in TIMINGS}
    return bytes_sha256(json.dumps(kept, sort_keys=True).encode("utf8"))


def data_digests(folder: Path) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): the SHA-256 of each data file of an index folder (all but meta.json and the ANN index)."""
    return {name: file_sha256(folder / name) for name in data_files(folder)}


def check_data(folder: Path, digests: Any, name: str) -> None:
    """Raise an InputError naming the first data file of `folder` (a part called `name`) whose bytes are
    not those its record's digests say."""
    if not isinstance(digests, dict) or set(digests) != set(data_files(folder)):
        raise InputError(f"{name}/meta.json: its shard record has no digests of its files: index that shard again")
    for file in data_files(folder):
        if file_sha256(folder / file) != digests[file]:
            raise InputError(f"{name}/{file} is not the file its part was written with (changed or damaged): index that shard again")


class IndexWriter:
    """Append sentences and usages, then `finish`; a context manager that removes its temporary
    folder when the block fails, leaving OUTPUT as it was.

    output (PathLike): the index folder: new, empty, or a usage index.
    meta (Dict[str, Any]): what meta.json records besides the sizes (model, fingerprint,
        layer_weights, match, words, files, load).
    """

    def __init__(self, output: PathLike, meta: Dict[str, Any]) -> None:
        self.output = check_claimable(output, USAGE_INDEX, _HINT)
        self.meta = dict(meta)
        self.tmp, self._lock = scratch_folder(self.output, USAGE_INDEX, "spacy-elmo index-usages")
        self._vectors: IO[bytes] = (self.tmp / "vectors.bin").open("wb")
        self._layers: Optional[IO[bytes]] = (self.tmp / LAYERS).open("wb") if self.meta.get("layers") else None
        self._context: Optional[IO[bytes]] = (self.tmp / CONTEXT).open("wb") if self.meta.get("context") else None
        self._sentences: IO[str] = (self.tmp / "sentences.jsonl").open("w", encoding="utf8")
        self._columns: Dict[str, List[numpy.ndarray]] = {name[:-4]: [] for name in ARRAYS}
        self._key_ids: Dict[str, int] = {}
        self.n_usages = self.n_sentences = 0
        self.dim: Optional[int] = None
        self.chunks: List[List[int]] = []  # [chunk, sentences, usages] of each chunk written (see shards.py)
        self._started = time.perf_counter()

    def __enter__(self) -> "IndexWriter":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        self._close()
        if exc_type is not None and self.tmp.exists():
            remove_own(self.tmp, USAGE_INDEX)

    def _close(self) -> None:
        self._close_files()
        self._lock.release()

    def _close_files(self) -> None:
        for handle in (self._vectors, self._sentences, self._layers, self._context):
            if handle is not None and not handle.closed:
                handle.close()

    def start_chunk(self, chunk: int) -> bool:
        """Count what follows as chunk `chunk`'s (chunks come in order, each once).

        RETURNS (bool): whether `chunk` is new."""
        if self.chunks and self.chunks[-1][0] == chunk:
            return False
        self.chunks.append([chunk, 0, 0])
        return True

    def add_sentences(self, records: Iterable[Dict[str, Any]]) -> int:
        """Append sentences ({"text", "file", "doc"}); RETURNS (int): the number of the first."""
        first = self.n_sentences
        for record in records:
            self._sentences.write(json.dumps(record, ensure_ascii=False) + "\n")
            self.n_sentences += 1
        if self.chunks:
            self.chunks[-1][1] += self.n_sentences - first
        return first

    def add_usages(
        self,
        vectors: numpy.ndarray,
        columns: Dict[str, numpy.ndarray],
        keys: Sequence[str],
        layers: Optional[numpy.ndarray] = None,
        context: Optional[numpy.ndarray] = None,
    ) -> None:
        """Append usages: `vectors` (n, D), `columns` usage_sentence / usage_token / usage_start /
        usage_end (n,) each, `keys` the n key strings; `layers` (n, L + 1, D) every layer, where the
        index keeps them (meta "layers"); `context` (n, L + 1, D) every layer's context-only vectors, where
        the index keeps them (meta "context")."""
        if (layers is None) != (self._layers is None):
            raise ValueError("every layer of each usage goes with an index that keeps them (meta 'layers'), and only there")
        if (context is None) != (self._context is None):
            raise ValueError("the context-only vectors go with an index that keeps them (meta 'context'), and only there")
        with numpy.errstate(over="ignore"):  # an overflow is refused just below
            vectors = numpy.ascontiguousarray(vectors, dtype="float16")
        norms = numpy.linalg.norm(vectors.astype("float32"), axis=1)
        if not (numpy.isfinite(norms) & (norms > 0)).all():
            raise InputError(
                f"{int(numpy.count_nonzero(~(numpy.isfinite(norms) & (norms > 0))))} usage vectors are not finite in float16, or "
                f"zero, with the layer weights {self.meta.get('layer_weights')}: give smaller weights (the cosine does not depend "
                "on their scale); nothing was written"
            )
        if self.dim is None:
            self.dim = int(vectors.shape[1])
        elif vectors.shape[1] != self.dim:
            raise ValueError(f"usage vectors are {vectors.shape[1]} wide, earlier ones {self.dim}")
        self._vectors.write(vectors.tobytes())
        for handle, values, what in ((self._layers, layers, "layers"), (self._context, context, "context-only vectors")):
            if handle is None:
                continue
            with numpy.errstate(over="ignore"):
                stacked = numpy.ascontiguousarray(values, dtype="float16")
            if stacked.shape != (len(vectors), int(self.meta["layers"]), vectors.shape[1]) or not numpy.isfinite(stacked).all():
                raise InputError(f"the {what} of {len(vectors)} usages are not finite in float16, or not {self.meta['layers']} a usage")
            handle.write(stacked.tobytes())
        self._columns["norms"].append(norms.astype("float32"))
        for name in ("usage_sentence", "usage_token", "usage_start", "usage_end"):
            self._columns[name].append(numpy.asarray(columns[name], dtype="int64" if name == "usage_sentence" else "int32"))
        ids = [self._key_ids.setdefault(k, len(self._key_ids)) for k in keys]
        self._columns["usage_key"].append(numpy.asarray(ids, dtype="int32"))
        self.n_usages += len(vectors)
        if self.chunks:
            self.chunks[-1][2] += len(vectors)

    def finish(self, types: Sequence[Tuple[str, int]], type_vectors: numpy.ndarray, seconds: Optional[float] = None) -> Path:
        """Write the tables and meta.json and move the index into OUTPUT.

        types: every word type of the indexed sentences with its count; type_vectors (n_types, P)
        their token-layer vectors; seconds: the time the index took (default: since the writer began).
        RETURNS (Path): the index folder.
        """
        self._vectors.close()
        self._sentences.close()
        for handle in (self._layers, self._context):
            if handle is not None:
                handle.close()
        for name in ARRAYS:
            parts = self._columns[name[:-4]]
            dtype = "float32" if name == "norms.npy" else "int64" if name == "usage_sentence.npy" else "int32"
            numpy.save(self.tmp / name, numpy.concatenate(parts) if parts else numpy.zeros(0, dtype=dtype), allow_pickle=False)
        srsly.write_json(self.tmp / "keys.json", list(self._key_ids))
        srsly.write_json(self.tmp / "types.json", [[t, int(c)] for t, c in types])
        type_vectors = numpy.ascontiguousarray(type_vectors, dtype="float16")
        (self.tmp / "type_vectors.bin").write_bytes(type_vectors.tobytes())
        meta = {
            **self.meta,
            "kind": USAGE_INDEX,
            "format": FORMAT_VERSION,
            "n_usages": self.n_usages,
            "dim": int(self.dim or 0),
            "n_sentences": self.n_sentences,
            "n_types": len(types),
            "type_dim": int(type_vectors.shape[1]) if type_vectors.ndim == 2 else 0,
            "seconds": round(time.perf_counter() - self._started if seconds is None else seconds, 1),
        }
        digests = data_digests(self.tmp)
        meta["digests"] = digests  # what `spacy-elmo verify` checks the files against
        if "shard" in meta:  # a part: its record says what it holds (checked by merge)
            meta["shard"] = {**meta["shard"], "files": digests}
        meta[META_DIGEST] = meta_digest(meta)  # verify tells an edited meta.json (layer weights, biLM, sizes) too
        srsly.write_json(self.tmp / META, meta)
        self._close_files()
        try:
            # the scratch folder stays locked until its files are in OUTPUT: unlocked, another build (in another PID
            # namespace, where this process's id says nothing) could take it for a killed build's and remove it
            return publish_files(self.tmp, self.output, USAGE_INDEX, FILES, META)
        finally:
            self._lock.release()
