"""What a smoke run's tables say in the table itself (compare.py, few_labels.py with --smoke): a run of a few steps
on a slice checks that every step runs; a difference of 9 points between its rows is noise."""

SMOKE_RUN = (
    "A smoke run (a few steps on a slice of the data, to check that every step runs): its scores and their differences "
    "measure nothing about ELMo."
)
