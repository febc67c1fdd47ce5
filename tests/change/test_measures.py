"""Semantic change between two corpora: APD and PRT against hand-computed values, over usage indexes and the
`change` command, the WUG reader and its marked tokens, and bad input in one line with nothing written."""

import json
import math

import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.pipeline.loading import load_elmo_pipeline
from spacy_elmo.usages import build_usage_index
from spacy_elmo.change.measures import apd, compare, index_change, prt, usage_similarity
from spacy_elmo.usages.words import read_words
from spacy_elmo.change.wug import embed_uses, read_dataset, read_judgments, read_uses

from ..helpers import tiny_bilm

OLD = [
    "The plane of the table was flat. A plane is a flat surface. He used a plane to smooth the wood.",
    "The carpenter took his plane and his saw. The plane of the wall was smooth. The cat sat on the mat.",
    "A plane surface. The plane tool was sharp. The cat slept. The gay party sang all night.",
]
NEW = [
    "The plane landed at the airport. Our plane was late. The plane flew over the sea.",
    "She boarded the plane to Paris. The cat sat on the mat. The plane took off at noon.",
    "The pilot flew the plane. The cat slept. The gay rights march went through the city.",
]


def test_apd_and_prt_by_hand():
    a = numpy.array([[1.0, 0.0], [0.0, 2.0]])
    b = numpy.array([[3.0, 0.0]])
    # cosines of the pairs: 1 and 0, so the mean distance is 0.5
    assert apd(a, b) == pytest.approx(0.5)
    # mean of a's vectors (0.5, 1) against (3, 0): cos = 0.5 / sqrt(1.25)
    assert prt(a, b) == pytest.approx(math.sqrt(1.25) / 0.5)
    assert prt(a, a) == 1.0 and apd(b, b) == pytest.approx(0.0)
    assert prt(numpy.array([[1.0, 0.0]]), numpy.array([[-1.0, 0.0]])) == math.inf
    assert usage_similarity(numpy.array([[1.0, 0.0], [1.0, 1.0]]), numpy.array([[0.0, 5.0], [2.0, 2.0]])) == pytest.approx([0.0, 1.0])


def test_apd_is_the_mean_over_every_pair():
    rng = numpy.random.default_rng(0)
    a, b = rng.normal(size=(300, 8)), rng.normal(size=(200, 8)) + 0.5
    ua = a / numpy.linalg.norm(a, axis=1, keepdims=True)
    ub = b / numpy.linalg.norm(b, axis=1, keepdims=True)
    brute = numpy.mean([1.0 - ua[i] @ ub[j] for i in range(300) for j in range(200)])
    assert apd(a, b) == pytest.approx(brute, abs=1e-12)


def test_usages_read_in_chunks_from_an_index_equal_the_same_arrays(monkeypatch):
    from spacy_elmo.change import measures as change

    monkeypatch.setattr(change, "_CHUNK", 7)  # several chunks of a word's usages
    rng = numpy.random.default_rng(3)
    matrix = rng.normal(size=(500, 6)).astype(numpy.float16)
    rows_a, rows_b = rng.choice(500, 40, replace=False), rng.choice(500, 90, replace=False)
    a, b = change.UsageRows(matrix, rows_a), change.UsageRows(matrix, rows_b)
    dense_a, dense_b = matrix[numpy.sort(rows_a)].astype(numpy.float64), matrix[numpy.sort(rows_b)].astype(numpy.float64)
    assert apd(a, b) == pytest.approx(apd(dense_a, dense_b), abs=1e-12)
    assert prt(a, b) == pytest.approx(prt(dense_a, dense_b), abs=1e-12)
    centre = rng.normal(size=6)
    shifted = change.UsageRows(matrix, rows_a, centre)
    assert prt(shifted, b) == pytest.approx(prt(dense_a - centre, dense_b), abs=1e-12)
    assert apd(shifted, b) == pytest.approx(apd(dense_a - centre, dense_b), abs=1e-12)


