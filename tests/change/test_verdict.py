"""The verdict "changed": the energy distance (by brute force), its power against a sense that comes where APD's
test has none, control words drawn by frequency, and the verdict against the controls' drift."""

import math
from collections import Counter

import numpy
import pytest

from spacy_elmo.change.measures import apd, energy
from spacy_elmo.change.senses import null_score, permutation_test
from spacy_elmo.change.verdict import (
    NO_NULL_BASIS,
    CONTROLS_BASIS,
    WordVerdict,
    against_controls,
    count_words,
    decide,
    draw_controls,
    normal_tail,
)


def _unit(x):
    return x / numpy.linalg.norm(x, axis=1, keepdims=True)


def test_energy_distance_by_brute_force_over_pairs():
    rng = numpy.random.default_rng(3)
    a, b = rng.normal(size=(7, 5)), rng.normal(size=(9, 5)) + 0.5
    ua, ub = _unit(a), _unit(b)

    def mean_distance(x, y, distinct):
        d = [1 - x[i] @ y[j] for i in range(len(x)) for j in range(len(y)) if not (distinct and i == j)]
        return numpy.mean(d)

    expected = 2 * mean_distance(ua, ub, False) - mean_distance(ua, ua, True) - mean_distance(ub, ub, True)
    assert energy(a, b) == pytest.approx(expected, abs=1e-12)
    assert 2 * mean_distance(ua, ub, False) / 2 == pytest.approx(apd(a, b))  # APD is its first term alone
    with pytest.raises(ValueError):
        energy(a[:1], b)


def _blob(rng, centre, n, spread):
    return centre + rng.normal(0, spread, (n, len(centre)))


def test_a_sense_that_comes_moves_the_energy_test_where_apds_stays_above_005():
    """The reproduction: B keeps A's sense and gains another (half of its usages, B twice A's size). APD's
    permutation test does not reject (the new sense raises B's own pairs as much as those across); the energy
    distance's does, far past chance."""
    rng = numpy.random.default_rng(0)
    old, new = numpy.zeros(32), numpy.zeros(32)
    old[0], new[0], new[1] = 1.0, 0.8, 0.6
    a = _blob(rng, old, 200, 0.25)
    b = numpy.concatenate([_blob(rng, old, 200, 0.25), _blob(rng, new, 200, 0.25)])
    assert permutation_test(a, b, "apd").p > 0.05
    found = permutation_test(a, b, "energy")
    assert found.p == pytest.approx(1 / 1001) and found.z > 10
    # the same distribution: the energy test's p spreads over (0, 1] and its z is about N(0, 1)
    same = [permutation_test(_blob(rng, old, 60, 0.3), _blob(rng, old, 80, 0.3), "energy", 199, seed=k) for k in range(20)]
    assert numpy.median([t.p for t in same]) > 0.2 and abs(numpy.median([t.z for t in same])) < 1.0


def test_against_controls_by_hand():
    controls = [0.0, 1.0, 2.0, 3.0, 4.0]  # median 2, MAD 1
    assert against_controls(5.0, controls) == pytest.approx(normal_tail(3.0 / 1.4826))
    assert against_controls(2.0, controls) == pytest.approx(0.5)
    assert normal_tail(0.0) == 0.5 and normal_tail(1.6448536) == pytest.approx(0.05, abs=1e-6)
    assert against_controls(float("nan"), controls) == 1.0
    # no spread among the controls: each z's own unit spread stands (controls add drift and spread, never take it away)
    assert against_controls(3.0, [1.0] * 10) == pytest.approx(normal_tail(2.0)) and against_controls(1.0, [1.0] * 10) == 0.5
    assert against_controls(2.0, [0.0, 0.1, -0.1, 0.2, -0.2]) == pytest.approx(normal_tail(2.0))  # MAD 0.1: spread 1


