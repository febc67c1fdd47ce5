"""Writing the ELMo layers of a text to a file: `spacy-elmo embed`.

Plain text is read line by line exactly as `allennlp elmo` numbers it: line i (blank ones
included, lines ending at "\\n" only) becomes Doc i and HDF5 dataset "i", so a stray "\\r"
inside a line neither splits it nor shifts the numbering. Output goes to a temporary file
beside OUTPUT, renamed at the end: an interrupted run leaves no half-written OUTPUT.
"""

import gzip
import json
import os
from collections import deque
from pathlib import Path
from typing import Any, Callable, Deque, Dict, Iterable, Iterator, List, Optional, Tuple, TypeVar, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from ..errors import InputError
from ..output_folders import publish_file, temporary_path
from ..digests import CorpusDigest, DataDigest, bytes_sha256
from ..shards import Shard, chunk_docs
from .component import Elmo

T = TypeVar("T")

LAYER_CHOICES = ("all", "top", "average")
OUTPUT_SUFFIXES = (".spacy", ".hdf5")


def read_lines(path: Path) -> Iterator[str]:
    """Every line of a .txt or .txt.gz file, blank ones included, without its line end ("\\n"
    or "\\r\\n"). Undecodable bytes are an InputError naming the line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:  # type: ignore[operator]
        for number, raw in enumerate(f, start=1):
            try:
                yield raw.decode("utf8").removesuffix("\n").removesuffix("\r")
            except UnicodeDecodeError as err:
                raise InputError(f"{path}:{number}: not UTF-8 ({err.reason} at byte {err.start}): convert the file to UTF-8") from None


class ShardFilter:
    """Passes on the documents of one shard (chunks of `chunk_size` documents, see shards.py),
    chunk by chunk, and remembers each one's number in the input, in order, and the digest and
    count of every document the input held (`corpus`)."""

    def __init__(self, shard: Shard, chunk_size: int) -> None:
        self.shard, self.chunk_docs = shard, chunk_size
        self.numbers: Deque[int] = deque()
        self.corpus = CorpusDigest()

    @property
    def n_docs(self) -> int:
        return self.corpus.n_docs

    def chunks(self, items: Iterable[T]) -> Iterator[List[T]]:
        chunk: List[T] = []
        for number, item in enumerate(items):
            self.corpus.add(_text_of(item))
            if number % self.chunk_docs == 0 and chunk:
                yield chunk
                chunk = []
            if self.shard.owns(number // self.chunk_docs):
                self.numbers.append(number)
                chunk.append(item)
        if chunk:
            yield chunk


def _text_of(item: Any) -> str:
    """A document as the digest reads it: a text, or a Doc's tokens with their whitespace."""
    return item if isinstance(item, str) else "\x1f".join(t.text_with_ws for t in item)


def embedded_docs(
    nlp: Language, input_path: Path, pretokenized: bool = False, docs_per_batch: int = 64, keep: Optional[ShardFilter] = None
) -> Iterator[Doc]:
    """The input's Docs with `doc._.elmo` set, one per line of a text file (per record of
    .jsonl, per Doc of .spacy). Pretokenized lines become one-sentence Docs of exactly their
    whitespace-split tokens, run through the elmo component(s) only. Documents go through the
    pipeline `docs_per_batch` at a time, in chunks (see shards.py) that each start with an empty
    word cache, so that a shard (`keep`) gives each of its Docs exactly the layers a run over the
    whole input gives it."""
    from ..text_corpus import read_texts

    keep = keep or ShardFilter(Shard(), chunk_docs(docs_per_batch))
    if keep.chunk_docs % docs_per_batch:
        raise ValueError("a shard's chunks are whole nlp.pipe batches: give the filter a multiple of docs_per_batch documents a chunk")
    elmos = [pipe for _, pipe in nlp.pipeline if isinstance(pipe, Elmo)]
    items: Iterable[Any]
    if pretokenized:
        items = read_lines(input_path)
    elif input_path.suffix == ".spacy":
        items = DocBin().from_disk(input_path).get_docs(nlp.vocab)
    elif input_path.suffix == ".jsonl" or input_path.name.endswith(".jsonl.gz"):
        items = _not_too_long((text for text, _ in read_texts(input_path, nlp.vocab, longest=None)), input_path, nlp.max_length)
    else:
        items = _not_too_long(read_lines(input_path), input_path, nlp.max_length)
    for chunk in keep.chunks(items):
        for pipe in elmos:
            pipe.bilm.forget_words()
        if pretokenized:
            docs: Iterable[Doc] = [sentence_doc(nlp.vocab, line.split()) for line in chunk]
            for pipe in elmos:
                docs = pipe.pipe(docs, batch_size=docs_per_batch)
            yield from docs
        else:
            yield from nlp.pipe(chunk, batch_size=docs_per_batch)


