"""The checks a sense passes before it is shown or marked (`change/sense_checks.py`): stability over resampled
clusterings, names and headings, the period split tested by documents, and the control words' rate, each against
cases made by hand."""

import numpy
import pytest

from spacy_elmo.change.sense_checks import (
    check_marks,
    control_marks,
    few_documents,
    jaccard_stability,
    marks_allowed,
    name_like,
    period_p_values,
    settled,
    withhold_marks,
)
from spacy_elmo.change.sense_marks import CAME, FEW_DOCUMENTS, MORE, NAMES, WITHHELD, moved
from spacy_elmo.change.senses import SenseRule, word_evidence


def test_jaccard_stability_by_hand():
    labels = numpy.array([0, 0, 0, 0, 1, 1, 1, 1])
    same = (numpy.arange(8), numpy.array([5, 5, 5, 5, 3, 3, 3, 3]))  # the same partition, other names
    split = (numpy.arange(8), numpy.array([0, 0, 1, 1, 2, 2, 2, 2]))  # sense 0 cut in two halves
    assert jaccard_stability(labels, [same]).tolist() == [1.0, 1.0]
    assert jaccard_stability(labels, [same, split]).tolist() == [pytest.approx(0.75), 1.0]
    # a run on some usages only: the sense's members among them; {0, 1} against the run's cluster {0, 1, 4}: 2 / 3
    sub = (numpy.array([0, 1, 4, 5]), numpy.array([0, 0, 0, 1]))
    assert jaccard_stability(labels, [sub]).tolist() == [pytest.approx(2 / 3), pytest.approx(1 / 2)]


def test_unstable_senses_join_the_nearest_stable_sense():
    unit = numpy.eye(4)[[0, 0, 1, 1, 2, 2, 3]].astype(float)
    unit[4:6] = [0.9, 0.1, 0.0, 0.0]  # sense 2 lies near sense 0
    unit[6] = [0.1, 0.9, 0.0, 0.0]  # sense 3 near sense 1
    labels = numpy.array([0, 0, 1, 1, 2, 2, 3])
    kinds = ["both", "both", "both", "B"]
    new, kept, joined = settled(labels, numpy.array([0.9, 0.8, 0.3, numpy.nan]), unit, kinds)
    assert new.tolist() == [0, 0, 1, 1, 0, 0, 1] and kept == [0, 1] and joined == 3
    # no sense of both periods stable: they are one sense; a stable sense of B stays apart
    new, kept, joined = settled(labels, numpy.array([0.5, 0.3, 0.2, 0.9]), unit, kinds)
    assert new.tolist() == [0, 0, 0, 0, 0, 0, 1] and kept == [0, 3] and joined == 0
    new, kept, joined = settled(labels, numpy.array([0.9, 0.8, 0.8, 0.76]), unit, kinds)
    assert new.tolist() == labels.tolist() and kept == [0, 1, 2, 3] and joined == 0


@pytest.mark.parametrize(
    "text,word,expected",
    [
        ("The Maxim gun was used in the colonial wars.", "Maxim", True),  # a name within the sentence
        ("A maxim of the law says that much and more.", "maxim", False),
        ("Bank holidays were moved to Monday this year.", "Bank", False),  # first word: capitalised anyway
        ('He said: "Bank notes were scarce in the war."', "Bank", False),  # first word after a quote
        ("Early family.", "family", True),  # a heading
        ("The NATO forces moved north in the spring.", "NATO", True),  # capitals
    ],
)
def test_name_like_usages(text, word, expected):
    start = text.index(word)
    assert name_like(text, start, start + len(word)) is expected


def test_the_period_test_reads_documents_not_usages():
    """A sense of 20 usages in B, all from one document of 50 a side: by usages it leans to B far past chance; by
    documents one document of 100 holds it, and a shuffle puts that document in B half the time."""
    n_docs, per_doc = 50, 4
    labels = numpy.zeros(2 * n_docs * per_doc, dtype=int)
    groups = numpy.repeat(numpy.arange(2 * n_docs), per_doc)
    n_a = n_docs * per_doc
    labels = numpy.concatenate([labels, numpy.ones(20, dtype=int)])
    groups = numpy.concatenate([groups, numpy.full(20, 2 * n_docs - 1)])  # B's last document
    order = numpy.argsort(groups, kind="stable")
    labels, groups = labels[order], groups[order]
    by_usage = period_p_values(labels, n_a, None, 2, seed=0)
    by_document = period_p_values(labels, n_a, groups, 2, seed=0)
    assert by_usage[0][1] <= 0.002  # toward B: the least p of 1000 shuffles
    assert by_document[0][1] > 0.2
    # spread over 20 documents of B, the same sense leans to B by documents too
    spread = numpy.concatenate([numpy.zeros(2 * n_docs * per_doc, dtype=int), numpy.ones(20, dtype=int)])
    spread_groups = numpy.concatenate([numpy.repeat(numpy.arange(2 * n_docs), per_doc), n_docs + numpy.arange(20)])
    order = numpy.argsort(spread_groups, kind="stable")
    assert period_p_values(spread[order], n_a, spread_groups[order], 2, seed=0)[0][1] <= 0.002