def test_draw_controls_matches_frequencies_and_leaves_out_targets_their_forms_and_stop_words():
    counts_a = Counter({f"w{i:03d}": i + 5 for i in range(300)})
    counts_b = Counter({f"w{i:03d}": 2 * i + 5 for i in range(300)})
    counts_a.update({"bank": 100, "banks": 100, "the": 900})
    counts_b.update({"bank": 200, "banks": 150, "the": 900})
    drawn = draw_controls(counts_a, counts_b, ["bank"], 5, seed=1, exclude={"the"})
    assert len(drawn) == len(set(drawn)) == 5 and not {"bank", "banks", "the"} & set(drawn)
    # each within the NEAREST (12) candidates of the target's (100, 200): w090-w100 or so
    assert all(abs(counts_a[w] - 100) <= 12 and abs(counts_b[w] - 200) <= 24 for w in drawn), drawn
    assert draw_controls(counts_a, counts_b, ["bank"], 5, seed=1, exclude={"the"}) == drawn  # seeded
    assert draw_controls(counts_a, counts_b, ["bank"], 5, seed=2, exclude={"the"}) != drawn
    assert draw_controls(counts_a, Counter(), ["bank"], 5) == []  # no word in both corpora: none
    assert count_words(["The bank, the BANKS; 3 x banks"]) == Counter({"the": 2, "bank": 1, "banks": 2})


def test_the_verdict_reads_the_controls_drift_and_says_where_it_has_none():
    """Two corpora of different genre: every word drifts (z about 20); a target that only drifts is not changed
    against the controls, one that also gained a sense is. Without controls there is no null and no verdict."""
    rng = numpy.random.default_rng(5)
    controls = {f"c{i}": WordVerdict(0.01, 20 + rng.normal(0, 3), 0.001) for i in range(40)}
    targets = {"drifted": WordVerdict(0.01, 21.0, 0.001), "gained": WordVerdict(0.2, 80.0, 0.001)}
    decide(targets, controls, 0.05)
    assert targets["drifted"].changed == 0 and targets["gained"].changed == 1
    assert targets["gained"].basis == CONTROLS_BASIS and targets["gained"].q <= 0.05
    alone = {"drifted": WordVerdict(0.01, 21.0, 0.001), "gained": WordVerdict(0.2, 80.0, 0.001)}
    decide(alone, {}, 0.05)
    # no null: no word is called changed or not (the energy test's q against chance stays, secondary)
    assert all(v.changed is None and v.basis == NO_NULL_BASIS and v.p_controls is None for v in alone.values())
    assert math.isclose(alone["drifted"].q, 0.001)


def test_a_target_name_with_a_tab_or_a_newline_keeps_the_tsv_and_answer_rows_whole(tmp_path):
    """The audit's case: a WUG target whose name holds a tab or a newline broke the TSV and answer/task2 rows."""
    from spacy_elmo.change.outputs import write_answers, write_table
    from spacy_elmo.change.run import ChangeResult

    words = [
        {"word": "odd\tname", "n_a": 3, "n_b": 4, "apd": 0.5, "note": "", "target": "odd\tname_nn"},
        {"word": "two\nlines", "n_a": 3, "n_b": 4, "apd": 0.25, "note": "a\tnote", "target": "two\nlines_nn"},
    ]
    data = {"settings": {"measures": ["apd"]}, "words": words, "notes": []}
    written = write_table(ChangeResult([], data, {}, []), tmp_path / "out.tsv")
    rows = written[0].read_text().splitlines()
    assert len(rows) == 3 and len({len(r.split("\t")) for r in rows}) == 1
    assert rows[1].split("\t")[0] == "odd\\tname" and rows[2].split("\t")[-1] == "a\\tnote"
    task2 = [p for p in write_answers(ChangeResult([], data, {}, []), tmp_path / "answer") if "task2" in str(p)][0]
    lines = task2.read_text().splitlines()
    assert lines == ["odd\\tname_nn\t0.5", "two\\nlines_nn\t0.25"]