def embed_to_file(
    nlp: Language, settings: Dict[str, Any], shard: Shard, output: Path, progress: bool = False, overwrite: bool = True
) -> Tuple[ShardFilter, int, int]:
    """`spacy-elmo embed`: write the layers of `shard` of the input to `output`, a part for `merge`
    where the shard is not the whole input.

    settings (Dict[str, Any]): the command's settings ("input", "pretokenized", "layers",
        "docs_per_batch", and what a part records so that `merge` can compare parts).
    RETURNS (Tuple[ShardFilter, int, int]): the filter (the input's documents), documents and tokens written.
    """
    from ..progress_bar import progress_bar

    from ..bilm.fingerprint import bilm_fingerprint
    from ..shards import shard_record, what_ran

    batch = int(settings["docs_per_batch"])
    keep = ShardFilter(shard, chunk_docs(batch))
    docs: Iterable[Doc] = embedded_docs(nlp, Path(settings["input"]), settings["pretokenized"], batch, keep)
    docs = progress_bar(docs, desc="Embedding", unit=" docs", disable=None if progress else True, leave=False)
    if shard.whole:
        return keep, *write_layers(docs, output, settings["layers"], overwrite=overwrite)
    elmos = [pipe for _, pipe in nlp.pipeline if isinstance(pipe, Elmo)]
    recorded = dict(settings, fingerprints=[bilm_fingerprint(pipe.bilm) for pipe in elmos])
    record = lambda: shard_record(shard, keep.chunk_docs, keep.corpus, recorded, what_ran([p.bilm for p in elmos]))  # noqa: E731
    return keep, *write_layers(docs, output, settings["layers"], numbers=keep.numbers, shard=record, overwrite=overwrite)


def sentence_doc(vocab: Any, words: List[str]) -> Doc:
    """RETURNS (Doc): `words` as given, one space between them, one sentence (the biLM reads it as one sequence)."""
    n = len(words)
    starts: List[Union[bool, int, None]] = [i == 0 for i in range(n)]
    return Doc(vocab, words=words, spaces=[True] * (n - 1) + [False] * min(n, 1), sent_starts=starts if n else None)


def check_output(output: Path, layers: str) -> None:
    """Raise an InputError unless `write_layers` can write `layers` to `output`."""
    if output.suffix not in OUTPUT_SUFFIXES:
        raise InputError(f"{output}: the output must end in .spacy or .hdf5")
    above = next((folder for folder in [output.parent, *output.parent.parents] if os.path.lexists(folder)), None)
    if above is not None and not above.is_dir():
        raise InputError(f"{above} is a file, so {output} cannot be written there: give an output path in a folder")
    if layers not in LAYER_CHOICES:
        raise InputError(f"layers must be one of {', '.join(LAYER_CHOICES)}, got {layers!r}")
    if layers != "all" and output.suffix == ".spacy":
        raise InputError("a DocBin keeps every layer in doc._.elmo: --top and --average (layers 'top', 'average') are for .hdf5 output")