def test_a_word_with_too_few_usages_is_listed_and_never_scored():
    vectors = {"a": numpy.eye(3)[:2], "b": numpy.eye(3), "c": numpy.eye(3)}
    rows = compare(lambda w: vectors[w], lambda w: vectors["c"] if w != "a" else numpy.zeros((0, 3)), ["a", "b"], min_usages=2)
    assert [r.word for r in rows] == ["b", "a"]
    assert rows[0].scores and rows[1].scores == {} and rows[1].note == "too few usages: 2 in A, 0 in B (at least 2 on each side)"
    with pytest.raises(InputError, match="measures are apd, prt"):
        compare(lambda w: vectors[w], lambda w: vectors[w], ["b"], measures=["cosine"])


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("change")
    bilm = tmp / "bilm"
    bilm.mkdir()
    save_original(tiny_bilm(seed=4), bilm / "options.json", bilm / "weights.hdf5")
    nlp = load_elmo_pipeline(bilm)
    built = {}
    for name, docs in (("old", OLD), ("new", NEW)):
        (tmp / f"{name}.txt").write_text("\n\n".join(docs) + "\n", encoding="utf8")
        built[name] = build_usage_index(nlp, tmp / f"{name}.txt", tmp / name, model=bilm, progress=False, log=lambda _: None)
    built["top"] = build_usage_index(nlp, tmp / "new.txt", tmp / "token", model=bilm, layer="0", progress=False, log=lambda _: None)
    return tmp, built


def test_index_change_scores_each_word_from_its_usages(indexes):
    tmp, built = indexes
    old, new = built["old"], built["new"]
    rows = index_change(old, new, ["plane", "cat", "gay"], min_usages=2)
    by_word = {r.word: r for r in rows}
    assert by_word["plane"].n_a == 7 and by_word["plane"].n_b == 6
    a = numpy.asarray(old.vectors[numpy.sort(old.rows_of("plane"))], dtype=numpy.float32)
    b = numpy.asarray(new.vectors[numpy.sort(new.rows_of("plane"))], dtype=numpy.float32)
    assert by_word["plane"].scores["apd"] == pytest.approx(apd(a, b)) and by_word["plane"].scores["prt"] == pytest.approx(prt(a, b))
    assert "too few usages" in by_word["gay"].note and not by_word["gay"].scores
    assert [r.word for r in rows][-1] == "gay"
    assert rows[0].scores["apd"] >= rows[1].scores["apd"]
    same = index_change(old, old, ["plane", "cat"], min_usages=2)
    assert all(r.scores["prt"] == 1.0 for r in same)  # one corpus on both sides


def test_every_word_in_both_by_default_and_standardized_vectors(indexes):
    _, built = indexes
    rows = index_change(built["old"], built["new"], measures=["apd"], min_usages=2)
    words = {r.word for r in rows}
    assert {"plane", "the", "cat"} <= words and "gay" not in words and all(r.scores for r in rows)
    plain = {r.word: r.scores["apd"] for r in rows}
    standardized = {
        r.word: r.scores["apd"] for r in index_change(built["old"], built["new"], measures=["apd"], min_usages=2, standardize=True)
    }
    assert plain.keys() == standardized.keys() and plain != standardized


def test_the_change_command_writes_tsv_and_json(indexes, tmp_path):
    tmp, _ = indexes
    (tmp_path / "words.txt").write_text("plane_nn\ncat\ngay\n", encoding="utf8")
    out = tmp_path / "change.tsv"
    args = ["change", str(tmp / "old"), str(tmp / "new"), str(out), "--words", str(tmp_path / "words.txt"), "--min-usages", "2", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = out.read_text().splitlines()
    # plain TSV: a header, then a word a line; the settings beside it
    # binary_change in every route's rows: empty here, where no verdict and no --binary-change rule gives one
    assert lines[0].split("\t") == ["word", "n_a", "n_b", "apd", "prt", "binary_change", "note"]
    assert [line.split("\t")[0] for line in lines[1:]][-1] == "gay" and len(lines) == 4
    assert {line.split("\t")[5] for line in lines[1:]} == {""}
    assert json.loads((tmp_path / "change.settings.json").read_text())["settings"]["min_usages"] == 2
    result = CliRunner().invoke(app, [*args[:3], str(tmp_path / "c.json"), *args[4:], "--measure", "prt"])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "c.json").read_text())
    assert [w["word"] for w in data["words"]][:2] in (["plane", "cat"], ["cat", "plane"]) and "apd" not in data["words"][0]
    assert all(w["binary_change"] is None for w in data["words"])
    assert CliRunner().invoke(app, args).exit_code == 1  # exists: needs --overwrite


