"""A tagger trained on UD English-EWT, as docs/senses.md tells a user to get one, keeps a verb's "-ing" form out of
a noun's usages under --lemmas --pos NOUN (the planted benchmark's "evidence follows spelling": lookup lemmas filed
"interesting" and "interested" under "interest")."""

import random

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example

from spacy_elmo import save_original
from spacy_elmo.pipeline.component import add_elmo
from spacy_elmo.usages import build_usage_index

from ..helpers import tiny_bilm


def _ewt_docs(path, vocab, n):
    """The first `n` sentences of a CoNLL-U file as Docs with their words and Universal POS tags."""
    docs, words, tags = [], [], []
    for line in path.read_text(encoding="utf8").splitlines():
        if not line.strip():
            if words:
                docs.append(Doc(vocab, words=words, pos=tags))
                words, tags = [], []
                if len(docs) >= n:
                    break
            continue
        cols = line.split("\t")
        if line.startswith("#") or not cols[0].isdigit():
            continue
        words.append(cols[1])
        tags.append(cols[3] if cols[3] != "_" else "X")
    return docs


def ewt_morphologizer(shared_data, sentences: int = 3000, epochs: int = 4) -> "spacy.language.Language":
    """A blank English pipeline with a morphologizer trained on the first `sentences` of UD English-EWT's train
    split (seeded): a tagger of Universal POS as docs/senses.md tells a user to get one."""
    nlp = spacy.blank("en")
    nlp.add_pipe("morphologizer")
    docs = _ewt_docs(shared_data / "ud-ewt" / "en_ewt-ud-train.conllu", nlp.vocab, sentences)
    examples = [Example(nlp.make_doc(d.text), d) for d in docs]
    optimizer = nlp.initialize(lambda: examples)
    rng = random.Random(0)
    for _ in range(epochs):
        rng.shuffle(examples)
        for start in range(0, len(examples), 64):
            nlp.update(examples[start : start + 64], sgd=optimizer, drop=0.1)
    return nlp


@pytest.mark.slow
def test_a_tagger_trained_on_ewt_keeps_verb_forms_out_of_a_nouns_usages(shared_data, tmp_path):
    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    nlp = ewt_morphologizer(shared_data)
    folder = tmp_path / "bilm"
    folder.mkdir()
    save_original(tiny_bilm(seed=3), folder / "options.json", folder / "weights.hdf5")
    add_elmo(nlp, folder)
    corpus = tmp_path / "interest.txt"
    corpus.write_text(
        "The interest rate rose again this year.\n\nThe film was very interesting.\n\n"
        "Her interests grew over the years.\n\nHe is interested in the house.\n",
        encoding="utf8",
    )
    quiet = {"progress": False, "log": lambda _: None}
    every = build_usage_index(nlp, corpus, tmp_path / "all", words=["interest"], lemmas=True, **quiet)
    nouns = build_usage_index(nlp, corpus, tmp_path / "nouns", words=["interest"], lemmas=True, pos="NOUN", **quiet)
    as_written = sorted(every.usage(int(r)).text for r in every.rows_of("interest"))
    assert "interesting" in as_written or "interested" in as_written  # what lookup lemmas file under the noun
    assert sorted(nouns.usage(int(r)).text for r in nouns.rows_of("interest")) == ["interest", "interests"]
