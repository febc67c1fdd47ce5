"""Which of a word's usages are one period's own: the usages a sense that came (B) or went (A) is made of.

Two witnesses, either of which puts a usage in its period's group (`period_groups`):

- **Its neighbourhood** (`period_neighbourhoods`): among its nearest usages, so many of its own period that chance
  does not give it.
- **A discriminant of the periods trained without its document** (`discriminated`): a linear discriminant of A
  against B (shrunk, in the usages' first `DIMENSIONS` principal directions) fitted on the other documents' usages
  (cross-fitted, `FOLDS` folds of documents, `REPEATS` fold draws averaged) scores each usage; B's usages beyond the
  score all but `BEYOND` of A's stay below (and A's below all but as many of B's) are that period's, where there are
  more of them than that share gives by chance (binomial, p <= `DISCRIMINANT_ALPHA`). Where A and B differ by a
  sense one of them has, the discriminant's score is highest on that sense's usages (the classifier two-sample
  test's witness: Lopez-Paz & Oquab 2017); trained without the usage's document, it does not learn one document's
  topic. It finds a sense that came whose usages lie near some of A's (a donor's contexts much like the word's own),
  where the neighbourhoods do not: docs/results.md.

Both are read from the context-only vectors where the indexes keep them (`senses.side_sense_clusters`).
"""

import math
from typing import Optional

import numpy


