"""Sentences in capitals (news headlines, shouted text) read as lowercase by the biLM of a usage index.

ELMo reads characters, and a sentence set in capitals gives every usage in it vectors unlike the same words in
running text, its context included: clustered, a corpus's headlines become a "sense" of every word in them. An
index therefore lets the biLM read such a sentence lowercased (its text, offsets and keys stay as written); mixed
case, a capitalised name or an acronym in a normal sentence stays as it is.
"""

from typing import TYPE_CHECKING, List, Optional, Sequence

if TYPE_CHECKING:
    from spacy.tokens import Doc

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
