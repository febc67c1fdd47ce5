"""`spacy-elmo verify`: check an output against the digests it carries: a usage index (each data file's SHA-256 in
its meta.json), an HDF5 file of `embed` or `merge` (the SHA-256 of its datasets; a part's shard record), a virtual
merge (each source file where the merged file's folder says, its size, and its datasets against its record) and a
DocBin part (its record's SHA-256); a whole DocBin, which has no digest, is read and its layers checked.

The digests are SHA-256 without a key: they tell a damaged, truncated, replaced or moved file from the one written,
not a file someone changed on purpose and then recomputed the digests of (docs/safety.md).
"""

import json
from pathlib import Path
from typing import Any, Callable, List

from .digests import DataDigest, bytes_sha256, file_sha256
from .errors import InputError
from .types import PathLike


class PartlyChecked(InputError):
    """What was checked matches, and part of the output could not be checked (its digest is missing): said in one
    line, not a pass (a command's exit status is then 1)."""


def verify(path: PathLike, log: Callable[[str], Any] = print) -> str:
    """Check `path` against its digests; raise an InputError naming the first thing that differs, or a PartlyChecked
    naming what matched and what carries no digest to check it against.

    RETURNS (str): what was checked, in one line.
    """
    path = Path(path)
    if path.is_dir():
        return _verify_index(path)
    if not path.is_file():
        raise InputError(f"{path} does not exist: give a usage index folder, an .hdf5 file or a .spacy part")
    if path.suffix == ".hdf5":
        return _verify_hdf5(path, log)
    if path.suffix == ".spacy":
        return _verify_docbin(path)
    raise InputError(f"{path}: verify checks a usage index folder, an .hdf5 file of embed or merge, or a .spacy part")


def _verify_index(folder: Path) -> str:
    from .usages.layout import META
    from .usages.storage import META_DIGEST, data_files, meta_digest

    meta_path = folder / META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf8"))
    except (OSError, ValueError, UnicodeDecodeError):
        raise InputError(f"{folder} is not a usage index (no readable {META})") from None
    digests = meta.get("digests") if isinstance(meta, dict) else None
    from .output_folders import USAGE_INDEX, is_own

    if not isinstance(digests, dict) and not is_own(folder, USAGE_INDEX):
        raise InputError(
            f"{folder} is not a usage index (a spaCy pipeline, or another folder): verify checks a usage index folder, an "
            ".hdf5 file of embed or merge, or a .spacy part; a pipeline carries no digests to check it against"
        )
    if not isinstance(digests, dict):
        raise InputError(f"{folder} carries no digests (built before they were written): nothing to check it against; build it again")
    if META_DIGEST in meta and meta[META_DIGEST] != meta_digest(meta):
        raise InputError(f"{meta_path} is not what the index was written with (edited or damaged): build the index again")
    expected = set(data_files(folder))
    if set(digests) != expected:
        missing = sorted(expected ^ set(digests))
        raise InputError(f"{folder}: its files ({', '.join(missing)}) are not those its digests name: build it again")
    for name in sorted(expected):
        if not (folder / name).is_file() or file_sha256(folder / name) != digests[name]:
            raise InputError(f"{folder / name} is not the file the index was written with (changed or damaged): build it again")
    if META_DIGEST not in meta:
        raise PartlyChecked(
            f"{folder}: the {len(expected)} data files of the usage index match their digests, but its meta.json could not be "
            f"checked: it carries no {META_DIGEST} (written before one was, or removed). Build the index again to have it checked"
        )
    return f"{folder}: its meta.json and the {len(expected)} data files of the usage index match their digests"


def _datasets_digest(f: Any, numbers: List[int]) -> str:
    digest = DataDigest()
    for number in numbers:
        digest.add(number, f[str(number)][()])
    return digest.hexdigest()


def _numbers(f: Any) -> List[int]:
    return sorted(int(name) for name in f.keys() if name.isdigit())


def _json(f: Any, name: str, path: Path) -> Any:
    """A JSON record of the file: a dataset (a part's "shard") or an attribute (the digest, a virtual merge's sources)."""
    try:
        raw = f.attrs[name] if name in f.attrs else f[name][0]
        return json.loads(raw.decode("utf8") if isinstance(raw, bytes) else raw)
    except (KeyError, IndexError, ValueError, TypeError):
        raise InputError(f"{path}: its {name!r} record is missing or damaged") from None


def _verify_hdf5(path: Path, log: Callable[[str], Any]) -> str:
    import h5py

    from .pipeline.export import DIGEST_ATTRIBUTE, SOURCES_ATTRIBUTE

    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise InputError(f"{path}: not a readable HDF5 file ({err})") from None
    with f:
        if SOURCES_ATTRIBUTE in f.attrs:
            return _verify_virtual(path, f, _json(f, SOURCES_ATTRIBUTE, path)) + _verify_sentence_index(path, f)
        numbers = _numbers(f)
        if "shard" in f:
            record = _json(f, "shard", path)
            expected, what = record.get("data"), "its shard record"
            numbers = [int(n) for n, _ in record.get("texts", [])]
        elif DIGEST_ATTRIBUTE in f.attrs:
            expected, what = _json(f, DIGEST_ATTRIBUTE, path).get("data"), "its digest"
        else:
            raise InputError(f"{path} carries no digest (written before they were, or not by spacy-elmo): nothing to check it against")
        if any(str(n) not in f for n in numbers) or _datasets_digest(f, numbers) != expected:
            raise InputError(f"{path}: its datasets are not those {what} names (changed, damaged or cut): write it again")
        index = _verify_sentence_index(path, f)
    return f"{path}: its {len(numbers):,} datasets match {what}{index}"


