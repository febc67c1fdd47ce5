"""Joining the usage indexes that `spacy-elmo index-usages --shard I/N` wrote into the index one
run writes: the parts' chunks in corpus order (sentences, usages and vectors as they are, key
numbers given in order of first use), the word types' counts summed and their token-layer
vectors computed again by the index's biLM over the whole list, as one run computes them. Each
part's files must be those its record's digests name, and each chunk in the shard that owns it."""

from collections import Counter
from pathlib import Path
from typing import Any, Callable, List, Sequence, Tuple

import numpy

from ..errors import InputError
from ..shards import check_owned, check_parts, interleave
from ..types import PathLike
from .index import UsageIndex
from .storage import IndexWriter, check_data

# meta.json entries a part has and the merged index computes anew
_PER_PART = ("shard", "kind", "format", "n_usages", "n_sentences", "n_types", "type_dim", "seconds", "digests")
_ROWS = 1 << 16


def merge_usage_indexes(parts: Sequence[PathLike], output: PathLike, log: Callable[[str], Any] = print) -> UsageIndex:
    """Merge the shards' index folders `parts` into the folder `output` (new, empty or a usage index).

    RETURNS (UsageIndex): the merged index, equal to one built by a single run.
    """
    names = [str(p) for p in parts]
    indexes = [UsageIndex().from_disk(p) for p in parts]
    check_parts([index.meta.get("shard", {}) for index in indexes], names)
    for part, index, name in zip(parts, indexes, names):
        check_data(Path(part), index.meta["shard"].get("files"), name)
    first = indexes[0]
    meta = {k: v for k, v in first.meta.items() if k not in _PER_PART}
    pieces = [_chunk_pieces(index, name) for index, name in zip(indexes, names)]
    types: Counter = Counter()
    for index in indexes:
        types.update(dict(index.types))
    type_list = sorted(types.items(), key=lambda item: (-item[1], item[0]))
    bilm = first._bilm()  # the index's pipeline, checked against its fingerprint
    with IndexWriter(output, meta) as writer:
        for _, (index, (s0, s1, u0, u1)) in interleave(pieces):
            first_sentence = writer.add_sentences(index.sentences[s0:s1])
            for start in range(u0, u1, _ROWS):
                rows = slice(start, min(start + _ROWS, u1))
                columns = {name: numpy.asarray(index.arrays[name][rows]) for name in ("usage_token", "usage_start", "usage_end")}
                columns["usage_sentence"] = numpy.asarray(index.arrays["usage_sentence"][rows]) - s0 + first_sentence
                keys = [index.keys[k] for k in index.arrays["usage_key"][rows]]
                layers = None if index.layers is None else numpy.asarray(index.layers[rows])
                context = None if index.context is None else numpy.asarray(index.context[rows])
                writer.add_usages(numpy.asarray(index.vectors[rows]), columns, keys, layers, context)
        type_vectors = bilm.embed_words([t for t, _ in type_list])
        folder = writer.finish(type_list, type_vectors, seconds=sum(float(index.meta["seconds"]) for index in indexes))
    merged = UsageIndex().from_disk(folder)
    log(f"Merged {len(indexes)} parts: {len(merged):,} usages in {merged.meta['n_sentences']:,} sentences: {folder}")
    return merged


def _chunk_pieces(index: UsageIndex, name: str) -> List[Tuple[int, Tuple[UsageIndex, Tuple[int, int, int, int]]]]:
    """(chunk, (index, (first sentence, end, first usage, end))) for each chunk of a part."""
    chunks: Any = index.meta["shard"].get("chunks")
    out: List[Tuple[int, Tuple[UsageIndex, Tuple[int, int, int, int]]]] = []
    s = u = 0
    try:
        for chunk, n_sentences, n_usages in chunks:
            out.append((int(chunk), (index, (s, s + int(n_sentences), u, u + int(n_usages)))))
            s, u = s + int(n_sentences), u + int(n_usages)
    except (TypeError, ValueError):
        raise InputError(f"{name}/meta.json: its shard record's chunks are damaged: index that shard again") from None
    check_owned(index.meta["shard"], (chunk for chunk, _ in out), name)
    if (s, u) != (len(index.sentences), len(index)):
        raise InputError(f"{name}: its chunks hold {s} sentences and {u} usages, the index {len(index.sentences)} and {len(index)}")
    return out
