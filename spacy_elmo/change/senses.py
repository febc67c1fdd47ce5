"""The evidence behind a word's change score: its usages clustered into senses over both corpora, each sense's
count and share per corpus, the usages nearest each sense's centre, the usages that most set each corpus apart from
the other (`witness`), a 2-D map of the usages, and a bootstrap interval of the score.

Sense clusters: spherical k-means (cosine) over the unit vectors of the word's usages from both sides together,
k-means++ starts drawn with `seed`, the best of `N_INIT` runs; k from 2 to `MAX_SENSES` chosen by the mean
silhouette (cosine distance), the smallest k among ties. At most `max_usages` usages a side (drawn with `seed`).
"""

import math
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy

from .measures import UsageRows, Usages, _unit, energy_from_sums, jensen_shannon
from .period_groups import BEYOND, NEIGHBOUR_ALPHA, NEIGHBOURS, binomial_tail, period_groups
from .sense_checks import (
    RUN_STARTS,
    STABILITY_RUNS,
    STABLE,
    check_marks,
    few_documents,
    jaccard_stability,
    marks_allowed,
    name_senses,
    period_p_values,
    settled,
)
from .sense_checks import stability_runs as stability_runs_of
from .sense_marks import BOTH, CAME, LESS, MORE, ONLY_A, ONLY_B, WENT, moved

MAX_SENSES, N_INIT, ITERATIONS = 8, 10, 50
EVIDENCE_USAGES, DRAWS, SEED = 1000, 1000, 0
PERMUTATIONS, FDR = 1000, 0.05  # the permutation test of each word's score; words called changed at this FDR
EXAMPLES = 3  # usages shown per sense and per side
SAME_USAGE = 0.999  # cosine above which two usages shown are one context repeated ("Early family." as a heading)
CLUSTER_METHOD = f"spherical k-means (cosine) over both sides' usages, best of {N_INIT} k-means++ starts"


@dataclass
class SenseClusters:
    """Clusters of unit vectors: `labels` (n,), unit `centres` (k, D), the mean `silhouette` (nan for k < 2)."""

    labels: numpy.ndarray
    centres: numpy.ndarray
    silhouette: float
    rule_silhouette: float = float("nan")  # the silhouette the SenseRule compared with its least (of both periods' usages)


def spherical_kmeans(unit: numpy.ndarray, k: int, seed: int = SEED, n_init: int = N_INIT) -> SenseClusters:
    """The best (highest total cosine to the centres) of `n_init` runs of spherical k-means from k-means++ starts.

    unit (numpy.ndarray): (n, D) unit vectors; k (int): clusters, at most n.
    """
    rng = numpy.random.default_rng(seed)
    n = len(unit)
    k = max(1, min(k, n))
    best: Optional[Tuple[float, numpy.ndarray, numpy.ndarray]] = None
    for _ in range(n_init):
        centres = [unit[rng.integers(n)]]
        for _ in range(1, k):  # k-means++: the next start far (in cosine distance) from those chosen
            distance = numpy.clip(1.0 - (unit @ numpy.stack(centres).T).max(1), 0.0, None)
            total = distance.sum()
            centres.append(unit[rng.choice(n, p=distance / total)] if total > 0 else unit[rng.integers(n)])
        c = numpy.stack(centres)
        labels = numpy.full(n, -1)
        for _ in range(ITERATIONS):
            new = (unit @ c.T).argmax(1)
            if numpy.array_equal(new, labels):
                break
            labels = new
            c = _unit(numpy.stack([unit[labels == j].sum(0) if (labels == j).any() else c[j] for j in range(k)]))
        fit = float((unit * c[labels]).sum())
        if best is None or fit > best[0] + 1e-9:
            best = (fit, labels, c)
    assert best is not None
    return SenseClusters(_relabel(best[1]), best[2][_order(best[1])], float("nan"))


def _order(labels: numpy.ndarray) -> numpy.ndarray:
    """The clusters by size (largest first; ties: the first seen first)."""
    ids, first, counts = numpy.unique(labels, return_index=True, return_counts=True)
    return ids[numpy.lexsort((first, -counts))]


def _relabel(labels: numpy.ndarray) -> numpy.ndarray:
    mapping = {int(old): new for new, old in enumerate(_order(labels))}
    return numpy.array([mapping[int(x)] for x in labels])


