"""How the projects' steps write their files: as the package writes its own (spacy_elmo/output_folders.py), into a
temporary of a fresh name beside the file, renamed into place once whole. A step never writes through a link at
its output's name (the link is replaced, what it points to stays as it was), never removes a file it did not make,
and a failure or a kill leaves the former file as it was."""

import io
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Union

import srsly

from ..output_folders import write_atomically, written_atomically

PathLike = Union[str, Path]


def write_text(path: PathLike, text: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)


def write_json(path: PathLike, data: Any) -> None:
    write_text(path, srsly.json_dumps(data, indent=2) + "\n")


def write_bytes(path: PathLike, data: bytes) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, data)


def write_docbin(path: PathLike, doc_bin: Any) -> None:
    write_bytes(path, doc_bin.to_bytes())


def write_figure(figure: Any, path: PathLike, dpi: int = 120) -> None:
    """A matplotlib figure, in the format its name's suffix says (PNG by default)."""
    data = io.BytesIO()
    figure.savefig(data, format=Path(path).suffix.lstrip(".") or "png", dpi=dpi)
    write_bytes(path, data.getvalue())


@contextmanager
def written(path: PathLike, binary: bool = False) -> Iterator[IO[Any]]:
    """A file to write a stream into (lines of a corpus): it takes the name `path` when the block ends without an
    error; otherwise it is removed and `path` stays as it was (`written_atomically`)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with written_atomically(path, binary=binary) as stream:
        yield stream


def write_jsonl(path: PathLike, records: Iterable[Any]) -> None:
    with written(path) as stream:
        for record in records:
            stream.write(srsly.json_dumps(record) + "\n")
