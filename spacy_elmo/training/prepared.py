"""A corpus tokenized once, in parallel, into memory-mapped arrays: `spacy-elmo prepare-corpus`.

A prepared folder holds
- `tokens.bin`: int32 word ids, every sentence one after the other (memory-mapped when read);
- `lengths.npy`, `lines.npy`, `docs.npy`: per sentence its length, the number of the text line
  and of the document it comes from (`corpus.numbered_texts`), so that held-out documents and
  each process's share of lines are chosen at training time exactly as `Corpus` chooses them;
- `words.bin` + `word_offsets.npy`: the word table (UTF-8, concatenated);
- `meta.json`: what it was made from and how (its `key`), written last, so a folder whose
  preparation was interrupted is never taken for a finished one.

The key covers the files (path, size, modification time), the language, `max_length`, the spaCy
version and this format's version: a prepared folder whose key differs from the one asked for is
made anew (inside a training output) or refused (when named explicitly). The folder is built as
`OUTPUT.tmp` (marked and locked, see folders.py) and its files moved into OUTPUT at the end; only a folder marked as
a prepared corpus is ever replaced, and only its own files in it: a file a user put in the folder stays.
"""

import logging
import os
import time
from collections import deque
from pathlib import Path
from typing import Any, Deque, Dict, Iterator, List, Optional, Tuple

import numpy
import srsly

from ..errors import InputError
from ..output_folders import (
    PREPARED_CORPUS,
    check_claimable,
    check_not_inside,
    claim_folder,
    publish_files,
    read_array_file,
    read_json_file,
    remove_own,
    scratch_folder,
)
from ..child_processes import from_package_entry, process_context
from ..text_corpus import corpus_files, files_progress_bar, numbered_texts
from ..types import PathLike
from .corpus import SentenceSplitter, is_held_out

FORMAT_VERSION = 1
logger = logging.getLogger("spacy_elmo")
META = "meta.json"
# What a prepared folder holds: a folder with nothing else is one, also without a marker.
FILES = (META, "tokens.bin", "lengths.npy", "lines.npy", "docs.npy", "words.bin", "word_offsets.npy")
_AGAIN = "prepare the corpus again (spacy-elmo prepare-corpus TEXT --output DIR, or pass the raw text)"
_CHUNK_CHARS = 1 << 20  # text sent to a worker at a time