def silhouette(unit: numpy.ndarray, labels: numpy.ndarray) -> float:
    """RETURNS (float): the mean silhouette over the usages (cosine distance; a usage alone in its cluster: 0)."""
    ids = numpy.unique(labels)
    if len(ids) < 2:
        return float("nan")
    distance = numpy.clip(1.0 - unit @ unit.T, 0.0, None)
    mean_to = numpy.stack([distance[:, labels == j].sum(1) for j in ids], 1)  # (n, k) summed distances
    sizes = numpy.array([(labels == j).sum() for j in ids])
    own = numpy.searchsorted(ids, labels)
    a = mean_to[numpy.arange(len(unit)), own] / numpy.maximum(sizes[own] - 1, 1)
    others = mean_to / sizes
    others[numpy.arange(len(unit)), own] = numpy.inf
    b = others.min(1)
    s = numpy.where(sizes[own] > 1, (b - a) / numpy.maximum(numpy.maximum(a, b), 1e-12), 0.0)
    return float(s.mean())


SIDE_ALPHA, SIDE_RATIO, SIDE_LEAST = 0.01, 4.0, 5  # a sense of one side: the share test's level, ratio and least size


@dataclass(frozen=True)
class SenseRule:
    """How many senses: k from 2 to `max_senses` by the mean silhouette, and one sense where the best k's
    silhouette is below `min_silhouette` (0: never one; a word's usages that no split separates well are one sense).
    With `sides`, the usages that are their own period's (`period_groups.period_groups`, at least SIDE_LEAST) are
    first kept apart as a sense that came (B) or went (A); the rest, shared by both periods, get the rule above: so a
    sense that came shows however little the rest of the word's usages split."""

    min_silhouette: float = 0.0
    max_senses: int = MAX_SENSES
    sides: bool = False
    n_init: int = N_INIT  # k-means++ starts of each k (the stability's runs take fewer: sense_checks.RUN_STARTS)

    @classmethod
    def parse(cls, text: str) -> "SenseRule":
        """ "silhouette" (k >= 2 always) or "min=T" (one sense below silhouette T)."""
        if text == "silhouette":
            return cls()
        if text.startswith("min="):
            return cls(float(text[4:]))
        raise ValueError(f"sense rule {text!r}: give 'silhouette' or 'min=T'")

    def describe(self) -> str:
        one = f"; one sense where the best silhouette is below {self.min_silhouette:g}" if self.min_silhouette > 0 else ""
        rule = f"k from 2 to {self.max_senses} by the mean silhouette (cosine distance){one}"
        if not self.sides:
            return rule
        return (
            f"first the usages among their own period's (of their {NEIGHBOURS} nearest, so many of their period that a "
            f"binomial draw reaches it at p <= {NEIGHBOUR_ALPHA:g}, with the usages half of whose neighbours are such; or "
            f"past the score all but {BEYOND:.0%} of the other period's stay behind on a discriminant of the periods fitted "
            f"without their document; at least {SIDE_LEAST}) kept apart, one sense a period; the usages of both periods: {rule}"
        )


def cluster_sides(labels: numpy.ndarray, n_a: int, k: int) -> List[str]:
    """Per cluster, "A", "B" or "both": one period's where its usages' split between A (the first `n_a`) and B
    departs from the periods' sizes by the exact binomial test at SIDE_ALPHA / k (one-sided, toward that period),
    its share of that period's usages is at least SIDE_RATIO times its share of the other's, and it holds at least
    SIDE_LEAST usages."""
    n = len(labels)
    n_b = n - n_a
    sides = []
    for j in range(k):
        a = int((labels[:n_a] == j).sum())
        b = int((labels[n_a:] == j).sum())
        side = "both"
        if n_a and n_b and a + b >= SIDE_LEAST:
            share_a, share_b = a / n_a, b / n_b
            if share_b >= SIDE_RATIO * share_a and binomial_tail(b, a + b, n_b / n) <= SIDE_ALPHA / k:
                side = "B"
            elif share_a >= SIDE_RATIO * share_b and binomial_tail(a, a + b, n_a / n) <= SIDE_ALPHA / k:
                side = "A"
        sides.append(side)
    return sides


