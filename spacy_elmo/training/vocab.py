"""The softmax vocabulary: `<S>`, `</S>`, `<UNK>` first, then words by decreasing frequency
(the layout of the original training code's vocabulary file, one word per line)."""

import hashlib
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Sequence, Union

from ..errors import InputError
from ..output_folders import write_atomically

SPECIALS = ("<S>", "</S>", "<UNK>")


class Vocabulary:
    """Target vocabulary of the language model (inputs always stay characters)."""

    def __init__(self, words: Sequence[str], counts: Sequence[int] = ()) -> None:
        if tuple(words[:3]) != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {tuple(words[:3])}")
        self.words: List[str] = list(words)
        self.counts: List[int] = list(counts) if counts else [0] * len(words)
        self.ids: Dict[str, int] = {w: i for i, w in enumerate(self.words)}

    bos_id, eos_id, unk_id = 0, 1, 2

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def from_counts(cls, counts: Mapping[str, int], max_size: int, min_count: int = 1) -> "Vocabulary":
        """The `max_size` (specials included) most frequent words seen at least `min_count` times."""
        ranked = sorted((w for w, c in counts.items() if c >= min_count and w not in SPECIALS), key=lambda w: (-counts[w], w))
        kept = ranked[: max(0, max_size - len(SPECIALS))]
        return cls([*SPECIALS, *kept], [0, 0, 0, *(counts[w] for w in kept)])

    @classmethod
    def from_sentence_counts(cls, counts: Mapping[str, int], n_sentences: int, max_size: int, min_count: int = 1) -> "Vocabulary":
        """The vocabulary of a text whose word counts and number of sentences are known: the
        markers count once per sentence, `<UNK>` counts every word left out."""
        vocab = cls.from_counts(counts, max_size, min_count)
        vocab.counts[0] = vocab.counts[1] = n_sentences
        vocab.counts[2] = sum(c for w, c in counts.items() if w not in vocab.ids)
        return vocab

    def to_file(self, path: Union[str, Path]) -> None:
        """One `word<TAB>count` per line; words are spaCy tokens, which hold no tab or newline."""
        lines = [f"{w}\t{c}" for w, c in zip(self.words, self.counts)]
        write_atomically(path, "\n".join(lines) + "\n")

    def digest(self) -> str:
        """RETURNS (str): the SHA-256 of the word list in order (what a softmax's rows mean)."""
        return hashlib.sha256("\n".join(self.words).encode("utf8")).hexdigest()

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Vocabulary":
        path = Path(path)
        words, counts = [], []
        try:
            text = path.read_text(encoding="utf8")
        except UnicodeDecodeError as err:
            raise InputError(f"{path} is not UTF-8 text ({err}): put back the vocab.txt that was written with the model") from None
        for number, line in enumerate(text.split("\n"), start=1):
            if not line:
                continue
            word, _, count = line.partition("\t")
            if count and not count.isdigit():
                raise InputError(
                    f"{path}:{number}: expected 'word<TAB>count', got {line[:40]!r}: put back the vocab.txt written with the model"
                )
            words.append(word)
            counts.append(int(count) if count else 0)
        if tuple(words[:3]) != SPECIALS:
            raise InputError(f"{path} does not start with {', '.join(SPECIALS)}: it is not a spacy-elmo vocabulary (or it was edited)")
        return cls(words, counts)


def unigram_perplexity(vocab: Vocabulary, sentences: Iterable[Sequence[str]]) -> float:
    """Perplexity of the unigram model of the vocabulary's training counts over the same
    predictions the biLM makes: every word (unknown ones as `<UNK>`) and one sentence end per
    sentence. Counts get +1 so that no prediction has probability 0."""
    import math

    counts = [c + 1 for c in vocab.counts]
    total = sum(counts) - counts[vocab.bos_id]  # `<S>` is never predicted going forward
    nll, n = 0.0, 0
    for sentence in sentences:
        for word in [*sentence, "</S>"]:
            nll -= math.log(counts[vocab.ids.get(word, vocab.unk_id)] / total)
            n += 1
    return math.exp(nll / max(1, n))
