"""What a word's senses are clustered from and named by, read from two usage indexes.

By default the senses are clustered from the word's own top-layer vectors with the directions that tell its written
forms apart taken out (`top`: "bank" and "banks" are not two senses, `without_forms`); "context:top" clusters the
context-only vectors of the top layer (what the biLM predicts the word from, blind to its spelling; an index keeps
them with `--all-layers`), "target" the vectors the scores read as they are, any layer spec of
`UsageIndex.with_layer` another layer, and "substitutes" bags of the biLM's own substitutes (where it keeps its
softmax). On DWUG EN the word's own vectors gave senses nearer people's (mean ARI 0.138 against 0.065) and a sense
of one period for 12 of the 21 words people call changed against 6 of 25 (context-only: 9 and 8); on planted change
they show a planted sense a little less often (25 of 36 against 30) and name it after its donor half as often
(docs/results.md). The usages that most set a side apart (the witness) are read from the context-only
vectors where the indexes keep them: the word's own vectors put its capitalised forms first. The senses are named
by their distinctive substitutes, or context words without a softmax.
"""

from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import numpy

from ..errors import InputError
from .measures import _unit
from .sense_names import context_words
from .substitutes import Substitutes, substitute_bags

DEFAULT_SENSES = "top"
CONTEXT = "context:top"  # the context-only vectors: the substitutes and the witness read them
FORM_USAGES = 5  # a written form with fewer usages of a word moves no direction out of its senses' input
NAME_USAGES = 600  # at most this many usages of a word (both sides, drawn with a fixed seed) name its senses by substitutes