def binomial_tail(x: int, m: int, p: float) -> float:
    """RETURNS (float): P(X >= x) for X ~ Binomial(m, p), summed in logs (exact; m of a few thousand at most)."""
    if x <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    logs = [
        math.lgamma(m + 1) - math.lgamma(i + 1) - math.lgamma(m - i + 1) + i * math.log(p) + (m - i) * math.log1p(-p)
        for i in range(x, m + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


NEIGHBOURS, NEIGHBOUR_ALPHA = 20, 0.001  # a usage of one period among its nearest neighbours: how many, and how far past chance


def period_neighbourhoods(
    unit: numpy.ndarray,
    n_a: int,
    neighbours: int = NEIGHBOURS,
    alpha: float = NEIGHBOUR_ALPHA,
    known: Optional[numpy.ndarray] = None,
) -> numpy.ndarray:
    """Each usage's period group: "A" or "B" where it lies among its own period's usages past chance, else "both".

    A usage is its period's core where, of its `neighbours` nearest usages (cosine; more where its period is so large
    a share that all of them would not reach `alpha` a tenth over; at most a fifth of the usages), so many
    are of its own period that a binomial draw at that period's share of the other usages reaches it with p <=
    `alpha`; the group is the core and the usages of that period at least half of whose neighbours are in the core.
    A sense that came in B lies among B's usages whatever it shares with A's senses in the mean, where a clustering
    of all usages cut it across (the planted usages were told from the word's other usages of B at AUC 0.92 by their
    neighbours, and k-means split them over 2-3 senses: docs/results.md).

    known (Optional[numpy.ndarray]): groups already found ("A", "B", "both" a usage, as returned): each period's group
        is read without the other period's known group, as without its own found here.
    """
    n = len(unit)
    out = numpy.array(["both"] * n, dtype=object)
    if not 0 < n_a < n - 1:
        return out
    # exact ties (a sentence repeated) broken at random, not by the order of the usages (A's first): else the copies of
    # one usage are each other's neighbours by period
    similar = unit @ unit.T + numpy.random.default_rng(0).uniform(0.0, 1e-12, (n, n))
    numpy.fill_diagonal(similar, -numpy.inf)
    in_b = numpy.arange(n) >= n_a
    known_a = numpy.zeros(n, dtype=bool) if known is None else numpy.asarray(known) == "A"
    known_b = numpy.zeros(n, dtype=bool) if known is None else numpy.asarray(known) == "B"
    # each period's group read where the other's is left out: a sense that came takes B's usages away from the
    # word's others, so among those A's share is above the word's, and A's usages looked A's own past chance (a
    # "went from A" group of 40-70 usages, none planted, beside planted senses of 45%)
    group_b = _own_group(similar, in_b, ~known_a, neighbours, alpha)
    group_a = _own_group(similar, ~in_b, ~(group_b | known_b), neighbours, alpha)
    group_b = _own_group(similar, in_b, ~(group_a | known_a), neighbours, alpha)
    out[group_b] = "B"
    out[group_a & ~group_b] = "A"
    return out


def _own_group(similar: numpy.ndarray, mine: numpy.ndarray, pool: numpy.ndarray, neighbours: int, alpha: float) -> numpy.ndarray:
    """The usages of `mine` (a period) among `pool` that lie among their period's usages of the pool past chance
    (`period_neighbourhoods`); RETURNS a mask over all usages."""
    found = numpy.zeros(len(mine), dtype=bool)
    index = numpy.flatnonzero(pool)
    m = len(index)
    ours = mine[index]
    if m < 6 or not 0 < ours.sum() < m:
        return found
    share = (ours.sum() - 1) / (m - 1)
    if share <= 0:
        return found
    # enough neighbours that all of them of one period reach alpha with room (a tenth of it) at that period's share
    k = min(max(neighbours, math.ceil(math.log(alpha / 10) / math.log(share))), (m - 1) // 5)
    if k < 5:
        return found
    near = numpy.argsort(-similar[numpy.ix_(index, index)], axis=1)[:, :k]
    own = ours[near].sum(1)
    tails = {int(c): binomial_tail(int(c), k, share) for c in numpy.unique(own[ours])}
    core = ours & numpy.array([tails.get(int(c), 1.0) <= alpha if o else False for c, o in zip(own, ours)])
    group = core | (ours & (core[near].mean(1) >= 0.5))
    found[index[group]] = True
    return found


DIMENSIONS, FOLDS, REPEATS, SHRINK = 64, 5, 5, 1.0  # the discriminant: principal directions, folds, fold draws, shrinkage
BEYOND, DISCRIMINANT_ALPHA = 0.01, 0.001  # the other period's share allowed past the line; how far past chance the count
LINE_USAGES = 50  # a period's usages the line is drawn on, at least: it then lies between the two furthest of them


def discriminant_scores(unit: numpy.ndarray, n_a: int, groups: Optional[numpy.ndarray] = None, seed: int = 0) -> numpy.ndarray:
    """Each usage's score toward B (A's usages the first `n_a`): a linear discriminant of the periods fitted without
    the usage's document, averaged over REPEATS draws of FOLDS folds of documents (`groups`: each usage's document;
    None: each usage its own). The discriminant is shrunk toward the identity (SHRINK of the mean variance) in the
    usages' first DIMENSIONS principal directions. RETURNS (numpy.ndarray): (n,), higher: more B's."""
    n = len(unit)
    centred = unit - unit.mean(0)
    _, _, vt = numpy.linalg.svd(centred, full_matrices=False)
    x = centred @ vt[:DIMENSIONS].T
    is_b = numpy.arange(n) >= n_a
    documents = numpy.unique(numpy.asarray(groups), return_inverse=True)[1] if groups is not None else numpy.arange(n)
    rng = numpy.random.default_rng(seed)
    total = numpy.zeros(n)
    for _ in range(REPEATS):
        fold = rng.integers(FOLDS, size=int(documents.max()) + 1)[documents]
        for k in range(FOLDS):
            train, held = fold != k, fold == k
            if not held.any() or is_b[train].all() or not is_b[train].any():
                continue
            xt = x[train]
            mean_b, mean_a = xt[is_b[train]].mean(0), xt[~is_b[train]].mean(0)
            cov = numpy.atleast_2d(numpy.cov(xt.T))
            cov = cov + numpy.eye(len(cov)) * (SHRINK * numpy.trace(cov) / len(cov) + 1e-12)  # usages all alike: no singular
            w = numpy.linalg.solve(cov, mean_b - mean_a)
            total[held] += (x[held] - (mean_a + mean_b) / 2) @ w
    return total / REPEATS


def discriminated(unit: numpy.ndarray, n_a: int, groups: Optional[numpy.ndarray] = None, seed: int = 0) -> numpy.ndarray:
    """Each usage's period group by the discriminant (`discriminant_scores`): "B" for B's usages above the score all but
    BEYOND of A's stay below, "A" for A's below the score all but BEYOND of B's stay above, each group only where it
    holds more usages than BEYOND of its period gives at p <= DISCRIMINANT_ALPHA (binomial), and only where each
    period has LINE_USAGES or more (with one usage in A, B's were all past its line; a stability run reads 80% of
    the usages, so a floor of 100 lost the groups of words with 110-125 usages in A to their resamples); else "both"."""
    n = len(unit)
    out = numpy.array(["both"] * n, dtype=object)
    if min(n_a, n - n_a) < LINE_USAGES:
        return out
    score = discriminant_scores(unit, n_a, groups, seed)
    is_b = numpy.arange(n) >= n_a
    above, below = numpy.quantile(score[~is_b], 1 - BEYOND), numpy.quantile(score[is_b], BEYOND)
    for side, mine, past in (("B", is_b, score > above), ("A", ~is_b, score < below)):
        group = mine & past
        if binomial_tail(int(group.sum()), int(mine.sum()), BEYOND) <= DISCRIMINANT_ALPHA:
            out[group] = side
    return out


def period_groups(unit: numpy.ndarray, n_a: int, groups: Optional[numpy.ndarray] = None, seed: int = 0) -> numpy.ndarray:
    """Each usage's period group, "A", "B" or "both": its period's where its neighbourhood (`period_neighbourhoods`) or
    the discriminant (`discriminated`) says so. Measured on planted change in article order: the neighbourhoods alone
    found a planted sense of 30-45% (pure, marked) in 10 of 24 words, with the discriminant 18 of 24, no untouched word
    marked (docs/results.md)."""
    apart = discriminated(unit, n_a, groups, seed)
    near = period_neighbourhoods(unit, n_a, known=apart)
    return numpy.where(near == "both", apart, near)
