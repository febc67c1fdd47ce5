"""The evidence behind a change score and its check against people: sense clusters, the changed usages, the
intervals and the adjusted Rand index against hand-made cases; gold files; the report, opened in a real browser."""

import json
import math
import re
import shutil
import subprocess

import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.change.gold import Gold, agreement, read_gold, spearman
from spacy_elmo.change.sense_marks import NOT_MOVED
from spacy_elmo.change.senses import adjusted_rand, binary_change, sense_clusters, silhouette, word_evidence

from .test_wug_route import bilm_and_wug


def _blobs(rng, centres, sizes, spread=0.05):
    return numpy.concatenate([numpy.asarray(c) + rng.normal(0, spread, (n, len(c))) for c, n in zip(centres, sizes)])


def test_adjusted_rand_by_hand():
    assert adjusted_rand([0, 0, 1, 1], [5, 5, 9, 9]) == pytest.approx(1.0)  # the same partition, other names
    assert adjusted_rand([0, 0, 0, 0], [1, 1, 1, 1]) == 1.0
    a, b = [0, 0, 1, 1], [0, 0, 0, 1]
    # the formula by hand: sum_ij C(n_ij, 2) = 1, sum_i C(a_i, 2) = 2, sum_j C(b_j, 2) = 3, C(4, 2) = 6
    expected = (1 - 2 * 3 / 6) / ((2 + 3) / 2 - 2 * 3 / 6)
    assert adjusted_rand(a, b) == pytest.approx(expected)


def test_silhouette_by_brute_force():
    rng = numpy.random.default_rng(1)
    unit = rng.normal(size=(9, 4))
    unit /= numpy.linalg.norm(unit, axis=1, keepdims=True)
    labels = numpy.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    distance = 1 - unit @ unit.T
    values = []
    for i in range(9):
        own = [j for j in range(9) if labels[j] == labels[i] and j != i]
        a = distance[i, own].mean()
        b = min(distance[i, labels == k].mean() for k in set(labels) if k != labels[i])
        values.append((b - a) / max(a, b))
    assert silhouette(unit, labels) == pytest.approx(numpy.mean(values))


def test_the_permutation_test_matches_every_split_enumerated():
    """With 8 usages, 4 a side, every one of the 70 splits can be scored: the sampled p-value is the exact share
    of splits scoring at least the observed one (within sampling error), for APD and PRT."""
    import itertools

    from spacy_elmo.change.measures import apd, prt
    from spacy_elmo.change.senses import permutation_p

    rng = numpy.random.default_rng(7)
    a = rng.normal(size=(4, 5)) + numpy.array([1.0, 0, 0, 0, 0])
    b = rng.normal(size=(4, 5)) + numpy.array([0, 1.0, 0, 0, 0])
    both = numpy.concatenate([a, b])
    for measure, score in (("apd", apd), ("prt", prt)):
        observed = score(a, b)
        splits = [numpy.array(s) for s in itertools.combinations(range(8), 4)]
        values = [score(both[s], both[numpy.setdiff1d(numpy.arange(8), s)]) for s in splits]
        exact = numpy.mean([v >= observed - 1e-12 for v in values])
        found = permutation_p(a, b, measure, permutations=20000, seed=1)
        assert abs(found - exact) < 0.01, (measure, found, exact)
    # far apart: no shuffle reaches the observed APD, and the p-value is its floor
    far = permutation_p(rng.normal(size=(30, 5)) + 5, rng.normal(size=(30, 5)) - 5, "apd", permutations=99)
    assert far == pytest.approx(1 / 100)
    # the same distribution: p-values spread over (0, 1], not piled at the floor
    same = [permutation_p(rng.normal(size=(20, 5)), rng.normal(size=(20, 5)), "apd", permutations=99, seed=k) for k in range(20)]
    assert numpy.median(same) > 0.2


def test_benjamini_hochberg_by_hand():
    from spacy_elmo.change.senses import benjamini_hochberg

    # sorted 0.01, 0.03, 0.04, 0.2 times m / rank: 0.04, 0.06, 0.0533, 0.2; then the running minimum from the top
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.2])
    assert q == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    assert benjamini_hochberg([0.9, 0.95]) == pytest.approx([0.95, 0.95])
    assert len(benjamini_hochberg([])) == 0