def _verify_sentence_index(path: Path, f: Any) -> str:
    """Check "sentence_to_index" (what maps a text to its layers) against its digest, and that it names datasets of
    the file. RETURNS (str): what the line says of it."""
    from .pipeline.export import INDEX_DIGEST_ATTRIBUTE, index_digest

    if "sentence_to_index" not in f:
        raise InputError(f"{path} has no 'sentence_to_index' (cut before it was written, or not an embed file): write it again")
    try:
        raw = f["sentence_to_index"][0]
        text = raw.decode("utf8") if isinstance(raw, bytes) else str(raw)
        mapping = json.loads(text)
    except (IndexError, ValueError, TypeError, UnicodeDecodeError):
        raise InputError(f"{path}: its 'sentence_to_index' is damaged (not JSON): write it again") from None
    if not isinstance(mapping, dict) or not all(isinstance(v, str) and v.isdigit() and v in f for v in mapping.values()):
        raise InputError(f"{path}: its 'sentence_to_index' names datasets the file does not hold: write it again")
    if INDEX_DIGEST_ATTRIBUTE not in f.attrs:
        raise PartlyChecked(
            f"{path}: its datasets match their digest, but its 'sentence_to_index' ({len(mapping):,} texts) could not be "
            "checked beyond its form: it carries no digest (written before one was, or removed), so a text may be attached "
            "to another's layers unseen. Write it again to have it checked"
        )
    if index_digest(text) != f.attrs[INDEX_DIGEST_ATTRIBUTE]:
        raise InputError(
            f"{path}: its 'sentence_to_index' is not the one written (edited or damaged): a reader would attach one text's layers "
            "to another; write it again"
        )
    return f"; its sentence_to_index ({len(mapping):,} texts) matches its digest"


def _verify_virtual(path: Path, f: Any, sources: Any) -> str:
    import h5py

    if not isinstance(sources, list) or not sources:
        raise InputError(f"{path}: its record of the parts it refers to is damaged: merge the parts again")
    folder = path.resolve().parent
    for source in sources:
        if not isinstance(source, dict) or not isinstance(source.get("path"), str):
            raise InputError(f"{path}: its record of the parts it refers to is damaged: merge the parts again")
        where = folder / source["path"]
        if not where.is_file():
            raise InputError(
                f"{path} refers to {source['path']} (part {source.get('shard')}) beside it, which is not there (moved or removed): "
                "put the part back, or merge again without --virtual"
            )
        if where.stat().st_size != source.get("size"):
            raise InputError(f"{path} refers to {where}, which is not the part it was merged from (another size): merge the parts again")
        try:
            with h5py.File(where, "r") as part:
                record = _json(part, "shard", where)
                numbers = [int(n) for n, _ in record.get("texts", [])]
                if record.get("data") != source.get("data") or _datasets_digest(part, numbers) != source.get("data"):
                    raise InputError(f"{path} refers to {where}, whose datasets are not those it was merged from: merge the parts again")
        except OSError as err:
            raise InputError(f"{where}: not a readable HDF5 file ({err}): put the part back, or merge again") from None
    return f"{path}: its {len(sources)} parts are where it refers to them, and their datasets match their records"


def _verify_docbin(path: Path) -> str:
    from .pipeline.export import shard_sidecar

    sidecar = shard_sidecar(path)
    if not sidecar.is_file():
        return _check_docbin_layers(path, sidecar.name)
    from .shards import read_record

    record = read_record(sidecar.read_bytes(), str(sidecar))
    if bytes_sha256(path.read_bytes()) != record.get("docbin"):
        raise InputError(f"{path} is not the DocBin its record {sidecar.name} names (changed or damaged): write it again")
    return f"{path}: matches its record {sidecar.name}"


def _check_docbin_layers(path: Path, sidecar: str) -> str:
    """A DocBin without a record (a whole run of embed, or a merge): no digest to check against, so it is read, and
    every Doc's layers checked to be there, of one shape but the tokens, and finite; then a PartlyChecked, since its
    values could not be checked."""
    import numpy
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    from .pipeline.elmo_data import ElmoData, register_extensions

    register_extensions()
    try:
        docs = list(DocBin().from_bytes(path.read_bytes()).get_docs(Vocab()))
    except Exception as err:  # msgpack, zlib and spaCy raise many kinds on damaged bytes
        raise InputError(f"{path}: not a readable DocBin ({type(err).__name__}): write it again") from None
    shape = None
    for number, doc in enumerate(docs):
        data = doc._.elmo
        if not isinstance(data, ElmoData) or data.layers.shape[1] != len(doc):
            raise InputError(f"{path}: document {number} has no ELMo layers for its {len(doc)} tokens: write it again")
        if shape is not None and (data.layers.shape[0], data.layers.shape[2]) != shape:
            raise InputError(f"{path}: document {number}'s layers are not shaped as the others' ({data.layers.shape}): write it again")
        shape = (data.layers.shape[0], data.layers.shape[2])
        if not numpy.isfinite(data.layers).all():
            raise InputError(f"{path}: document {number}'s layers hold values that are not finite: write it again")
    # read and sound, but no digest says these are the values written (a Doc's layers times 1.5 would pass): not a pass
    raise PartlyChecked(
        f"{path}: its {len(docs):,} documents read, and their layers are there, of one shape and finite, but their values "
        f"could not be checked: it carries no digest (only a part of embed --shard has one, in {sidecar}, or it was "
        "removed). Write it as HDF5 (which carries its digests) or as parts to have it checked"
    )