def write_layers(
    docs: Iterable[Doc],
    output: Union[str, Path],
    layers: str = "all",
    *,
    numbers: Optional[Deque[int]] = None,
    shard: Optional[Callable[[], Dict[str, Any]]] = None,
    overwrite: bool = True,
) -> Tuple[int, int]:
    """Write the Docs' layers to `output`: a DocBin (`.spacy`, tokens + `doc._.elmo`) or HDF5 as
    `allennlp elmo` writes it (dataset "i" per Doc: "all" (L + 1, n_tokens, 2P), "top" or
    "average" (n_tokens, 2P); "sentence_to_index" a JSON string mapping each text to its dataset).
    An existing `output` is replaced only once the new file is complete; without `overwrite`, a file that
    appeared there meanwhile is left as it is and nothing is written (`output_folders.publish_file`).

    numbers (Optional[Deque[int]]): each Doc's number in the input, filled as the Docs come (a
        `ShardFilter`'s); None: 0, 1, 2, ...
    shard (Optional[Callable[[], Dict[str, Any]]]): gives a shard's record (`shards.shard_record`)
        once every Doc is written: the output is a part for `merge`. HDF5 keeps it, with every
        Doc's text and the digest of the datasets ("data"), in a dataset "shard", written last; a
        DocBin's goes beside it in OUTPUT.shard.json, with the DocBin's SHA-256 ("docbin").
    RETURNS (Tuple[int, int]): documents and tokens written.
    """
    output = Path(output)
    check_output(output, layers)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(output)
    numbered = _numbered(docs, numbers)
    try:
        record = None
        if output.suffix == ".spacy":
            counts, digest = _write_docbin(numbered, tmp)
            record = None if shard is None else json.dumps({**shard(), "docbin": digest})
        else:
            counts = _write_hdf5(numbered, tmp, layers, shard)
        publish_file(tmp, output, overwrite)
    finally:
        tmp.unlink(missing_ok=True)
    # the part's record after the part itself: a run that finds OUTPUT taken writes no record of a part it never wrote
    if record is not None:
        from ..output_folders import write_atomically

        write_atomically(shard_sidecar(output), record, overwrite=overwrite)
    elif output.suffix == ".spacy" and overwrite:
        _remove_former_part_record(output)
    return counts


def _remove_former_part_record(output: Path) -> None:
    """A whole run written over a former part: the part's record beside it (OUTPUT.shard.json, written by embed: a plain
    file holding a "docbin" digest) goes, or `verify` would call the good file damaged. Anything else there stays."""
    from ..output_folders import is_plain_file

    sidecar = shard_sidecar(output)
    if not is_plain_file(sidecar):
        return
    try:
        record = json.loads(sidecar.read_text(encoding="utf8"))
    except (OSError, ValueError):
        return
    if isinstance(record, dict) and {"docbin", "index", "count", "chunk_docs"} <= set(record):
        sidecar.unlink()


def shard_sidecar(output: Path) -> Path:
    """RETURNS (Path): where a DocBin part's shard record goes."""
    return output.with_name(output.name + ".shard.json")


def _numbered(docs: Iterable[Doc], numbers: Optional[Deque[int]]) -> Iterator[Tuple[int, Doc]]:
    for i, doc in enumerate(docs):
        yield (numbers.popleft() if numbers is not None else i), doc


def _write_docbin(docs: Iterable[Tuple[int, Doc]], path: Path) -> Tuple[Tuple[int, int], str]:
    """RETURNS: documents and tokens written, and the file's SHA-256."""
    doc_bin = DocBin(store_user_data=True)
    n_docs = n_tokens = 0
    for _, doc in docs:
        doc_bin.add(doc)
        n_docs, n_tokens = n_docs + 1, n_tokens + len(doc)
    data = doc_bin.to_bytes()
    path.write_bytes(data)
    return (n_docs, n_tokens), bytes_sha256(data)


def layer_data(doc: Doc, layers: str) -> Any:
    """RETURNS: the array HDF5 output holds for `doc`: every layer, the top one, or their average."""
    data = doc._.elmo.layers
    if layers == "top":
        return data[-1]
    if layers == "average":
        return data.mean(axis=0, dtype="float32").astype(data.dtype)
    return data


