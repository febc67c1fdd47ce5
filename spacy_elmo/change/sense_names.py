"""Names for a word's senses: the words most distinctive of each sense's usages.

A sense is named by its most distinctive substitutes where the biLM keeps its softmax (what the biLM would put in
the word's place in those usages; substitutes.py), else by its most distinctive context words (the words around
the target in those usages, stop words, numbers and the target's own forms left out). "Distinctive" is the
weighted log-odds ratio with an informative Dirichlet prior (Monroe, Colaresi & Quinn 2008): a word's z-score for
the sense against the word's other senses together with the background (the other words' usages), or, for a word
of one sense, against the background alone (every word of the index's sentences for context words; the other
words' substitutes for substitutes). Against the word's other senses alone, a word common everywhere ("people")
named a sense that came as readily as the donor of a planted sense (5 of 10 held it; 9 of 10 against both).
"""

import math
import re
from collections import Counter
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

NAME_WORDS = 3  # words in a sense's name
CONTEXT_WINDOW = 10  # context words each side of the target
PRIOR_WEIGHT = 100.0  # the Dirichlet prior's total count (alpha_0), spread as the background's shares
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)


def context_words(text: str, start: int, end: int, stop_words: Set[str], forms: Set[str], window: int = CONTEXT_WINDOW) -> List[str]:
    """RETURNS (List[str]): the lowercase words within `window` words of the target (characters [start, end) of
    `text`), stop words, numbers and `forms` (lowercase) left out."""
    before = [m.group().lower() for m in _WORD.finditer(text[:start])][-window:]
    after = [m.group().lower() for m in _WORD.finditer(text[end:])][:window]
    return [w for w in before + after if w not in stop_words and w not in forms and len(w) > 1]


def log_odds(sense: Counter, rest: Counter, prior: Counter) -> Dict[str, float]:
    """RETURNS (Dict[str, float]): the z-score of each word of `sense` for `sense` against `rest`, with the
    informative Dirichlet prior `prior` (its shares times PRIOR_WEIGHT)."""
    n_i, n_j, n_prior = sum(sense.values()), sum(rest.values()), sum(prior.values()) or 1
    out = {}
    for word, y_i in sense.items():
        alpha = PRIOR_WEIGHT * prior.get(word, 0) / n_prior + 0.01
        y_j = rest.get(word, 0)
        delta = math.log((y_i + alpha) / (n_i + PRIOR_WEIGHT - y_i - alpha)) - math.log(
            (y_j + alpha) / (max(n_j + PRIOR_WEIGHT - y_j - alpha, 1e-9))
        )
        out[word] = delta / math.sqrt(1.0 / (y_i + alpha) + 1.0 / (y_j + alpha))
    return out


def names_something(word: str) -> bool:
    """Whether a word may name a sense: three letters or more, letters alone ("St", "Mr" and "'s" name nothing)."""
    return len(word) >= 3 and word.isalpha()


def name_senses(
    bags: Sequence[Iterable[str]],
    labels: Sequence[int],
    k: int,
    background: Optional[Counter] = None,
    n_words: int = NAME_WORDS,
    min_usages: int = 2,
    lemma: Optional[Callable[[str], str]] = None,
) -> List[List[str]]:
    """The `n_words` most distinctive words of each of `k` senses.

    bags (Sequence[Iterable[str]]): each usage's words (its substitutes, or its context words), counted once a usage.
    labels (Sequence[int]): each usage's sense.
    background (Optional[Counter]): what a sense is told apart from besides the word's other senses (the other words'
        usages); None: the other senses alone, and a word of one sense is named by its commonest words.
    min_usages (int): a name word occurs in at least this many of the sense's usages (fewer where the sense is smaller).
    lemma (Optional[Callable[[str], str]]): a word's lemma; a word is skipped whose lemma a more distinctive name
        word has ("languages" after "language"). Words are scored as written, not merged by lemma first: merged,
        "years" (a planted sense of "years") took in the counts of "year", common in every word's usages, and lost
        its place to "hour, month, week".
    RETURNS (List[List[str]]): per sense its name words, most distinctive first (may be fewer than `n_words`).
    """
    per_sense: List[Counter] = [Counter() for _ in range(k)]
    sizes = [0] * k
    for bag, label in zip(bags, labels):
        per_sense[int(label)].update(set(bag))
        sizes[int(label)] += 1
    everything: Counter = sum(per_sense, Counter())
    names = []
    for j in range(k):
        enough = min(min_usages, max(1, sizes[j]))
        if k > 1:  # against the word's other senses and, where given, the other words' usages
            rest = everything - per_sense[j] + (background or Counter())
            scores = log_odds(per_sense[j], rest, everything + (background or Counter()))
        elif background:
            scores = log_odds(per_sense[j], background, background)
        else:
            scores = {w: float(c) for w, c in per_sense[j].items()}
        # only words more common in the sense than where it is told apart from
        ranked = sorted(
            (w for w in scores if per_sense[j][w] >= enough and scores[w] > 0 and names_something(w)),
            key=lambda w: (-scores[w], -per_sense[j][w], w),
        )
        chosen: List[str] = []
        for w in ranked:
            if len(chosen) == n_words:
                break
            if lemma is None or all(lemma(w) != lemma(c) for c in chosen):
                chosen.append(w)
        names.append(chosen)
    return names
