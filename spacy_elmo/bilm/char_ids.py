"""Batches of sentences as distinct word types, as torch tensors. The ids themselves (UTF-8 bytes,
or a learned vocabulary, through the `TokenInput` interface) come from token_ids.py, which needs no
torch."""

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy
import torch

from ..token_ids import BOS, BOW, EOS, EOW, PAD, SENTENCE_END, SENTENCE_START, UTF8, TokenInput, Utf8Chars, sentence_ids, word_char_ids

__all__ = ["BOS", "BOW", "EOS", "EOW", "PAD", "SENTENCE_END", "SENTENCE_START", "UTF8", "TokenInput", "Utf8Chars", "word_char_ids"]


def type_inputs(words: Sequence[str], max_chars: int, vocab: TokenInput = UTF8) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """The inputs of token types, as the token layer takes them.

    words (Sequence[str]): the types' texts (`vocab.start` / `vocab.end`: the markers); not empty.
    RETURNS (Tuple[torch.Tensor, Optional[torch.Tensor]]): (V, max_chars) char ids, and (V,) word
        ids where `vocab` has a word embedding, else None.
    """
    chars = torch.from_numpy(numpy.stack([vocab.char_ids(w, max_chars) for w in words]))
    word_ids = torch.tensor([vocab.word_id(w, max_chars) for w in words], dtype=torch.long) if vocab.has_words else None
    return chars, word_ids


def sentences_to_char_ids(sentences: Sequence[Sequence[str]], max_chars: int = 50) -> torch.Tensor:
    """The (B, T, max_chars) char-id tensor of AllenNLP's `batch_to_ids`: each sentence wrapped
    in `<S>` and `</S>`, padded positions all 0.
    """
    return torch.from_numpy(sentence_ids(sentences, max_chars)[0])


@dataclass
class CharBatch:
    """A batch of sentences, with every distinct token type stored once.

    type_chars (torch.Tensor): (V, W) char ids of the distinct types.
    index (torch.Tensor): (B, T) index into the types for each position, -1 where padded.
    type_words (Optional[torch.Tensor]): (V,) word-embedding rows of the types, for a biLM with a
        word embedding; else None.
    lengths (torch.Tensor): (B,) number of real positions per row, sentence markers included.
    words (Optional[List[str]]): the text of each type, used as cache keys; None if unknown.
    host_lengths (Optional[torch.Tensor]): `lengths` on the CPU, kept by `to`, so that the step
        loop's plan is read without waiting for the device.
    """

    type_chars: torch.Tensor
    index: torch.Tensor
    lengths: torch.Tensor
    words: Optional[List[str]] = None
    host_lengths: Optional[torch.Tensor] = None
    type_words: Optional[torch.Tensor] = None

    @property
    def batch_size(self) -> int:
        return int(self.index.shape[0])

    @property
    def n_steps(self) -> int:
        return int(self.index.shape[1])

    def to(self, device: torch.device) -> "CharBatch":
        return CharBatch(
            self.type_chars.to(device),
            self.index.to(device),
            self.lengths.to(device),
            self.words,
            self.host_lengths if self.host_lengths is not None else self.lengths.cpu(),
            self.type_words.to(device) if self.type_words is not None else None,
        )

    @classmethod
    def from_sentences(cls, sentences: Sequence[Sequence[str]], max_chars: int = 50, vocab: TokenInput = UTF8) -> "CharBatch":
        """Wrap each sentence in the markers (`<S>` ... `</S>`) and collect the distinct types.

        sentences (Sequence[Sequence[str]]): token texts per sentence.
        max_chars (int): ids per token.
        vocab (TokenInput): the biLM's token input (`BiLM.vocab`); default: UTF-8 bytes.
        RETURNS (CharBatch): the batch.
        """
        type_ids: Dict[str, int] = {vocab.start: 0, vocab.end: 1}
        n_steps = max((len(s) for s in sentences), default=0) + 2
        index = numpy.full((len(sentences), n_steps), -1, dtype=numpy.int64)
        for row, sentence in enumerate(sentences):
            index[row, 0] = 0
            for t, word in enumerate(sentence, start=1):
                index[row, t] = type_ids.setdefault(word, len(type_ids))
            index[row, len(sentence) + 1] = 1
        words = list(type_ids)
        type_chars, type_words = type_inputs(words, max_chars, vocab)
        lengths = numpy.asarray([len(s) + 2 for s in sentences], dtype=numpy.int64)
        return cls(
            type_chars,
            torch.from_numpy(index),
            torch.from_numpy(lengths),
            words,
            type_words=type_words,
        )

    @classmethod
    def from_char_ids(cls, char_ids: torch.Tensor) -> "CharBatch":
        """Build a batch from a (B, T, W) char-id tensor in which all-zero positions are padding
        (the input convention of the original tools). Markers must already be in place.
        """
        if char_ids.dim() != 3:
            raise ValueError(f"Expected char ids of shape (B, T, W), got {tuple(char_ids.shape)}")
        mask = char_ids[:, :, 0] > 0
        lengths = mask.sum(dim=1)
        flat = char_ids[mask]
        if flat.shape[0] == 0:
            type_chars = char_ids.new_zeros((0, char_ids.shape[2]))
            inverse = flat.new_zeros((0,))
        else:
            type_chars, inverse = torch.unique(flat, dim=0, return_inverse=True)
        index = torch.full(mask.shape, -1, dtype=torch.long, device=char_ids.device)
        index[mask] = inverse
        return cls(type_chars, index, lengths, None)