@pytest.mark.parametrize("case", ["other layers", "absent words", "bad measure", "empty index"])
def test_bad_input_is_one_line_and_nothing_is_written(indexes, tmp_path, case):
    tmp, _ = indexes
    out = tmp_path / "change.tsv"
    (tmp_path / "words.txt").write_text("zebra\nquark\n", encoding="utf8")
    args = ["change", str(tmp / "old"), str(tmp / "new"), str(out)]
    if case == "other layers":
        args[2] = str(tmp / "token")
    elif case == "absent words":
        args += ["--words", str(tmp_path / "words.txt")]
    elif case == "bad measure":
        args += ["--measure", "cosine"]
    else:  # shard 1 of 2 of a corpus whose documents all fall in shard 0: a valid index with no usage
        part = ["index-usages", str(tmp / "bilm"), str(tmp / "new.txt"), str(tmp_path / "empty"), "--shard", "1/2", "-q"]
        assert CliRunner().invoke(app, part).exit_code == 0
        args[2] = str(tmp_path / "empty")
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
    message = {
        "other layers": "different layer settings",
        "absent words": "has a usage in either",
        "bad measure": "use apd",
        "empty index": "holds no usages",
    }
    assert message[case] in result.output
    assert not out.exists()


def _write_wug(folder, uses, judgments, columns=None):
    word = folder / "data" / "plane_nn"
    word.mkdir(parents=True)
    header = columns or ["lemma", "grouping", "identifier", "context_tokenized", "indexes_target_token_tokenized"]
    rows = ["\t".join(header)] + ["\t".join(["plane_nn", g, i, text, str(k)][: len(header)]) for g, i, text, k in uses]
    (word / "uses.csv").write_text("\n".join(rows) + "\n", encoding="utf8")
    lines = ["identifier1\tidentifier2\tannotator\tjudgment"] + ["\t".join(j) for j in judgments]
    (word / "judgments.csv").write_text("\n".join(lines) + "\n", encoding="utf8")
    return word


USES = [
    ("1", "u1", 'He smoothed the " wood with a plane .', 7),
    ("1", "u2", "The plane of the table was flat .", 1),
    ("2", "u3", "Our plane landed in Paris , late .", 1),
]
JUDGMENTS = [("u1", "u2", "a", "3"), ("u2", "u1", "b", "2"), ("u1", "u3", "a", "1"), ("u3", "u1", "b", "0")]


def test_the_wug_reader_takes_the_marked_token_and_averages_judgments(tmp_path):
    word = _write_wug(tmp_path, USES, JUDGMENTS)
    uses = read_uses(word / "uses.csv")
    assert [u.tokens[u.index] for u in uses] == ["plane", "plane", "plane"]
    assert uses[0].tokens[3] == '"' and uses[0].grouping == "1" and uses[2].identifier == "u3"  # a quote is a token, kept as is
    assert read_judgments(word / "judgments.csv") == {("u1", "u2"): 2.5, ("u1", "u3"): 1.0}
    assert list(read_dataset(tmp_path)) == ["plane_nn"]


def test_embedded_uses_are_the_marked_tokens_vectors(tmp_path):
    folder = tmp_path / "bilm"
    folder.mkdir()
    bilm = tiny_bilm(seed=2)
    save_original(bilm, folder / "options.json", folder / "weights.hdf5")
    uses = read_uses(_write_wug(tmp_path, USES, JUDGMENTS) / "uses.csv")
    vectors = embed_uses(load_elmo_pipeline(folder), uses)
    assert vectors.shape == (3, bilm.options.n_output_layers, bilm.options.output_dim)
    for use, vector in zip(uses, vectors):
        expected = bilm.embed([list(use.tokens)])[0][:, use.index]
        numpy.testing.assert_allclose(vector, expected, atol=1e-5)


@pytest.mark.parametrize("case", ["missing column", "index outside", "not a number"])
def test_a_bad_wug_file_is_one_line_naming_it(tmp_path, case):
    if case == "missing column":
        word = _write_wug(tmp_path, USES, JUDGMENTS, columns=["lemma", "grouping", "identifier", "context_tokenized"])
        match = "no column indexes_target_token_tokenized"
    elif case == "index outside":
        word = _write_wug(tmp_path, [("1", "u1", "a plane", 2)], [])
        match = "line 2: the target index 2 is outside its sentence of 2 tokens"
    else:
        word = _write_wug(tmp_path, [("1", "u1", "a plane", "one")], [])
        match = "not a token index"
    with pytest.raises(InputError, match=match):
        read_uses(word / "uses.csv")