def test_senses_are_found_shared_and_the_changed_usages_named():
    rng = numpy.random.default_rng(0)
    # A: 30 usages of sense x; B: 20 of sense x and 10 of a new sense y
    x, y = [1.0, 0, 0, 0], [0, 0, 1.0, 0]
    a = _blobs(rng, [x], [30])
    b = _blobs(rng, [x, y], [20, 10])
    found = sense_clusters(numpy.concatenate([a, b]))
    assert len(found.centres) == 2 and found.silhouette > 0.8
    ev = word_evidence(a, b, measures=("apd", "prt"), draws=200)
    assert ev.senses == 2 and ev.freq_a == [30, 0] and ev.freq_b == [20, 10]
    assert ev.binary == 1 and binary_change([30, 0], [20, 10]) == 1 and binary_change([30, 1], [20, 4]) == 0
    p, q = numpy.array([1.0, 0.0]), numpy.array([2 / 3, 1 / 3])
    m = (p + q) / 2
    expected_jsd = 0.5 * (numpy.sum(p[p > 0] * numpy.log(p[p > 0] / m[p > 0])) + numpy.sum(q * numpy.log(q / m)))
    assert ev.sense_jsd == pytest.approx(expected_jsd)
    # the usages that most set B apart from A are the new sense's: their witness, by hand, is their mean cosine to
    # B's other usages less their mean cosine to A's
    assert all(row >= 20 for row, _ in ev.changed["B"]) and all(c > 0.2 for _, c in ev.changed["B"])
    unit_a = a / numpy.linalg.norm(a, axis=1, keepdims=True)
    unit_b = b / numpy.linalg.norm(b, axis=1, keepdims=True)
    row, value = ev.changed["B"][0]
    others = numpy.delete(unit_b, row, axis=0)
    assert value == pytest.approx((others @ unit_b[row]).mean() - (unit_a @ unit_b[row]).mean())
    # the examples of each sense are its own usages; the interval holds the score
    assert all(side == "B" and row >= 20 for side, row in ev.examples[1])
    from spacy_elmo.change.measures import apd, prt

    low, high = ev.intervals["apd"]
    assert low <= apd(a, b) <= high and ev.intervals["prt"][0] <= prt(a, b) <= ev.intervals["prt"][1]
    assert len(ev.points) == 60 and {p[0] for p in ev.points} == {"A", "B"}
    # seeded: the same evidence twice
    again = word_evidence(a, b, measures=("apd", "prt"), draws=200)
    assert again.intervals == ev.intervals and again.points == ev.points


