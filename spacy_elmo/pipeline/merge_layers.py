"""Joining the parts that `spacy-elmo embed --shard I/N` wrote into the file one run writes.

HDF5: the datasets of every part, in the order of their numbers, and "sentence_to_index" built
over all texts in that order (each text -> its last occurrence), as one run builds it. DocBin:
the parts' Docs in corpus order. The parts' shard records must agree (see shards.py), and each
part must hold what its record says: the digest of its datasets (checked as they are copied) or
of its DocBin. OUTPUT appears only when every check passed.
"""

import os
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from ..errors import InputError
from ..output_folders import publish_file, temporary_path
from ..digests import DataDigest, bytes_sha256
from ..shards import Shard, check_owned, check_parts, interleave, read_record
from .export import HDF5Writer, shard_sidecar


def merge_layer_parts(parts: Sequence[Path], output: Path, virtual: bool = False, overwrite: bool = True) -> Tuple[int, int]:
    """Write the parts' layers (all .hdf5 or all .spacy) to `output` as one run would have.

    virtual (bool): HDF5 only: datasets that refer to the parts' own (HDF5 virtual datasets) instead
        of copies, in a time that grows with the datasets, not their bytes; the parts must then stay where they are, and
        their data is not read, so not checked against their digests (their records are).
    RETURNS (Tuple[int, int]): documents and tokens written.
    """
    suffixes = {p.suffix for p in parts}
    if len(suffixes) != 1 or output.suffix not in suffixes or output.suffix not in (".hdf5", ".spacy"):
        raise InputError(f"merge joins .hdf5 parts into a .hdf5 file, or .spacy parts into a .spacy file: got {', '.join(map(str, parts))}")
    if virtual and output.suffix != ".hdf5":
        raise InputError("--virtual refers to the parts' HDF5 datasets: it merges .hdf5 parts only")
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(output)
    try:
        counts = _merge_hdf5(parts, tmp, virtual) if output.suffix == ".hdf5" else _merge_docbins(parts, tmp)
        publish_file(tmp, output, overwrite)  # without overwrite: never over a file that appeared meanwhile
    finally:
        tmp.unlink(missing_ok=True)
    return counts


def _merge_hdf5(parts: Sequence[Path], path: Path, virtual: bool = False) -> Tuple[int, int]:
    import h5py

    files = []
    try:
        for part in parts:
            try:
                files.append(h5py.File(part, "r"))
            except OSError as err:
                raise InputError(f"{part}: not a readable HDF5 file ({err}): write that part again") from None
        records = [_hdf5_record(f, part) for f, part in zip(files, parts)]
        count, chunk_docs = check_parts(records, [str(p) for p in parts])
        for record, part in zip(records, parts):
            check_owned(record, (number // chunk_docs for number, _ in record["texts"]), str(part))
        keyed = [[(number, (text, k)) for number, text in record["texts"]] for k, record in enumerate(records)]
        items = interleave(keyed)
        _check_numbers([number for number, _ in items], records[0]["n_docs"], parts)
        digests = [DataDigest() for _ in parts]
        n_tokens = 0
        # a virtual dataset names its source relative to the merged file's folder: HDF5 looks there first
        sources = [os.path.relpath(part.resolve(), path.resolve().parent) for part in parts]
        with HDF5Writer(path) as writer:
            if virtual:
                writer.sources = [
                    {"path": source, "size": part.stat().st_size, "shard": f"{r['index']}/{r['count']}", "data": r.get("data")}
                    for source, part, r in zip(sources, parts, records)
                ]
            for number, (text, k) in items:
                if str(number) not in files[k]:
                    raise InputError(f"{parts[k]} has no dataset {number}, which its shard record says it holds: write that part again")
                if virtual:
                    source = files[k][str(number)]
                    writer.add_reference(number, text, sources[k], source.shape, source.dtype)
                    shape = source.shape
                else:
                    data = files[k][str(number)][()]
                    digests[k].add(number, data)
                    writer.add(number, text, data)
                    shape = data.shape
                n_tokens += int(shape[-2]) if len(shape) >= 2 else 0
        if virtual:
            return len(items), n_tokens
        for digest, record, part in zip(digests, records, parts):
            if digest.hexdigest() != record.get("data"):
                raise InputError(
                    f"{part}: its datasets are not those its shard record was written with (changed or damaged): write that part again"
                )
        return len(items), n_tokens
    finally:
        for f in files:
            f.close()


def _hdf5_record(f: Any, part: Path) -> Dict[str, Any]:
    if "shard" not in f:
        raise InputError(f"{part} is not a shard's part (no 'shard' dataset): give the outputs of spacy-elmo embed --shard I/N")
    try:
        raw = f["shard"][0]
    except (IndexError, ValueError, TypeError, OSError):
        raw = None
    return read_record(raw, str(part))


def _merge_docbins(parts: Sequence[Path], path: Path) -> Tuple[int, int]:
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    records = []
    for part in parts:
        sidecar = shard_sidecar(part)
        if not sidecar.is_file():
            raise InputError(f"{part} is not a shard's part ({sidecar.name} is missing beside it): give the outputs of embed --shard I/N")
        records.append(read_record(sidecar.read_bytes(), str(sidecar)))
    count, chunk_docs = check_parts(records, [str(p) for p in parts])
    vocab = Vocab()
    keyed = []
    for part, record in zip(parts, records):
        data = part.read_bytes()
        if bytes_sha256(data) != record.get("docbin"):
            raise InputError(
                f"{part} is not the DocBin its record {shard_sidecar(part).name} was written with (changed, damaged, or the records "
                "of two parts swapped): write that part again"
            )
        docs = list(DocBin().from_bytes(data).get_docs(vocab))
        numbers = _owned_numbers(record)
        if len(numbers) != len(docs):
            raise InputError(f"{part} holds {len(docs)} documents, its shard record {len(numbers)}: write that part again")
        keyed.append(list(zip(numbers, docs)))
    items = interleave(keyed)
    _check_numbers([number for number, _ in items], records[0]["n_docs"], parts)
    merged = DocBin(store_user_data=True)
    for _, doc in items:
        merged.add(doc)
    path.write_bytes(merged.to_bytes())
    return len(items), sum(len(doc) for _, doc in items)


def _owned_numbers(record: Dict[str, Any]) -> List[int]:
    """The numbers of the documents of a shard, in order."""
    shard, chunk = Shard(int(record["index"]), int(record["count"])), int(record["chunk_docs"])
    return [n for n in range(int(record["n_docs"])) if shard.owns(n // chunk)]


def _check_numbers(numbers: List[int], n_docs: int, parts: Sequence[Path]) -> None:
    if numbers != list(range(n_docs)):
        raise InputError(f"the parts {', '.join(map(str, parts))} do not hold documents 0 to {n_docs - 1} once each: write them again")
