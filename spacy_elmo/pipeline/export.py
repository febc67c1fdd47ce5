"""Writing the ELMo layers of a text to a file: `spacy-elmo embed`.

Plain text is read line by line exactly as `allennlp elmo` numbers it: line i (blank ones
included, lines ending at "\\n" only) becomes Doc i and HDF5 dataset "i", so a stray "\\r"
inside a line neither splits it nor shifts the numbering. Output goes to a temporary file
beside OUTPUT, renamed at the end: an interrupted run leaves no half-written OUTPUT.
"""

import gzip
import json
import os
from pathlib import Path
from typing import Iterable, Iterator, List, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, DocBin

from ..errors import InputError
from ..output_folders import temporary_path
from .component import Elmo

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


def embedded_docs(nlp: Language, input_path: Path, pretokenized: bool = False, docs_per_batch: int = 64) -> Iterator[Doc]:
    """The input's Docs with `doc._.elmo` set, one per line of a text file (per record of
    .jsonl, per Doc of .spacy). Pretokenized lines become one-sentence Docs of exactly their
    whitespace-split tokens, run through the elmo component(s) only."""
    from ..text_corpus import read_texts

    if pretokenized:
        docs: Iterable[Doc] = (_pretokenized_doc(nlp, line) for line in read_lines(input_path))
        for _, pipe in nlp.pipeline:
            if isinstance(pipe, Elmo):
                docs = pipe.pipe(docs, batch_size=docs_per_batch)
        return iter(docs)
    if input_path.suffix == ".spacy":
        return nlp.pipe(DocBin().from_disk(input_path).get_docs(nlp.vocab), batch_size=docs_per_batch)
    if input_path.suffix == ".jsonl" or input_path.name.endswith(".jsonl.gz"):
        return nlp.pipe((text for text, _ in read_texts(input_path, nlp.vocab)), batch_size=docs_per_batch)
    return nlp.pipe(read_lines(input_path), batch_size=docs_per_batch)


def _pretokenized_doc(nlp: Language, line: str) -> Doc:
    words = line.split()
    n = len(words)
    starts: List[Union[bool, int, None]] = [i == 0 for i in range(n)]
    return Doc(nlp.vocab, words=words, spaces=[True] * (n - 1) + [False] * min(n, 1), sent_starts=starts if n else None)


def check_output(output: Path, layers: str) -> None:
    """Raise an InputError unless `write_layers` can write `layers` to `output`."""
    if output.suffix not in OUTPUT_SUFFIXES:
        raise InputError(f"{output}: the output must end in .spacy or .hdf5")
    if layers not in LAYER_CHOICES:
        raise InputError(f"layers must be one of {', '.join(LAYER_CHOICES)}, got {layers!r}")
    if layers != "all" and output.suffix == ".spacy":
        raise InputError("a DocBin keeps every layer in doc._.elmo: --top and --average (layers 'top', 'average') are for .hdf5 output")


def write_layers(docs: Iterable[Doc], output: Union[str, Path], layers: str = "all") -> Tuple[int, int]:
    """Write the Docs' layers to `output`: a DocBin (`.spacy`, tokens + `doc._.elmo`) or HDF5 as
    `allennlp elmo` writes it (dataset "i" per Doc: "all" (L + 1, n_tokens, 2P), "top" or
    "average" (n_tokens, 2P); "sentence_to_index" a JSON string mapping each text to its dataset).
    An existing `output` is replaced only once the new file is complete.

    RETURNS (Tuple[int, int]): documents and tokens written.
    """
    output = Path(output)
    check_output(output, layers)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(output)
    try:
        counts = _write_docbin(docs, tmp) if output.suffix == ".spacy" else _write_hdf5(docs, tmp, layers)
        os.replace(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)
    return counts


def _write_docbin(docs: Iterable[Doc], path: Path) -> Tuple[int, int]:
    doc_bin = DocBin(store_user_data=True)
    n_docs = n_tokens = 0
    for doc in docs:
        doc_bin.add(doc)
        n_docs, n_tokens = n_docs + 1, n_tokens + len(doc)
    path.write_bytes(doc_bin.to_bytes())
    return n_docs, n_tokens


def _write_hdf5(docs: Iterable[Doc], path: Path, layers: str) -> Tuple[int, int]:
    import h5py

    index = {}
    n_docs = n_tokens = 0
    with h5py.File(path, "w") as f:
        for i, doc in enumerate(docs):
            data = doc._.elmo.layers
            if layers == "top":
                data = data[-1]
            elif layers == "average":
                data = data.mean(axis=0, dtype="float32").astype(data.dtype)
            f.create_dataset(str(i), data=data)
            index[doc.text] = str(i)
            n_docs, n_tokens = n_docs + 1, n_tokens + len(doc)
        sentence_to_index = f.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
        sentence_to_index[0] = json.dumps(index)
    return n_docs, n_tokens
