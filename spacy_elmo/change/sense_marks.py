"""What a sense's period is called: the marks of change (`senses.sense_periods`) and the labels the checks give
instead of a mark (sense_checks.py), in the page, the TSV and the JSON alike."""

from typing import Sequence

CAME, WENT, MORE, LESS, BOTH = "came in B", "went from A", "more in B", "less in B", "both"
# a sense whose usages are all in one period, too few for any rule to tell (2 in A and 0 in B was shown as "both")
ONLY_A, ONLY_B = "only in A, too few to tell", "only in B, too few to tell"
NAMES = "names or headings"  # a sense flagged by its usages' writing: never marked
FEW_DOCUMENTS = "leans to one period in a few documents only"  # the counts say moved; the documents do not
WITHHELD = "not marked: the control words' senses move as often"
NOT_MOVED = (BOTH, ONLY_A, ONLY_B, NAMES, FEW_DOCUMENTS, WITHHELD)


def moved(periods: Sequence[str]) -> int:
    """RETURNS (int): 1 where a sense came, went or moved (`sense_periods`: anything but NOT_MOVED), else 0:
    `binary_change`."""
    return int(any(p not in NOT_MOVED for p in periods))
