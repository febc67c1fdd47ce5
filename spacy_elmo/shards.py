"""Shards of a corpus: `--shard I/N` on `embed` and `index-usages`, and what `merge` checks.

A corpus's documents are numbered in the order `text_corpus` reads them (files sorted, documents in
each file in order) and cut into chunks of `chunk_docs(--docs-per-batch)` consecutive documents;
chunk k belongs to shard k mod N. The biLM's batches never cross a chunk and each chunk starts with
an empty word cache (in a plain run too: a word's vector may differ in its last bit from one batch
to another), so a shard computes each of its chunks exactly as the single run does, and the N parts, interleaved chunk by chunk, hold the
single run's output bit for bit. Each part carries a shard record (`shard_record`), written
after its data, which `merge` checks: the same settings; the same corpus, by the digest of every
document's text the shard read (every shard reads them all, and skips those of other shards);
every shard once; each chunk in the shard that owns it; and the part's data as it was written
(digests.py: of its datasets or its files).
"""

import json
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .digests import CorpusDigest
from .errors import InputError


MAX_SHARDS = 100_000  # a part per shard: more would be parts of a few documents each, or none
CHUNK_BATCHES = 16  # nlp.pipe batches a chunk: the word cache is emptied that seldom (it saves 15-30% of the small size's time)


