"""Which words changed meaning between two corpora: the measures of Kutuzov & Giulianelli (2020) over the
usages of each word (SemEval-2020 Task 1, lexical semantic change detection).

- APD (average pairwise distance): the mean cosine distance over all pairs of one usage from each corpus. The
  mean of the pairs' cosines is the dot product of the two sides' mean unit vectors (the dot product is
  bilinear), so APD is exact over every pair at the cost of one pass over the usages: no pairs are sampled.
- PRT (inverted similarity of prototypes): 1 / cos(mean of A's usages, mean of B's usages); 1 where the means
  point the same way, larger the more they differ.
- Energy: the energy distance of the two sides' usage distributions on cosine distances, 2 E d(A, B) -
  E d(A, A') - E d(B, B') with d = 1 - cos over pairs of distinct usages (unbiased). APD is its first term alone,
  so a sense that comes to B raises APD's pairs within B as much as those across; the energy distance subtracts the
  spread within each side, and so moves with a sense that comes or goes (the verdict's statistic: verdict.py).
- JSD: the Jensen-Shannon divergence of the two corpora's distributions over clusters of the word's usages
  (spherical k-means on both sides' usages together; at most JSD_USAGES a side, sampled with a fixed seed).

Both read the usage vectors as they are (a layer or a mix: `index-usages --layer`); `standardize` first
subtracts each corpus's mean over all its usages (the common direction that every contextual vector shares).
"""

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Sequence, Union

import numpy

from ..errors import InputError


class Indexed(Protocol):
    """What the measures read of a usage index (index.py's UsageIndex): its vectors, the rows of each key, and
    what makes two indexes comparable."""

    @property
    def vectors(self) -> Any: ...

    @property
    def keys(self) -> Sequence[str]: ...

    @property
    def fingerprint(self) -> str: ...

    @property
    def layer_weights(self) -> Any: ...

    @property
    def match(self) -> str: ...

    @property
    def path(self) -> Any: ...

    def rows_of(self, key: str) -> numpy.ndarray: ...

    def __len__(self) -> int: ...


MEASURES = ("apd", "prt", "energy", "jsd")
JSD_CLUSTERS, JSD_USAGES, JSD_SEED = 8, 10_000, 0
DEFAULT_MIN_USAGES = 5
_CHUNK = 1 << 15  # usages read at a time: a word's usages are never all in memory at once


class UsageRows:
    """A word's usage vectors as rows of a (memory-mapped) matrix, read in chunks: memory stays bounded by the
    chunk, however many usages the word has.

    vectors (numpy.ndarray): (n_usages, D), e.g. a usage index's float16 `vectors`.
    rows (numpy.ndarray): the word's rows.
    centre (Optional[numpy.ndarray]): a vector subtracted from each usage (`standardize`).
    """

    def __init__(self, vectors: numpy.ndarray, rows: numpy.ndarray, centre: Optional[numpy.ndarray] = None) -> None:
        self.vectors, self.rows, self.centre = vectors, numpy.sort(numpy.asarray(rows, dtype=numpy.int64)), centre

    def __len__(self) -> int:
        return len(self.rows)

    def mean(self, unit: bool = False) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): float64 (D,), the mean usage (of the unit vectors, with `unit`)."""
        total = numpy.zeros(self.vectors.shape[1], dtype=numpy.float64)
        for start in range(0, len(self.rows), _CHUNK):
            chunk = numpy.asarray(self.vectors[self.rows[start : start + _CHUNK]], dtype=numpy.float64)
            _check_finite(chunk)
            if self.centre is not None:
                chunk -= self.centre
            total += (_unit(chunk) if unit else chunk).sum(0)
        return total / max(len(self.rows), 1)

    def sample(self, n: int, seed: int = JSD_SEED) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): float64 (min(n, len), D): the usages, or n of them drawn with `seed`, in row order."""
        rows = self.rows
        if len(rows) > n:
            rows = numpy.sort(numpy.random.default_rng(seed).choice(rows, n, replace=False))
        vectors = numpy.asarray(self.vectors[rows], dtype=numpy.float64)
        _check_finite(vectors)
        return vectors - self.centre if self.centre is not None else vectors


