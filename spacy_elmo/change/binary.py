"""Binary change (SemEval-2020 Task 1's subtask 1: did the word change, yes or no) by one stated rule.

Where control words were scored, the answer is the verdict's (verdict.py: the word stands above the corpora's own
drift). Where there is no null (a WUG dataset, indexes of the targets alone), no word is *called* changed, but a
user who asks for binary answers gets them by a rule that says what it assumes:

- "median": the word's score in the rows' order above the targets' median: about half the targets changed. It
  reads no truth and learns no threshold; on DWUG EN (21 of 46 words changed) its accuracy is in docs/results.md
  against calling none changed.
- "senses": a sense came, went or moved (`senses.binary_change`): DWUG's k/n rule for a sense that came or went,
  with a sense whose share of one period moved by the share test.

With neither asked (VERDICT_ONLY, what `--answers` uses by default), a word gets a binary answer only from a verdict.
"""

from typing import Any, Dict, List, Optional, Tuple

import numpy

from ..errors import InputError

BINARY_RULES = ("median", "senses")
VERDICT_ONLY = "verdict"  # binary answers where the verdict gives them, and none otherwise (--answers by default)


def binary_change(words: List[Dict[str, Any]], rule: str, measure: str) -> Tuple[str, Dict[str, int]]:
    """Each scored word's binary change, and the rule in words.

    words: the JSON's rows (`run._data`), a verdict and evidence where computed.
    rule: "median" or "senses" (used where no verdict against control words was reached).
    measure: the score that orders the rows (what "median" reads).
    RETURNS: the rule's description and word -> 0/1.
    """
    if rule not in BINARY_RULES + (VERDICT_ONLY,):
        raise InputError(f"binary change by {rule!r}: give one of {', '.join(BINARY_RULES)}")
    verdicts = {w["word"]: (w.get("verdict") or {}).get("changed") for w in words}
    if any(v is not None for v in verdicts.values()):
        return "the verdict against control words (changed)", {w: int(v) for w, v in verdicts.items() if v is not None}
    if rule == VERDICT_ONLY:  # a rule nobody asked for never answers
        return "none: no verdict without control words, and no --binary-change rule was given", {}
    if rule == "senses":
        found = {w["word"]: int(w["evidence"]["binary"]) for w in words if w.get("evidence")}
        if not found:
            raise InputError("binary change by the senses needs them: give --evidence (or --report), or --binary-change median")
        return "a sense came, went or moved (senses.sense_periods)", found
    middle, answers = above_median({w["word"]: w.get(measure) for w in words})
    return (
        f"{measure} above the targets' median ({middle:.4f}): about half the targets changed, a stated assumption, since "
        "without control words there is no null to judge a word by",
        answers,
    )


def above_median(scores: Dict[str, Optional[float]]) -> Tuple[float, Dict[str, int]]:
    """RETURNS: the median of the finite scores, and word -> 1 where its score is above it (words without one left out)."""
    scored = {w: float(v) for w, v in scores.items() if v is not None and numpy.isfinite(v)}
    if not scored:
        return float("nan"), {}
    middle = float(numpy.median(list(scored.values())))
    return middle, {w: int(v > middle) for w, v in scored.items()}