def chunk_docs(docs_per_batch: int) -> int:
    """RETURNS (int): the documents of a chunk, for `docs_per_batch` documents an nlp.pipe batch."""
    return CHUNK_BATCHES * max(docs_per_batch, 1)


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count` (0-based): the chunks k with k % count == index."""

    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: Optional[str]) -> "Shard":
        """A shard from "I/N" (0 <= I < N); None or "" is the whole corpus."""
        if not text:
            return cls()
        parts = text.split("/")
        try:
            index, count = (int(p) for p in parts) if len(parts) == 2 else (-1, 0)
        except ValueError:
            index, count = -1, 0
        if count < 1 or not 0 <= index < count:
            raise InputError(f"--shard {text!r}: give I/N with 0 <= I < N, e.g. 0/4 for the first of four shards")
        if count > MAX_SHARDS:
            raise InputError(f"--shard {text!r}: at most {MAX_SHARDS:,} shards (each a part file or folder to merge)")
        return cls(index, count)

    @property
    def whole(self) -> bool:
        return self.count == 1

    def owns(self, chunk: int) -> bool:
        return chunk % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_record(
    shard: Shard, chunk_docs: int, corpus: CorpusDigest, settings: Dict[str, Any], ran: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """The record a part carries: which shard, the chunking, the corpus's document count and the
    digest of its texts, the settings that must match across parts (model fingerprint, layers,
    corpus files, ...) and what ran (`what_ran`). The writer adds the digests of the part's data."""
    return {
        "index": shard.index,
        "count": shard.count,
        "chunk_docs": chunk_docs,
        "n_docs": corpus.n_docs,
        "corpus": corpus.hexdigest(),
        "settings": settings,
        "ran": ran or {},
    }


RAN = ("precision", "threads", "torch", "onednn")


def what_ran(bilms: Sequence[Any]) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): what a part's numbers rest on, as it ran (not as it was asked): the precision each
    biLM ran at ("auto" resolved), torch's threads, torch's and oneDNN's versions. Parts that differ in any of them
    do not add up to one run (`check_parts` refuses them)."""
    import torch

    from .bilm.measured import onednn_version

    return {
        "precision": [str(bilm.precision) for bilm in bilms],
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "onednn": onednn_version(),
    }


def check_owned(record: Dict[str, Any], chunks: Iterable[int], name: str) -> None:
    """Raise an InputError unless every chunk of `chunks` belongs to the record's shard (k mod N == I)."""
    shard = Shard(int(record["index"]), int(record["count"]))
    stray = next((int(k) for k in chunks if not shard.owns(int(k))), None)
    if stray is not None:
        raise InputError(f"{name}: its shard record puts chunk {stray} in shard {shard}, which does not own it: write that part again")


def balance_note(shard: Shard, chunk_size: int, n_docs: int) -> str:
    """RETURNS (str): a note where the corpus has fewer chunks than shards (some shards then hold nothing,
    and the work is not shared evenly), else ""."""
    n_chunks = -(-n_docs // chunk_size)
    if shard.whole or n_chunks >= shard.count:
        return ""
    return (
        f"Note: the corpus's {n_docs:,} documents make {n_chunks:,} chunk{'s' * (n_chunks != 1)} of {chunk_size:,} "
        f"(16 x --docs-per-batch), fewer than the {shard.count} shards: {shard.count - n_chunks} shard(s) hold nothing. "
        "A smaller --docs-per-batch makes smaller chunks"
    )


def read_record(text: Any, name: str) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): a part's shard record from its JSON text (bytes or str); a cut or edited one is an
    InputError naming the part."""
    try:
        record = json.loads(text.decode("utf8") if isinstance(text, bytes) else text)
    except (ValueError, UnicodeDecodeError, AttributeError):
        record = None
    if not isinstance(record, dict):
        raise InputError(f"{name}: its shard record is cut or damaged (not a JSON object): write that part again")
    return record


def check_parts(records: Sequence[Dict[str, Any]], names: Sequence[str]) -> Tuple[int, int]:
    """Raise an InputError, in one line naming what differs, unless `records` (one per part,
    named by `names`) are the N shards of one run, each once.

    RETURNS (Tuple[int, int]): N and the chunk size.
    """
    if not records:
        raise InputError("merge needs at least one part")
    for record, name in zip(records, names):
        if not isinstance(record, dict) or not {"index", "count", "chunk_docs", "n_docs", "settings"} <= set(record):
            raise InputError(f"{name} is not a shard's part (it has no shard record): give the outputs of runs with --shard I/N")
        if "corpus" not in record:
            raise InputError(f"{name} was written by an earlier spacy-elmo (its shard record has no digests): write that part again")
        numbers = [record[k] for k in ("index", "count", "chunk_docs", "n_docs")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in numbers) or not (
            record["index"] < record["count"] and record["chunk_docs"] > 0 and isinstance(record["settings"], dict)
        ):
            raise InputError(
                f"{name}: its shard record is damaged (index, count, chunk size or settings not what a run writes): write that part again"
            )
    first, first_name = records[0], names[0]
    for record, name in zip(records[1:], names[1:]):
        for field in ("count", "chunk_docs", "n_docs"):
            if record[field] != first[field]:
                raise InputError(f"{name} and {first_name} differ in {_field_name(field)}: {record[field]} vs {first[field]}")
        if record["corpus"] != first["corpus"]:
            raise InputError(
                f"{name} and {first_name} read different texts (the corpus changed between their runs?): run every shard on one corpus"
            )
        ran, first_ran = record.get("ran") or {}, first.get("ran") or {}
        for key in RAN:
            if ran.get(key) != first_ran.get(key):
                raise InputError(
                    f"{name} and {first_name} ran with different {key} ({_short(ran.get(key))} vs {_short(first_ran.get(key))}): their "
                    "numbers differ; run every shard with the same --precision and --threads, torch and oneDNN (docs/scale.md)"
                )
        differing = _differing(first["settings"], record["settings"])
        if differing:
            key = differing[0]
            raise InputError(
                f"{name} and {first_name} were made with different {key}: "
                f"{_short(record['settings'].get(key))} vs {_short(first['settings'].get(key))}"
            )
    count = int(first["count"])
    seen: Dict[int, str] = {}
    for record, name in zip(records, names):
        index = int(record["index"])
        if index in seen:
            raise InputError(f"{name} and {seen[index]} are both shard {index}/{count}: give each shard once")
        seen[index] = name
    if len(seen) < count:
        missing = [f"{i}/{count}" for i in _first_missing(seen, count, 4)]
        n_missing = count - len(seen)
        shown = ", ".join(missing[:3]) + (f" and {n_missing - 3:,} more" if n_missing > 3 else "")
        raise InputError(f"shard{'s' * (n_missing > 1)} {shown} missing: give all {count:,} parts")
    return count, int(first["chunk_docs"])


def interleave(parts: Sequence[Iterable[Tuple[int, Any]]]) -> List[Tuple[int, Any]]:
    """(chunk, item) pairs of every part, in chunk order (each part's items are in chunk order,
    and a chunk is in one part only)."""
    import heapq

    return list(heapq.merge(*parts, key=lambda pair: pair[0]))


def _first_missing(seen: Dict[int, str], count: int, n: int) -> List[int]:
    missing: List[int] = []
    for i in range(count):
        if i not in seen:
            missing.append(i)
            if len(missing) == n:
                break
    return missing


def _differing(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    return [key for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]


def _field_name(field: str) -> str:
    return {
        "count": "shard count (N of I/N)",
        "chunk_docs": "documents per chunk (16 x --docs-per-batch)",
        "n_docs": "corpus size (documents)",
    }[field]


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 80 else text[:77] + "..."