Usages = Union[numpy.ndarray, UsageRows]


def _check_finite(vectors: numpy.ndarray) -> None:
    if not numpy.isfinite(vectors).all():
        raise InputError(
            "the usage index holds vectors that are not finite (NaN or infinite): it is damaged; build it again "
            "(spacy-elmo index-usages MODEL CORPUS OUTPUT)"
        )


def _mean(usages: Usages, unit: bool = False) -> numpy.ndarray:
    if isinstance(usages, UsageRows):
        return usages.mean(unit)
    vectors = numpy.asarray(usages, dtype=numpy.float64)
    return (_unit(vectors) if unit else vectors).mean(0)


def _unit(vectors: numpy.ndarray) -> numpy.ndarray:
    vectors = numpy.asarray(vectors, dtype=numpy.float64)
    norms = numpy.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / numpy.where(norms > 0, norms, 1.0)


def apd(a: Usages, b: Usages) -> float:
    """The average cosine distance over all pairs of usages, one from `a` and one from `b`: 1 - the dot product
    of the two sides' mean unit vectors (equal to the mean over the n_a * n_b pairs, in one pass).

    a (Usages): (n_a, D) usage vectors of the word in corpus A (an array, or `UsageRows` of an index).
    b (Usages): (n_b, D) in corpus B.
    RETURNS (float): in [0, 2]; 0 where every usage points the same way (never below: rounding is clipped).
    """
    if not len(a) or not len(b):
        raise ValueError("APD needs at least one usage on each side")
    return max(0.0, float(1.0 - _mean(a, unit=True) @ _mean(b, unit=True)))


def prt(a: Usages, b: Usages) -> float:
    """The inverted cosine similarity of the two corpora's mean usage vectors, 1 / cos(mean_a, mean_b).

    RETURNS (float): 1.0 where the means point the same way; inf where they are orthogonal or opposite.
    """
    if not len(a) or not len(b):
        raise ValueError("PRT needs at least one usage on each side")
    mean_a, mean_b = _mean(a), _mean(b)
    if numpy.array_equal(mean_a, mean_b):  # the same usages on both sides: no rounding in 1 / cos
        return 1.0
    cosine = float(_unit(mean_a) @ _unit(mean_b))
    return 1.0 / cosine if cosine > 0 else math.inf


def energy_from_sums(sum_a: numpy.ndarray, sum_b: numpy.ndarray, n_a: int, n_b: int) -> numpy.ndarray:
    """The energy distance on cosine distances from each side's sum of unit vectors (the last axis): with
    d = 1 - cos, E d(A, B) = 1 - S_a.S_b / (n_a n_b) and, over pairs of distinct usages, E d(A, A') =
    1 - (|S_a|^2 - n_a) / (n_a (n_a - 1)); so 2 E d(A, B) - E d(A, A') - E d(B, B') is the unbiased estimate of the
    squared distance between the two sides' mean unit vectors (the linear-kernel MMD^2 of the unit vectors)."""
    within_a = ((sum_a * sum_a).sum(-1) - n_a) / (n_a * (n_a - 1))
    within_b = ((sum_b * sum_b).sum(-1) - n_b) / (n_b * (n_b - 1))
    return within_a + within_b - 2.0 * (sum_a * sum_b).sum(-1) / (n_a * n_b)