def side_sense_clusters(
    vectors: numpy.ndarray,
    n_a: int,
    seed: int = SEED,
    rule: Optional[SenseRule] = None,
    near: Optional[numpy.ndarray] = None,
    groups: Optional[numpy.ndarray] = None,
) -> Tuple[SenseClusters, List[str]]:
    """The usages' senses with the senses of one period apart (`SenseRule.sides`): the usages of both periods'
    senses first (largest first), then the sense that went (A's alone), then the one that came (B's alone).

    vectors (numpy.ndarray): A's usages (the first `n_a`), then B's.
    near (Optional[numpy.ndarray]): what the usages' period groups are read from, one row a usage (the context-only
        vectors: their neighbourhoods told planted usages apart at AUC 0.956 against the word's own vectors' 0.923,
        and found a planted sense of 30-45% in 6 of 8 words against 5, no more controls: docs/results.md); None:
        `vectors`.
    groups (Optional[numpy.ndarray]): each usage's document: the periods' discriminant is fitted without the usage's
        document (`period_groups`); None: without the usage.
    RETURNS: the clusters and each sense's period: "both", "A" or "B".
    """
    rule = rule or SenseRule(sides=True)
    unit = _unit(vectors)
    if len(unit) < 3:
        return sense_clusters(unit, seed, rule=rule), ["both"]
    period = period_groups(unit if near is None else _unit(numpy.asarray(near, dtype=numpy.float64)), n_a, groups, seed)
    for side in ("A", "B"):  # a group too small for the share test is no sense of one period
        if (period == side).sum() < SIDE_LEAST:
            period[period == side] = "both"
    shared = period == "both"
    labels = numpy.zeros(len(unit), dtype=int)
    names: List[str] = []
    inner: Optional[SenseClusters] = None
    if shared.sum() >= 1:
        inner = sense_clusters(unit[shared], seed, rule=replace(rule, sides=False)) if shared.sum() >= 3 else None
        labels[shared] = inner.labels if inner is not None else 0
        names = ["both"] * (int(labels[shared].max()) + 1)
    for side in ("A", "B"):
        if (period == side).any():
            labels[period == side] = len(names)
            names.append(side)
    centres = _unit(numpy.stack([unit[labels == j].sum(0) for j in range(len(names))]))
    ruled = inner.rule_silhouette if inner is not None else float("nan")
    return SenseClusters(labels, centres, silhouette(unit, labels) if len(names) > 1 else float("nan"), ruled), names


def sense_clusters(
    vectors: numpy.ndarray, seed: int = SEED, max_senses: int = MAX_SENSES, rule: Optional[SenseRule] = None
) -> SenseClusters:
    """The usages' sense clusters, k chosen by `rule` (default: k from 2 to `max_senses` by the silhouette;
    see the module docstring; `rule.sides` is `side_sense_clusters`')."""
    rule = rule or SenseRule(max_senses=max_senses)
    unit = _unit(vectors)
    one = SenseClusters(numpy.zeros(len(unit), dtype=int), _unit(unit.mean(0, keepdims=True)), float("nan"))
    if len(unit) < 3:
        return one
    best: Optional[SenseClusters] = None
    for k in range(2, min(rule.max_senses, len(unit) - 1) + 1):
        found = spherical_kmeans(unit, k, seed, rule.n_init)
        found.silhouette = silhouette(unit, found.labels)
        if best is None or found.silhouette > best.silhouette + 1e-12:
            best = found
    assert best is not None
    best.rule_silhouette = best.silhouette
    if rule.min_silhouette > 0 and not best.silhouette >= rule.min_silhouette:
        one.silhouette = one.rule_silhouette = best.silhouette
        return one
    return best


def adjusted_rand(a: Sequence[Any], b: Sequence[Any]) -> float:
    """The adjusted Rand index of two clusterings of the same items (Hubert & Arabie 1985): 1 where they agree,
    about 0 for chance; 1.0 where both put every item in one cluster."""
    _, x = numpy.unique(numpy.asarray(a), return_inverse=True)
    _, y = numpy.unique(numpy.asarray(b), return_inverse=True)
    n = len(x)
    if n != len(y):
        raise ValueError("two clusterings of different items")
    table = numpy.zeros((x.max() + 1, y.max() + 1)) if n else numpy.zeros((1, 1))
    numpy.add.at(table, (x, y), 1)

    def pairs(v: numpy.ndarray) -> float:
        return float((v * (v - 1) / 2).sum())

    index, rows, cols, total = pairs(table), pairs(table.sum(1)), pairs(table.sum(0)), n * (n - 1) / 2
    expected = rows * cols / total if total else 0.0
    maximum = (rows + cols) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)


def score_interval(a: numpy.ndarray, b: numpy.ndarray, measure: str, draws: int = DRAWS, seed: int = SEED) -> Tuple[float, float]:
    """The 95% interval (percentiles) of APD or PRT over `draws` resamplings, with replacement, of each side's usages."""
    rng = numpy.random.default_rng(seed)
    ua, ub = (_unit(x) if measure == "apd" else numpy.asarray(x, dtype=numpy.float64) for x in (a, b))
    values = []
    for _ in range(draws):
        ma, mb = ua[rng.integers(0, len(ua), len(ua))].mean(0), ub[rng.integers(0, len(ub), len(ub))].mean(0)
        if measure == "apd":
            values.append(max(0.0, 1.0 - float(ma @ mb)))
        else:
            cosine = float(ma @ mb) / max(float(numpy.linalg.norm(ma) * numpy.linalg.norm(mb)), 1e-300)
            values.append(1.0 / cosine if cosine > 0 else numpy.inf)
    low, high = numpy.percentile(values, [2.5, 97.5])
    return float(low), float(high)