class SenseInput:
    """The senses' input for two indexes `a` and `b` of one biLM (the scores' vectors answered by `a.vectors`).

    senses (str): see the module docstring.
    lang (str): the stop words of this language are left out of the context words.
    notes (Optional[List[str]]): where the notes go (which input runs where the one asked for cannot).
    """

    def __init__(self, a: Any, b: Any, senses: str = DEFAULT_SENSES, lang: str = "en", notes: Optional[List[str]] = None) -> None:
        import spacy

        self.notes = notes if notes is not None else []
        self.indexes = (a, b)
        kept = a.context is not None and b.context is not None
        model = str(a.meta.get("model") or "")
        self.substitutes = Substitutes.of_model(model) if model and kept else None
        self.views: Optional[Tuple[Any, Any]] = None
        source = senses
        if senses == "substitutes" and self.substitutes is None:
            why = "A and B keep no context-only vectors to read them from (build them with --all-layers)" if not kept else no_softmax(model)
            self.notes.append(f"no substitutes to cluster the senses from: {why}")
            source = DEFAULT_SENSES
        if not kept and not source.startswith("context"):
            self.notes.append(
                "A and B keep no context-only vectors (built without --all-layers): the changed usages are ranked by the word's own "
                "vectors, in which its spelling and case count; build the indexes with --all-layers"
            )
        if source.startswith("context") and not kept:
            self.notes.append(
                "A and B keep no context-only vectors (built without --all-layers): the senses are clustered from the vectors the "
                "scores read, which split a word by its spelling and case; build the indexes with --all-layers for senses of meaning"
            )
            source = "target"
        if source not in ("target", "substitutes"):
            try:
                self.views = (a.with_layer(source).vectors, b.with_layer(source).vectors)
            except InputError as err:
                if source != DEFAULT_SENSES:
                    raise InputError(f"--senses-from {senses}: {err}") from None
                # an index of one other layer (built with --layer, without --all-layers): that layer, forms out
                self.notes.append(f"the senses are clustered from the vectors the scores read, not the top layer: {err}")
                self.views, source = (a.vectors, b.vectors), "scores"
        self.source = source
        # the context-only top layer, where kept: the substitutes and the witness read it (a view computes every
        # usage's norm: once, not twice)
        self.context_top: Optional[Tuple[Any, Any]] = None
        if kept:
            self.context_top = self.views if source == CONTEXT else (a.with_layer(CONTEXT).vectors, b.with_layer(CONTEXT).vectors)
        if self.substitutes is None and model:
            why = no_softmax(model) if kept else "A and B keep no context-only vectors to read substitutes from"
            self.notes.append(f"{why}: the senses are named by their context words, not by substitutes")
        language = str(a.meta.get("load", {}).get("lang", lang))
        self.singular = Singulars(language)
        lang_class = spacy.util.get_lang_class(language)
        self.stop_words: Set[str] = {w.lower() for w in lang_class.Defaults.stop_words}
        background: Counter = Counter()
        for index in (a, b):
            for text, count in index.types:
                word = text.lower()
                if word not in self.stop_words and word.isalpha():
                    background[word] += count
        self.background = background

    @property
    def names_from(self) -> str:
        return "substitutes" if self.substitutes is not None else "context words"

    def describe(self) -> str:
        """RETURNS (str): what the senses come from, for the settings."""
        forms_out = "the directions that tell its written forms apart taken out"
        what = {
            "target": "the vectors the scores read",
            "scores": f"the vectors the scores read, {forms_out}",
            "substitutes": "bags of the biLM's substitutes (top layer's context-only vectors through its softmax)",
        }.get(self.source, "")
        if not what and self.source.startswith("context"):
            what = f"{self.source} (the context-only vectors: the forward state before the word and the backward state after it)"
        elif not what:
            what = f"the word's own vectors, layer {self.source}, {forms_out}"
        return f"clustered from {what}; named by their distinctive {self.names_from}"

    def word(
        self, rows: Tuple[numpy.ndarray, numpy.ndarray], key: str
    ) -> Tuple[Optional[numpy.ndarray], List[List[str]], Optional[numpy.ndarray]]:
        """One word's sense input over its evidence rows of A and B.

        key (str): the word as the indexes key it; it and its forms in these usages (their texts, lowercase) are left
            out of substitutes and context words.
        RETURNS: the vectors to cluster (None: the scores' own), each usage's bag of words that names the senses, and
            the vectors the witness reads (the context-only top layer, forms out; None: the senses' own).
        """
        usages = [index.usage(int(r)) for index, side in zip(self.indexes, rows) for r in side]
        written = [u.text.lower() for u in usages]
        forms = set(written) | {key.lower()}
        ids = None
        named = None  # the usages whose substitutes are read: all where they are the senses' input, else a sample
        if self.substitutes is not None and self.context_top is not None:
            top = numpy.concatenate([numpy.asarray(v[r], dtype=numpy.float32) for v, r in zip(self.context_top, rows)])
            if self.source != "substitutes" and len(top) > NAME_USAGES:
                # names need the substitutes of enough usages of each sense, not of every usage: the softmax over
                # the whole vocabulary was most of change's time (10 words of 500 usages a side: a minute)
                named = numpy.sort(numpy.random.default_rng(0).choice(len(top), NAME_USAGES, replace=False))
                top = top[named]
            ids, _ = self.substitutes.top(top, forms=forms)
        if self.source == "substitutes" and ids is not None:
            vectors: Optional[numpy.ndarray] = substitute_bags(ids)[0]
        elif self.views is not None:
            vectors = without_forms(_rows_of(self.views, rows), written)
        else:
            vectors = None
        witness = None  # the senses' own where they are the context-only top layer, or where none is kept
        if self.context_top is not None and self.source != CONTEXT:
            witness = without_forms(_rows_of(self.context_top, rows), written)
        if ids is not None:
            assert self.substitutes is not None
            words = self.substitutes.words
            # names are content words: no punctuation, no stop word
            found = [[words[i] for i in row if words[i].isalpha() and words[i].lower() not in self.stop_words] for row in ids]
            if named is None:
                bags = found
            else:  # the usages not sampled name nothing
                bags = [[] for _ in range(sum(len(r) for r in rows))]
                for k, bag in zip(named, found):
                    bags[int(k)] = bag
        else:
            bags = [context_words(u.sentence, u.start, u.end, self.stop_words, forms) for u in usages]
        return vectors, bags, witness


