"""The verdict "changed": a word's change against the corpora's own drift, read from control words.

Two corpora of different style, genre or time differ for every word: a per-word permutation test of any measure
answers "the two sides' usages differ more than chance", which such corpora make true for untouched words as for
changed ones (on DWUG EN it called 42 of 46 words changed). So `change` also scores **control words** that nobody
asked about: drawn from the two corpora by frequency (matched to the targets in both), the targets excluded,
seeded, indexed and scored exactly as the targets. A target is **changed** where its statistic stands above the
controls': its robust z against the controls' statistics (median, 1.4826 x MAD, at least 1), p from the normal tail,
and the targets' p adjusted by Benjamini-Hochberg. Where no controls can be had (a WUG dataset, indexes of the targets
alone), there is no null to judge by, so no word is called changed or not ("no verdict: needs control words"): the
per-word permutation test's q against chance alone stays, as a secondary figure (on DWUG EN it called 45 of 46 words
changed, at an accuracy below calling none).

The statistic is the energy distance's permutation z (`senses.permutation_test`): the energy distance has power
against a sense that comes or goes (APD does not: its pairs within a side rise with a new sense as much as those
across), and the z puts words with different numbers of usages on one scale. The z is the normal score of the
observed against the shuffles' right-skewed null (`senses.null_score`), not its plain standard score, which put
untouched words at 2-3. Chosen on the planted benchmark (benchmarks/planted_change.py; docs/results.md), against
a k-nearest-neighbour test, an RBF-kernel MMD, the common drift of the controls projected out first, the mean shift
in the top principal components or in whitened coordinates, the side imbalance of k-means clusters, and the side
imbalance of the substitutes: none had more power where a sense was planted in a tenth of B.
"""

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy

from .senses import benjamini_hochberg

VERDICT_MEASURE = "energy"
VERDICT_FROM = "context:top"  # what the statistic reads: the context-only vectors, blind to the word's spelling
DEFAULT_CONTROLS = 40
MIN_CONTROLS = 8  # fewer scored controls: no spread to read, the verdict is the permutation test's alone
NEAREST = 12  # a target's control is drawn from the candidates nearest its frequencies
MATCH_FACTOR = 2.0  # a target is frequency-matched where a scored control has within this factor of its usages on both sides
CONTROLS_BASIS, NO_NULL_BASIS = "against control words", "no verdict: needs control words"
_WORD = re.compile(r"[^\W\d_]{3,}")  # a candidate control: letters only, at least three


@dataclass
class WordVerdict:
    """One word's verdict: its statistic (`energy`, the permutation `z` and `p_chance`), `p_controls` (its robust z
    against the controls'), the Benjamini-Hochberg `q` of the p the verdict reads, `changed` (0/1) and its `basis`."""

    energy: float
    z: float
    p_chance: float
    p_controls: Optional[float] = None
    q: Optional[float] = None
    changed: Optional[int] = None
    basis: str = NO_NULL_BASIS
    matched: Optional[bool] = None  # a scored control within MATCH_FACTOR of its usages on both sides (`nearest_control`)


def without_null(words: Iterable[Dict[str, Any]]) -> bool:
    """RETURNS (bool): whether the rows (the JSON's words) carry verdicts and every one has no null (no control words
    were scored): their q is then against chance, not a verdict's, as the page and the TSV head it."""
    verdicts = [w["verdict"] for w in words if w.get("verdict")]
    return bool(verdicts) and all(v.get("basis") == NO_NULL_BASIS for v in verdicts)


def is_control_word(word: str, stop_words: Iterable[str] = ()) -> bool:
    """RETURNS (bool): whether `word` may be a control word: letters only, at least three, not a stop word (what
    `count_words` counts in corpora; an index of every word also holds punctuation, digits and function words)."""
    return bool(_WORD.fullmatch(word)) and word.lower() not in stop_words


def count_words(texts: Iterable[str]) -> Counter:
    """RETURNS (Counter): the lowercase words (letters only, 3 or more) of the texts: what controls are drawn by."""
    counts: Counter = Counter()
    for text in texts:
        counts.update(w.lower() for w in _WORD.findall(text))
    return counts


def draw_controls(
    counts_a: Counter,
    counts_b: Counter,
    targets: Sequence[str],
    n: int,
    seed: int = 0,
    exclude: Iterable[str] = (),
    min_count: int = 5,
) -> List[str]:
    """`n` control words matched to the targets' frequencies in both corpora: in turn for each target, one drawn
    (seeded) from the `NEAREST` unused candidates nearest its (log count in A, log count in B). Candidates: words of
    both corpora with at least `min_count` in each, neither a target nor a target's form (the target plus s, es,
    ed, ing, or the target less one of them), nor in `exclude` (stop words).

    RETURNS (List[str]): at most n words (fewer where the corpora hold fewer candidates), in the order drawn.
    """
    rng = numpy.random.default_rng(seed)
    suffixes = ("s", "es", "ed", "ing", "d")
    forms = set()
    for t in targets:
        t = t.lower()
        forms.add(t)
        forms.update(t + s for s in suffixes)
        forms.update(t[: -len(s)] for s in suffixes if t.endswith(s) and len(t) > len(s) + 2)
    banned = forms | {w.lower() for w in exclude}
    candidates = sorted(w for w in counts_a.keys() & counts_b.keys() if w not in banned and min(counts_a[w], counts_b[w]) >= min_count)
    if not candidates or not targets or n <= 0:
        return []
    where = numpy.log1p(numpy.array([[counts_a[w], counts_b[w]] for w in candidates], dtype=numpy.float64))
    aims = numpy.log1p(numpy.array([[counts_a.get(t, 0), counts_b.get(t, 0)] for t in targets], dtype=numpy.float64))
    free = numpy.ones(len(candidates), dtype=bool)
    drawn: List[str] = []
    for k in range(min(n, len(candidates))):
        aim = aims[k % len(aims)]
        distance = numpy.where(free, ((where - aim) ** 2).sum(1), numpy.inf)
        nearest = numpy.argsort(distance, kind="stable")[: min(NEAREST, int(free.sum()))]
        pick = int(nearest[rng.integers(len(nearest))])
        free[pick] = False
        drawn.append(candidates[pick])
    return drawn