TESTED = ("apd", "prt", "energy")  # the measures a permutation test reads


@dataclass(frozen=True)
class PermutationTest:
    """A permutation test's answer: `p` = (1 + shuffles scoring at least the observed) / (1 + shuffles), and `z`,
    the observed score's normal score against the shuffles (`null_score`): how far above chance, in a unit that
    words with different numbers of usages share, and one that does not stop at 1 / (1 + shuffles) as `p` does."""

    p: float
    z: float


def permutation_test(
    a: numpy.ndarray,
    b: numpy.ndarray,
    measure: str,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
    groups: Optional[numpy.ndarray] = None,
) -> PermutationTest:
    """The permutation test of APD, PRT or the energy distance: `permutations` shuffles of the period labels of the
    usages (the two sides' sizes kept), each scored as the observed labels are, in one product a block of shuffles.

    a, b (numpy.ndarray): (n_a, D), (n_b, D): the vectors the score reads.
    groups (Optional[numpy.ndarray]): (n_a + n_b,) each usage's document (a group never on both sides): the
        documents' periods are shuffled, their usages moving together (as many documents on each side as observed).
        Usages of one document are alike (one article's topic), so shuffled one by one they make any two halves of
        a corpus look apart; the energy test only (its score reads any sizes).
    """
    if measure not in TESTED:
        raise ValueError(f"a permutation test of {measure!r}: only {', '.join(TESTED)}")
    both = numpy.concatenate([a, b]).astype(numpy.float64)
    if measure in ("apd", "energy"):
        both = _unit(both)
    n_a, n = len(a), len(a) + len(b)
    total = both.sum(0)

    def scores(sums_a: numpy.ndarray) -> numpy.ndarray:  # (m, D) sums of side A -> (m,) scores
        if measure == "energy":
            return energy_from_sums(sums_a, total - sums_a, n_a, n - n_a)
        mean_a, mean_b = sums_a / n_a, (total - sums_a) / (n - n_a)
        dots = (mean_a * mean_b).sum(1)
        if measure == "apd":
            return numpy.maximum(0.0, 1.0 - dots)
        cosine = dots / numpy.maximum(numpy.linalg.norm(mean_a, axis=1) * numpy.linalg.norm(mean_b, axis=1), 1e-300)
        return numpy.where(cosine > 0, 1.0 / numpy.where(cosine > 0, cosine, 1.0), numpy.inf)

    observed = float(scores(both[:n_a].sum(0, keepdims=True))[0])
    rng = numpy.random.default_rng(seed)
    # what is shuffled: the usages, or their documents (each usage then on its document's side)
    member, n_units, units_a = numpy.arange(n), n, n_a
    if groups is not None:
        if measure != "energy":
            raise ValueError("a permutation of documents: the energy test only (APD's and PRT's read fixed sizes)")
        _, member = numpy.unique(numpy.asarray(groups), return_inverse=True)
        n_units, units_a = int(member.max()) + 1, len(numpy.unique(member[:n_a]))
        if len(numpy.intersect1d(member[:n_a], member[n_a:])):
            raise ValueError("a document with usages on both sides: give each side's documents their own groups")
    higher, shuffled, used = 0, [], 0
    for start in range(0, permutations, 256):
        m = min(256, permutations - start)
        chosen = numpy.zeros((m, n_units))
        numpy.put_along_axis(chosen, numpy.argsort(rng.random((m, n_units)), axis=1)[:, :units_a], 1.0, axis=1)
        pick = chosen if groups is None else chosen[:, member]  # (m, n): 1 where a usage is on side A
        sums = pick @ both
        if groups is None:
            found = scores(sums)
        else:  # the sides' sizes follow the documents': a shuffle that leaves a side under 2 usages has no score
            sizes = pick.sum(1)
            usable = (sizes >= 2) & (n - sizes >= 2)
            found = energy_from_sums(sums[usable], total - sums[usable], sizes[usable], n - sizes[usable])
        # a shuffle's score ties the observed within float rounding where it is the same split
        higher += int((found >= observed - 1e-12).sum())
        used += len(found)
        shuffled.append(found)
    null = numpy.concatenate(shuffled) if shuffled else numpy.zeros(0)
    return PermutationTest((1 + higher) / (1 + used), null_score(observed, null))


SKEWED = 0.05  # a null less skewed than this: the plain standard score