def energy(a: Usages, b: Usages) -> float:
    """The energy distance of the two sides' usage distributions on cosine distances (see `energy_from_sums`).

    RETURNS (float): about 0 where both sides' usages come from one distribution (it can fall a little below:
    unbiased); larger the more a sense came or went, or shifted.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("the energy distance needs at least two usages on each side")
    return float(energy_from_sums(_mean(a, unit=True) * len(a), _mean(b, unit=True) * len(b), len(a), len(b)))


def cluster_jsd(a: Usages, b: Usages, k: int = JSD_CLUSTERS, seed: int = JSD_SEED, max_usages: int = JSD_USAGES) -> float:
    """The Jensen-Shannon divergence (nats, at most ln 2) of A's and B's distributions over k clusters of all the
    word's usages: spherical k-means, 30 rounds from k usages drawn with `seed`; at most `max_usages` a side.

    RETURNS (float): 0 where both sides fall into the clusters alike; ln 2 where no cluster holds usages of both.
    """
    if not len(a) or not len(b):
        raise ValueError("JSD needs at least one usage on each side")
    a_, b_ = (_sampled(x, max_usages, seed) for x in (a, b))
    both = _unit(numpy.concatenate([a_, b_]))
    centres = both[numpy.random.default_rng(seed).choice(len(both), min(k, len(both)), replace=False)]
    for _ in range(30):
        labels = (both @ centres.T).argmax(1)
        centres = _unit(numpy.stack([both[labels == j].mean(0) if (labels == j).any() else centres[j] for j in range(len(centres))]))
    p = numpy.bincount(labels[: len(a_)], minlength=len(centres)) / len(a_)
    q = numpy.bincount(labels[len(a_) :], minlength=len(centres)) / len(b_)
    return jensen_shannon(p, q)


def jensen_shannon(p: numpy.ndarray, q: numpy.ndarray) -> float:
    """RETURNS (float): the Jensen-Shannon divergence (nats) of two distributions over the same outcomes."""
    p, q = numpy.asarray(p, dtype=numpy.float64), numpy.asarray(q, dtype=numpy.float64)
    m = (p + q) / 2

    def kl(x: numpy.ndarray) -> float:
        held = x > 0
        return float((x[held] * numpy.log(x[held] / m[held])).sum())

    return (kl(p) + kl(q)) / 2


def _sampled(usages: Usages, n: int, seed: int) -> numpy.ndarray:
    if isinstance(usages, UsageRows):
        return usages.sample(n, seed)
    vectors = numpy.asarray(usages, dtype=numpy.float64)
    if len(vectors) > n:
        vectors = vectors[numpy.sort(numpy.random.default_rng(seed).choice(len(vectors), n, replace=False))]
    return vectors


SCORES: Dict[str, Callable[[Usages, Usages], float]] = {"apd": apd, "prt": prt, "energy": energy, "jsd": cluster_jsd}


def usage_similarity(a: numpy.ndarray, b: numpy.ndarray) -> numpy.ndarray:
    """The cosine of two usages' vectors, per layer: what the DURel/WUG judgments (1-4) of a usage pair rate.

    a, b (numpy.ndarray): (D,) or (n_layers, D) vectors of one usage each.
    RETURNS (numpy.ndarray): () or (n_layers,) cosines.
    """
    return numpy.einsum("...d,...d->...", _unit(a), _unit(b))


@dataclass
class WordChange:
    """One word's change between corpus A and corpus B.

    word (str): the word (the key its usages are filed under).
    n_a, n_b (int): its usages in A and in B.
    scores (Dict[str, float]): each measure's value ("apd", "prt"); empty where it has too few usages.
    note (str): why there is no score ("" where there is one).
    """

    word: str
    n_a: int
    n_b: int
    scores: Dict[str, float] = field(default_factory=dict)
    note: str = ""


def compare(
    usages_a: Callable[[str], Usages],
    usages_b: Callable[[str], Usages],
    words: Iterable[str],
    measures: Sequence[str] = MEASURES,
    min_usages: int = DEFAULT_MIN_USAGES,
    progress: Optional[Callable[..., Iterable[str]]] = None,  # progress(items, desc=...)
) -> List[WordChange]:
    """The change of each word, sorted by the first measure (most changed first; words without a score last).

    usages_a, usages_b (Callable[[str], Usages]): a word's (n, D) usage vectors in A and in B.
    min_usages (int): fewer usages on either side: listed with a note, never scored (at least 2 for the energy distance).
    """
    unknown = [m for m in measures if m not in MEASURES]
    if unknown or not measures:
        raise InputError(f"measures are {', '.join(MEASURES)}: got {', '.join(unknown) or 'none'}")
    rows = []
    for word in progress(words, desc="Scoring") if progress is not None else words:
        a, b = usages_a(word), usages_b(word)
        row = WordChange(word, len(a), len(b))
        least = max(min_usages, 2 if "energy" in measures else 1)
        if min(len(a), len(b)) < least:
            row.note = f"too few usages: {len(a)} in A, {len(b)} in B (at least {least} on each side)"
        else:
            for measure in measures:
                row.scores[measure] = SCORES[measure](a, b)
        rows.append(row)
    first = measures[0]
    return sorted(rows, key=lambda r: (not r.scores, -r.scores.get(first, 0.0), r.word))


def index_change(
    index_a: Indexed,
    index_b: Indexed,
    words: Optional[Sequence[str]] = None,
    measures: Sequence[str] = MEASURES,
    min_usages: int = DEFAULT_MIN_USAGES,
    standardize: bool = False,
    progress: Optional[Callable[..., Iterable[str]]] = None,  # progress(items, desc=...)
) -> List[WordChange]:
    """`compare` over two usage indexes built by the same biLM with the same layer settings and matching.

    words (Optional[Sequence[str]]): the target words; None: every word with at least `min_usages` usages
        in both indexes.
    standardize (bool): subtract each index's mean usage vector first.
    """
    check_comparable(index_a, index_b)
    if words is None:
        words = sorted(
            k for k in set(index_a.keys) & set(index_b.keys) if min(len(index_a.rows_of(k)), len(index_b.rows_of(k))) >= min_usages
        )
    centres = [mean_usage(index) if standardize else None for index in (index_a, index_b)]

    def reader(index: Indexed, centre: Optional[numpy.ndarray]) -> Callable[[str], Usages]:
        return lambda word: UsageRows(index.vectors, index.rows_of(word), centre)

    return compare(reader(index_a, centres[0]), reader(index_b, centres[1]), words, measures, min_usages, progress)


def mean_usage(index: Indexed) -> numpy.ndarray:
    """RETURNS (numpy.ndarray): float64 (D,), the mean of every usage vector of the index (`standardize`'s centre)."""
    return UsageRows(index.vectors, numpy.arange(len(index))).mean()


def check_comparable(index_a: Indexed, index_b: Indexed) -> None:
    """Refuse, in one line, two indexes whose vectors are not comparable."""
    for what, a, b in (
        ("biLMs", index_a.fingerprint, index_b.fingerprint),
        ("layer settings", list(map(float, index_a.layer_weights)), list(map(float, index_b.layer_weights))),
        ("key matching", index_a.match, index_b.match),
        (
            "vectors (the target's own or context-only)",
            getattr(index_a, "representation", "target"),
            getattr(index_b, "representation", "target"),
        ),
        (
            "readings of sentences in capitals",
            getattr(index_a, "meta", {}).get("fold_capitals", False),
            getattr(index_b, "meta", {}).get("fold_capitals", False),
        ),
    ):
        if a != b:
            raise InputError(
                f"the two indexes were built with different {what} ({index_a.path}, {index_b.path}): build both with the same "
                "MODEL, --layer, --lemmas and --keep-capitals"
            )
    if not len(index_a) or not len(index_b):
        empty = index_a.path if not len(index_a) else index_b.path
        raise InputError(f"{empty} holds no usages: index a corpus that holds the words")


def finite(value: Optional[float]) -> Optional[float]:
    """RETURNS: the value as a float, or None where it is None, NaN or infinite (the JSON holds no NaN or Infinity)."""
    return float(value) if value is not None and math.isfinite(value) else None
