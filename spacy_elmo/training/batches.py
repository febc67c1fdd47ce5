"""Training batches: which sentences go together (deterministically), and their tensors, built
by DataLoader workers from a prepared corpus.

Each epoch reads this process's share of sentences in blocks of `SHUFFLE_BLOCK` consecutive
sentences, the blocks in an order shuffled by (seed, epoch): a corpus made of several files or
sources would otherwise be read one source after the other, and the model drift to the last one
read (dev perplexity doubled while a Wikipedia + Reuters run read Reuters). Batches are made pool
by pool: `pool_size` sentences in that order, sorted by length, cut into batches of at most
`batch_tokens` padded tokens, shuffled with a seed derived from (seed, epoch, pool). A position is
(epoch, pool, batch), so a resumed run makes the same batches and goes on with the next one.
"""

import random
from dataclasses import asdict, dataclass
from typing import Any, Dict, Generator, Iterator, List, Optional, Sequence, Sized, Tuple, TypeVar

import numpy
import torch

from ..child_processes import from_package_entry, process_context
from ..bilm import CharBatch, word_char_ids
from ..bilm.char_ids import SENTENCE_END, SENTENCE_START
from .prepared import PreparedCorpus
from .vocab import Vocabulary

T = TypeVar("T", bound=Sized)
SHUFFLE_BLOCK = 64


@dataclass
class CorpusPosition:
    epoch: int = 0
    pool: int = 0
    batch: int = 0  # batches of this pool already used
    # sentences per shuffled block; 0 reads in corpus order (runs checkpointed before blocks existed)
    shuffle_block: int = SHUFFLE_BLOCK

    def to_dict(self) -> dict:
        return asdict(self)