def test_target_words_files(tmp_path):
    (tmp_path / "w.txt").write_text("# targets\nattack_nn\ncircle_vb\tx\nad_hoc\n\n", encoding="utf8")
    assert read_words(tmp_path / "w.txt") == ["attack", "circle", "ad_hoc"]
    (tmp_path / "e.txt").write_text("\n# none\n", encoding="utf8")
    with pytest.raises(InputError, match="names no word"):
        read_words(tmp_path / "e.txt")


def test_jsd_by_hand():
    """Two sides in clusters of their own: ln 2; the same usages on both sides: 0."""
    from spacy_elmo.change.measures import cluster_jsd

    rng = numpy.random.default_rng(0)
    a = numpy.array([1.0, 0.0, 0.0]) + rng.normal(0, 0.01, (20, 3))
    b = numpy.array([0.0, 1.0, 0.0]) + rng.normal(0, 0.01, (30, 3))
    assert cluster_jsd(a, b, k=2) == pytest.approx(math.log(2))
    assert cluster_jsd(a, a, k=2) == pytest.approx(0.0, abs=1e-12)
    mixed = numpy.concatenate([a, b])
    assert cluster_jsd(mixed, mixed[::-1].copy(), k=2) == pytest.approx(0.0, abs=1e-12)
    # at most max_usages a side, drawn with the seed: the same answer twice
    assert cluster_jsd(mixed, a, k=2, max_usages=10) == cluster_jsd(mixed, a, k=2, max_usages=10)


def test_the_change_command_takes_two_corpora_with_a_model(indexes, tmp_path):
    tmp, built = indexes
    (tmp_path / "words.txt").write_text("plane\ncat\n", encoding="utf8")
    args = ["change", str(tmp / "old.txt"), str(tmp / "new.txt"), str(tmp_path / "c.json"), "--words", str(tmp_path / "words.txt")]
    args += ["--min-usages", "2", "-q", "--measure", "apd", "--measure", "jsd"]
    result = CliRunner().invoke(app, [*args, "--model", str(tmp / "bilm")])
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "c.json").read_text())
    by_word = {w["word"]: w for w in data["words"]}
    expected = {r.word: r for r in index_change(built["old"], built["new"], ["plane", "cat"], ["apd", "jsd"], min_usages=2)}
    for word in ("plane", "cat"):  # indexing only the words gives each usage the vector of the whole index
        assert by_word[word]["apd"] == pytest.approx(expected[word].scores["apd"], abs=1e-6)
        assert 0 <= by_word[word]["jsd"] <= math.log(2) + 1e-9
    assert "seed 0" in data["settings"]["jsd"]
    result = CliRunner().invoke(app, [*args[:3], str(tmp_path / "d.json"), *args[4:]])
    assert result.exit_code == 1 and "give --model" in result.output and not (tmp_path / "d.json").exists()
    (tmp_path / "empty.txt").write_text("\n", encoding="utf8")
    result = CliRunner().invoke(
        app, [*args[:2], str(tmp_path / "empty.txt"), str(tmp_path / "e.json"), *args[4:], "--model", str(tmp / "bilm")]
    )
    assert result.exit_code == 1 and "nothing was indexed" in result.output and not (tmp_path / "e.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("blank_lines", [True, False])
def test_corpora_without_blank_lines_say_the_test_shuffled_usages(indexes, tmp_path, blank_lines):
    """The audit's case: a corpus without blank lines is one document, so the verdict's test shuffles usages instead
    of documents, and the verdict moved with no word said. Now a note says so; with a blank line between the same
    twelve documents, none."""
    tmp, _ = indexes
    for name, verb in (("a", "flew"), ("b", "landed")):
        docs = [f"The plane {verb} over town number {i} at dawn." for i in range(12)]
        (tmp_path / f"{name}.txt").write_text(("\n\n" if blank_lines else "\n").join(docs) + "\n", encoding="utf8")
    args = ["change", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), str(tmp_path / "c.json"), "--words", "plane"]
    result = CliRunner().invoke(app, [*args, "--model", str(tmp / "bilm"), "--evidence", "--permutations", "20", "--min-usages", "2"])
    assert result.exit_code == 0, result.output
    notes = json.loads((tmp_path / "c.json").read_text())["notes"]
    said = [n for n in notes if "shuffled their usages, not their documents" in n]
    assert (not said) if blank_lines else (len(said) == 1 and "words: plane" in said[0])
