"""One rule for a sense of one period (`senses.sense_periods`), shown alike in the JSON, the TSV and the page: a sense
came or went only by DWUG's k/n rule; a sense whose share fell but whose usages remain is "less in B", never "went";
binary change is 1 where a sense came, went or moved."""

import math

from spacy_elmo.change.outputs import sense_periods_cell
from spacy_elmo.change.senses import binary_change, sense_periods


def _binomial_tail(x, m, p):
    return sum(math.comb(m, i) * p**i * (1 - p) ** (m - i) for i in range(x, m + 1))


def test_a_sense_with_usages_left_in_a_never_came():
    # the audit's case: 2 usages in A, 50 in B; its share of B (50/90) is over 4 times its share of A (2/42) and the
    # binomial tail of 50 of 52 toward B (B's share of usages 90/132) is far below 0.01 / 2: more in B, not "came"
    assert 50 / 90 >= 4 * 2 / 42 and _binomial_tail(50, 52, 90 / 132) < 0.005
    assert sense_periods([2, 40], [50, 40]) == ["more in B", "both"]
    assert binary_change([2, 40], [50, 40]) == 1  # it moved


def test_a_diluted_sense_is_less_in_b_never_went():
    # 16 usages in A and 16 in B, its share diluted by a sense that came: 16/46 against 16/216 (4.7 times)
    assert 16 / 46 >= 4 * 16 / 216 and _binomial_tail(16, 32, 46 / 262) < 0.01 / 3
    assert sense_periods([16, 30, 0], [16, 100, 100]) == ["less in B", "both", "came in B"]
    assert binary_change([16, 30, 0], [16, 100, 100]) == 1


def test_came_and_went_by_dwugs_rule_and_its_settings():
    assert sense_periods([0, 40], [20, 40]) == ["came in B", "both"]
    assert sense_periods([1, 40], [5, 40]) == ["came in B", "both"]  # k = 1, n = 5: at the edges
    assert sense_periods([9, 40], [1, 40]) == ["went from A", "both"]
    # 1 in A, 4 in B: short of n = 5, and the share test's tail (4 of 5 toward B at 24/55) is above 0.01 / 2
    assert _binomial_tail(4, 5, 24 / 55) > 0.005
    assert sense_periods([30, 1], [20, 4]) == ["both", "both"] and binary_change([30, 1], [20, 4]) == 0
    # k = 2, n = 3 given: the same counts came
    assert sense_periods([30, 2], [20, 3], k=2, n=3) == ["both", "came in B"]


def test_the_tsv_cell_names_each_sense_of_one_period_with_its_counts():
    ev = {"sense_periods": ["both", "came in B", "less in B"], "cluster_freq_dist1": [40, 0, 30], "cluster_freq_dist2": [40, 41, 9]}
    assert sense_periods_cell(ev) == "2 came in B 0/41 | 3 less in B 30/9"
    assert sense_periods_cell({"sense_periods": ["both"], "cluster_freq_dist1": [5], "cluster_freq_dist2": [5]}) == ""


def test_a_sense_of_one_period_too_small_to_tell_says_so_and_is_no_change():
    """The audit's case (issue 103): a sense of 2 usages in A and none in B was shown as of "both" periods. It is of one
    period, too small for the k/n rule (n = 5) or the share test: said so, and not counted as a change."""
    assert sense_periods([40, 2], [40, 0]) == ["both", "only in A, too few to tell"]
    assert sense_periods([40, 0], [40, 3]) == ["both", "only in B, too few to tell"]
    assert binary_change([40, 2], [40, 0]) == 0 and binary_change([40, 0], [40, 3]) == 0
    cell = sense_periods_cell(
        {"sense_periods": ["both", "only in A, too few to tell"], "cluster_freq_dist1": [40, 2], "cluster_freq_dist2": [40, 0]}
    )
    assert cell == "2 only in A, too few to tell 2/0"
