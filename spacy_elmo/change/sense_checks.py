"""The checks a word's senses pass before they are shown as senses or marked as change.

- **Stability**: the senses are clustered again under `STABILITY_RUNS` other seeds, each on a resample of the usages
  (`STABILITY_SHARE` of them, at most `STABILITY_USAGES`); a sense's stability is the mean over the runs of its best
  Jaccard overlap with a cluster of the run (Hennig 2007). A sense below `STABLE` is not shown as a sense: its usages
  join the nearest stable sense (said with the count), and no mark is drawn from it.
- **Names and headings**: a sense at least `NAME_SHARE` of whose usages write the word capitalised within a sentence,
  in capitals, or in a heading (a sentence of at most `HEADING_WORDS` words) is flagged, never marked as change: it
  is a name's or a title's, not a meaning the word gained.
- **The period split by documents**: a sense marked as of one period must lean to it by a permutation test that
  shuffles the documents' periods (as the verdict's test does), at `PERIOD_ALPHA` / k, and must not have
  `FEW_DOCUMENTS_SHARE` of its usages from `FEW_DOCUMENTS_MOST` documents or fewer: a sense drawn from a few
  articles of one period is a topic of those articles, not a sense that came. (A sense of one period holds that
  period's usages alone by how it is found, so the shuffles alone pass a group of 50 usages, 36 of them from one
  article, the rest scattered: "children with autism".)
- **Against the control words**: the control words' senses get the same marks; where more than `MARK_RATE` of them
  get one, the corpora differ beyond the targets' senses (topic, genre) and the targets' marks are withheld (run.py).
"""

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy

from .sense_marks import CAME, FEW_DOCUMENTS, LESS, MORE, NAMES, WENT, WITHHELD, moved

STABILITY_RUNS, STABILITY_SHARE, STABILITY_USAGES, STABLE = 6, 0.8, 1000, 0.6
RUN_STARTS = 3  # k-means++ starts of each k in a stability run (the senses shown: N_INIT)
NAME_SHARE, HEADING_WORDS = 0.5, 5
PERIOD_ALPHA, PERIOD_SHUFFLES = 0.01, 1000
MARK_RATE = 0.1  # the control words' share with a mark above which the targets' marks are withheld
FEW_DOCUMENTS_SHARE, FEW_DOCUMENTS_MOST = 0.5, 3  # usages half of which come from 3 documents or fewer: a few documents'


def describe_checks() -> str:
    """RETURNS (str): the checks in words, as the JSON's settings (`sense_marks`) and the page's header say them."""
    return (
        f"a sense is shown where its stability (mean best Jaccard over {STABILITY_RUNS} clusterings of other seeds on "
        f"{STABILITY_SHARE:.0%} resamples, at most {STABILITY_USAGES} usages each, {RUN_STARTS} starts a k) is at least "
        f"{STABLE:g}; marked as of one period "
        f"where the documents' periods shuffled {PERIOD_SHUFFLES} times put its lean at p <= {PERIOD_ALPHA:g} / k and less "
        f"than {FEW_DOCUMENTS_SHARE:.0%} of its usages come from its {FEW_DOCUMENTS_MOST} largest documents, and not "
        f"where {NAME_SHARE:.0%} of its usages write the word as a name or in a heading; marks withheld where more than "
        f"{MARK_RATE:.0%} of the control words get one"
    )


def jaccard_stability(labels: numpy.ndarray, runs: Sequence[Tuple[numpy.ndarray, numpy.ndarray]]) -> numpy.ndarray:
    """Each cluster's stability: the mean over `runs` ((indices, labels) of a clustering of those usages) of its best
    Jaccard overlap with a cluster of the run, its members restricted to the run's usages (Hennig 2007).

    RETURNS (numpy.ndarray): (k,) in [0, 1]; nan for a cluster absent from every run's usages.
    """
    k = int(labels.max()) + 1 if len(labels) else 0
    found: List[List[float]] = [[] for _ in range(k)]
    for index, run in runs:
        mine = labels[index]
        for j in range(k):
            member = mine == j
            if not member.any():
                continue
            best = 0.0
            for c in numpy.unique(run):
                other = run == c
                best = max(best, float((member & other).sum()) / float((member | other).sum()))
            found[j].append(best)
    return numpy.array([float(numpy.mean(v)) if v else math.nan for v in found])