def _write_hdf5(
    docs: Iterable[Tuple[int, Doc]], path: Path, layers: str, shard: Optional[Callable[[], Dict[str, Any]]] = None
) -> Tuple[int, int]:
    texts: List[Tuple[int, str]] = []
    n_tokens = 0
    with HDF5Writer(path) as writer:
        for number, doc in docs:
            writer.add(number, doc.text, layer_data(doc, layers))
            texts.append((number, doc.text))
            n_tokens += len(doc)
        if shard is not None:
            assert writer.digest is not None
            writer.add_json("shard", {**shard(), "texts": texts, "data": writer.digest.hexdigest()})
    return len(texts), n_tokens


DIGEST_ATTRIBUTE, SOURCES_ATTRIBUTE = "spacy_elmo_digest", "spacy_elmo_virtual_sources"
INDEX_DIGEST_ATTRIBUTE = "spacy_elmo_index_digest"  # the SHA-256 of "sentence_to_index" as written: what a reader maps by


def index_digest(text: str) -> str:
    """RETURNS (str): the SHA-256 of a "sentence_to_index" record's JSON text (`verify` reads it back)."""
    return bytes_sha256(text.encode("utf8"))


class HDF5Writer:
    """An HDF5 file as `allennlp elmo` writes it: dataset "i" per text, then "sentence_to_index"
    (each text -> the dataset of its last occurrence), written on close; the file's attributes (not datasets: a
    reader of allennlp's files sees only those) hold "spacy_elmo_digest", the SHA-256 of the datasets as written
    (`spacy-elmo verify` checks it), or, for a virtual merge, "spacy_elmo_virtual_sources"."""

    def __init__(self, path: Path) -> None:
        import h5py

        self._h5py = h5py
        self.file = h5py.File(path, "w")
        self.index: Dict[str, str] = {}
        self.digest: Optional[DataDigest] = DataDigest()  # None once a dataset refers to another file's
        self.sources: List[Dict[str, Any]] = []

    def add(self, number: int, text: str, data: Any) -> None:
        self.file.create_dataset(str(number), data=data)
        self.index[text] = str(number)
        if self.digest is not None:
            self.digest.add(number, data)

    def add_reference(self, number: int, text: str, source: str, shape: Tuple[int, ...], dtype: Any) -> None:
        """Dataset `number` as a virtual dataset: the whole of dataset `number` of the file `source`, a path
        relative to this file's folder (HDF5 looks there first). A source that is not there reads as NaN, not 0."""
        self.digest = None
        if 0 in shape:  # nothing to refer to: an empty dataset of its own
            self.file.create_dataset(str(number), shape=shape, dtype=dtype)
        else:
            layout = self._h5py.VirtualLayout(shape=shape, dtype=dtype)
            layout[...] = self._h5py.VirtualSource(source, str(number), shape=shape, dtype=dtype)
            self.file.create_virtual_dataset(str(number), layout, fillvalue=float("nan"))
        self.index[text] = str(number)

    def add_json(self, name: str, value: Any) -> None:
        dataset = self.file.create_dataset(name, (1,), dtype=self._h5py.string_dtype())
        dataset[0] = json.dumps(value)

    def __enter__(self) -> "HDF5Writer":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            if exc_type is None:
                if self.digest is not None:
                    self.file.attrs[DIGEST_ATTRIBUTE] = json.dumps({"data": self.digest.hexdigest()})
                if self.sources:
                    self.file.attrs[SOURCES_ATTRIBUTE] = json.dumps(self.sources)
                self.add_json("sentence_to_index", self.index)
                self.file.attrs[INDEX_DIGEST_ATTRIBUTE] = index_digest(json.dumps(self.index))
        finally:
            self.file.close()


def _not_too_long(texts: Iterable[str], path: Path, longest: int) -> Iterator[Any]:
    """`texts`, a text longer than spaCy takes (`nlp.max_length`) refused in one line naming it: embed writes one
    entry per line or record, so it cannot cut one into several (spaCy's own error is E088 and a long traceback)."""
    for number, text in enumerate(texts, start=1):
        if len(text) > longest:
            raise InputError(
                f"{path}: text {number} is {len(text):,} characters long, more than spaCy takes at once ({longest:,}, "
                "nlp.max_length): split it into lines (embed writes one entry per line)"
            )
        yield text