def corpus_key(path: PathLike, lang: str, max_length: int) -> Dict[str, Any]:
    """What a prepared corpus depends on: its files as they are now and the tokenizer settings."""
    files = []
    for file in corpus_files(path):
        stat = file.stat()
        files.append({"path": str(file.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    import spacy

    return {"format": FORMAT_VERSION, "lang": lang, "max_length": int(max_length), "spacy": spacy.__version__, "files": files}


def is_prepared(folder: PathLike) -> bool:
    """Whether `folder` holds a finished prepared corpus."""
    return (Path(folder) / META).is_file()


class PreparedCorpus:
    """A prepared folder, read with memory maps.

    folder (PathLike): written by `prepare_corpus`.
    """

    def __reduce__(self) -> Tuple[Any, Tuple[Path]]:
        # A worker process opens the folder itself: its memory maps are never copied through a pipe.
        return PreparedCorpus, (self.folder,)

    def __init__(self, folder: PathLike) -> None:
        self.folder = Path(folder)
        if not is_prepared(self.folder):
            raise FileNotFoundError(
                f"{self.folder} is not a prepared corpus (no {META}): make one with "
                "`spacy-elmo prepare-corpus TEXT --output DIR`, or pass the raw text"
            )
        meta = read_json_file(self.folder / META, _AGAIN)
        if not isinstance(meta, dict) or not isinstance(meta.get("key"), dict):
            raise InputError(f"{self.folder / META} is damaged (no 'key'): {_AGAIN}")
        self.meta: Dict[str, Any] = meta
        if self.meta["key"].get("format") != FORMAT_VERSION:
            raise InputError(f"{self.folder} was prepared in another format: {_AGAIN}")
        self.lengths: numpy.ndarray = self._array("lengths.npy")
        self.lines: numpy.ndarray = self._array("lines.npy")
        self.docs: numpy.ndarray = self._array("docs.npy")
        if not len(self.lengths) == len(self.lines) == len(self.docs) or (len(self.lengths) and self.lengths.min() < 1):
            raise InputError(f"{self.folder}: lengths.npy, lines.npy and docs.npy do not agree: {_AGAIN}")
        self.starts = numpy.zeros(len(self.lengths) + 1, dtype=numpy.int64)
        numpy.cumsum(self.lengths, out=self.starts[1:])
        n_tokens = int(self.starts[-1])
        tokens_file = self.folder / "tokens.bin"
        size = tokens_file.stat().st_size if tokens_file.is_file() else -1
        if size != 4 * n_tokens or self.meta.get("tokens", n_tokens) != n_tokens:
            raise InputError(
                f"{tokens_file} has {max(size, 0):,} bytes, but the sentence lengths call for {4 * n_tokens:,} "
                f"({n_tokens:,} tokens): the file is truncated or missing; {_AGAIN}"
            )
        self.tokens = (
            numpy.memmap(tokens_file, dtype=numpy.int32, mode="r", shape=(n_tokens,)) if n_tokens else numpy.zeros(0, dtype=numpy.int32)
        )
        offsets = self._array("word_offsets.npy").tolist()
        try:
            blob = (self.folder / "words.bin").read_bytes()
            self.words: List[str] = [blob[a:b].decode("utf8") for a, b in zip(offsets[:-1], offsets[1:])]
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"{self.folder / 'words.bin'} cannot be read ({err}): {_AGAIN}") from None
        if not offsets or offsets[-1] != len(blob):
            raise InputError(f"{self.folder / 'words.bin'} does not fit word_offsets.npy: {_AGAIN}")
        if n_tokens and not 0 <= int(self.tokens.min()) <= int(self.tokens.max()) < len(self.words):
            raise InputError(f"{tokens_file} holds word ids outside the word table (words.bin): the file is damaged; {_AGAIN}")

    def _array(self, name: str) -> numpy.ndarray:
        return read_array_file(self.folder / name, _AGAIN)

    @property
    def key(self) -> Dict[str, Any]:
        return self.meta["key"]

    def __len__(self) -> int:
        return len(self.lengths)

    def sentence(self, index: int) -> List[str]:
        """The words of one sentence."""
        return [self.words[i] for i in self.tokens[self.starts[index] : self.starts[index + 1]]]

    def select(
        self, hold_out: int = 0, only_held_out: bool = False, rank: int = 0, world_size: int = 1, by_sentence: bool = False
    ) -> numpy.ndarray:
        """Indices of the sentences that `Corpus` with the same arguments would give, in order;
        with `by_sentence`, every `hold_out`-th sentence is held out rather than every `hold_out`-th
        document (a corpus of few documents)."""
        units = numpy.arange(len(self.lengths)) if by_sentence else self.docs
        chosen = is_held_out(units, hold_out) == only_held_out
        lines = self.lines[chosen]
        # Lines are numbered over all texts; a process's share counts only the chosen ones.
        kept_lines = numpy.unique(lines)
        rank_of_line = numpy.searchsorted(kept_lines, lines) % world_size
        return numpy.flatnonzero(chosen)[rank_of_line == rank]

    def word_counts(self, sentences: numpy.ndarray) -> numpy.ndarray:
        """How often each word of the table occurs in the given sentences."""
        chosen = numpy.zeros(len(self.lengths), dtype=bool)
        chosen[sentences] = True
        tokens = self.tokens[numpy.repeat(chosen, self.lengths)]
        return numpy.bincount(tokens, minlength=len(self.words)).astype(numpy.int64)


def prepare_corpus(
    path: PathLike,
    output: PathLike,
    lang: str = "en",
    max_length: int = 100,
    n_process: int = 0,
    progress: bool = True,
    log=print,  # type: ignore[no-untyped-def]
) -> PreparedCorpus:
    """Tokenize the text at `path` into the prepared folder `output`, unless `output` already
    holds it prepared with the same key.

    n_process (int): tokenizing processes; 0: one per CPU core, or one alone for less than 32 MB of text (a
        pool's first start, a fresh interpreter importing spaCy and torch, costs about 4 s: docs/safety.md).
    progress (bool): show a progress bar (bytes read, tokens/s, time left).
    RETURNS (PreparedCorpus): the prepared corpus.
    """
    output = Path(output)
    files = corpus_files(path)  # a missing or empty corpus fails before anything is written
    check_not_inside(output, path, "the text")
    key = corpus_key(path, lang, max_length)
    check_claimable(output, PREPARED_CORPUS, " for --output")
    if is_prepared(output):
        try:
            existing = PreparedCorpus(output)
        except InputError as err:
            log(f"{err}: preparing it again")
        else:
            if existing.key == key:
                claim_folder(output, PREPARED_CORPUS)
                return existing
            log(f"{output} was prepared from other text or settings: preparing it again")
    tmp, lock = scratch_folder(output, PREPARED_CORPUS, "spacy-elmo prepare-corpus")
    try:
        with lock:
            _write_prepared(files, tmp, key, lang, max_length, n_process or _default_processes(files), progress)
    except BaseException:
        remove_own(tmp, PREPARED_CORPUS)
        raise
    publish_files(tmp, output, PREPARED_CORPUS, FILES, META)
    meta = srsly.read_json(output / META)
    n_tokens, seconds = meta["tokens"], meta["seconds"]
    log(
        f"Prepared {n_tokens:,} tokens in {meta['sentences']:,} sentences ({meta['words']:,} distinct words) "
        f"in {seconds:.0f}s ({n_tokens / max(seconds, 1e-9):,.0f} tokens/s, {meta['processes']} processes): {output}"
    )
    return PreparedCorpus(output)


POOL_MIN_BYTES = 32 << 20  # less text than this is tokenized faster in one process than by a new pool


def _default_processes(files: List[Path]) -> int:
    if sum(f.stat().st_size for f in files) < POOL_MIN_BYTES:
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _write_prepared(files: List[Path], tmp: Path, key: Dict[str, Any], lang: str, max_length: int, n_process: int, progress: bool) -> None:
    """Tokenize `files` into the folder `tmp`; meta.json last."""
    started = time.perf_counter()
    bar = files_progress_bar(files, progress, "Preparing corpus")
    table: Dict[str, int] = {}
    lengths: List[numpy.ndarray] = []
    lines: List[numpy.ndarray] = []
    docs: List[numpy.ndarray] = []
    n_tokens = 0
    splitter = SentenceSplitter(lang, max_length)
    texts = numbered_texts(files, splitter.nlp.vocab, bar.update if bar is not None else None)
    with (tmp / "tokens.bin").open("wb") as out:
        for (chunk_lines, chunk_docs), (words, ids, sent_lengths, text_of) in _tokenized(texts, splitter, n_process):
            global_ids = numpy.fromiter((table.setdefault(w, len(table)) for w in words), dtype=numpy.int32, count=len(words))
            out.write(global_ids[ids].tobytes())
            lengths.append(sent_lengths.astype(numpy.int32))
            lines.append(chunk_lines[text_of])
            docs.append(chunk_docs[text_of])
            n_tokens += len(ids)
            if bar is not None:
                bar.set_postfix_str(f"{n_tokens / (time.perf_counter() - started):,.0f} tokens/s", refresh=False)
    if bar is not None:
        bar.close()
    numpy.save(tmp / "lengths.npy", _concat(lengths, numpy.int32))
    numpy.save(tmp / "lines.npy", _concat(lines, numpy.int64))
    numpy.save(tmp / "docs.npy", _concat(docs, numpy.int64))
    encoded = [w.encode("utf8") for w in table]
    (tmp / "words.bin").write_bytes(b"".join(encoded))
    numpy.save(tmp / "word_offsets.npy", numpy.r_[0, numpy.cumsum([len(e) for e in encoded], dtype=numpy.int64)])
    seconds = time.perf_counter() - started
    n_sentences = sum(len(x) for x in lengths)
    srsly.write_json(
        tmp / META,
        {
            "key": key,
            "sentences": n_sentences,
            "tokens": n_tokens,
            "words": len(table),
            "seconds": round(seconds, 1),
            "processes": n_process,
        },
    )


def _concat(parts: List[numpy.ndarray], dtype: Any) -> numpy.ndarray:
    return numpy.concatenate(parts).astype(dtype) if parts else numpy.zeros(0, dtype=dtype)


ChunkIds = Tuple[numpy.ndarray, numpy.ndarray]
Tokenized = Tuple[List[str], numpy.ndarray, numpy.ndarray, numpy.ndarray]


def _chunks(texts: Iterator[Tuple[int, int, str]]) -> Iterator[Tuple[ChunkIds, List[str]]]:
    batch: List[Tuple[int, int, str]] = []
    size = 0
    for item in texts:
        batch.append(item)
        size += len(item[2])
        if size >= _CHUNK_CHARS:
            yield _split_chunk(batch)
            batch, size = [], 0
    if batch:
        yield _split_chunk(batch)


def _split_chunk(batch: List[Tuple[int, int, str]]) -> Tuple[ChunkIds, List[str]]:
    lines = numpy.array([b[0] for b in batch], dtype=numpy.int64)
    docs = numpy.array([b[1] for b in batch], dtype=numpy.int64)
    return (lines, docs), [b[2] for b in batch]


def _tokenized(texts: Iterator[Tuple[int, int, str]], splitter: SentenceSplitter, n_process: int) -> Iterator[Tuple[ChunkIds, Tokenized]]:
    """Chunks of texts with their tokenization, in order; with n_process > 1 tokenized by a pool
    of processes, with a bounded number of chunks in flight."""
    global _SPLITTER
    _SPLITTER = splitter
    if n_process <= 1:
        for ids, chunk in _chunks(texts):
            yield ids, _tokenize(chunk)
        return
    context = process_context(preload=(__name__, f"spacy.lang.{splitter.nlp.lang}"))
    with from_package_entry():  # the workers never run the caller's program again
        pool = context.Pool(n_process, initializer=_init_worker, initargs=((splitter.nlp.lang, splitter.max_length),))
    finished = False
    try:
        pending: Deque[Tuple[ChunkIds, Any]] = deque()
        for ids, chunk in _chunks(texts):
            pending.append((ids, pool.apply_async(_tokenize, (chunk,))))
            if len(pending) > 2 * n_process:
                done_ids, result = pending.popleft()
                yield done_ids, result.get()
        while pending:
            done_ids, result = pending.popleft()
            yield done_ids, result.get()
        finished = True
    finally:
        if finished:  # nothing in flight: the workers end when they read the end of the queue
            pool.close()
        else:
            pool.terminate()
        pool.join()


_SPLITTER: Optional[SentenceSplitter] = None


def _init_worker(settings: Tuple[str, int]) -> None:
    """settings: (lang, max_length) to build the splitter with. A worker is a fresh interpreter that tokenizes
    only: torch is not imported there (it would cost each worker a second or two)."""
    global _SPLITTER
    _SPLITTER = SentenceSplitter(*settings)


def _tokenize(texts: List[str]) -> Tokenized:
    """(distinct words, local word ids of every token, sentence lengths, text index of each sentence)."""
    assert _SPLITTER is not None
    orth, lengths, text_of = _SPLITTER.split(texts)
    distinct, local = numpy.unique(orth, return_inverse=True)
    strings = _SPLITTER.nlp.vocab.strings
    return [strings[int(h)] for h in distinct], local.astype(numpy.int32), lengths, text_of


def prepared_for_training(
    train: PathLike,
    output: PathLike,
    lang: str,
    max_length: int,
    n_process: int = 0,
    progress: bool = True,
    log=print,  # type: ignore[no-untyped-def]
) -> PreparedCorpus:
    """The prepared corpus to train on: `train` itself if it is a prepared folder (checked
    against the tokenizer settings), else `train` prepared into `output/corpus` (reused when
    its key matches)."""
    if is_prepared(train):
        corpus = PreparedCorpus(train)
        if corpus.key["lang"] != lang or corpus.key["max_length"] != max_length:
            raise ValueError(
                f"{train} was prepared with lang={corpus.key['lang']!r}, max_length={corpus.key['max_length']}, "
                f"but [corpus] asks for lang={lang!r}, max_length={max_length}: prepare it again with those settings"
            )
        return corpus
    return prepare_corpus(train, Path(output) / "corpus", lang, max_length, n_process, progress, log)