def length_groups(lengths: Sequence[int], batch_tokens: int) -> List[List[int]]:
    """Indices sorted by length and cut into groups whose padded size (longest sentence,
    markers included, times the number of sentences) is at most `batch_tokens`; a longer
    sentence gets a group of its own."""
    groups: List[List[int]] = []
    current: List[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        # sorted ascending: the newcomer is the longest of the group
        if current and (lengths[i] + 2) * (len(current) + 1) > batch_tokens:
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


def length_batches(sentences: Sequence[T], batch_tokens: int) -> List[List[T]]:
    """`length_groups` of sentences (sequences of tokens), as lists of sentences."""
    return [[sentences[i] for i in g] for g in length_groups([len(s) for s in sentences], batch_tokens)]


def batch_plan(
    sentences: numpy.ndarray, lengths: numpy.ndarray, batch_tokens: int, pool_size: int, seed: int, start: CorpusPosition
) -> Iterator[Tuple[numpy.ndarray, CorpusPosition]]:
    """Endless batches (sentence indices) from `start` on, each with the position just after it.

    sentences (numpy.ndarray): this process's sentences, in corpus order.
    lengths (numpy.ndarray): their lengths.
    """
    if len(sentences) == 0:
        raise ValueError("The training corpus holds no sentences")
    n_pools = (len(sentences) + pool_size - 1) // pool_size
    epoch = start.epoch
    while True:
        order = epoch_order(len(sentences), start.shuffle_block, seed, epoch)
        for pool in range(n_pools):
            if (epoch, pool) < (start.epoch, start.pool):
                continue
            span = order[pool * pool_size : (pool + 1) * pool_size]
            groups = length_groups(lengths[span].tolist(), batch_tokens)
            random.Random(seed * 1_000_003 + epoch * 10_007 + pool).shuffle(groups)
            first = start.batch if (epoch, pool) == (start.epoch, start.pool) else 0
            for b in range(first, len(groups)):
                yield sentences[span[groups[b]]], CorpusPosition(epoch, pool, b + 1, start.shuffle_block)
        epoch += 1


def epoch_order(n: int, block: int, seed: int, epoch: int) -> numpy.ndarray:
    """The positions 0 .. n - 1 in the order one epoch reads them: blocks of `block` consecutive
    positions, the blocks shuffled by (seed, epoch); with `block` 0, in order."""
    if block <= 0:
        return numpy.arange(n)
    n_blocks = (n + block - 1) // block
    starts = numpy.random.default_rng([seed % 2**32, epoch]).permutation(n_blocks) * block
    positions = (starts[:, None] + numpy.arange(block)).ravel()
    return positions[positions < n]


@dataclass
class TrainingBatch:
    """The tensors of one training step.

    chars (CharBatch): the sentences with their markers, as distinct word types.
    targets (torch.Tensor): (B, T) vocabulary ids of every position, -1 where padded.
    n_tokens (int): predictions per direction (sum of lengths - 1).
    position (CorpusPosition): the corpus position just after this batch.
    """

    chars: CharBatch
    targets: torch.Tensor
    n_tokens: int
    position: CorpusPosition

    def pin_memory(self) -> "TrainingBatch":
        """Called by the DataLoader's pinning thread, so copies to CUDA can overlap compute."""
        c = self.chars
        chars = CharBatch(c.type_chars.pin_memory(), c.index.pin_memory(), c.lengths.pin_memory(), c.words, c.lengths)
        return TrainingBatch(chars, self.targets.pin_memory(), self.n_tokens, self.position)

    def to(self, device: torch.device) -> "TrainingBatch":
        non_blocking = device.type == "cuda"
        c = self.chars
        chars = CharBatch(
            c.type_chars.to(device, non_blocking=non_blocking),
            c.index.to(device, non_blocking=non_blocking),
            c.lengths.to(device, non_blocking=non_blocking),
            c.words,
            c.host_lengths if c.host_lengths is not None else c.lengths,
        )
        return TrainingBatch(chars, self.targets.to(device, non_blocking=non_blocking), self.n_tokens, self.position)


class BatchEncoder:
    """Turns sentence indices of a prepared corpus into a `TrainingBatch`, with no Python loop
    over tokens: every word of the table has its char ids and target id computed once.

    corpus (PreparedCorpus): the sentences.
    vocab (Vocabulary): the softmax vocabulary (targets).
    max_chars (int): char ids per token.
    """

    def __init__(self, corpus: PreparedCorpus, vocab: Vocabulary, max_chars: int) -> None:
        self.corpus = corpus
        words = [*corpus.words, SENTENCE_START, SENTENCE_END]
        self.bos, self.eos = len(words) - 2, len(words) - 1
        self.chars = numpy.empty((len(words), max_chars), dtype=numpy.int16)
        for i, word in enumerate(words):
            self.chars[i] = word_char_ids(word, max_chars)
        self.targets = numpy.fromiter((vocab.ids.get(w, vocab.unk_id) for w in words), dtype=numpy.int64, count=len(words))
        self.targets[self.bos], self.targets[self.eos] = vocab.bos_id, vocab.eos_id

    def __call__(self, sentences: numpy.ndarray, position: CorpusPosition) -> TrainingBatch:
        corpus = self.corpus
        lengths = corpus.lengths[sentences].astype(numpy.int64)
        B, T = len(sentences), int(lengths.max(initial=0)) + 2
        ids = numpy.full((B, T), -1, dtype=numpy.int64)
        ids[:, 0] = self.bos
        ids[numpy.arange(B), lengths + 1] = self.eos
        rows = numpy.repeat(numpy.arange(B), lengths)
        within = numpy.arange(int(lengths.sum())) - numpy.repeat(numpy.cumsum(lengths) - lengths, lengths)
        ids[rows, within + 1] = corpus.tokens[numpy.repeat(corpus.starts[sentences], lengths) + within]
        real = ids >= 0
        types, inverse = numpy.unique(ids[real], return_inverse=True)
        index = numpy.full((B, T), -1, dtype=numpy.int64)
        index[real] = inverse
        targets = numpy.where(real, self.targets[ids], -1)
        chars = CharBatch(
            torch.from_numpy(self.chars[types].astype(numpy.int64)),
            torch.from_numpy(index),
            torch.from_numpy(lengths + 2),
        )
        return TrainingBatch(chars, torch.from_numpy(targets), int(lengths.sum()) + B, position)


class BatchStream(torch.utils.data.IterableDataset):
    """The endless batches of `batch_plan`, encoded; with several DataLoader workers, worker k of
    n encodes batches k, k + n, ..., and the DataLoader hands them out in plan order."""

    def __init__(
        self, encoder: BatchEncoder, sentences: numpy.ndarray, batch_tokens: int, pool_size: int, seed: int, start: CorpusPosition
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.sentences = sentences
        self.lengths = encoder.corpus.lengths[sentences]
        self.settings = (batch_tokens, pool_size, seed, start)

    def __iter__(self) -> Iterator[TrainingBatch]:
        info = torch.utils.data.get_worker_info()
        worker, n_workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for i, (indices, position) in enumerate(batch_plan(self.sentences, self.lengths, *self.settings)):
            if i % n_workers == worker:
                yield self.encoder(indices, position)


def batch_loader(stream: BatchStream, workers: int, device: torch.device) -> Generator[TrainingBatch, None, None]:
    """Batches on `device`: built by `workers` DataLoader processes (0: in this process), in
    pinned memory and copied without blocking on CUDA."""
    # Its own generator: the DataLoader draws a seed when it starts, and a draw from torch's
    # global one would shift the dropout masks of a resumed run.
    options: Dict[str, Any] = {
        "batch_size": None,
        "num_workers": workers,
        "pin_memory": device.type == "cuda",
        "generator": torch.Generator().manual_seed(0),
    }
    if workers > 0:
        options.update(
            prefetch_factor=4,
            persistent_workers=False,
            worker_init_fn=_worker_init,
            multiprocessing_context=process_context(preload=(__name__,)),
        )
    with from_package_entry():  # the workers start here, and never run the caller's program again
        loader = iter(torch.utils.data.DataLoader(stream, **options))
    try:
        for batch in loader:
            yield batch.to(device)
    finally:
        del loader  # its worker processes end here, not whenever the generator is collected


def _worker_init(worker_id: int) -> None:
    torch.set_num_threads(1)


def first_sentences(corpus: PreparedCorpus, sentences: numpy.ndarray, limit: Optional[int]) -> List[List[str]]:
    """The words of the first `limit` of `sentences` (all of them for None)."""
    chosen = sentences if limit is None else sentences[:limit]
    return [corpus.sentence(int(i)) for i in chosen]
