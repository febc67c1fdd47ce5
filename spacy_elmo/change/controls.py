"""The control words: words drawn from the corpora (or from indexes of every word) to stand beside the targets,
matched to their frequencies in both, and by part of speech where the corpora are tagged (`--pos`), so that the
corpora's own drift (topic, genre, style) is the null the verdict and the senses' marks are checked against."""

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Set, Tuple

from ..usages.words import split_pos
from .verdict import is_control_word

if TYPE_CHECKING:  # pragma: no cover
    from .run import ChangeSettings


def corpus_controls(
    nlp: Any, sides: List[Path], targets: List[str], settings: "ChangeSettings", log: Callable, notes: List[str]
) -> List[str]:
    """Control words drawn from the two corpora's word counts, matched to the targets' (verdict.draw_controls): with
    `settings.pos`, only the words the pipeline tags so (`count_tagged`), so that a noun's controls are nouns; without
    it, by frequency alone, said in a note."""
    from ..text_corpus import corpus_files, read_texts
    from .verdict import count_words, draw_controls

    def texts(side: Path) -> Iterable[str]:
        return (text for path in corpus_files(side) for text, _ in read_texts(path, nlp.vocab))

    stop: Set[str] = getattr(nlp.Defaults, "stop_words", set())
    plain = [split_pos(t)[0].lower() for t in targets]
    if settings.pos:
        counts = [count_tagged(nlp, texts(side), settings.pos, settings.lemmas) for side in sides]
        keyed = f"{'lemmas' if settings.lemmas else 'written forms'} the pipeline tags {settings.pos}"
    else:
        counts = [count_words(texts(side)) for side in sides]
        keyed = "written forms"
        notes.append(
            "the control words are matched to the targets by frequency alone, not by part of speech (a noun's controls may be "
            "verbs or adverbs, whose usages drift otherwise): give --pos NOUN (or VERB ...) and, as --model, a pipeline with a "
            "tagger to draw them among words of the targets' part of speech"
        )
    if settings.lemmas and not settings.pos:  # the targets are matched as lemmas: so are the controls, counted by lemma
        from .sense_input import lookup_lemmas

        lemma_of = lookup_lemmas(nlp.lang)
        if lemma_of is not None:
            counts = [by_lemma(c, lemma_of) for c in counts]
            keyed = "lemmas (spaCy's lookup lemmas)"
    controls = draw_controls(counts[0], counts[1], plain, settings.controls, settings.seed, exclude=stop)
    log(
        f"Control words ({len(controls)}, {keyed}, matched to the targets' frequencies in both corpora, seed {settings.seed}): "
        f"{', '.join(controls)}"
    )
    return controls


NOT_TAGGING = ("ner", "parser", "entity_ruler", "textcat", "textcat_multilabel", "spancat")  # components run for no tag


def count_tagged(nlp: Any, texts: Iterable[str], pos: str, lemmas: bool = False, batch_size: int = 256) -> "Counter[str]":
    """RETURNS (Counter): the words (lowercase, or their lemmas) the pipeline tags `pos` in the texts, by the letters-only
    rule of the controls (`verdict.is_control_word`); the elmo components and those that set no tag are not run."""
    from collections import Counter

    from ..pipeline.loading import elmo_names

    off = [name for name in nlp.pipe_names if name in set(elmo_names(nlp)) | set(NOT_TAGGING)]
    counts: Counter = Counter()
    for doc in nlp.pipe(texts, disable=off, batch_size=batch_size):
        for token in doc:
            if token.pos_ == pos:
                word = (token.lemma_ or token.text).lower() if lemmas else token.lower_
                if is_control_word(word):
                    counts[word] += 1
    return counts


def by_lemma(counts: Any, lemma_of: Any) -> Any:
    """RETURNS (Counter): word counts merged by lemma (lowercase), a word without an entry its own lemma."""
    from collections import Counter

    merged: Counter = Counter()
    for word, n in counts.items():
        lemma = str(lemma_of.get(word, word)).lower()
        if is_control_word(lemma):  # the letters-only rule after lemmatising too: spaCy's lemma of "first" is "1"
            merged[lemma] += n
    return merged


def index_controls(a: Any, b: Any, targets: List[str], settings: "ChangeSettings") -> List[str]:
    """Control words drawn from the words two indexes share (indexes of every word; of the targets alone: none), by the
    rule of the corpora's (`verdict.is_control_word`): no punctuation, digits, stop words or words of 1-2 letters."""
    from collections import Counter

    from spacy.util import get_lang_class

    from .verdict import draw_controls

    stop = {w.lower() for w in get_lang_class(settings.lang).Defaults.stop_words}
    shared = {k for k in set(a.keys) & set(b.keys) if is_control_word(split_pos(k)[0], stop)}
    counts = [Counter({k: len(index.rows_of(k)) for k in shared}) for index in (a, b)]
    return draw_controls(counts[0], counts[1], targets, settings.controls, settings.seed, min_count=settings.min_usages)


def match_frequencies(
    targets: Dict[str, Any], controls: Dict[str, Tuple[int, int]], read: Dict[str, Tuple[int, int]], notes: List[str]
) -> None:
    """Mark each target's verdict `matched` (verdict.nearest_control) and name, in a note, the targets without a
    control of about their frequency."""
    from .verdict import MATCH_FACTOR, nearest_control

    apart = []
    for word, verdict in targets.items():
        near, verdict.matched = nearest_control(read[word], controls)
        if not verdict.matched and near is not None:
            apart.append(f"{word} {read[word][0]:,}/{read[word][1]:,} (nearest: {near} {controls[near][0]:,}/{controls[near][1]:,})")
    if apart:
        notes.append(
            f"{len(apart)} target{'s have' if len(apart) > 1 else ' has'} no control word within {MATCH_FACTOR:g}x of its usages "
            f"in A and in B, so its verdict compares it with words of other frequencies (the energy z grows with a word's "
            f"usages): {'; '.join(apart[:6])}{'; ...' if len(apart) > 6 else ''}. Read such a verdict with care, or give "
            "corpora that hold words of its frequency"
        )