def test_the_changed_usages_are_the_witness_of_the_senses_input_not_the_spelling_nor_outliers():
    """The audit's case: the usages shown as changed were read from the scores' vectors, where a capitalised form lies
    far from the rest by its spelling alone (31 of 60 shown were capitalised, all-caps or derived forms, 6.3% of
    usages). Read from the senses' input (the context-only vectors), and ranked by the energy distance's witness, a
    sense that came in B is shown; a usage only spelt otherwise is not, nor an odd usage near nothing (a headline),
    which ranking by the distance to the nearest usage of the other side put first."""
    from spacy_elmo.change.senses import word_evidence

    rng = numpy.random.default_rng(2)
    base, new, odd = numpy.eye(16)[0], numpy.eye(16)[3], numpy.eye(16)[7]
    a = base + rng.normal(0, 0.15, (30, 16))
    b = base + rng.normal(0, 0.15, (30, 16))
    b[0, 5] += 3.0  # B's usage 0: spelt otherwise ("Bank"): far in the scores' vectors, its context like the rest
    context_a, context_b = a.copy(), b.copy()
    context_b[0] = base + rng.normal(0, 0.15, 16)
    context_b[1] = odd + rng.normal(0, 0.15, 16)  # B's usage 1: near no usage of either side
    context_b[20:] = 0.5 * base + new + rng.normal(0, 0.15, (10, 16))  # B's last 10: a sense A has not
    ev = word_evidence(a, b, sense_vectors=numpy.concatenate([context_a, context_b]))
    shown_b = [row for row, _ in ev.changed["B"]]
    assert all(row >= 20 for row in shown_b)
    unit_a = context_a / numpy.linalg.norm(context_a, axis=1, keepdims=True)
    unit_b = context_b / numpy.linalg.norm(context_b, axis=1, keepdims=True)
    assert numpy.argmin((unit_a @ unit_b.T).max(0)) == 1  # the outlier is the farthest from every usage of A


def test_shuffling_documents_not_usages_keeps_two_random_halves_of_a_corpus_alike():
    """Usages of one document are alike (its topic): two random halves of a corpus's documents then look apart to a
    test that shuffles usages one by one (the controls' z reached 4 to 10 in random halves of Wikipedia), and alike to
    one that shuffles whole documents, as the halves were drawn."""
    rng = numpy.random.default_rng(4)
    zs_usages, zs_documents = [], []
    for trial in range(12):
        topics = rng.normal(0, 1.0, (40, 16))  # 40 documents, 8 usages each, spread around their own topic
        usages = numpy.repeat(topics, 8, axis=0) + rng.normal(0, 0.5, (320, 16)) + 2.0
        documents = numpy.repeat(numpy.arange(40), 8)
        half = rng.permutation(40)[:20]
        in_a = numpy.isin(documents, half)
        a, b = usages[in_a], usages[~in_a]
        groups = numpy.concatenate([documents[in_a], documents[~in_a]])
        zs_usages.append(permutation_test(a, b, "energy", 300, seed=trial).z)
        zs_documents.append(permutation_test(a, b, "energy", 300, seed=trial, groups=groups).z)
    assert numpy.median(zs_usages) > 3  # usage by usage: "changed" though the halves are random
    assert abs(numpy.median(zs_documents)) < 1.0 and max(zs_documents) < 3.5
    with pytest.raises(ValueError, match="energy test only"):
        permutation_test(a, b, "apd", 10, groups=groups)