def null_score(observed: float, null: numpy.ndarray) -> float:
    """The normal score of `observed` against a permutation null: the null is matched by a shifted gamma of its
    mean, spread and skewness, and the observed's upper tail read as a normal score (Wilson-Hilferty's cube root);
    a null that is not right-skewed, the plain (observed - mean) / sd. The energy distance is a quadratic form:
    its null is right-skewed, and its plain standard score put untouched words at 2-3 (random halves, 4 of 20
    controls called changed at one seed; 1 of 20 with this score, the planted words found alike: docs/results.md).

    RETURNS (float): about N(0, 1) where the observed is drawn from the null; nan where the null has no spread.
    """
    null = numpy.asarray(null, dtype=numpy.float64)
    null = null[numpy.isfinite(null)]
    if len(null) < 2 or not math.isfinite(observed):
        return math.nan
    mean, spread = float(null.mean()), float(null.std())
    if spread <= 0:
        return math.nan
    skew = float((((null - mean) / spread) ** 3).mean())
    if skew <= SKEWED:
        return (observed - mean) / spread
    shape, scale = 4.0 / skew**2, spread * skew / 2.0
    ratio = max(observed - (mean - shape * scale), 0.0) / (shape * scale)  # the gamma's value over its mean
    return (ratio ** (1.0 / 3.0) - (1.0 - 1.0 / (9.0 * shape))) / math.sqrt(1.0 / (9.0 * shape))


def permutation_p(a: numpy.ndarray, b: numpy.ndarray, measure: str, permutations: int = PERMUTATIONS, seed: int = SEED) -> float:
    """The permutation test's p-value (`permutation_test`): at least 1 / (1 + permutations)."""
    return permutation_test(a, b, measure, permutations, seed).p


def benjamini_hochberg(p_values: Sequence[float]) -> numpy.ndarray:
    """RETURNS (numpy.ndarray): the Benjamini-Hochberg adjusted p-values (q-values) of these tests, in their
    order: a word is called changed at false discovery rate alpha where its q-value is at most alpha."""
    p = numpy.asarray(p_values, dtype=numpy.float64)
    m = len(p)
    if m == 0:
        return p
    order = numpy.argsort(p, kind="stable")
    ranked = p[order] * m / numpy.arange(1, m + 1)
    q = numpy.minimum.accumulate(ranked[::-1])[::-1]
    out = numpy.empty(m)
    out[order] = numpy.minimum(q, 1.0)
    return out


def share_interval(labels_a: numpy.ndarray, labels_b: numpy.ndarray, k: int, draws: int = DRAWS, seed: int = SEED) -> Tuple[float, float]:
    """The 95% interval of the senses' JSD over resamplings of each side's usages (their clusters held fixed)."""
    rng = numpy.random.default_rng(seed)
    values = []
    for _ in range(draws):
        p = numpy.bincount(labels_a[rng.integers(0, len(labels_a), len(labels_a))], minlength=k) / len(labels_a)
        q = numpy.bincount(labels_b[rng.integers(0, len(labels_b), len(labels_b))], minlength=k) / len(labels_b)
        values.append(jensen_shannon(p, q))
    low, high = numpy.percentile(values, [2.5, 97.5])
    return float(low), float(high)


CAME_RATIO = 9.0  # a sense found as B's (kinds) came where its share of B is at least this times its share of A


def sense_periods(freq_a: Sequence[int], freq_b: Sequence[int], k: int = 1, n: int = 5, kinds: Optional[Sequence[str]] = None) -> List[str]:
    """Each sense's period, by one rule (the page, the TSV and the JSON all show it): "came in B" where it has at
    most `k` usages in A and at least `n` in B, "went from A" the other way round (DWUG's rule; DWUG EN's stats use
    k = 1, n = 5), or, for a sense found as one period's (`kinds`: side_sense_clusters), where its share of that
    period is at least CAME_RATIO times its share of the other and it passes the share test below (found among
    hundreds of usages, a sense that came gathers a few of A's near it: 1-5% of A's usages in planted change); else
    "more in B" or "less in B" where its share of B's usages departs
    from its share of A's by the share test of `cluster_sides` (exact binomial at SIDE_ALPHA / k, ratio SIDE_RATIO,
    SIDE_LEAST usages): a sense whose share fell but whose usages remain did not go; else "both", or, where its usages
    are all in one period and too few for these rules, "only in A (B), too few to tell" (not a change: `moved`)."""
    labels = numpy.concatenate([numpy.repeat(numpy.arange(len(f)), list(f)) for f in (freq_a, freq_b)]).astype(int)
    shares = cluster_sides(labels, sum(freq_a), len(freq_a))
    n_a, n_b = max(sum(freq_a), 1), max(sum(freq_b), 1)
    out = []
    for x, y, share, kind in zip(freq_a, freq_b, shares, kinds or ["both"] * len(freq_a)):
        if y >= n and (x <= k or (kind == "B" and share == "B" and y / n_b >= CAME_RATIO * x / n_a)):
            out.append(CAME)
        elif x >= n and (y <= k or (kind == "A" and share == "A" and x / n_a >= CAME_RATIO * y / n_b)):
            out.append(WENT)
        elif share in ("A", "B"):
            out.append({"B": MORE, "A": LESS}[share])
        else:
            out.append(ONLY_A if y == 0 and x > 0 else ONLY_B if x == 0 and y > 0 else BOTH)
    return out


