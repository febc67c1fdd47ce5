"""Reading text corpora, for every command that reads a folder of text: which files (and what is
skipped), their formats, encodings and compression, and the numbering of texts and documents.

Text comes from `.txt` / `.txt.gz` (one paragraph or sentence per line, documents separated by
blank lines), `.jsonl` / `.jsonl.gz` (a "text" field per line, one document each) or spaCy `.spacy`
files (one document per Doc). A folder is read recursively, in sorted order, skipping every folder
that spacy-elmo wrote (it carries the output-folder marker: an index or a prepared corpus kept
inside the corpus is never read back as text). A file that is not UTF-8, a damaged .gz or a bad
record is an error naming the file and line.
"""

import gzip
import io
import json
import zlib
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

from .errors import CorpusError, InputError
from .output_folders import MARKER
from .types import PathLike

SUFFIXES = (".txt", ".gz", ".jsonl", ".spacy")


def corpus_files(path: PathLike) -> List[Path]:
    """The corpus files at `path` (a file, or every supported file in a folder, sorted; folders
    spacy-elmo wrote are skipped). A name that is not valid UTF-8 is an error now, before any work.

    RETURNS (List[Path]): the files.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(_walk(path))
    elif path.is_file():
        files = [path]
    else:
        raise FileNotFoundError(f"Corpus not found: {path} (give a .txt, .txt.gz, .jsonl or .spacy file, or a folder of them)")
    if not files:
        raise InputError(f"No .txt, .txt.gz, .jsonl or .spacy files in {path}: give a file or a folder that holds some")
    for file in files:
        try:
            str(file).encode("utf-8")
        except UnicodeEncodeError:
            shown = str(file).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise CorpusError(f"{shown}: the file name is not valid UTF-8: rename the file (or move it out of the corpus)") from None
    return files


def _walk(folder: Path) -> Iterator[Path]:
    for entry in folder.iterdir():
        if entry.is_dir():
            if not (entry / MARKER).is_file():
                yield from _walk(entry)
        elif entry.is_file() and entry.suffix in SUFFIXES:
            yield entry


def files_progress_bar(files: List[Path], enabled: bool, desc: str):  # type: ignore[no-untyped-def]
    """A bar over the bytes of `files` (for `read_texts`' progress callback): on a terminal a bar, elsewhere
    progress lines (progress_bar.py). None where progress is off."""
    if not enabled:
        return None
    from .progress_bar import progress_bar

    total = sum(f.stat().st_size for f in files)
    return progress_bar(total=total, unit="B", unit_scale=True, desc=desc, mininterval=1.0, disable=None)


LONGEST_TEXT = 100_000  # characters of one text given to spaCy at most (its nlp.max_length is 1,000,000)


def read_texts(
    path: Path,
    lang_vocab,
    progress: Optional[Callable[[int], None]] = None,  # type: ignore[no-untyped-def]
    longest: Optional[int] = LONGEST_TEXT,
) -> Iterator[Tuple[str, bool]]:
    """(text, starts_new_document) pairs: records of .jsonl and .spacy files are documents;
    in text files, documents are blocks separated by blank lines.

    progress (Optional[Callable[[int], None]]): called now and then with the number of bytes of
        the file (compressed, for .gz) read since the last call.
    longest (Optional[int]): a text of a line or record longer than this many characters comes in pieces of the same
        document (`_pieces`); None: as it is.
    """
    if path.suffix == ".spacy":
        from spacy.tokens import DocBin

        try:
            docs = list(DocBin().from_disk(path).get_docs(lang_vocab))
        except (ValueError, KeyError, TypeError, OSError, zlib.error) as err:
            raise CorpusError(f"{path}: not a readable .spacy file ({type(err).__name__}): write it again") from None
        for doc in docs:
            yield doc.text, True
        if progress is not None:
            progress(path.stat().st_size)
        return
    is_jsonl = path.suffix == ".jsonl" or path.name.endswith(".jsonl.gz")
    new_doc = True
    number = 0
    with path.open("rb") as raw:
        binary = gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw
        reported = 0
        try:
            for number, line in enumerate(io.TextIOWrapper(binary, encoding="utf8"), start=1):  # type: ignore[arg-type]
                if progress is not None and number % 1000 == 0:
                    position = raw.tell()
                    progress(position - reported)
                    reported = position
                if is_jsonl:
                    if line.strip():
                        for i, piece in enumerate(_pieces(_jsonl_text(line, path, number), longest)):
                            yield piece, i == 0
                elif line.strip():
                    for piece in _pieces(line.rstrip("\n"), longest):
                        yield piece, new_doc
                        new_doc = False
                else:
                    new_doc = True
        except UnicodeDecodeError:
            line_number, byte = _first_bad_line(path)
            raise CorpusError(
                f"{path}:{line_number}: not UTF-8 text (byte {byte:#04x}): convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)"
            ) from None
        except (EOFError, gzip.BadGzipFile, zlib.error) as err:
            raise CorpusError(
                f"{path}: the gzip file is truncated or damaged after line {number} ({err or type(err).__name__}): "
                "compress it again, or remove it from the corpus"
            ) from None
        if progress is not None:
            progress(path.stat().st_size - reported)


def _pieces(text: str, longest: Optional[int] = LONGEST_TEXT) -> Iterator[str]:
    """`text` as it is, or, where it is longer than `longest` characters (a line of a million characters ended in
    spaCy's E088), in pieces of the same document cut at the last whitespace before the limit (at the limit where a
    piece has none)."""
    while longest is not None and len(text) > longest:
        cut = max(text.rfind(" ", 0, longest), text.rfind("\n", 0, longest), text.rfind("\t", 0, longest))
        cut = cut if cut > 0 else longest
        yield text[:cut]
        text = text[cut:].lstrip()
    if text:
        yield text


def _first_bad_line(path: Path) -> Tuple[int, int]:
    """RETURNS (Tuple[int, int]): the first line of `path` that is not UTF-8, and its first bad byte
    (text is decoded in blocks, so the error itself does not know the line)."""
    with path.open("rb") as raw:
        binary = gzip.GzipFile(fileobj=raw) if path.suffix == ".gz" else raw
        for number, line in enumerate(binary, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as err:
                return number, line[err.start]
    return 0, 0


def _jsonl_text(line: str, path: Path, number: int) -> str:
    try:
        text = json.loads(line)["text"]
    except (ValueError, KeyError, TypeError):
        raise CorpusError(f"{path}:{number}: expected a JSON object with a 'text' field (a string)") from None
    if not isinstance(text, str):
        raise CorpusError(f"{path}:{number}: 'text' must be a string, got {type(text).__name__}")
    try:
        text.encode("utf8")
    except UnicodeEncodeError as err:  # a lone surrogate escape such as "\\ud800"
        raise CorpusError(
            f"{path}:{number}: the text holds {text[err.start]!r}, which is not a Unicode character "
            "(a lone surrogate escape): fix or remove that line"
        ) from None
    return text


def numbered_texts(
    files: List[Path],
    lang_vocab,
    progress: Optional[Callable[[int], None]] = None,  # type: ignore[no-untyped-def]
) -> Iterator[Tuple[int, int, str]]:
    """(line, document, text) for every text that is not blank: lines count those texts, in
    file order; documents are numbered across files as `read_texts` delimits them."""
    line, doc = -1, -1
    for path in files:
        for text, new_doc in read_texts(path, lang_vocab, progress):
            doc += int(new_doc)
            if text.strip():
                line += 1
                yield line, doc, text