def test_the_reports_own_records_survive_a_tampered_list_and_control_characters_show_as_codes(tmp_path):
    """The audit's cases: a report folder's list of what the last run wrote, edited to name the folder's marker, made
    the next run remove it; a control character in a word went raw into the page's heading."""
    from spacy_elmo.change.report import REPORT_FILES, _esc, _remove_earlier_files
    from spacy_elmo.output_folders import MARKER

    folder = tmp_path / "report"
    folder.mkdir()
    (folder / MARKER).write_text('{"kind": "change-report"}')
    (folder / "index.html").write_text("old page")
    (folder / REPORT_FILES).write_text(f'["{MARKER}", "{REPORT_FILES}", "index.html"]')
    _remove_earlier_files(folder)
    assert (folder / MARKER).exists() and not (folder / "index.html").exists()
    assert _esc("bell\x07<b>") == "bell\\x07&lt;b&gt;" and _esc("tab\tand\nline") == "tab\tand\nline"


@pytest.mark.parametrize("option", ["--fdr", "--min-silhouette"])
def test_nan_for_a_number_is_called_not_a_number(option, tmp_path):
    """The audit's case: NaN for --fdr or --min-silhouette was answered with a range."""
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    (tmp_path / "a").mkdir()
    result = CliRunner().invoke(app, ["change", str(tmp_path / "a"), str(tmp_path / "a"), str(tmp_path / "x.json"), option, "nan"])
    assert result.exit_code == 2 and "nan is not a number" in result.output