def binary_change(freq_a: Sequence[int], freq_b: Sequence[int], k: int = 1, n: int = 5) -> int:
    """1 where a sense came, went or moved (`sense_periods`), else 0. DWUG derives its binary change from people's
    clusters by a sense that came or went alone (the k/n rule); read from these senses, that rule scored 0.478 on DWUG
    EN (calling none changed: 0.543) and found a planted sense of 20-50% in 7 of 36 words, and this one 0.565 and 30 of
    36, with 1 of 60 untouched words either way (docs/results.md)."""
    return moved(sense_periods(freq_a, freq_b, k, n))


@dataclass
class WordEvidence:
    """What lies behind one word's score (rows are rows of the usage indexes: side "A" or "B").

    senses (int): k; silhouette (float): its mean silhouette.
    freq_a, freq_b (List[int]): usages per sense on each side (WUG's cluster_freq_dist1/2).
    sense_jsd (float): the JSD of the two sides' shares of the senses; binary (int): `binary_change` (a sense came,
        went or moved).
    examples (List[List[Tuple[str, int]]]): per sense, the (side, row) of the usages nearest its centre.
    changed (Dict[str, List[Tuple[int, float]]]): per side, the (row, `witness`) of the usages that most set that side
        apart from the other, in the senses' input (the context-only vectors by default), most first.
    intervals (Dict[str, Tuple[float, float]]): the 95% bootstrap interval of each measure.
    p_values (Dict[str, float]): each measure's permutation p-value (`permutation_p`), where asked for.
    points (List[Tuple[str, int, float, float, int]]): (side, row, x, y, sense) of every usage on the 2-D map
        (the first two principal components of the unit vectors).
    """

    senses: int
    silhouette: float
    freq_a: List[int]
    freq_b: List[int]
    sense_jsd: float
    binary: int
    examples: List[List[Tuple[str, int]]]
    changed: Dict[str, List[Tuple[int, float]]]
    intervals: Dict[str, Tuple[float, float]] = field(default_factory=dict)
    points: List[Tuple[str, int, float, float, int]] = field(default_factory=list)
    labels: Dict[str, Dict[int, int]] = field(default_factory=dict)  # side -> row -> sense
    p_values: Dict[str, float] = field(default_factory=dict)  # measure -> the permutation test's p-value
    periods: List[str] = field(default_factory=list)  # per sense: `sense_periods` ("came in B", "less in B", "both", ...)
    stability: List[Optional[float]] = field(default_factory=list)  # per sense (sense_checks); None: not measured
    joined: int = 0  # usages of unstable senses joined to the nearest stable one (sense_checks.settled)
    names: List[bool] = field(default_factory=list)  # per sense: its usages write the word as a name or in a heading
    period_p: List[Tuple[float, float]] = field(default_factory=list)  # per sense: the documents' test, toward B and A


def witness(unit: numpy.ndarray, n_a: int) -> numpy.ndarray:
    """How much each usage sets its side apart: the witness of the energy distance on cosine distances, its mean
    cosine to the other usages of its own side less its mean cosine to the other side's. A usage of a sense found on
    one side alone scores high; an outlier, near no usage of either side, scores near 0.

    unit (numpy.ndarray): (n, D) unit vectors, side A's first `n_a`, then side B's.
    RETURNS (numpy.ndarray): (n,) float64, each usage's witness for its own side.
    """
    a, b = unit[:n_a], unit[n_a:]
    n_b = len(b)
    sum_a, sum_b = a.sum(0), b.sum(0)
    own_a = (a @ sum_a - 1.0) / max(n_a - 1, 1)
    own_b = (b @ sum_b - 1.0) / max(n_b - 1, 1)
    return numpy.concatenate([own_a - a @ sum_b / max(n_b, 1), own_b - b @ sum_a / max(n_a, 1)])