def stability_runs(
    n: int, cluster: Callable[[numpy.ndarray, int], numpy.ndarray], seed: int, runs: int = STABILITY_RUNS
) -> List[Tuple[numpy.ndarray, numpy.ndarray]]:
    """`runs` clusterings of resamples of n usages: each (sorted indices, labels) from `cluster(indices, seed)`."""
    rng = numpy.random.default_rng(seed + 7919)
    size = max(3, min(int(round(STABILITY_SHARE * n)), STABILITY_USAGES))
    out = []
    for r in range(runs):
        index = numpy.sort(rng.choice(n, min(size, n), replace=False))
        out.append((index, cluster(index, seed + 1 + r)))
    return out


def settled(
    labels: numpy.ndarray, stability: numpy.ndarray, unit: numpy.ndarray, kinds: Sequence[str]
) -> Tuple[numpy.ndarray, List[int], int]:
    """The senses at least STABLE kept; an unstable one's usages joined to the nearest kept sense of both periods
    (cosine to its centre), the senses of both periods one sense where none of them is stable.

    labels: each usage's sense; unit: the usages' unit vectors; kinds: per sense, "both" or the period it is of.
    RETURNS: the new labels (the kept senses in their order), the kept senses (their numbers in `labels`), and how
    many usages were joined.
    """
    k = len(stability)
    stable = [bool(stability[j] >= STABLE) for j in range(k)]
    shared = [j for j in range(k) if kinds[j] == "both"]
    if shared and not any(stable[j] for j in shared):
        stable[shared[0]] = True  # the usages of both periods: one sense, as the rule says where no split holds
        new = labels.copy()
        for j in shared[1:]:
            new[labels == j] = shared[0]
        labels, shared = new, shared[:1]
    keep = [j for j in range(k) if stable[j] and (labels == j).any()]
    homes = [j for j in keep if kinds[j] == "both"] or keep
    centres = numpy.stack([unit[labels == j].sum(0) for j in homes])
    moved = numpy.isin(labels, keep, invert=True)
    new = labels.copy()
    if moved.any():
        new[moved] = numpy.array(homes)[(unit[moved] @ centres.T).argmax(1)]
    mapping = {j: i for i, j in enumerate(keep)}
    return numpy.array([mapping[int(j)] for j in new]), keep, int(moved.sum())


def name_like(text: str, start: int, end: int) -> bool:
    """Whether a usage writes the word as a name or in a heading: capitalised within the sentence (not its first
    word), in capitals (two letters or more), or in a sentence of at most HEADING_WORDS words."""
    written = text[start:end]
    if len(text.split()) <= HEADING_WORDS:
        return True
    if len(written) > 1 and written.isupper():
        return True
    before = text[:start].rstrip()
    first = not before or before[-1] in "\"'“‘(«[-–—:"
    return written[:1].isupper() and not first


def name_senses(labels: numpy.ndarray, names: numpy.ndarray, k: int) -> List[bool]:
    """Per sense: at least NAME_SHARE of its usages are `name_like`."""
    return [bool((labels == j).any() and names[labels == j].mean() >= NAME_SHARE) for j in range(k)]