def test_a_report_subfolder_that_would_be_refused_is_refused_before_output_is_written(tmp_path):
    """The audit's case: a file where the report's answer folder goes was refused after OUTPUT was written, so the
    rerun needed --overwrite."""
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    from spacy_elmo.change.report import CHANGE_REPORT
    from spacy_elmo.output_folders import mark

    (tmp_path / "a").mkdir()
    report = tmp_path / "report"
    report.mkdir()
    mark(report, CHANGE_REPORT)  # a report written before
    (report / "answer").write_text("a file of mine")
    args = ["change", str(tmp_path / "a"), str(tmp_path / "a"), str(tmp_path / "out.json"), "--report", str(report), "--answers"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "is a link or a file, not a folder" in result.output
    assert not (tmp_path / "out.json").exists() and (report / "answer").read_text() == "a file of mine"


def test_a_fifo_in_place_of_the_reports_record_is_refused_before_the_work(tmp_path):
    """The audit's case: a FIFO at REPORT/.spacy-elmo-report-files.json blocked `change --report` for ever after all
    the scoring (the record was read with read_text). Now one line, before OUTPUT is written."""
    import os

    from typer.testing import CliRunner

    from spacy_elmo.change.report import CHANGE_REPORT, REPORT_FILES
    from spacy_elmo.cli import app
    from spacy_elmo.output_folders import mark

    (tmp_path / "a").mkdir()
    report = tmp_path / "report"
    report.mkdir()
    mark(report, CHANGE_REPORT)
    os.mkfifo(report / REPORT_FILES)
    args = ["change", str(tmp_path / "a"), str(tmp_path / "a"), str(tmp_path / "out.json"), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1 and "is not a plain file" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out.json").exists()


def test_the_reports_figures_say_nothing_of_matplotlibs_own_warnings(tmp_path, monkeypatch):
    """The audit's case: matplotlib's warnings (a glyph its font lacks) came out under -q; the page is what counts."""
    import warnings

    from spacy_elmo.change import report

    def noisy(folder, data, log):
        warnings.warn("Glyph 35486 missing from font(s) DejaVu Sans.", UserWarning)
        return []

    monkeypatch.setattr(report, "write_figures", noisy)
    data = {"settings": {"measures": ["apd"]}, "words": [{"word": "語", "n_a": 3, "n_b": 3, "apd": 0.1, "note": ""}], "notes": []}
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        report.write_report(tmp_path / "report", data, log=lambda _: None)
    assert (tmp_path / "report" / "index.html").is_file() and not [w for w in said if "Glyph" in str(w.message)]


def _gamma2_upper_quantile(tail):
    """x with P(X >= x) = tail for X ~ Gamma(2, 1): its tail is exp(-x) (1 + x), solved by bisection."""
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.exp(-mid) * (1 + mid) > tail else (lo, mid)
    return (lo + hi) / 2


def test_null_score_reads_a_skewed_null_by_its_tail_not_its_spread():
    """A right-skewed null (a quadratic form's, as the energy distance's): its 99.9% point is about 3.09 as a normal
    score (the plain standard score says 5.1 and calls chance a change); a symmetric null: the plain score."""
    rng = numpy.random.default_rng(0)
    null = rng.gamma(2.0, 1.0, size=200_000)
    x = _gamma2_upper_quantile(0.001)
    assert (x - 2.0) / math.sqrt(2.0) == pytest.approx(5.11, abs=0.02)
    assert null_score(x, null) == pytest.approx(3.09, abs=0.08)
    assert null_score(_gamma2_upper_quantile(0.5), null) == pytest.approx(0.0, abs=0.05)
    normal = rng.normal(size=50_000)
    assert null_score(2.5, normal) == pytest.approx((2.5 - normal.mean()) / normal.std(), abs=1e-12)
    # calibrated: values drawn from the null pass 1.645 about 5% of the time
    # (a null of 20,000 and 4,000 draws: each score reads the whole null; 3 binomial standard deviations of tolerance)
    small_null, draws = null[:20_000], rng.gamma(2.0, 1.0, size=4_000)
    assert numpy.mean([null_score(v, small_null) > 1.645 for v in draws]) == pytest.approx(0.05, abs=0.011)
    assert math.isnan(null_score(1.0, numpy.ones(10))) and math.isnan(null_score(float("nan"), null))


def _blobs(rng, centres, counts, spread=0.35):
    return _unit(numpy.concatenate([c + spread * rng.normal(size=(n, len(c))) / math.sqrt(len(c)) ** 0.5 for c, n in zip(centres, counts)]))


def test_cluster_sides_by_hand():
    """A cluster of B's alone (30 of 30 usages in B, where B holds half): binomial tail 2^-30, share ratio infinite;
    one split as the periods are (10 and 10): both; a cluster of 4: too small to say."""
    from spacy_elmo.change.senses import cluster_sides

    n_a = 40
    labels = numpy.array([0] * 10 + [2] * 30 + [0] * 10 + [1] * 30 + [3] * 4)  # A: 10 of 0, 30 of 2; B: 10 of 0, 30 of 1, 4 of 3
    assert cluster_sides(labels, n_a, 4) == ["both", "B", "A", "both"]


@pytest.mark.slow
def test_a_sense_that_came_at_a_fifth_of_b_shows_and_none_shows_where_nothing_came():
    """Synthetic usages: three senses shared by both periods; B also gets a sense of its own at 20% of its usages.
    The default rule (senses of one side first) shows a sense of B made of the new sense's usages; two samples of
    the same three senses show no sense of one side (10 draws)."""
    from spacy_elmo.change.senses import SenseRule, side_sense_clusters

    dim = 64
    rng = numpy.random.default_rng(7)
    centres = _unit(rng.normal(size=(4, dim)))
    a = _blobs(rng, centres[:3], [100, 60, 40])
    b = _blobs(rng, centres, [80, 48, 32, 40])  # the fourth: 40 of 200 usages, 20%
    found, sides = side_sense_clusters(numpy.concatenate([a, b]), len(a), 0, SenseRule(0.25, sides=True))
    assert sides.count("B") == 1 and "A" not in sides
    members = found.labels == sides.index("B")
    new = numpy.zeros(len(a) + len(b), dtype=bool)
    new[len(a) + 160 :] = True
    assert (members & new).sum() >= 0.8 * new.sum() and (members & new).sum() >= 0.8 * members.sum()
    quiet = 0
    for seed in range(10):
        r = numpy.random.default_rng(100 + seed)
        _, sides = side_sense_clusters(
            numpy.concatenate([_blobs(r, centres[:3], [100, 60, 40]), _blobs(r, centres[:3], [100, 60, 40])]),
            200,
            seed,
            SenseRule(0.25, sides=True),
        )
        quiet += set(sides) == {"both"}
    assert quiet >= 9


def test_forced_senses_do_not_follow_the_words_written_form():
    """Usages of two senses, each sense written as "country" and "countries" alike, where the plural usages carry an
    offset along a direction of their own (what the context-only vectors keep of number): forced into two senses,
    the raw vectors split by number; with the form directions out (`without_forms`), by sense."""
    from spacy_elmo.change.sense_input import without_forms
    from spacy_elmo.change.senses import SenseRule, adjusted_rand, sense_clusters

    rng = numpy.random.default_rng(5)
    dim = 48
    base, number_axis = _unit(rng.normal(size=(2, dim)))
    sense_axes = _unit(rng.normal(size=(2, dim)))
    sense = numpy.repeat([0, 1], 120)
    plural = numpy.tile([0, 0, 0, 1], 60).astype(bool)  # a quarter plural in each sense
    x = base + 0.35 * sense_axes[sense] + 0.7 * numpy.outer(plural, number_axis) + 0.05 * rng.normal(size=(240, dim))
    forms = numpy.where(plural, "countries", "country").tolist()
    raw = sense_clusters(x, 0, rule=SenseRule(0.0, max_senses=2))
    assert adjusted_rand(raw.labels, plural.astype(int)) > 0.8
    out = without_forms(x, forms)
    assert numpy.allclose(numpy.linalg.norm(out, axis=1), 1.0)
    assert abs((out[plural].mean(0) - out[~plural].mean(0)) @ number_axis) < 0.05
    found = sense_clusters(out, 0, rule=SenseRule(0.0, max_senses=2))
    assert adjusted_rand(found.labels, sense) > 0.8 and adjusted_rand(found.labels, plural.astype(int)) < 0.1
    assert numpy.array_equal(without_forms(x, ["country"] * 240), _unit(x))  # one form: nothing taken out


def test_controls_from_indexes_of_every_word_follow_the_corpora_rule():
    """The audit's case: indexes of every word gave `, . - and the of` as control words. Controls are words of three
    letters or more, none a stop word, from indexes as from corpora."""
    from spacy_elmo.change.controls import index_controls
    from spacy_elmo.change.run import ChangeSettings

    class Index:
        def __init__(self, counts):
            self.counts = counts
            self.keys = list(counts)

        def rows_of(self, key):
            return list(range(self.counts[key]))

    not_words = [",", ".", "-", "and", "the", "of", "to", "us", "x1", "1990"]
    words = [f"word{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    counts = {w: 50 + i for i, w in enumerate(not_words + words)}  # the non-words nearest the target's counts
    a, b = Index({**counts, "bank": 55}), Index({**counts, "bank": 58})
    drawn = index_controls(a, b, ["bank"], ChangeSettings(controls=20, min_usages=5))
    assert len(drawn) == 20 and set(drawn) <= set(words)


def test_under_lemmas_control_words_are_counted_and_drawn_as_lemmas():
    """The audit's case: under --lemmas controls were drawn as written forms ("went", "banks") and matched as lemmas,
    so a quarter had no usages and dropped out. Counted by lemma, a control is a key the lemma index holds."""
    pytest.importorskip("spacy_lookups_data")
    from spacy_elmo.change.controls import by_lemma
    from spacy_elmo.change.sense_input import lookup_lemmas

    lemma_of = lookup_lemmas("en")
    assert lemma_of is not None and lemma_of.get("went") == "go" and lemma_of.get("banks") == "bank"
    merged = by_lemma(Counter({"went": 3, "goes": 2, "go": 1, "banks": 4, "banking": 1, "zzyzx": 5}), lemma_of)
    assert merged == Counter({"bank": 4 + int(lemma_of.get("banking") == "bank"), "zzyzx": 5})  # "go": under three letters


def test_under_lemmas_a_lemma_that_is_not_a_word_is_never_a_control():
    """The audit's case (issue 103): spaCy's lookup lemma of "first" is "1" and of "third" "3", which became control
    words: the letters-only rule was applied before lemmatising and never after."""
    from spacy_elmo.change.controls import by_lemma

    lemma_of = {"first": "1", "third": "3", "banks": "bank", "going": "go"}
    merged = by_lemma(Counter({"first": 7, "third": 2, "banks": 4, "going": 3}), lemma_of)
    assert merged == Counter({"bank": 4})  # "go" has two letters: never a control either


def test_a_frequent_target_among_rare_controls_is_flagged_with_a_note():
    """The audit's case: "the" (2,789 / 959 usages, 1,000 / 959 read) against controls of at most 92 / 18 was called
    changed with no word of warning. Its nearest control (the largest gap of log counts, by hand) lies far beyond 2x:
    flagged, in its verdict and in a note; a target with a control within 2x on both sides is not."""
    from spacy_elmo.change.controls import match_frequencies
    from spacy_elmo.change.verdict import nearest_control

    controls = {"metal": (92, 18), "union": (60, 50), "party": (70, 45)}
    # gaps by hand: metal max(ln(1000/92), ln(959/18)) = 3.98; union max(2.81, ln(959/50) = 2.95); party max(2.66, 3.06)
    assert nearest_control((1000, 959), controls) == ("union", False)
    assert math.log(959 / 50) == pytest.approx(2.954, abs=1e-3) and math.log(959 / 45) == pytest.approx(3.059, abs=1e-3)
    assert nearest_control((1000, 959), controls)[0] == min(
        controls, key=lambda w: max(abs(math.log(controls[w][0] / 1000)), abs(math.log(controls[w][1] / 959)))
    )
    assert nearest_control((100, 80), controls) == ("union", True)  # ln(100/60) = 0.51, ln(80/50) = 0.47: within ln 2
    assert nearest_control((100, 80), {}) == (None, False)
    targets = {"the": WordVerdict(0.1, 9.0, 0.001), "bank": WordVerdict(0.1, 9.0, 0.001)}
    notes = []
    match_frequencies(targets, controls, {"the": (1000, 959), "bank": (100, 80)}, notes)
    assert targets["the"].matched is False and targets["bank"].matched is True
    assert len(notes) == 1 and "the 1,000/959 (nearest: union 60/50)" in notes[0] and "bank" not in notes[0]


def test_under_lemmas_without_pos_a_nouns_verb_forms_are_named():
    """The audit's case: under --lemmas alone a noun target held 250 of its 942 usages as the verb's -ed / -ing forms,
    with no word said. A target with at least a tenth such forms is named, with its share; one without is not."""
    from types import SimpleNamespace

    from spacy_elmo.change.run import _note_verb_forms

    class Index:  # what the note reads of a usage index: a key's rows, and a row's written form
        def __init__(self, forms):
            self.texts = [text for key in forms for text in forms[key]]
            self.rows = {key: [i for i, k in enumerate(k for k in forms for _ in forms[k]) if k == key] for key in forms}

        def rows_of(self, key):
            return self.rows.get(key, [])

        def usage(self, row):
            return SimpleNamespace(text=self.texts[row])

    a = Index({"attack": ["attack"] * 70 + ["attacked"] * 20 + ["Attacking"] * 5, "bank": ["bank"] * 40 + ["banks"] * 9})
    b = Index({"attack": ["attacks"] * 5, "bank": ["bank"] * 50 + ["banked"] * 1})
    notes = []
    _note_verb_forms(a, b, ["attack", "bank"], notes)
    # attack: 25 of 100 usages are -ed / -ing forms (25%); bank: 1 of 100 (1%)
    assert len(notes) == 1 and "attack 25%" in notes[0] and "bank" not in notes[0] and "--pos NOUN" in notes[0]


def test_the_strips_labels_stay_inside_never_overlap_and_the_line_marks_where_changed_starts():
    """The audit's cases: the name of the most changed word, at the strip's right edge, was cut off by it; the
    researcher's, labels of words of near z written over each other and no line where "changed" starts. Each label
    is placed in the first row it clears (about 6.4 px a letter), inside the figure; the dashed line stands at the
    least z of a word called changed."""
    import re

    from spacy_elmo.change.report import _controls_strip

    near = [{"word": f"word{k}", "verdict": {"z": 6.0 + 0.05 * k, "changed": 1}} for k in range(6)]
    data = {
        "controls": [{"z": z} for z in numpy.linspace(-1, 2, 20)],
        "words": [
            {"word": "extraordinarily", "verdict": {"z": 90.0, "changed": 1}},
            {"word": "middling", "verdict": {"z": 3.0, "changed": 1}},
            {"word": "untouched", "verdict": {"z": 1.0, "changed": 0}},
            *near,
        ],
    }
    svg = _controls_strip(data)
    width = float(re.search(r'<svg width="(\d+)"', svg).group(1))
    labels = [(float(x), int(y), w) for x, y, w in re.findall(r'<text x="([\d.]+)" y="(\d+)" font-size="10"[^>]*>(\w+)<', svg)]
    spans = [(x - 3.2 * len(w) - 4, x + 3.2 * len(w) + 4, y, w) for x, y, w in labels]
    assert {w for _, _, w in labels} >= {"extraordinarily", "middling"} and "untouched" not in {w for _, _, w in labels}
    assert all(0 <= left and right <= width for left, right, _, _ in spans)
    for i, (l1, r1, y1, _) in enumerate(spans):  # two labels of one row never meet
        assert all(y1 != y2 or r1 < l2 or l1 > r2 for l2, r2, y2, _ in spans[i + 1 :])
    assert len({y for _, y, _ in labels}) > 1  # the six of near z went to other rows
    line = re.search(r'<line x1="([\d.]+)"[^>]*stroke-dasharray', svg)
    dot = re.search(r'<circle cx="([\d.]+)"[^>]*><title>middling: z 3.0', svg)
    assert line and abs(float(line.group(1)) - (float(dot.group(1)) - 3)) < 0.2 and "changed from z 3.0" in svg


def test_the_tsv_names_the_q_against_chance_for_what_it_is_and_the_senses_yes_no_apart(tmp_path):
    """The audit's case (issue 103): without control words the TSV's `changed_q` held the q against chance (0.000999
    for every DWUG word), and a row with `binary` 1 and `binary_change` 0 said nothing of which is the answer."""
    from spacy_elmo.change.outputs import write_table
    from spacy_elmo.change.run import ChangeResult
    from spacy_elmo.change.verdict import NO_NULL_BASIS

    def word(name, basis):
        return {
            "word": name, "n_a": 9, "n_b": 9, "apd": 0.5, "note": "", "interval": {"apd": [0.4, 0.6]},
            "evidence": {"senses": 2, "binary": 1, "sense_periods": ["both", "came in B"], "cluster_freq_dist1": [9, 0],
                         "cluster_freq_dist2": [4, 5]},
            "verdict": {"z": 1.0, "q": 0.000999, "changed": None, "basis": basis}, "binary_change": 0,
        }  # fmt: skip

    for basis, column in ((NO_NULL_BASIS, "q_vs_chance"), ("controls", "changed_q")):
        data = {"settings": {"measures": ["apd"]}, "words": [word("plane", basis)]}
        write_table(ChangeResult([], data, {}, []), tmp_path / f"{column}.tsv")
        head, row = (tmp_path / f"{column}.tsv").read_text(encoding="utf8").splitlines()
        cells = dict(zip(head.split("\t"), row.split("\t")))
        assert cells[column] == "0.000999" and ({"q_vs_chance", "changed_q"} - {column}).isdisjoint(cells)
        assert cells["senses_binary"] == "1" and cells["binary_change"] == "0" and "binary" not in cells