def lookup_lemmas(lang: str) -> Any:
    """RETURNS: spaCy's lookup lemma table for `lang` (spacy-lookups-data; what `index-usages --lemmas` adds to a
    pipeline without a lemmatizer; `.get(word, default)`), None where it is not installed or has no table."""
    try:
        from spacy.lookups import load_lookups

        return load_lookups(lang, ["lemma_lookup"], strict=False).get_table("lemma_lookup", None)
    except (ImportError, ValueError, OSError):
        return None


class Singulars:
    """Lowercase regular plurals (-s, -es, -ies) to their singular, by spaCy's lookup lemmas for a language
    (spacy-lookups-data; none where it is not installed or has no table): a sense's names hold one word of each
    singular (`sense_names.name_senses`), so that "language" and "languages" are one name, not two of a sense's
    three. A word in capitals stays as it is."""

    def __init__(self, lang: str) -> None:
        self.table: Any = lookup_lemmas(lang)
        self.found: Dict[str, str] = {}

    def __call__(self, word: str) -> str:
        if self.table is None or not word.islower() or not word.endswith("s"):
            return word
        if word not in self.found:
            lemma = self.table.get(word)
            regular = isinstance(lemma, str) and (
                word in (lemma + "s", lemma + "es") or (lemma.endswith("y") and word == lemma[:-1] + "ies")
            )
            self.found[word] = lemma if regular else word
        return self.found[word]


def _rows_of(views: Tuple[Any, Any], rows: Tuple[numpy.ndarray, numpy.ndarray]) -> numpy.ndarray:
    """RETURNS: A's rows of the first view, then B's of the second, float64."""
    return numpy.concatenate([numpy.asarray(v[r], dtype=numpy.float64) for v, r in zip(views, rows)])


def without_forms(vectors: numpy.ndarray, forms: Sequence[str], least: int = FORM_USAGES) -> numpy.ndarray:
    """The usages' unit vectors with the directions that tell the word's written forms apart taken out: for each
    form (lowercase) but the commonest with at least `least` usages, the difference of its usages' mean from the
    commonest form's, orthonormalised, projected out. Context-only vectors still encode what the biLM predicts, so
    with --lemmas "countries" and "country" differ by grammatical number: forced splits (--min-silhouette 0) gave 8
    of 27 nouns of a random half of Wikipedia a sense at least 80% plural where under half of the noun's usages were
    plural; with the form directions out, none (benchmarks/planted_change.py --forms; docs/results.md). A word of
    one form: its unit vectors.

    vectors (numpy.ndarray): (n, D), one usage a row; forms (Sequence[str]): each usage's written form.
    RETURNS (numpy.ndarray): (n, D) float64 unit rows.
    """
    unit = _unit(vectors)
    counts = Counter(forms)
    if len(counts) < 2:
        return unit
    labels = numpy.array(list(forms))
    commonest = counts.most_common(1)[0][0]
    centre = unit[labels == commonest].mean(0)
    basis: List[numpy.ndarray] = []
    for form, n in sorted(counts.items()):
        if form == commonest or n < least:
            continue
        d = unit[labels == form].mean(0) - centre
        for v in basis:
            d = d - (d @ v) * v
        if numpy.linalg.norm(d) > 1e-9:
            basis.append(d / numpy.linalg.norm(d))
    if not basis:
        return unit
    V = numpy.stack(basis)
    return _unit(unit - (unit @ V.T) @ V)


def no_softmax(model: str) -> str:
    """RETURNS (str): why the biLM `model` has no substitutes, and how to get them."""
    from ..released.catalogue import CATALOGUE, SOFTMAXES

    if model in SOFTMAXES:
        return (
            f"the softmax published with {model} is not in the cache (spacy-elmo download {model} --softmax, "
            f"{SOFTMAXES[model].download.lstrip('~')})"
        )
    if model in CATALOGUE:
        return f"{model} was released without its softmax"
    return f"the biLM {Path(model).name or model} keeps no softmax (vocab.txt + softmax.pt, as spacy-elmo pretrain writes)"