def distinct(unit: numpy.ndarray, order: numpy.ndarray, n: int = EXAMPLES) -> numpy.ndarray:
    """RETURNS (numpy.ndarray): the first `n` of `order` (indices into the unit vectors `unit`), each skipped that is
    the same context as one kept (cosine above `SAME_USAGE`): a heading or a list item repeated is shown once."""
    kept: List[int] = []
    for i in order:
        if not kept or float((unit[kept] @ unit[i]).max()) <= SAME_USAGE:
            kept.append(int(i))
            if len(kept) == n:
                break
    return numpy.array(kept, dtype=numpy.int64)


def _sample_rows(usages: Usages, n: int, seed: int) -> numpy.ndarray:
    rows = usages.rows if isinstance(usages, UsageRows) else numpy.arange(len(usages))
    if len(rows) > n:
        rows = numpy.sort(numpy.random.default_rng(seed).choice(rows, n, replace=False))
    return rows


def _rows_and_vectors(usages: Usages, n: int, seed: int) -> Tuple[numpy.ndarray, numpy.ndarray]:
    rows = _sample_rows(usages, n, seed)
    if isinstance(usages, UsageRows):
        return rows, UsageRows(usages.vectors, rows, usages.centre).sample(len(rows))
    return rows, numpy.asarray(usages, dtype=numpy.float64)[rows]


def evidence_rows(a: Usages, b: Usages, max_usages: int = EVIDENCE_USAGES, seed: int = SEED) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """RETURNS: the rows of `a` and of `b` that `word_evidence` reads (at most `max_usages` a side, drawn with `seed`)."""
    return _sample_rows(a, max_usages, seed), _sample_rows(b, max_usages, seed + 1)