def test_gold_files_and_agreement(tmp_path):
    stats = tmp_path / "stats_groupings.csv"
    stats.write_text("\ufefflemma\tchange_binary\tchange_graded\nattack_nn\t0\t0.1\nplane_nn\t1\t0.9\nbag_nn\t0\t0.4\nrag_nn\t1\t0.5\n")
    gold = read_gold(stats)
    assert gold.graded == {"attack": 0.1, "plane": 0.9, "bag": 0.4, "rag": 0.5} and gold.names["plane"] == "plane_nn"
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "graded.txt").write_text("attack_nn\t0.1\nplane_nn\t0.9\nbag_nn\t0.4\nrag_nn\t0.5\n")
    (truth / "binary.txt").write_text("attack_nn\t0\nplane_nn\t1\nbag_nn\t0\nrag_nn\t1\n")
    assert read_gold(tmp_path).graded == gold.graded and read_gold(tmp_path).binary == gold.binary
    scores = {"attack": 0.2, "plane": 0.8, "bag": 0.6, "rag": 0.5}
    result = agreement(scores, gold, binary={"attack": 0, "plane": 1, "bag": 1, "rag": 1})
    # ranks 1, 4, 3, 2 against 1, 4, 2, 3: d^2 = 0 + 0 + 1 + 1, rho = 1 - 6 * 2 / (4 * 15)
    assert result.spearman == pytest.approx(1 - 12 / 60) == spearman(list(scores.values()), [gold.graded[w] for w in scores])
    assert result.interval[0] <= result.spearman <= result.interval[1] and result.accuracy == 0.75
    assert agreement({"plane": 1.0}, Gold("x", graded={"plane": 0.3})).words == 1
    for bad, match in (("attack_nn\tinf\n", "not a finite number"), ("plane_nn\n", "not a word and a value")):
        (tmp_path / "graded.txt").write_text(bad)
        with pytest.raises(InputError, match=match):
            read_gold(tmp_path / "graded.txt")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    bilm, wug = bilm_and_wug(tmp)
    args = ["change", str(wug), str(wug), str(tmp / "change.json"), "--model", str(bilm), "--min-usages", "2", "--gold", str(wug)]
    args += ["--report", str(tmp / "report"), "--answers", "--clusters", "--binary-change", "median"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return tmp, result.output


@pytest.mark.slow
def test_the_change_json_carries_the_evidence_and_the_check_against_people(report):
    tmp, output = report
    data = json.loads((tmp / "change.json").read_text())
    by_word = {w["word"]: w for w in data["words"]}
    ev = by_word["plane"]["evidence"]
    assert sum(ev["cluster_freq_dist1"]) == 6 and sum(ev["cluster_freq_dist2"]) == 6 and ev["senses"] == len(ev["examples"])
    assert by_word["plane"]["interval"]["apd"][0] <= by_word["plane"]["apd"] <= by_word["plane"]["interval"]["apd"][1]
    assert set(ev["labels"]) == {f"plane_nn-{k}" for k in range(12)}  # every usage by its WUG identifier
    gold = data["gold"]
    assert gold["measures"]["apd"]["words"] == 2 and set(gold["ari_by_word"]) == {"plane", "gay"}
    assert "Against people" in output and "mean adjusted Rand index" in output
    assert all(-1.0 <= v <= 1.0 for v in gold["ari_by_word"].values())
    # SemEval answer files under the dataset's names; WUG cluster files
    task2 = (tmp / "report" / "answer" / "task2" / "english.txt").read_text().split()
    assert task2[0] == "gay_jj" and float(task2[1]) == pytest.approx(by_word["gay"]["apd"])
    task1 = (tmp / "report" / "answer" / "task1" / "english.txt").read_text().splitlines()
    # no control words, so no verdict: task1 by the rule given, APD above the targets' median (by hand)
    middle = (by_word["gay"]["apd"] + by_word["plane"]["apd"]) / 2
    assert [line.split("\t")[1] for line in task1] == [str(int(by_word[w]["apd"] > middle)) for w in ("gay", "plane")]
    assert data["settings"]["binary_change"].startswith("apd above the targets' median")
    assert [by_word[w]["binary_change"] for w in ("gay", "plane")] == [int(by_word[w]["apd"] > middle) for w in ("gay", "plane")]
    assert "above the targets' median: accuracy" in gold["summary"] and "one sense for every word" in gold["summary"]
    clusters = (tmp / "report" / "clusters" / "plane_nn.csv").read_text().splitlines()
    assert clusters[0] == "identifier\tcluster" and len(clusters) == 13


def test_the_report_is_one_page_with_nothing_fetched(report):
    tmp, _ = report
    page = (tmp / "report" / "index.html").read_text()
    # the target marked where the dataset marks it, whatever its form ("planes" on the map, the examples as drawn)
    assert "<mark>plane</mark>" in page and "The [[planes]] flew" in page and 'id="w-gay"' in page
    assert "most set A apart from B" in page and "95% interval" in page and "<svg" in page
    for remote in ('src="http', "src='http", 'href="http', "@import", "url(http"):
        assert remote not in page
    if shutil.which("chromium") is None:
        assert not (tmp / "report" / "ranking.png").exists() or (tmp / "report" / "maps" / "plane.png").exists()


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("needs a headless Chromium (Debian: apt-get install chromium) to open the report as a person would")


def test_the_report_opens_in_a_real_browser_without_errors(report, tmp_path):
    browser = _chromium()
    page = (report[0] / "report" / "index.html").resolve()
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([*flags, "--window-size=800,600", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    # the page's own script ran to its end, and no script error was raised on the page
    assert 'data-ready="1"' in dom.stdout and 'data-errors="0"' in dom.stdout, dom.stdout[:500]
    # 800 pixels wide: the ranking's columns scroll in their own box, the page is no wider than the window
    assert 'data-fits="1"' in dom.stdout
    assert '<span id="count">2</span>' in dom.stdout
    # people's graded change in view, without scrolling the table, at 1000 and 1300 px (the researcher's case: cut at 1100)
    for width in (1000, 1300):
        wide = subprocess.run(
            [*flags, f"--window-size={width},900", "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
        )
        assert 'data-people-in-view="1"' in wide.stdout, width
    shot = tmp_path / "page.png"
    run = subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1000,1400", page.as_uri()], capture_output=True, timeout=120)
    assert run.returncode == 0 and shot.is_file()
    image = pytest.importorskip("matplotlib.image").imread(shot)
    # not blank: ink (text, points) on a white page, in more than one colour
    ink = (image[..., :3] < 0.5).any(axis=-1).mean()
    colours = len(numpy.unique((image[..., :3] * 15).astype(int).reshape(-1, 3), axis=0))
    assert ink > 0.005 and colours > 8, (ink, colours)


def test_png_figures_or_a_line_naming_them(report, monkeypatch, tmp_path):
    tmp, output = report
    if (tmp / "report" / "ranking.png").exists():
        assert (tmp / "report" / "maps" / "plane.png").is_file() and "PNG figures" in output
    import builtins

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    from spacy_elmo.change.report import write_report

    lines = []
    write_report(tmp_path / "r", json.loads((tmp / "change.json").read_text()), log=lines.append)
    assert "ranking.png and maps/WORD.png were not written: matplotlib is not installed" in lines[0]
    assert (tmp_path / "r" / "index.html").is_file()


def test_the_cluster_share_jsd_is_bounded(report):
    tmp, _ = report
    for w in json.loads((tmp / "change.json").read_text())["words"]:
        assert 0 <= w["evidence"]["sense_jsd"] <= math.log(2) + 1e-12


def test_a_prt_interval_past_orthogonal_is_null_in_json_and_the_figures_still_draw(tmp_path):
    """PRT is infinite where the mean usages are orthogonal or opposite: its interval end is null in the JSON (never
    Infinity), and the report and its figures are still written."""
    from spacy_elmo.change.report import write_report
    from spacy_elmo.change.run import _finite

    rng = numpy.random.default_rng(0)
    a = numpy.array([1.0, 0.0]) + rng.normal(0, 0.3, (20, 2))
    b = numpy.array([-1.0, 0.0]) + rng.normal(0, 0.3, (20, 2))
    ev = word_evidence(a, b, measures=("prt", "apd"), draws=100)
    assert not math.isfinite(ev.intervals["prt"][1])  # past orthogonal: no finite upper end
    interval = [_finite(x) for x in ev.intervals["prt"]]
    data = {
        "settings": {"measures": ["prt", "apd"], "index_a": "a", "index_b": "b"},
        "words": [{"word": "w", "n_a": 20, "n_b": 20, "prt": None, "apd": 1.5, "note": "", "interval": {"prt": interval}}],
    }
    json.dumps(data, allow_nan=False)
    page = write_report(tmp_path / "r", data, log=lambda _: None)
    assert page.is_file()


def test_sense_names_are_each_senses_distinctive_words_by_hand():
    from collections import Counter

    from spacy_elmo.change.sense_names import context_words, name_senses

    bags = [["river", "water", "shore"]] * 3 + [["river", "money"]] + [["money", "loan", "interest"]] * 3 + [["money", "water"]]
    labels = [0, 0, 0, 0, 1, 1, 1, 1]
    names = name_senses(bags, labels, 2)
    assert set(names[0]) == {"river", "water", "shore"} and set(names[1]) == {"money", "loan", "interest"}
    # in every usage of its sense and none of the other's: the most distinctive; "money" is in one usage of sense 1 too
    assert names[0][0] == "river" and names[1][2] == "money"
    # one sense: its words against the background, a word common everywhere is no name
    background = Counter({"said": 1000, "river": 5, "water": 20, "shore": 3})
    one = name_senses([["said", "river"], ["said", "shore", "river"], ["said", "water"]], [0, 0, 0], 1, background)[0]
    assert one[0] == "river" and "said" not in one
    # several senses: against the word's other senses and the other words' usages together (the planted benchmark's
    # case: a sense that came, where "people", in every usage of the sense and more of the other words' usages, named it
    # before its donor "sides")
    bags = [["rules", "law"]] * 10 + [["people", "sides"]] * 8 + [["people", "groups"]] * 2
    labels = [0] * 10 + [1] * 10
    assert name_senses(bags, labels, 2)[1][0] == "people"
    others = Counter({"people": 900, "said": 500, "sides": 2, "groups": 40, "rules": 30})
    came = name_senses(bags, labels, 2, others)[1]
    assert came[0] == "sides" and "people" not in came
    # the words scored as written, one name word of each lemma: "years" (a planted sense's donor) names its sense;
    # merged by lemma first, it took in the counts of "year", common in the other words' usages, and was no name
    bags = [["years", "year", "weeks", "days"]] * 6 + [["years", "weeks", "months"]] * 4 + [["law", "rule"]] * 10
    labels = [1] * 10 + [0] * 10
    others = Counter({"year": 400, "years": 20, "weeks": 10, "days": 60, "months": 10, "law": 50})
    singular = {"years": "year", "weeks": "week", "days": "day", "months": "month"}
    assert name_senses(bags, labels, 2, others, lemma=lambda w: singular.get(w, w))[1] == ["weeks", "years", "months"]
    merged_bags = [[singular.get(w, w) for w in bag] for bag in bags]
    merged_others: Counter = Counter()
    for w, c in others.items():
        merged_others[singular.get(w, w)] += c
    assert "year" not in name_senses(merged_bags, labels, 2, merged_others)[1]
    # of "language" and "languages", tied, the first only
    bags = [["language", "languages", "alphabet", "script"]] * 5 + [["law"]] * 5
    labels = [1] * 5 + [0] * 5
    assert name_senses(bags, labels, 2)[1] == ["alphabet", "language", "languages"]
    assert name_senses(bags, labels, 2, lemma=lambda w: w.rstrip("s"))[1] == ["alphabet", "language", "script"]
    # context words: within the window, stop words, numbers and the target's forms left out
    text = "The 3 big banks of the river Bank lent money."
    start = text.index("river")
    assert context_words(text, start, start + 5, {"the", "of"}, {"bank", "banks"}, window=4) == ["big", "lent", "money"]


def test_senses_carry_names_p_values_and_the_page_three_views_with_texts(report, tmp_path):
    from spacy_elmo.change.outputs import write_table
    from spacy_elmo.change.run import ChangeResult

    tmp, _ = report
    data = json.loads((tmp / "change.json").read_text())
    assert "permutation test" in data["settings"]["null"] and "written forms apart taken out" in data["settings"]["senses"]
    for w in data["words"]:
        ev = w["evidence"]
        assert len(ev["sense_names"]) == ev["senses"] and all(isinstance(n, list) for n in ev["sense_names"])
        for m in ("apd", "prt"):
            assert 1 / 1001 <= ev["p_values"][m] <= 1 and ev["p_values"][m] <= ev["q_values"][m] <= 1
        # a WUG dataset holds its targets alone: no control words, so no null and no verdict, and it says so
        verdict = w["verdict"]
        assert verdict["basis"] == "no verdict: needs control words" and verdict["p_controls"] is None
        assert ev["changed_fdr"] is None and verdict["changed"] is None and 0 < verdict["q"] <= 1
        # every point's tooltip holds its usage's text with the target marked
        assert all("[[" in p["text"] and "]]" in p["text"] for p in ev["points"])
    assert any(any(n) for w in data["words"] for n in w["evidence"]["sense_names"])
    written = write_table(ChangeResult([], data, {}, []), tmp_path / "out.tsv")
    head = written[0].read_text().splitlines()[0].split("\t")
    assert {"apd_p", "apd_q", "prt_p", "prt_q", "changed", "sense_names"} <= set(head)
    rows = [dict(zip(head, line.split("\t"))) for line in written[0].read_text().splitlines()[1:]]
    assert rows and all(r["changed"] == "" and r["verdict_basis"] == "no verdict: needs control words" for r in rows)
    page = (tmp / "report" / "index.html").read_text()
    # no word coloured or counted changed without a null: each says the verdict needs controls
    assert "class=changed>yes" not in page and "<b class=changed>changed</b>" not in page
    assert page.count("needs controls</span>") == len(data["words"]) and "no verdict</b> (it needs control words)" in page
    assert "q vs chance (secondary)" in page and "vs controls p / q" not in page
    # the table: the verdict's cell beside the word, the scores' own tests marked secondary, the order said
    head = re.findall(r"<th>([^<]*)</th>", page)
    # people's graded change beside the verdict's cell: in view at 1000 px, however many scores follow
    assert head[:6] == ["#", "word", "changed", "people&#x27;s graded change", "energy z", "q vs chance (secondary)"]
    assert "apd p / q (secondary)" in head
    assert data["settings"]["order"] == "by apd (no verdict: it needs control words)" and " words, by apd (no verdict" in page
    assert any(n.startswith("no control words could be drawn (a WUG dataset") for n in data["notes"])  # was "only 0 ..."
    apds = [w["apd"] for w in data["words"] if w.get("apd") is not None]
    assert apds == sorted(apds, reverse=True)
    assert page.count('class="map"') == 3 * len(data["words"])  # both periods, period A, period B
    assert "[[plane]]" in page and "period A</span>" in page and "p / q" in page


def test_a_word_from_the_corpus_never_names_a_path_and_subfolders_are_never_links(report, tmp_path):
    """Report files named after words are made safe ("/probe" writes no /probe.csv); a report subfolder that is a
    link is refused, never written through."""
    from spacy_elmo.errors import InputError
    from spacy_elmo.output_folders import name_from_data
    from spacy_elmo.change.outputs import write_clusters
    from spacy_elmo.change.run import ChangeResult

    for word in ("/probe", " / ", "..", "and/or", "<!--<script>", ""):
        name = name_from_data(word, ".csv")
        assert "/" not in name and not name.startswith(".") and name.endswith(".csv")
    assert name_from_data("a/b") != name_from_data("a_b")  # two words never share a file
    data = {"words": [{"word": "/probe", "evidence": {"labels": {"u1": 0}}}, {"word": "and/or", "evidence": {"labels": {"u2": 0}}}]}
    written = write_clusters(ChangeResult([], data, {}, []), tmp_path / "clusters")
    assert all(p.parent == tmp_path / "clusters" for p in written) and len(written) == 2
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "r2").mkdir()
    (tmp_path / "r2" / "clusters").symlink_to(elsewhere)
    with pytest.raises(InputError, match="is a link"):
        write_clusters(ChangeResult([], data, {}, []), tmp_path / "r2" / "clusters")
    assert not list(elsewhere.iterdir())


def test_a_gold_word_given_twice_is_refused_naming_both_lines(tmp_path):
    (tmp_path / "graded.txt").write_text("bank_nn\t0.5\nriver_nn\t0.1\nbank_vb\t0.2\n", encoding="utf8")
    with pytest.raises(InputError, match=r"lines 1 and 3: 'bank' is given twice"):
        read_gold(tmp_path / "graded.txt")
    stats = tmp_path / "stats_groupings.csv"
    stats.write_text("lemma\tchange_graded\nbank\t0.5\nbank\t0.7\n", encoding="utf8")
    with pytest.raises(InputError, match=r"lines 2 and 3: 'bank' is given twice"):
        read_gold(stats)


@pytest.mark.slow
def test_a_report_folder_used_again_keeps_no_word_of_the_earlier_run(report, tmp_path):
    """The second run into a report folder removes what the first wrote (gay's map and clusters file), and keeps what
    it did not write (a user's file in maps/)."""
    tmp, _ = report
    bilm, wug = tmp / "bilm", tmp / "wug"
    args = ["change", str(wug), str(wug), "--model", str(bilm), "--min-usages", "2", "--report", str(tmp_path / "r"), "--clusters"]
    first = CliRunner().invoke(app, [*args[:3], str(tmp_path / "one.json"), *args[3:]])
    assert first.exit_code == 0, first.output
    assert (tmp_path / "r" / "clusters" / "gay_jj.csv").is_file()
    (tmp_path / "r" / "maps").mkdir(exist_ok=True)
    (tmp_path / "r" / "maps" / "mine.txt").write_text("keep me", encoding="utf8")
    second = CliRunner().invoke(app, [*args[:3], str(tmp_path / "two.json"), *args[3:], "--words", "plane"])
    assert second.exit_code == 0, second.output
    assert not (tmp_path / "r" / "clusters" / "gay_jj.csv").exists() and (tmp_path / "r" / "clusters" / "plane_nn.csv").is_file()
    assert not (tmp_path / "r" / "maps" / "gay.png").exists()
    assert (tmp_path / "r" / "maps" / "mine.txt").read_text(encoding="utf8") == "keep me"
    assert "gay" not in (tmp_path / "r" / "index.html").read_text(encoding="utf8").split("<h1>")[1]


def test_a_report_file_changed_since_it_was_written_stays_and_the_next_run_writes_beside_it(report, tmp_path):
    """The report's record keeps each file's SHA-256: a file it wrote that a user edited since (the page, with notes
    of theirs) is not removed by the next run, which says so and writes its page beside it; a file unchanged goes. A
    record written before digests were kept (names alone) is still read."""
    from spacy_elmo.change.report import REPORT_FILES

    tmp, _ = report
    bilm, wug, r = tmp / "bilm", tmp / "wug", tmp_path / "r"
    args = ["change", str(wug), str(wug), "--model", str(bilm), "--min-usages", "2", "--report", str(r), "--clusters"]
    first = CliRunner().invoke(app, [*args[:3], str(tmp_path / "one.json"), *args[3:]])
    assert first.exit_code == 0, first.output
    recorded = dict(json.loads((r / REPORT_FILES).read_text(encoding="utf8")))
    assert len(recorded["index.html"]) == 64 and "clusters/gay_jj.csv" in recorded
    (r / "index.html").write_text((r / "index.html").read_text(encoding="utf8") + "<!-- my notes -->", encoding="utf8")
    second = CliRunner().invoke(app, [*args[:3], str(tmp_path / "two.json"), *args[3:], "--words", "plane"])
    assert second.exit_code == 0, second.output
    assert (r / "index.html").read_text(encoding="utf8").endswith("<!-- my notes -->")
    assert "changed since the report wrote it" in " ".join(second.output.split())
    assert (r / "index.spacy-elmo-2.html").is_file() and not (r / "clusters" / "gay_jj.csv").exists()
    # a record of names alone (as written before digests were kept): its files go as before
    (r / REPORT_FILES).write_text(json.dumps(["index.spacy-elmo-2.html", "clusters/plane_nn.csv"]), encoding="utf8")
    third = CliRunner().invoke(app, [*args[:3], str(tmp_path / "three.json"), *args[3:], "--words", "gay"])
    assert third.exit_code == 0, third.output
    assert not (r / "clusters" / "plane_nn.csv").exists() and (r / "clusters" / "gay_jj.csv").is_file()


@pytest.mark.slow
def test_answers_without_a_verdict_or_a_named_rule_write_no_binary_change(report, tmp_path):
    """The audit's case (issue 103): --answers with no control words wrote half the words as changed in task1 (the
    median rule, switched on silently) while the run's note said no word is called changed. A rule nobody asked for
    never answers: task1 is not written, said in one line; task2 (graded) is."""
    tmp, _ = report
    r = tmp_path / "r"
    args = ["change", str(tmp / "wug"), str(tmp / "wug"), str(tmp_path / "out.json"), "--model", str(tmp / "bilm")]
    result = CliRunner().invoke(app, args + ["--min-usages", "2", "--report", str(r), "--answers"])
    assert result.exit_code == 0, result.output
    assert not (r / "answer" / "task1" / "english.txt").exists() and (r / "answer" / "task2" / "english.txt").is_file()
    assert "task1 (binary change) was not written" in result.output and "--binary-change" in result.output
    # the field is there in every route's rows (the researcher's case: in the WUG route's rows, not the corpus route's), null
    assert all(w["binary_change"] is None for w in json.loads((tmp_path / "out.json").read_text(encoding="utf8"))["words"])


@pytest.mark.slow
def test_a_users_clusters_and_answer_files_stay_and_the_runs_go_beside_them(report, tmp_path):
    """The audit's case (issue 103): --clusters replaced a user's REPORT/clusters/WORD.csv and --answers their
    REPORT/answer/task1/english.txt. Now each stays, this run's file goes beside it (NAME.spacy-elmo-2.EXT), said in
    one line; the next run replaces only its own."""
    from spacy_elmo.change.report import CHANGE_REPORT
    from spacy_elmo.output_folders import mark

    tmp, _ = report
    bilm, wug = tmp / "bilm", tmp / "wug"
    r = tmp_path / "r"
    for sub in ("clusters", "answer/task1"):
        (r / sub).mkdir(parents=True)
    mark(r, CHANGE_REPORT)  # a report folder of an earlier run, holding the user's files
    (r / "clusters" / "plane_nn.csv").write_text("my clusters\n", encoding="utf8")
    (r / "answer" / "task1" / "english.txt").write_text("my answers\n", encoding="utf8")
    args = ["change", str(wug), str(wug), "--model", str(bilm), "--min-usages", "2"]
    args += ["--report", str(r), "--clusters", "--answers", "--binary-change", "median", "--words", "plane"]
    for run in ("one", "two"):
        result = CliRunner().invoke(app, [*args[:3], str(tmp_path / f"{run}.json"), *args[3:]])
        assert result.exit_code == 0, result.output
        assert (r / "clusters" / "plane_nn.csv").read_text(encoding="utf8") == "my clusters\n"
        assert (r / "answer" / "task1" / "english.txt").read_text(encoding="utf8") == "my answers\n"
        assert (r / "clusters" / "plane_nn.spacy-elmo-2.csv").read_text(encoding="utf8").startswith("identifier\tcluster")
        assert (r / "answer" / "task1" / "english.spacy-elmo-2.txt").is_file()
        assert "was not written by a report" in result.output
    assert not (r / "clusters" / "plane_nn.spacy-elmo-3.csv").exists()  # the first run's own file went first


@pytest.mark.slow
def test_indexes_without_context_vectors_say_which_input_the_senses_come_from(tmp_path):
    """Indexes built without --all-layers keep no context-only vectors: change says in one line that the changed usages
    are ranked by the word's own vectors (the senses come from its top layer, which such an index stores), that senses
    asked of the context-only vectors come from the vectors the scores read, and the tiny biLM (no softmax) that they
    are named by context words."""
    from spacy_elmo.change.run import ChangeSettings, run_change
    from spacy_elmo.change.wug import build_wug_index
    from spacy_elmo.pipeline.loading import load_elmo_pipeline

    from .test_wug_route import bilm_and_wug

    bilm, wug = bilm_and_wug(tmp_path)
    nlp = load_elmo_pipeline(bilm)
    for g in "12":
        build_wug_index(nlp, wug, tmp_path / f"plain{g}", model=bilm, grouping=g, progress=False, log=lambda _: None)
    settings = ChangeSettings(evidence=True, min_usages=2, permutations=10, draws=10)
    with pytest.warns(UserWarning):
        result = run_change(tmp_path / "plain1", tmp_path / "plain2", None, settings, log=lambda _: None)
    assert any("the changed usages are ranked by the word's own vectors" in n and "--all-layers" in n for n in result.notes)
    assert any(
        n.startswith("A and B keep no context-only vectors to read substitutes from: the senses are named by their context")
        for n in result.notes
    )
    assert "the word's own vectors, layer top" in result.data["settings"]["senses"]
    context = ChangeSettings(evidence=True, min_usages=2, permutations=10, draws=10, senses="context:top")
    with pytest.warns(UserWarning):
        asked = run_change(tmp_path / "plain1", tmp_path / "plain2", None, context, log=lambda _: None)
    assert any("the senses are clustered from the vectors the scores read" in n for n in asked.notes)
    assert "the vectors the scores read" in asked.data["settings"]["senses"]
    wanted = ChangeSettings(evidence=True, min_usages=2, permutations=10, draws=10, senses="substitutes")
    with pytest.warns(UserWarning):
        again = run_change(tmp_path / "plain1", tmp_path / "plain2", None, wanted, log=lambda _: None)
    assert any(n.startswith("no substitutes to cluster the senses from") for n in again.notes)


def test_regular_plurals_have_their_singular_as_lemma():
    """A sense named "language, alphabet, languages" spends a name on a plural: a name word is skipped whose singular
    (spaCy's lookup lemmas, regular plurals only) a name word before it has; irregular or unknown forms, and words in
    capitals, are their own."""
    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    from spacy_elmo.change.sense_input import Singulars

    singular = Singulars("en")
    merged = {w: singular(w) for w in ("languages", "countries", "glasses", "hours", "language", "news", "data", "Jews", "was")}
    assert merged == {
        "languages": "language",
        "countries": "country",
        "glasses": "glass",
        "hours": "hour",
        "language": "language",
        "news": "news",
        "data": "data",
        "Jews": "Jews",
        "was": "was",
    }
    assert Singulars("xx")("languages") == "languages"  # no lookup table for the language: nothing merged


def test_a_context_repeated_is_shown_once():
    """A heading repeated word for word ("Personal family.") has one context vector: it was shown three times as the
    usages that set B apart, and as the three usages nearest its sense's centre."""
    rng = numpy.random.default_rng(3)
    base, new = numpy.eye(8)[0], numpy.eye(8)[4]
    a = base + rng.normal(0, 0.1, (30, 8))
    b = base + rng.normal(0, 0.1, (30, 8))
    b[20:] = new + rng.normal(0, 0.1, (10, 8))
    b[20:24] = new  # four usages of one repeated context, at the new sense's centre
    ev = word_evidence(a, b)
    shown = [row for row, _ in ev.changed["B"]]
    assert len(shown) == 3 and len(set(shown) & {20, 21, 22, 23}) == 1 and all(row >= 20 for row in shown)
    sense = next(j for j, ex in enumerate(ev.examples) if ex[0][0] == "B" and ex[0][1] >= 20)
    assert len({row for _, row in ev.examples[sense]} & {20, 21, 22, 23}) == 1 and len(ev.examples[sense]) == 3


@pytest.mark.slow
def test_the_page_tsv_and_json_say_the_same_of_each_sense(report, tmp_path):
    from spacy_elmo.change.outputs import sense_periods_cell, write_table
    from spacy_elmo.change.run import ChangeResult
    from spacy_elmo.change.senses import sense_periods

    tmp, _ = report
    data = json.loads((tmp / "change.json").read_text())
    page = (tmp / "report" / "index.html").read_text()
    write_table(ChangeResult([], data, {}, []), tmp_path / "change.tsv")
    head, *lines = (tmp_path / "change.tsv").read_text().splitlines()
    cells = {line.split("\t")[0]: dict(zip(head.split("\t"), line.split("\t"))) for line in lines}
    for w in data["words"]:
        ev = w["evidence"]
        periods = sense_periods(ev["cluster_freq_dist1"], ev["cluster_freq_dist2"])
        assert ev["sense_periods"] == periods and ev["binary"] == int(any(p not in NOT_MOVED for p in periods))
        assert cells[w["word"]]["sense_periods"] == sense_periods_cell(ev) and cells[w["word"]]["senses_binary"] == str(ev["binary"])
        section = page[page.index(f'id="w-{w["word"]}"') :]
        said = re.search(r"a sense that came, went or moved \((came or went: [^)]*\)[^)]*)\): (yes|no)", section)
        assert said and said.group(2) == ("yes" if ev["binary"] else "no")
        assert said.group(1).startswith("came or went: at most 1 usage in one period, at least 5 in the other (DWUG")
        shown = re.findall(
            r"<td>(?:<span class=changed>)?(came in B|went from A|more in B|less in B|both|only in [AB], too few to tell)<", section
        )
        assert shown[: len(periods)] == periods
    assert "sense_sides" not in json.dumps(data)
