"""Lexical substitutes: what a biLM's own two language models predict at a usage from its context alone.

The top layer's context-only vector of a usage (`context.bin`: the forward LM's state at the token before it and
the backward LM's state at the token after it) is exactly what the biLM's softmax reads to predict the word
there, so a usage index that keeps the context-only vectors gives every usage's substitutes without embedding
again. A substitute's score is log p(w | left) + log p(w | right) - log p(w): the two directions' predictions
multiplied and divided by the word's prior (its share of the biLM's training text), which is p(w | both sides)
where the two sides are independent given the word; without the division the likeliest are the commonest words
("the", ",") everywhere. The markers, `<UNK>` and the target's own forms are left out. A usage's K likeliest substitutes, as a
bag of words weighted by idf over the word's usages, are a representation for senses (Amrami & Goldberg 2018
cluster such bags), and a sense's most distinctive substitutes name it.

Only a biLM with its softmax has substitutes: a `spacy-elmo pretrain` folder (vocab.txt + softmax.pt), or a
released biLM whose published softmax is at hand (`spacy-elmo download original --softmax`).
"""

from pathlib import Path
from typing import AbstractSet, Any, Dict, List, Optional, Sequence, Tuple

import numpy

from ..types import PathLike

TOP_SUBSTITUTES = 20  # a usage's substitutes kept for its bag
ORIGINAL_WORDS = 100_000  # a released softmax is cut to its most frequent words (793,471 for the original: 1.6 GB)
NOT_SUBSTITUTES = ("<S>", "</S>", "<UNK>")


class Substitutes:
    """A biLM's softmax and vocabulary, reading context-only top-layer vectors (n, 2P).

    softmax: the biLM's `SharedSoftmax`; words (Sequence[str]): its vocabulary, in id order.
    counts (Sequence[int]): each word's count in the biLM's training text, for the prior (none: no division).
    source (str): where the softmax was read from.
    """

    def __init__(self, softmax: Any, words: Sequence[str], counts: Sequence[int] = (), source: str = "") -> None:
        self.softmax = softmax.eval()
        self.words = list(words)
        total = float(sum(counts))
        # log p(w) from the training counts (at least 1 each); none known: no division
        self.log_prior = numpy.log(numpy.maximum(numpy.asarray(counts, dtype=numpy.float64), 1.0) / total) if total > 0 else None
        self.source = source
        self._ids = {w: i for i, w in enumerate(self.words)}
        self._lower: Dict[str, List[int]] = {}
        for i, w in enumerate(self.words):
            self._lower.setdefault(w.lower(), []).append(i)
        self._never = [self._ids[w] for w in NOT_SUBSTITUTES if w in self._ids]

    @classmethod
    def of_model(cls, model: PathLike, max_words: Optional[int] = ORIGINAL_WORDS) -> Optional["Substitutes"]:
        """RETURNS (Optional[Substitutes]): the substitutes of the biLM `model` where its softmax is at hand, else None:
        a `spacy-elmo pretrain` folder (vocab.txt + softmax.pt, with the word counts for the prior), a biLM folder with
        a released softmax beside it (softmax_weights.hdf5 + vocab.txt), or a released model's name whose softmax is
        in the cache (`spacy-elmo download NAME --softmax`); a released softmax cut to its `max_words` most frequent
        words (None: all) and, without counts, not divided by a prior."""
        from ..bilm.folders import find_bilm_folder
        from ..bilm.original_softmax import SOFTMAX_FILES, load_original_softmax

        folder = Path(model)
        if folder.is_dir() and (folder / "softmax.pt").is_file() and (folder / "vocab.txt").is_file():
            from ..training.checkpoint import load_model_dir

            _, vocab, softmax = load_model_dir(folder)
            if vocab is None or softmax is None:
                return None
            return cls(softmax, vocab.words, vocab.counts, str(folder))
        bilm = find_bilm_folder(folder) if folder.is_dir() else None
        softmax_folder: Optional[Path] = folder if bilm is not None and all((folder / n).is_file() for n in SOFTMAX_FILES) else None
        if not folder.exists():
            from ..released.download import cached_folder, cached_softmax
            from ..released.catalogue import CATALOGUE

            if str(model) in CATALOGUE:
                softmax_folder = cached_softmax(str(model))
                bilm = cached_folder(str(model)) if softmax_folder is not None else None
        if softmax_folder is None or bilm is None:
            return None
        softmax, words = load_original_softmax(softmax_folder, bilm.options().projection_dim, max_words)
        return cls(softmax, words, (), str(softmax_folder))

    def left_out(self, forms: AbstractSet[str]) -> List[int]:
        """RETURNS (List[int]): the ids never offered as a substitute: the markers, <UNK>, and every casing of `forms`."""
        return self._never + [i for form in forms for i in self._lower.get(form.lower(), [])]

    def top(
        self, context_top: numpy.ndarray, k: int = TOP_SUBSTITUTES, forms: AbstractSet[str] = frozenset()
    ) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """The `k` likeliest substitutes of each usage from both directions.

        context_top (numpy.ndarray): (n, 2P) context-only top-layer vectors (forward half, backward half).
        forms (Set[str]): the target's own forms, left out.
        RETURNS (Tuple[numpy.ndarray, numpy.ndarray]): ids (n, k) best first, and their scores (see the module docstring).
        """
        import torch

        vectors = torch.from_numpy(numpy.ascontiguousarray(context_top, dtype=numpy.float32))
        P = vectors.shape[1] // 2
        never = torch.tensor(self.left_out(forms), dtype=torch.long)
        prior = None if self.log_prior is None else torch.from_numpy(self.log_prior.astype(numpy.float32))
        ids, scores = [], []
        with torch.no_grad():
            for start in range(0, len(vectors), 256):
                block = vectors[start : start + 256]
                both = self.softmax.log_prob(block[:, :P]) + self.softmax.log_prob(block[:, P:])
                if prior is not None:
                    both -= prior
                both[:, never] = float("-inf")
                best = both.topk(min(k, both.shape[1]), dim=1)
                ids.append(best.indices.numpy())
                scores.append(best.values.numpy())
        if not ids:
            return numpy.zeros((0, k), dtype=numpy.int64), numpy.zeros((0, k), dtype=numpy.float32)
        return numpy.concatenate(ids), numpy.concatenate(scores)


def substitute_bags(ids: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Each usage's substitutes as a bag of words weighted by idf over these usages, unit length.

    ids (numpy.ndarray): (n, k) substitute ids of a word's usages.
    RETURNS (Tuple[numpy.ndarray, numpy.ndarray]): float64 (n, m) bags over the m substitutes that occur, and
        those m ids (the columns).
    """
    columns, inverse = numpy.unique(ids, return_inverse=True)
    n = len(ids)
    bags = numpy.zeros((n, len(columns)))
    bags[numpy.repeat(numpy.arange(n), ids.shape[1]), inverse.reshape(-1)] = 1.0
    idf = numpy.log((1.0 + n) / (1.0 + bags.sum(0))) + 1.0
    bags *= idf
    bags /= numpy.maximum(numpy.linalg.norm(bags, axis=1, keepdims=True), 1e-12)
    return bags, columns