def test_marks_kept_only_where_every_check_passes():
    periods = [CAME, CAME, CAME, MORE, "both"]
    out = check_marks(periods[1:], [False, True, False, False], ["B", "B", "", ""])
    assert out == [CAME, NAMES, FEW_DOCUMENTS, "both"]
    assert not moved(out[1:3])  # none of the checks' answers is a change


def _evidence(rng, b_docs: int, names: bool = False):
    """A: 120 usages of sense X; B: 80 of X and 40 of Y (far from X), Y's from `b_docs` documents."""
    x, y = numpy.eye(16)[0] * 3, numpy.eye(16)[1] * 3
    a = x + rng.normal(0, 0.4, (120, 16))
    b = numpy.concatenate([x + rng.normal(0, 0.4, (80, 16)), y + rng.normal(0, 0.4, (40, 16))])
    groups = numpy.concatenate([numpy.arange(120) // 4, 1000 + numpy.arange(80) // 4, 2000 + numpy.arange(40) % b_docs])
    flags = [False] * 200 + [names] * 40
    return word_evidence(a, b, rule=SenseRule(0.25, sides=True), groups=groups, name_usages=flags, draws=50)


def test_a_sense_that_came_from_many_documents_is_marked_and_stable():
    ev = _evidence(numpy.random.default_rng(0), b_docs=40)
    assert ev.periods.count(CAME) == 1 and ev.senses == 2
    j = ev.periods.index(CAME)
    # Y's 40 usages, and of B's 80 others at most 2: the discriminant's line lets 1% of A's past, and as many of B's
    # others by chance (period_groups.BEYOND)
    assert ev.freq_a[j] == 0 and 40 <= ev.freq_b[j] <= 42 and ev.stability[j] >= 0.9


def test_a_sense_of_two_documents_or_of_names_is_shown_and_never_marked():
    few = _evidence(numpy.random.default_rng(0), b_docs=2)
    assert FEW_DOCUMENTS in few.periods and CAME not in few.periods and few.binary == 0
    named = _evidence(numpy.random.default_rng(0), b_docs=40, names=True)
    assert NAMES in named.periods and CAME not in named.periods and named.binary == 0


def test_noise_gives_no_stable_split():
    rng = numpy.random.default_rng(3)
    ev = word_evidence(rng.normal(size=(150, 16)), rng.normal(size=(150, 16)), rule=SenseRule(0.0, sides=True), draws=50)
    assert ev.senses == 1 and not moved(ev.periods)


def test_the_control_words_rate_withholds_the_targets_marks():
    controls = {f"c{i}": {"sense_periods": ["both", CAME] if i < 3 else ["both"]} for i in range(20)}
    checked = control_marks(controls)
    assert checked["marked"] == ["c0", "c1", "c2"] and checked["rate"] == pytest.approx(0.15) and not checked["within"]
    fewer = {**{k: v for k, v in controls.items() if k != "c0"}, "c20": {"sense_periods": ["both"]}}
    assert control_marks(fewer)["within"] and control_marks(fewer)["rate"] == pytest.approx(0.1)  # 2 of 20: at the rate
    targets = {"t": {"sense_periods": ["both", CAME, "names or headings"], "binary": 1}, "u": {"sense_periods": ["both"], "binary": 0}}
    assert withhold_marks(targets) == 1
    assert targets["t"] == {"sense_periods": ["both", WITHHELD, "names or headings"], "binary": 0}


def _verdict_data():
    """The JSON of a run with a verdict: two targets (one changed), three controls, one word's evidence."""
    points = [
        {"side": s, "x": float(i), "y": float(i % 3), "sense": i % 2, "id": f"{s}{i}", "text": f"a [[w]] {i}"} for i, s in enumerate("ABAB")
    ]
    evidence = {
        "senses": 2,
        "silhouette": 0.41,
        "joined": 3,
        "cluster_freq_dist1": [2, 0],
        "cluster_freq_dist2": [1, 1],
        "sense_periods": ["both", "came in B"],
        "sense_stability": [0.93, 0.71],
        "sense_names": [["bank", "river"], ["money"]],
        "name_senses": [True, False],
        "sense_jsd": 0.2,
        "binary": 1,
        "intervals": {"senses": [0.1, 0.3]},
        "p_values": {},
        "examples": [[], []],
        "changed": {"A": [], "B": []},
        "points": points,
        "labels": {},
    }
    words = [
        {"word": "bank", "n_a": 2, "n_b": 2, "apd": 0.4, "note": "", "verdict": {"z": 7.5, "changed": 1, "q": 0.01}, "evidence": evidence},
        {"word": "tree", "n_a": 9, "n_b": 9, "apd": 0.6, "note": "", "verdict": {"z": 0.3, "changed": 0, "q": 0.8}},
    ]
    settings = {
        "measures": ["apd"],
        "order": "by the verdict's energy z",
        "sense_marks": {"checks": "the checks", "controls": 20, "marked": ["c1", "c2", "c3"], "checked": True, "shown": False},
    }
    return {
        "settings": settings,
        "words": words,
        "controls": [{"word": f"c{k}", "z": z} for k, z in enumerate([-1.0, 0.5, 2.0])],
        "notes": [],
    }


def test_the_page_heads_each_word_with_the_score_the_rows_go_by_and_says_how_marks_were_checked():
    from spacy_elmo.change.report import marks_line, render_page

    page = render_page(_verdict_data())
    assert "bank: verdict z 7.5 <b class=changed>changed</b>" in page and "apd 0.400" in page  # the z first, apd after it
    assert "Sense marks: withheld: 3 of 20 control words got one (c1, c2, c3), more than the stated rate" in page
    assert "the split the rule read: silhouette 0.41" in page and "3 usages of unstable senses joined the nearest stable one" in page
    assert '<td class="n">0.93</td>' in page and '<td class="n">0.71</td>' in page  # each sense's stability
    assert "both<br><span class=muted>names or headings</span>" in page  # a sense of names, flagged where unmarked too
    assert marks_line({"checked": False, "checks": "x"}).startswith("none drawn: no control words")
    assert marks_line({"checked": True, "shown": True, "controls": 40, "marked": [], "checks": "x"}).startswith("checked: 0 of 40")


def test_ranking_png_shows_the_verdicts_z_and_maps_name_their_senses(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from spacy_elmo.change import report

    drawn = {}
    real = report._ranking_by_z

    def spy(plt, data):
        figure = real(plt, data)
        ax = figure.axes[0]
        drawn["x"] = [tuple(map(float, p)) for p in ax.collections[-1].get_offsets()]
        drawn["line"] = [float(line.get_xdata()[0]) for line in ax.lines]
        drawn["xlabel"] = ax.get_xlabel()
        return figure

    monkeypatch.setattr(report, "_ranking_by_z", spy)
    legends = []
    import matplotlib.axes

    original = matplotlib.axes.Axes.legend

    def legend(self, *args, **kwargs):
        legends.append([t for t in self.get_legend_handles_labels()[1]])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "legend", legend)
    written = report.write_figures(tmp_path, _verdict_data(), log=lambda _: None)
    assert {p.name for p in written} == {"ranking.png", "bank.png"}
    assert drawn["x"] == [(7.5, 1.0), (0.3, 0.0)] and drawn["line"] == [7.5] and drawn["xlabel"].startswith("the verdict's z")
    assert ["period A", "period B", "sense 1: bank, river", "sense 2: money (came in B)"] in legends


def test_a_side_whose_usages_come_from_three_documents_is_named():
    from types import SimpleNamespace

    from spacy_elmo.change.run import concentrated_sides

    def index(docs):  # usage i in sentence i of document docs[i]
        return SimpleNamespace(
            match="lower", arrays={"usage_sentence": numpy.arange(len(docs))}, sentences=[{"file": 0, "doc": d} for d in docs]
        )

    spread = index(list(range(20)))
    few = index([0] * 6 + [1] * 3 + [2] + list(range(3, 13)))  # 10 of 20 usages in 3 documents: half
    rows = numpy.arange(20)
    assert concentrated_sides(spread, few, rows, rows) == ["B"]
    assert concentrated_sides(few, spread, rows, rows) == ["A"]
    assert concentrated_sides(spread, index([0] * 5 + [1] * 2 + [2] * 2 + list(range(3, 14))), rows, rows) == []  # 9 of 20


def test_a_sense_half_from_three_documents_is_not_marked_whatever_the_shuffles_say():
    """A's usages grouped as a sense that went hold A's usages alone by how they were found, so shuffling documents
    passes a group of 50 with 36 from one article and 14 scattered ("children with autism"); the few documents'
    share does not."""
    labels = numpy.array([1] * 50 + [0] * 300)
    groups = numpy.concatenate([numpy.full(36, 7), 100 + numpy.arange(14), numpy.arange(300) // 3 + 200])
    assert few_documents(labels, groups, 2) == [False, True]
    scattered = numpy.concatenate([numpy.arange(50), numpy.arange(300) // 3 + 200])
    assert few_documents(labels, scattered, 2) == [False, False]
    assert few_documents(labels, None, 2) == [False, False]  # no documents known: never
    assert marks_allowed(numpy.array([1.0, 1.0]), numpy.array([1.0, 0.001]), 2, [False, True]) == ["", ""]
    assert marks_allowed(numpy.array([1.0, 1.0]), numpy.array([1.0, 0.001]), 2, [False, False]) == ["", "A"]