def word_evidence(
    a: Usages,
    b: Usages,
    measures: Sequence[str] = ("apd",),
    seed: int = SEED,
    max_usages: int = EVIDENCE_USAGES,
    draws: int = DRAWS,
    binary_k: int = 1,
    binary_n: int = 5,
    sense_vectors: Optional[numpy.ndarray] = None,
    rule: Optional[SenseRule] = None,
    permutations: int = 0,
    witness_vectors: Optional[numpy.ndarray] = None,
    groups: Optional[numpy.ndarray] = None,
    name_usages: Optional[Sequence[bool]] = None,
    stability_runs: int = STABILITY_RUNS,
) -> WordEvidence:
    """The evidence of one word's change between its usages `a` and `b` (arrays, or `UsageRows` of indexes):
    see `WordEvidence`; at most `max_usages` a side (drawn with `seed`: `evidence_rows`).

    sense_vectors (Optional[numpy.ndarray]): what the senses are clustered from and the map drawn from, one row
        per usage of `evidence_rows` (A's, then B's): the context-only vectors, or substitute bags; None: the
        vectors the scores read.
    rule (Optional[SenseRule]): how many senses (default: k from 2 by the silhouette).
    permutations (int): the permutation test of each measure (APD, PRT) with this many shuffles; 0: none.
    witness_vectors (Optional[numpy.ndarray]): what the changed usages' witness and the senses of one period's
        neighbourhoods read, one row per usage as `sense_vectors`: the context-only vectors; None: the senses' input.
    groups (Optional[numpy.ndarray]): each usage's document (as `sense_vectors`), for the test of a sense's lean to
        one period (sense_checks.period_p_values); None: the usages are shuffled one by one.
    name_usages (Optional[Sequence[bool]]): per usage, whether it writes the word as a name or in a heading
        (sense_checks.name_like): a sense mostly of them is flagged and never marked.
    stability_runs (int): clusterings of resamples that measure each sense's stability (sense_checks); 0: none, every
        sense kept.
    """
    rows_a, va = _rows_and_vectors(a, max_usages, seed)
    rows_b, vb = _rows_and_vectors(b, max_usages, seed + 1)
    both = numpy.concatenate([va, vb]) if sense_vectors is None else numpy.asarray(sense_vectors, dtype=numpy.float64)
    if len(both) != len(va) + len(vb):
        raise ValueError(f"{len(both)} sense vectors for {len(va)} + {len(vb)} usages: give one a usage of evidence_rows")

    if witness_vectors is not None and len(witness_vectors) != len(both):
        raise ValueError(f"{len(witness_vectors)} witness vectors for {len(both)} usages: give one a usage of evidence_rows")

    def cluster(index: numpy.ndarray, at: int, how: Optional[SenseRule] = rule) -> Tuple[SenseClusters, List[str]]:
        if how is not None and how.sides:
            near = None if witness_vectors is None else numpy.asarray(witness_vectors)[index]
            documents = None if groups is None else numpy.asarray(groups)[index]
            return side_sense_clusters(both[index], int((index < len(va)).sum()), at, how, near, documents)
        found = sense_clusters(both[index], at, rule=how)
        return found, ["both"] * (int(found.labels.max()) + 1)

    everything = numpy.arange(len(both))
    found, kinds = cluster(everything, seed)
    unit = _unit(both)
    stability: List[Optional[float]] = [None] * len(kinds)
    labels_all, joined, kept = found.labels, 0, list(range(len(kinds)))
    if stability_runs and len(kinds) > 1:
        quick = replace(rule or SenseRule(), n_init=RUN_STARTS)
        measured = jaccard_stability(
            found.labels, stability_runs_of(len(both), lambda i, at: cluster(i, at, quick)[0].labels, seed, stability_runs)
        )
        labels_all, kept, joined = settled(found.labels, measured, unit, kinds)
        stability = [round(float(measured[j]), 4) if measured[j] >= STABLE else None for j in kept]
    k = int(labels_all.max()) + 1
    centres = _unit(numpy.stack([unit[labels_all == j].sum(0) for j in range(k)]))
    labels_a, labels_b = labels_all[: len(va)], labels_all[len(va) :]
    freq_a = numpy.bincount(labels_a, minlength=k).tolist()
    freq_b = numpy.bincount(labels_b, minlength=k).tolist()
    periods = sense_periods(freq_a, freq_b, binary_k, binary_n, [kinds[j] for j in kept])
    flags = name_senses(labels_all, numpy.asarray(name_usages, dtype=bool), k) if name_usages is not None else [False] * k
    p_b, p_a = period_p_values(labels_all, len(va), groups, k, seed=seed)
    periods = check_marks(periods, flags, marks_allowed(p_b, p_a, k, few_documents(labels_all, groups, k)))
    sides = numpy.array(["A"] * len(va) + ["B"] * len(vb))
    rows = numpy.concatenate([rows_a, rows_b])
    examples = []
    for j in range(k):
        members = numpy.flatnonzero(labels_all == j)
        near = members[distinct(unit[members], numpy.argsort(-(unit[members] @ centres[j]), kind="stable"))]
        examples.append([(str(sides[i]), int(rows[i])) for i in near])
    # the changed usages: the energy distance's witness read from the context-only vectors (where given), which the
    # word's spelling does not enter: read from the word's own vectors, its capitalised and derived forms were 63 of
    # the 240 listed (7% of usages). Ranked by the cosine to the nearest usage of the other side instead, the outliers
    # of either side came first: half of them such forms, and between genres the headlines (docs/results.md)
    typical = witness(unit if witness_vectors is None else _unit(numpy.asarray(witness_vectors, dtype=numpy.float64)), len(va))
    changed = {}
    for side, part, side_rows in (("A", slice(0, len(va)), rows_a), ("B", slice(len(va), None), rows_b)):
        order = distinct(unit[part], numpy.argsort(-typical[part], kind="stable"))
        changed[side] = [(int(side_rows[i]), float(typical[part][i])) for i in order]
    intervals = {m: score_interval(va, vb, m, draws, seed) for m in measures if m in ("apd", "prt")}
    p_values = {m: permutation_p(va, vb, m, permutations, seed) for m in measures if m in TESTED} if permutations else {}
    intervals["senses"] = share_interval(labels_a, labels_b, k, draws, seed)
    centred = unit - unit.mean(0)
    _, _, vt = numpy.linalg.svd(centred, full_matrices=False)
    axes = vt[:2] * numpy.sign(vt[:2, [0]] + (vt[:2, [0]] == 0))  # signs fixed: the same map every run
    xy = centred @ axes.T if len(axes) == 2 else numpy.zeros((len(unit), 2))
    points = [(str(sides[i]), int(rows[i]), float(xy[i, 0]), float(xy[i, 1]), int(labels_all[i])) for i in range(len(unit))]
    labels = {"A": dict(zip(rows_a.tolist(), labels_a.tolist())), "B": dict(zip(rows_b.tolist(), labels_b.tolist()))}
    return WordEvidence(
        senses=k,
        silhouette=found.rule_silhouette,
        freq_a=freq_a,
        freq_b=freq_b,
        sense_jsd=jensen_shannon(numpy.array(freq_a) / len(va), numpy.array(freq_b) / len(vb)),
        binary=moved(periods),
        examples=examples,
        changed=changed,
        intervals=intervals,
        points=points,
        labels=labels,
        p_values=p_values,
        periods=periods,
        stability=stability,
        joined=joined,
        names=flags,
        period_p=[(float(x), float(y)) for x, y in zip(p_b, p_a)],
    )
