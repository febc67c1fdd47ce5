"""Sentences in capitals (news headlines, shouted text) read as lowercase by the biLM of a usage index.

ELMo reads characters, and a sentence set in capitals gives every usage in it vectors unlike the same words in
running text, its context included: clustered, a corpus's headlines become a "sense" of every word in them. An
index therefore lets the biLM read such a sentence lowercased (its text, offsets and keys stay as written), and
likewise a run of words in capitals inside a sentence (a headline the sentence splitter joined to its story: "SAS
TO UPGRADE CABIN SERVICE Scandinavian Airlines said ..."); mixed case, a capitalised name or an acronym or two in
a normal sentence stay as they are.
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
    cased = [w for w in words if _cased(w)]
    if len(cased) < MIN_WORDS:
        return False
    return sum(w.isupper() for w in cased) >= CAPITALS_SHARE * len(cased)


def _cased(word: str) -> bool:
    return sum(c.isupper() or c.islower() for c in word) >= 2


def capital_runs(words: Sequence[str]) -> List[range]:
    """RETURNS (List[range]): the runs of tokens set in capitals: at least MIN_WORDS consecutive words of two or
    more cased letters entirely upper case (tokens without two cased letters, such as "<", "31" or "-", neither
    break nor count), from the first such word to the last."""
    runs: List[range] = []
    run: List[int] = []  # the words in capitals of the run being read
    for i, w in enumerate(words):
        if not _cased(w):
            continue
        if w.isupper():
            run.append(i)
            continue
        if len(run) >= MIN_WORDS:
            runs.append(range(run[0], run[-1] + 1))
        run = []
    if len(run) >= MIN_WORDS:
        runs.append(range(run[0], run[-1] + 1))
    return runs


def folded(words: Sequence[str]) -> Optional[List[str]]:
    """RETURNS (Optional[List[str]]): the tokens with the sentence lowercased where it is set in capitals, else
    its runs of capitals (`capital_runs`) lowercased; None where neither is found."""
    if in_capitals(words):
        return [w.lower() for w in words]
    runs = capital_runs(words)
    if not runs:
        return None
    out = list(words)
    for run in runs:
        for i in run:
            out[i] = out[i].lower()
    return out


def as_read(doc: "Doc", fold: bool) -> "Doc":
    """RETURNS (Doc): `doc` as the biLM reads it: with `fold`, lowercased where set in capitals (`folded`)."""
    from spacy.tokens import Doc

    words = folded([t.text for t in doc]) if fold else None
    if words is None:
        return doc
    return Doc(doc.vocab, words=words, spaces=[bool(t.whitespace_) for t in doc], sent_starts=[t.is_sent_start for t in doc])


def lemmas_as_read(sentence: "Span", nlp: "Language", setters: Sequence[str]) -> Optional[List[str]]:
    """RETURNS (Optional[List[str]]): the lemmas of a sentence's words as the biLM reads them (set in capitals:
    lowercased, `folded`; the part-of-speech tags those of the sentence as written), by the pipeline's lemma `setters`; None
    where no word of the sentence is read lowercased. A lemmatizer looks "BANKS" up as written and finds nothing."""
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
