"""Senses are meanings, not spellings: a usage and its copy in capitals, or with the target pluralised where that is
the only change, fall in the same sense (the shared biLM, real Reuters sentences; the split into senses forced, so
that a sense per spelling would show)."""

import gzip
import re

import numpy
import pytest

from spacy_elmo.change.run import ChangeSettings, run_change
from spacy_elmo.change.senses import adjusted_rand

pytestmark = pytest.mark.slow


def _lines_with_one_bank(shared_data, n=60):
    """Reuters paragraphs holding "bank" once, and no other form of the word."""
    found = []
    with gzip.open(shared_data / "raw" / "reuters21578.txt.gz", "rt", encoding="utf8") as f:
        for line in f:
            line = line.strip()
            if 40 < len(line) < 300 and len(re.findall(r"\bbank\b", line)) == 1 and len(re.findall(r"(?i)\bbank", line)) == 1:
                found.append(line)
                if len(found) == n:
                    break
    return found


def _same_sense_share(result, key="bank"):
    """The share of documents whose usage in A and whose usage in B got the same sense (one usage a document)."""
    labels = result.evidence[key]["labels"]  # identifier "file:doc:sentence:token" -> sense
    by_side = {}
    for identifier, sense in labels.items():
        file, doc = identifier.split(":")[:2]
        by_side.setdefault(file, {})[int(doc)] = sense
    (a, b) = by_side.values()
    shared = sorted(set(a) & set(b))
    assert len(shared) >= 50
    return numpy.mean([a[d] == b[d] for d in shared]), result.evidence[key]["senses"]


@pytest.fixture(scope="module")
def corpora(shared_data, tmp_path_factory):
    lines = _lines_with_one_bank(shared_data)
    tmp = tmp_path_factory.mktemp("spellings")
    (tmp / "plain.txt").write_text("\n\n".join(lines) + "\n", encoding="utf8")
    (tmp / "capitals.txt").write_text("\n\n".join(line.upper() for line in lines) + "\n", encoding="utf8")
    (tmp / "plural.txt").write_text("\n\n".join(re.sub(r"\bbank\b", "banks", line) for line in lines) + "\n", encoding="utf8")
    return tmp


def test_a_usage_and_its_copy_in_capitals_are_one_sense(corpora, shared_bilm):
    settings = ChangeSettings(model=str(shared_bilm), evidence=True, min_silhouette=0.0, permutations=0, draws=10)
    result = run_change(corpora / "plain.txt", corpora / "capitals.txt", ["bank"], settings, log=lambda _: None)
    same, senses = _same_sense_share(result)
    assert senses >= 2 and same >= 0.9, (same, senses)
    # the senses do not follow the spelling: "bank" against "BANK"
    labels = result.evidence["bank"]["labels"]
    forms = [identifier.startswith("capitals") for identifier in labels]
    assert adjusted_rand(list(labels.values()), forms) <= 0.15


def test_a_usage_and_its_copy_with_the_target_pluralised_are_one_sense(corpora, shared_bilm):
    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    settings = ChangeSettings(model=str(shared_bilm), lemmas=True, evidence=True, min_silhouette=0.0, permutations=0, draws=10)
    result = run_change(corpora / "plain.txt", corpora / "plural.txt", ["bank"], settings, log=lambda _: None)
    same, senses = _same_sense_share(result)
    assert senses >= 2 and same >= 0.9, (same, senses)