def nearest_control(target: Tuple[int, int], controls: Dict[str, Tuple[int, int]]) -> Tuple[Optional[str], bool]:
    """The control whose usages in A and B are nearest the target's (in log counts), and whether it lies within
    MATCH_FACTOR of the target's on both sides: the energy z grows with a word's usages, so a target far more frequent
    than every control (a function word among content words) stands above them for its frequency alone.

    target (Tuple[int, int]): the usages the verdict's statistic read, in A and in B; controls: each control's.
    RETURNS: the nearest control (None where there is none) and whether it matches.
    """
    if not controls:
        return None, False
    aim = numpy.log(numpy.maximum(numpy.asarray(target, dtype=numpy.float64), 1.0))

    def gap(counts: Tuple[int, int]) -> float:
        return float(numpy.abs(numpy.log(numpy.maximum(numpy.asarray(counts, dtype=numpy.float64), 1.0)) - aim).max())

    word = min(sorted(controls), key=lambda w: gap(controls[w]))
    return word, gap(controls[word]) <= math.log(MATCH_FACTOR) + 1e-12


def normal_tail(z: float) -> float:
    """RETURNS (float): P(N(0, 1) >= z)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def against_controls(z: float, controls: Sequence[float]) -> float:
    """RETURNS (float): the p of a permutation z `z` against the controls' z: how far above the corpora's own drift
    the word stands, in the controls' spread (their median and 1.4826 x MAD), never less than 1: each z has unit
    spread under its own null, so the controls can add drift and spread, never take it away (40 controls' MAD
    measured 0.8 in random halves, and called untouched words of z 1.1-1.4 changed)."""
    values = numpy.asarray([c for c in controls if math.isfinite(c)], dtype=numpy.float64)
    if not math.isfinite(z):
        return 1.0
    centre = float(numpy.median(values))
    spread = max(1.4826 * float(numpy.median(numpy.abs(values - centre))), 1.0)
    return normal_tail((z - centre) / spread)


def decide(targets: Dict[str, WordVerdict], controls: Dict[str, WordVerdict], fdr: float) -> Dict[str, WordVerdict]:
    """Fill in each target's `p_controls`, `q`, `changed` and `basis`: against the controls where at least
    `MIN_CONTROLS` were scored; else no verdict (`changed` None: there is no null), `q` then the permutation p's
    against chance alone, a secondary figure."""
    scored = [v.z for v in controls.values() if math.isfinite(v.z)]
    words = list(targets)
    with_controls = len(scored) >= MIN_CONTROLS
    for w in words:
        v = targets[w]
        v.basis = CONTROLS_BASIS if with_controls else NO_NULL_BASIS
        v.p_controls = against_controls(v.z, scored) if with_controls else None
    p = [float(targets[w].p_controls if with_controls else targets[w].p_chance) for w in words]  # type: ignore[arg-type]
    for w, q in zip(words, benjamini_hochberg(p)):
        targets[w].q = float(q)
        targets[w].changed = int(q <= fdr) if with_controls else None
    return targets


def describe(basis: str, n_controls: int, permutations: int, fdr: float, seed: int) -> str:
    """RETURNS (str): the verdict's rule in one sentence, for the page, the JSON and the TSV's settings."""
    test = (
        f"the energy distance's permutation test ({permutations} shuffles of the periods of the word's documents, or of its "
        f"usages where a side has fewer than 10 documents; seed {seed}; z: the normal score of its tail, the shuffles' "
        "skewed null matched by a gamma)"
    )
    if basis == CONTROLS_BASIS:
        return (
            f"changed where the z of {test} for the word stands above those of {n_controls} control words (frequency-matched, "
            "drawn from the same corpora, scored alike): p from the normal tail of its z less the controls' median, over "
            f"their spread (1.4826 x MAD, at least 1), Benjamini-Hochberg q at most {fdr} across the targets"
        )
    return (
        "no verdict: a word is called changed only against control words drawn from the same corpora (their own drift, "
        "of style, genre or time, as the null), and none could be scored, so no word is called changed or not. Secondary: "
        f"q is the Benjamini-Hochberg q of {test} against chance alone, which two corpora of different times make small for "
        "most words"
    )
