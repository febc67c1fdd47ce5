"""Binary change (SemEval's subtask 1) by one stated rule: the verdict where control words were scored; else the
first measure above the targets' median, or a sense that came, went or moved, as asked."""

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
    assert answers == {"w0": 0, "w1": 1} and "came, went or moved" in rule
    with pytest.raises(InputError, match="--evidence"):
        binary_change(_rows([0.3, 0.1]), "senses", "apd")
    with pytest.raises(InputError, match="median, senses"):
        binary_change(_rows([0.3]), "coin", "apd")


def test_the_rows_order_is_the_verdicts_z_where_there_is_one_else_the_measure():
    """The audit's case: ordered by APD alone, an untouched control led the page of a planted pair. Where there is a
    verdict, the rows go by its z (the words called changed first); without one, by the first measure."""
    from spacy_elmo.change.measures import WordChange
    from spacy_elmo.change.run import in_order
    from spacy_elmo.change.verdict import WordVerdict

    rows = [
        WordChange("untouched", 50, 50, {"apd": 0.6}),
        WordChange("planted", 50, 60, {"apd": 0.3}),
        WordChange("also", 50, 60, {"apd": 0.2}),
        WordChange("rare", 2, 1, {}, "too few usages"),
        WordChange("plain", 50, 50, {"apd": 0.4}),
    ]
    z = {"untouched": 0.5, "planted": 9.0, "also": 6.0, "plain": 1.5}
    verdicts = {w: WordVerdict(0.1, z[w], 0.5, changed=int(z[w] > 5)) for w in z}
    ordered, said = in_order(rows, verdicts, "apd")
    assert [r.word for r in ordered] == ["planted", "also", "plain", "untouched", "rare"]
    assert said.startswith("by the verdict's energy z (the words called changed first")
    undecided = {w: WordVerdict(0.1, z[w], 0.5) for w in z}  # no null: changed None, the z is no verdict's
    ordered, said = in_order(rows, undecided, "apd")
    assert [r.word for r in ordered] == ["untouched", "plain", "planted", "also", "rare"] and said.startswith("by apd (no verdict")
    assert in_order(rows, {}, "apd")[1] == "by apd"


def test_the_verdict_only_rule_answers_where_a_verdict_does_and_nowhere_else():
    """What --answers uses where no --binary-change is given: no verdict, no answers (issue 103's audit)."""
    from spacy_elmo.change.binary import VERDICT_ONLY

    rule, answers = binary_change(_rows([0.3, 0.1, 0.2]), VERDICT_ONLY, "apd")
    assert answers == {} and "no verdict" in rule
    rule, answers = binary_change(_rows([0.3, 0.1], verdicts=[0, 1]), VERDICT_ONLY, "apd")
    assert answers == {"w0": 0, "w1": 1} and "verdict" in rule
