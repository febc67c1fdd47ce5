"""Which usages are one period's own: the neighbourhoods and the periods' discriminant fitted without the usage's
document (spacy_elmo/change/period_groups.py)."""

import numpy

from spacy_elmo.change.period_groups import BEYOND, LINE_USAGES, discriminant_scores, discriminated, period_groups, period_neighbourhoods


def _usages(planted: int, seed: int = 0, shift: float = 2.5, dims: int = 32, n_a: int = 300, n_b: int = 200):
    """A's usages and B's drawn alike, then `planted` more of B's moved along one direction (a sense B alone has,
    lying near A's: a mean shift of `shift` standard deviations). RETURNS: unit vectors (A's first), n_a, planted mask."""
    rng = numpy.random.default_rng(seed)
    direction = numpy.zeros(dims)
    direction[0] = 1.0
    a = rng.normal(size=(n_a, dims))
    b = rng.normal(size=(n_b, dims))
    moved = rng.normal(size=(planted, dims)) + shift * direction
    x = numpy.concatenate([a, b, moved]) + 4.0  # one word: its usages share a direction, as a word's do
    x[:, 1] -= 4.0
    unit = x / numpy.linalg.norm(x, axis=1, keepdims=True)
    mask = numpy.zeros(len(x), dtype=bool)
    mask[n_a + n_b :] = True
    return unit, n_a, mask


def _documents(n: int, n_a: int, per: int = 5) -> numpy.ndarray:
    """Every `per` usages of a period one document (none on both sides)."""
    return numpy.concatenate([numpy.arange(n_a) // per, 10_000 + numpy.arange(n - n_a) // per])


def test_the_discriminant_finds_a_sense_that_came_where_its_usages_lie_near_the_others():
    unit, n_a, planted = _usages(90)
    documents = _documents(len(unit), n_a)
    found = discriminated(unit, n_a, documents, seed=0)
    group = found == "B"
    assert group.sum() >= 20  # a real share of the 90 planted usages
    assert (group & planted).sum() / group.sum() >= 0.8  # and hardly any of B's others
    assert not (found[:n_a] == "B").any() and not (found[n_a:] == "A").any()  # a period's group holds its usages only
    # the neighbourhoods find fewer: the planted usages' nearest usages are mostly A's and B's others
    assert (period_neighbourhoods(unit, n_a) == "B").sum() < group.sum() / 2
    # the score is highest on the planted usages: above B's others and A's
    score = discriminant_scores(unit, n_a, documents, seed=0)
    assert score[planted].mean() > score[n_a:][~planted[n_a:]].mean() + 0.5 * score.std()


def test_no_group_where_the_periods_are_drawn_alike():
    for seed in range(3):
        unit, n_a, _ = _usages(0, seed=seed)
        found = discriminated(unit, n_a, _documents(len(unit), n_a), seed=seed)
        # the line lets BEYOND of the other period past; a group needs more than chance gives
        assert (found == "both").all(), (seed, (found == "B").sum(), (found == "A").sum(), BEYOND)


def test_a_sense_from_one_document_is_no_group_of_the_discriminant():
    """The discriminant is fitted without the usage's document: usages all from one document (one article's topic)
    are never in its training data when they are scored, so they are not found as a period's; spread over
    documents, the same usages are."""
    unit, n_a, planted = _usages(90)
    spread = _documents(len(unit), n_a)
    one = spread.copy()
    one[planted] = 99_999
    assert ((discriminated(unit, n_a, spread, seed=0) == "B") & planted).sum() >= 20
    assert ((discriminated(unit, n_a, one, seed=0) == "B") & planted).sum() <= 5


def test_period_groups_take_either_witness():
    unit, n_a, planted = _usages(90)
    documents = _documents(len(unit), n_a)
    near = period_neighbourhoods(unit, n_a)
    apart = discriminated(unit, n_a, documents, seed=0)
    both = period_groups(unit, n_a, documents, seed=0)
    for side in ("A", "B"):
        assert ((both == side) == ((near == side) | (apart == side))).all()


def test_no_group_from_a_line_drawn_on_too_few_usages_or_from_ties():
    """The line all but 1% of a period's usages stay behind is drawn on LINE_USAGES of them at least: with one usage
    in A, B's were all past it. Copies of one usage (a sentence repeated) are no period's own however the usages are
    ordered."""
    unit, n_a, planted = _usages(60, n_a=LINE_USAGES - 1, n_b=200)
    assert (discriminated(unit, n_a, None, seed=0) == "both").all()
    unit, n_a, planted = _usages(60, n_a=LINE_USAGES, n_b=200)
    assert ((discriminated(unit, n_a, None, seed=0) == "B") & planted).sum() >= 10  # the same sense, a line drawn
    copies = numpy.ones((240, 8)) / numpy.sqrt(8)
    assert (period_groups(copies, 120, None, seed=0) == "both").all()