def cut_char_axis(type_chars: torch.Tensor, max_width: int, pad: int = PAD) -> torch.Tensor:
    """Drop trailing character positions that can only hold padding windows, keeping one
    all-padding window per filter width wherever the full axis had one. The char CNN's max-pool
    gives identical results on the cut tensor.

    type_chars (torch.Tensor): (V, W) char ids.
    max_width (int): the widest filter.
    pad (int): the id of the padding after a token's characters (`TokenInput.pad_id`).
    RETURNS (torch.Tensor): (V, W') with W' <= W.
    """
    if type_chars.shape[0] == 0:
        return type_chars
    # Padding only follows a token's characters (and end-of-word mark).
    real = (type_chars != pad).sum(dim=1)
    longest = int(real.max())
    keep = min(type_chars.shape[1], longest + max_width)
    return type_chars[:, :keep]


def char_length_groups(type_chars: torch.Tensor, max_width: int, overhead: int = 512, pad: int = PAD) -> Tuple[torch.Tensor, List[int]]:
    """Group token types of similar length, so that each group's char axis can be cut on its own
    (`cut_char_axis`): most types are short, and one long type would otherwise make the char CNN
    run over padding for all of them. The groups are the partition of the types sorted by length
    that minimises the char positions the CNN runs over, plus `overhead` positions per group (what
    a call costs). The CNN's results do not depend on the grouping.

    type_chars (torch.Tensor): (V, W) char ids.
    max_width (int): the widest filter.
    overhead (int): positions (rows x chars) a group must save to be worth its own call.
    pad (int): the id of the padding after a token's characters.
    RETURNS (Tuple[torch.Tensor, List[int]]): the rows sorted by increasing length, and the size of
        each group in that order.
    """
    width = type_chars.shape[1]
    real = (type_chars != pad).sum(dim=1)
    order = torch.argsort(real, stable=True)
    values, counts = numpy.unique(real.cpu().numpy(), return_counts=True)
    rows_through = numpy.r_[0, numpy.cumsum(counts)]
    positions = numpy.minimum(width, values + max_width)  # per row, of a group ending at this length
    # best[j]: least cost of the types of the j shortest lengths; start[j]: where its last group starts
    best = numpy.zeros(len(values) + 1)
    start = numpy.zeros(len(values) + 1, dtype=numpy.int64)
    for j in range(1, len(values) + 1):
        costs = best[:j] + (rows_through[j] - rows_through[:j]) * positions[j - 1] + overhead
        start[j] = int(numpy.argmin(costs))
        best[j] = costs[start[j]]
    sizes: List[int] = []
    j = len(values)
    while j > 0:
        sizes.append(int(rows_through[j] - rows_through[start[j]]))
        j = int(start[j])
    return order, sizes[::-1]


def sort_by_length(lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """RETURNS (Tuple[torch.Tensor, torch.Tensor]): the permutation that sorts rows by
    decreasing length, and its inverse.
    """
    order = torch.argsort(lengths, descending=True, stable=True)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.shape[0], device=order.device)
    return order, inverse
