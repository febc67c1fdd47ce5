"""Binary change (SemEval's subtask 1) by one stated rule: the verdict where control words were scored; else the
first measure above the targets' median, or a sense that came or went, as asked."""

import pytest

from spacy_elmo.change.binary import above_median, binary_change
from spacy_elmo.errors import InputError


def _rows(apds, verdicts=None, binaries=None):
    rows = []
    for k, value in enumerate(apds):
        row = {"word": f"w{k}", "apd": value}
        if verdicts is not None:
            row["verdict"] = {"changed": verdicts[k]}
        if binaries is not None:
            row["evidence"] = {"binary": binaries[k]}
        rows.append(row)
    return rows


def test_the_median_rule_by_hand():
    rule, answers = binary_change(_rows([0.3, 0.1, 0.2, None]), "median", "apd")
    assert answers == {"w0": 1, "w1": 0, "w2": 0}  # median 0.2: only 0.3 lies above; a word without a score has none
    assert "median (0.2000)" in rule and "stated assumption" in rule
    assert above_median({"a": 1.0, "b": 2.0, "c": float("nan"), "d": 3.0, "e": 4.0}) == (2.5, {"a": 0, "b": 0, "d": 1, "e": 1})


def test_the_verdict_answers_where_there_is_one_and_the_senses_where_asked():
    rule, answers = binary_change(_rows([0.3, 0.1], verdicts=[0, 1], binaries=[1, 0]), "median", "apd")
    assert answers == {"w0": 0, "w1": 1} and "verdict" in rule  # the verdict, not the median rule nor the senses
    rule, answers = binary_change(_rows([0.3, 0.1], verdicts=[None, None], binaries=[0, 1]), "senses", "apd")
    assert answers == {"w0": 0, "w1": 1} and "came or went" in rule
    with pytest.raises(InputError, match="--evidence"):
        binary_change(_rows([0.3, 0.1]), "senses", "apd")
    with pytest.raises(InputError, match="median, senses"):
        binary_change(_rows([0.3]), "coin", "apd")