def period_p_values(
    labels: numpy.ndarray, n_a: int, groups: Optional[numpy.ndarray], k: int, shuffles: int = PERIOD_SHUFFLES, seed: int = 0
) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """Each sense's one-sided p-values of leaning to B and to A: its share of B's usages less its share of A's,
    against `shuffles` shufflings of the documents' periods (`groups`: each usage's document, none on both sides;
    None: the usages', one by one), as many documents on each side as observed.

    RETURNS: (p toward B, p toward A), each (k,).
    """
    n = len(labels)
    member = numpy.arange(n) if groups is None else numpy.unique(numpy.asarray(groups), return_inverse=True)[1]
    units = int(member.max()) + 1
    units_a = len(numpy.unique(member[:n_a]))
    counts = numpy.zeros((units, k))
    numpy.add.at(counts, (member, labels), 1.0)
    sizes = counts.sum(1)
    observed_a = numpy.zeros(units, dtype=bool)
    observed_a[numpy.unique(member[:n_a])] = True

    def lean(on_a: numpy.ndarray) -> numpy.ndarray:  # (m, units) -> (m, k): B's share less A's
        in_a = on_a @ counts
        total_a = on_a @ sizes
        in_b = counts.sum(0) - in_a
        total_b = n - total_a
        with numpy.errstate(divide="ignore", invalid="ignore"):
            return in_b / numpy.maximum(total_b, 1)[:, None] - in_a / numpy.maximum(total_a, 1)[:, None]

    observed = lean(observed_a[None, :].astype(float))[0]
    rng = numpy.random.default_rng(seed)
    up = numpy.zeros(k)
    down = numpy.zeros(k)
    done = 0
    for start in range(0, shuffles, 256):
        m = min(256, shuffles - start)
        on_a = numpy.zeros((m, units))
        numpy.put_along_axis(on_a, numpy.argsort(rng.random((m, units)), axis=1)[:, :units_a], 1.0, axis=1)
        found = lean(on_a)
        up += (found >= observed - 1e-12).sum(0)
        down += (found <= observed + 1e-12).sum(0)
        done += m
    return (1 + up) / (1 + done), (1 + down) / (1 + done)


def few_documents(labels: numpy.ndarray, groups: Optional[numpy.ndarray], k: int) -> List[bool]:
    """Per sense: whether FEW_DOCUMENTS_SHARE or more of its usages come from FEW_DOCUMENTS_MOST documents or fewer
    (`groups`: each usage's document; None: no documents known, never)."""
    if groups is None:
        return [False] * k
    out = []
    for j in range(k):
        sizes = numpy.sort(numpy.unique(numpy.asarray(groups)[labels == j], return_counts=True)[1])[::-1]
        out.append(bool(len(sizes)) and sizes[:FEW_DOCUMENTS_MOST].sum() >= FEW_DOCUMENTS_SHARE * sizes.sum())
    return out


def marks_allowed(p_b: numpy.ndarray, p_a: numpy.ndarray, k: int, few: Optional[Sequence[bool]] = None) -> List[str]:
    """Per sense: "B" or "A" where the documents' test puts its lean there at PERIOD_ALPHA / k and its usages are not
    from a few documents (`few`: `few_documents`), else ""."""
    level = PERIOD_ALPHA / max(k, 1)
    few = few if few is not None else [False] * k
    return ["" if f else "B" if b <= level else "A" if a <= level else "" for b, a, f in zip(p_b, p_a, few)]


def check_marks(periods: Sequence[str], names: Sequence[bool], lean: Sequence[str]) -> List[str]:
    """The periods `senses.sense_periods` gave, kept only where the sense is not a name's and its lean to that period
    passes the documents' test; else NAMES or FEW_DOCUMENTS (neither a change)."""
    toward = {CAME: "B", MORE: "B", WENT: "A", LESS: "A"}
    out = []
    for period, name, side in zip(periods, names, lean):
        if period not in toward:
            out.append(period)
        elif name:
            out.append(NAMES)
        elif side != toward[period]:
            out.append(FEW_DOCUMENTS)
        else:
            out.append(period)
    return out


def control_marks(evidence: Dict[str, Any]) -> Dict[str, Any]:
    """How often the control words' senses were marked (`evidence`: a control word -> its evidence entry), and
    whether that is within MARK_RATE."""
    marked = sorted(w for w, ev in evidence.items() if moved(ev.get("sense_periods", [])))
    n = len(evidence)
    return {"controls": n, "marked": marked, "rate": len(marked) / n if n else None, "within": bool(n) and len(marked) <= MARK_RATE * n}


def withhold_marks(evidence: Dict[str, Any]) -> int:
    """Every mark of a change (came, went, more, less) in `evidence` (a word -> its evidence entry) replaced by
    WITHHELD, each word's senses' binary change 0. RETURNS (int): the words that had a mark."""
    had = 0
    for ev in evidence.values():
        periods = ev.get("sense_periods", [])
        if moved(periods):
            had += 1
            ev["sense_periods"] = [WITHHELD if moved([p]) else p for p in periods]
            ev["binary"] = 0
    return had
