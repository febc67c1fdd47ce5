"""Sentences in capitals (news headlines, shouted text) read as lowercase by the biLM of a usage index.

ELMo reads characters, and a sentence set in capitals gives every usage in it vectors unlike the same words in
running text, its context included: clustered, a corpus's headlines become a "sense" of every word in them. An
index therefore lets the biLM read such a sentence lowercased (its text, offsets and keys stay as written); mixed
case, a capitalised name or an acronym in a normal sentence stays as it is.
"""

from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc, Span

MIN_WORDS = 3  # words of at least two cased letters a sentence needs to be judged
CAPITALS_SHARE = 0.8  # of those, the share entirely in capitals that makes a sentence one set in capitals


def in_capitals(words: Sequence[str]) -> bool:
    """RETURNS (bool): whether a sentence of these tokens is set in capitals: at least MIN_WORDS words with two or
    more cased letters, and at least CAPITALS_SHARE of them entirely upper case."""
    cased = [w for w in words if sum(c.isupper() or c.islower() for c in w) >= 2]
    if len(cased) < MIN_WORDS:
        return False
    return sum(w.isupper() for w in cased) >= CAPITALS_SHARE * len(cased)


def folded(words: Sequence[str]) -> Optional[List[str]]:
    """RETURNS (Optional[List[str]]): the tokens lowercased where the sentence is set in capitals, else None."""
    if not in_capitals(words):
        return None
    return [w.lower() for w in words]


def as_read(doc: "Doc", fold: bool) -> "Doc":
    """RETURNS (Doc): `doc` as the biLM reads it: lowercased where `fold` and it is set in capitals."""
    from spacy.tokens import Doc

    words = folded([t.text for t in doc]) if fold else None
    if words is None:
        return doc
    return Doc(doc.vocab, words=words, spaces=[bool(t.whitespace_) for t in doc], sent_starts=[t.is_sent_start for t in doc])


def lemmas_as_read(sentence: "Span", nlp: "Language", setters: Sequence[str]) -> Optional[List[str]]:
    """RETURNS (Optional[List[str]]): the lemmas of a sentence set in capitals as the biLM reads it (its words
    lowercased; the part-of-speech tags those of the sentence as written), by the pipeline's lemma `setters`; None
    where the sentence is not set in capitals. A lemmatizer looks "BANKS" up as written and finds nothing."""
    from spacy.tokens import Doc

    lowered = folded([t.text for t in sentence])
    if lowered is None:
        return None
    copy = Doc(nlp.vocab, words=lowered, spaces=[bool(t.whitespace_) for t in sentence])
    for written, read in zip(sentence, copy):
        read.tag, read.pos, read.morph = written.tag, written.pos, written.morph
    for name in setters:
        copy = nlp.get_pipe(name)(copy)
    return [t.lemma_ for t in copy]


def lemma_setters(nlp: "Language", off: Sequence[str] = ()) -> List[str]:
    """RETURNS (List[str]): the pipeline's components that set lemmas (and run: not in `off`)."""
    return [n for n in nlp.pipe_names if "token.lemma" in nlp.get_pipe_meta(n).assigns and n not in off]
