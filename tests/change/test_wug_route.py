"""One route, one figure: a WUG dataset indexed from the command line gives the vectors the project's script
embeds (the marked token, the whole context as one sequence), every layer kept in one index and picked at query
time, and what a new user tripped on (word lists, plain TSV, layer 0, notes, bad input), each in one line."""

import json

import numpy
import pytest
from typer.testing import CliRunner

from spacy_elmo import save_original
from spacy_elmo.cli import app
from spacy_elmo.errors import InputError
from spacy_elmo.pipeline.loading import load_elmo_pipeline
from spacy_elmo.usages import UsageIndex, build_usage_index
from spacy_elmo.change.measures import apd
from spacy_elmo.usages.words import parse_words, read_words
from spacy_elmo.change.wug import build_wug_index, embed_uses, read_judgments, read_uses

from ..helpers import tiny_bilm

# two targets, two periods; "planes" marks a form the lemma keys must hold
SENTENCES = {
    "plane_nn": [
        ("1", "He smoothed the wood with a plane .", 6),
        ("1", "The plane of the table was flat .", 1),
        ("1", "A plane is a flat surface , said the teacher .", 1),
        ("1", "The carpenter took his plane and his saw .", 4),
        ("1", "Each plane of the crystal shone .", 1),
        ("1", "She drew a plane through three points .", 3),
        ("2", "Our plane landed in Paris , late .", 1),
        ("2", "The planes flew over the sea .", 1),
        ("2", "She boarded the plane to Rome .", 3),
        ("2", "The pilot flew the plane home .", 4),
        ("2", "A plane took off at noon .", 1),
        ("2", "Their plane was delayed by fog .", 1),
    ],
    "gay_jj": [
        ("1", "The gay party sang all night .", 1),
        ("1", "A gay and merry crowd danced .", 1),
        ("1", "She wore a gay red dress .", 3),
        ("1", "The gay music filled the hall .", 1),
        ("1", "They were gay and careless .", 3),
        ("2", "The gay rights march went through the city .", 1),
        ("2", "A gay couple adopted a child .", 1),
        ("2", "He came out as gay last year .", 4),
        ("2", "The gay community held a meeting .", 1),
        ("2", "Gay marriage became legal .", 0),
    ],
}
HEADER = ["lemma", "pos", "date", "grouping", "identifier", "context", "context_tokenized", "indexes_target_token_tokenized"]


def write_wug(root, sentences=SENTENCES):
    for word, uses in sentences.items():
        folder = root / "data" / word
        folder.mkdir(parents=True)
        rows = ["\t".join(HEADER)]
        for k, (grouping, text, index) in enumerate(uses):
            rows.append(
                "\t".join([word, word[-2:], "1850" if grouping == "1" else "1990", grouping, f"{word}-{k}", text, text, str(index)])
            )
        (folder / "uses.csv").write_text("\n".join(rows) + "\n", encoding="utf8")
        judged = ["identifier1\tidentifier2\tannotator\tjudgment", f"{word}-0\t{word}-1\ta\t3", f"{word}-0\t{word}-7\ta\t1"]
        (folder / "judgments.csv").write_text("\n".join(judged) + "\n", encoding="utf8")
    stats = root / "stats" / "opt"
    stats.mkdir(parents=True)
    (stats / "stats_groupings.csv").write_text(
        "\ufefflemma\tchange_binary\tchange_graded\nplane_nn\t1\t0.8\ngay_jj\t1\t0.6\n", encoding="utf8"
    )
    clusters = root / "clusters" / "opt"
    clusters.mkdir(parents=True)
    for word, uses in sentences.items():
        lines = ["identifier\tcluster"] + [f"{word}-{k}\t{int(g == '2')}" for k, (g, _, _) in enumerate(uses)]
        (clusters / f"{word}.csv").write_text("\n".join(lines) + "\n", encoding="utf8")
    return root


def bilm_and_wug(tmp):
    """A tiny biLM folder and the tiny WUG dataset above, in `tmp`: RETURNS their paths."""
    bilm = tmp / "bilm"
    bilm.mkdir()
    save_original(tiny_bilm(seed=7), bilm / "options.json", bilm / "weights.hdf5")
    return bilm, write_wug(tmp / "wug")


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wug_route")
    bilm, wug = bilm_and_wug(tmp)
    nlp = load_elmo_pipeline(bilm)
    quiet = {"progress": False, "log": lambda _: None}
    built = {g: build_wug_index(nlp, wug, tmp / f"wug{g}", model=bilm, grouping=g, all_layers=True, **quiet) for g in "12"}
    return tmp, bilm, wug, nlp, built


def test_a_wug_index_holds_the_marked_usages_as_the_project_embeds_them(setup):
    tmp, bilm, wug, nlp, built = setup
    for word in SENTENCES:
        uses = [u for u in read_uses(wug / "data" / word / "uses.csv")]
        expected = embed_uses(nlp, uses)  # (n, L + 1, D): the project's vectors
        key = word.split("_")[0]
        for g in "12":
            index = built[g]
            rows = numpy.sort(index.rows_of(key))
            mine = [k for k, u in enumerate(uses) if u.grouping == g]
            assert len(rows) == len(mine)
            # every layer kept (float16), and the top layer as the stored vectors
            numpy.testing.assert_allclose(numpy.asarray(index.layers[rows], dtype="float32"), expected[mine], rtol=2e-3, atol=2e-3)
            numpy.testing.assert_allclose(numpy.asarray(index.vectors[rows], dtype="float32"), expected[mine][:, -1], rtol=2e-3, atol=2e-3)
            # the identifier and grouping of each usage, and the marked token (never found again by a tokenizer)
            assert [index.sentences[int(index.arrays["usage_sentence"][r])]["id"] for r in rows] == [uses[k].identifier for k in mine]
            assert {index.sentences[int(index.arrays["usage_sentence"][r])]["grouping"] for r in rows} == {g}
            assert [index.usage(int(r)).text for r in rows] == [uses[k].tokens[uses[k].index] for k in mine]
    assert built["1"].match == "wug" and built["1"].meta["wug"]["targets"] == {"gay": "gay_jj", "plane": "plane_nn"}
    # "planes" is a usage of plane: the dataset marks it, no tokenizer or form matching decides
    assert "planes" in [built["2"].usage(int(r)).text for r in built["2"].rows_of("plane")]


def test_change_over_a_wug_dataset_equals_the_projects_apd_and_the_index_route(setup, tmp_path):
    tmp, bilm, wug, nlp, built = setup
    runner = CliRunner()
    args = ["change", str(wug), str(wug), str(tmp_path / "direct.json"), "--model", str(bilm), "-m", "apd", "-q", "--min-usages", "2"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    direct = {w["word"]: w for w in json.loads((tmp_path / "direct.json").read_text())["words"]}
    via_index = runner.invoke(
        app, ["change", str(tmp / "wug1"), str(tmp / "wug2"), str(tmp_path / "i.json"), "-m", "apd", "-q", "--min-usages", "2"]
    )
    assert via_index.exit_code == 0, via_index.output
    indexed = {w["word"]: w for w in json.loads((tmp_path / "i.json").read_text())["words"]}
    for word in SENTENCES:
        key = word.split("_")[0]
        uses = read_uses(wug / "data" / word / "uses.csv")
        vectors = embed_uses(nlp, uses)[:, -1]
        groups = numpy.array([u.grouping for u in uses])
        expected = apd(vectors[groups == "1"], vectors[groups == "2"])
        assert direct[key]["apd"] == pytest.approx(expected, abs=1e-3)  # float16 storage
        assert indexed[key]["apd"] == direct[key]["apd"] and direct[key]["target"] == word


def test_every_layer_in_one_index_picked_at_query_time(setup, tmp_path):
    tmp, bilm, wug, nlp, built = setup
    quiet = {"progress": False, "log": lambda _: None}
    for layer in ("0", "1"):
        alone = build_wug_index(nlp, wug, tmp_path / f"L{layer}", model=bilm, grouping="1", layer=layer, **quiet)
        picked = built["1"].with_layer(layer)
        rows = numpy.arange(len(alone))
        assert numpy.array_equal(numpy.asarray(picked.vectors[rows]), numpy.asarray(alone.vectors[rows]))  # the same float16 values
        assert picked.arrays["norms"] == pytest.approx(alone.arrays["norms"], rel=1e-6)
        assert "layer " + layer in repr(picked) and built["1"].layer_weights[-1] == 1.0  # the index itself is unchanged
    average = built["1"].with_layer("average")
    expected = numpy.asarray(built["1"].layers[:4], dtype="float32").mean(1)
    numpy.testing.assert_allclose(numpy.asarray(average.vectors[numpy.arange(4)], dtype="float32"), expected, rtol=2e-3, atol=2e-3)
    # a neighbour query answers with the picked layer
    found, _ = average.nearest_rows(expected[0], n=1)
    assert int(found[0]) == 0
    with pytest.raises(InputError, match="build it with --all-layers"):
        build_wug_index(nlp, wug, tmp_path / "top", model=bilm, grouping="1", **quiet).with_layer("0")
    with pytest.raises(InputError, match="layer 5 does not exist"):
        built["1"].with_layer("5")
    # the index survives a copy with its layers
    built["1"].to_disk(tmp_path / "copy")
    copy = UsageIndex().from_disk(tmp_path / "copy")
    assert copy.layers is not None and numpy.array_equal(numpy.asarray(copy.layers), numpy.asarray(built["1"].layers))


def test_layer_zero_warns_that_it_measures_only_spelling(setup, tmp_path):
    tmp, *_ = setup
    result = CliRunner().invoke(app, ["change", str(tmp / "wug1"), str(tmp / "wug2"), str(tmp_path / "l0.tsv"), "--layer", "0", "-q"])
    assert result.exit_code == 0, result.output
    settings = json.loads((tmp_path / "l0.settings.json").read_text())
    assert settings["settings"]["layer"] == "layer 0 (token layer)" and "spelling and case" in settings["notes"][0]


def test_word_lists_are_files_or_comma_lists_lowercased_alike(tmp_path):
    (tmp_path / "w.txt").write_text("\ufeffSAID\nAttack_nn\n", encoding="utf8")
    assert read_words(tmp_path / "w.txt") == ["said", "attack"] == parse_words(tmp_path / "w.txt") == parse_words("SAID, attack_nn")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="is not UTF-8"):
        read_words(tmp_path / "latin1.txt")


def test_a_corpus_index_takes_a_word_file_and_says_what_it_indexed(setup, tmp_path):
    tmp, bilm, *_ = setup
    (tmp_path / "corpus.txt").write_text("He SAID the plane was late.\n\nThe plane said nothing. A cat.\n", encoding="utf8")
    (tmp_path / "words.txt").write_text("Said\nplane\n", encoding="utf8")
    result = CliRunner().invoke(
        app, ["index-usages", str(bilm), str(tmp_path / "corpus.txt"), str(tmp_path / "idx"), "--words", str(tmp_path / "words.txt")]
    )
    assert result.exit_code == 0, result.output
    assert "Indexed 4 usages of 2 of the 2 words in 2 sentences of" in result.output and "word types" not in result.output
    help_text = CliRunner().invoke(app, ["index-usages", "--help"]).output
    assert "blank line ends a document" in " ".join(help_text.split())


def test_apd_never_prints_below_zero():
    rng = numpy.random.default_rng(0)
    for _ in range(50):
        x = rng.normal(size=(7, 33))
        assert apd(x, x[::-1]) >= 0.0


@pytest.mark.parametrize("case", ["inside the index", "over its meta", "report inside", "nan vectors"])
def test_outputs_never_land_on_inputs_and_damaged_vectors_are_refused(setup, tmp_path, case):
    import shutil

    tmp, *_ = setup
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(tmp / "wug1", a)
    shutil.copytree(tmp / "wug2", b)
    before = {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()}
    out = tmp_path / "out.tsv"
    args = ["change", str(a), str(b), str(out), "-q"]
    if case == "inside the index":
        args[3] = str(a / "change.tsv")
    elif case == "over its meta":
        args = ["change", str(a), str(b), str(a / "meta.json"), "--overwrite", "-q"]
    elif case == "report inside":
        args += ["--report", str(a / "report")]
    else:  # a vectors.bin whose values are no longer finite, its norms left as they were
        vectors = numpy.memmap(a / "vectors.bin", dtype="float16", mode="r+")
        vectors[5] = numpy.inf
        vectors.flush()
        del vectors
        before = {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()}
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
    assert ("not finite" if case == "nan vectors" else "which this command reads") in result.output
    assert not out.exists() and not (a / "change.tsv").exists() and not (a / "report").exists()
    assert {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()} == before  # the index as it was


@pytest.mark.parametrize(
    "case, text, match",
    [
        ("short row", "u1\t1\tA plane .", "not the 4 tab-separated fields"),
        ("double space", "u1\t1\tA  plane .\t1", "empty token"),
        ("bom", None, None),
    ],
)
def test_bad_wug_uses_are_one_line(tmp_path, case, text, match):
    path = tmp_path / "uses.csv"
    header = "identifier\tgrouping\tcontext_tokenized\tindexes_target_token_tokenized"
    if case == "bom":  # a byte order mark is read past, not taken into the first column's name
        path.write_text("\ufeff" + header + "\nu1\t1\tA plane .\t1\n", encoding="utf8")
        assert [u.identifier for u in read_uses(path)] == ["u1"]
        return
    path.write_text(header + "\n" + text + "\n", encoding="utf8")
    with pytest.raises(InputError, match=match):
        read_uses(path)


@pytest.mark.parametrize("judgment", ["inf", "7", "-2", "nan"])
def test_judgments_off_the_scale_are_one_line(tmp_path, judgment):
    path = tmp_path / "judgments.csv"
    path.write_text(f"identifier1\tidentifier2\tjudgment\nu1\tu2\t3\nu1\tu3\t{judgment}\n", encoding="utf8")
    with pytest.raises(InputError, match="line 3: the judgment .* is not on the scale 1-4"):
        read_judgments(path)


def test_a_wug_dataset_is_refused_with_sharding_and_lemmas(setup, tmp_path):
    tmp, bilm, wug, *_ = setup
    for extra in (["--lemmas"], ["--shard", "0/2"]):
        result = CliRunner().invoke(app, ["index-usages", str(bilm), str(wug), str(tmp_path / "x"), *extra])
        assert result.exit_code == 2 and not (tmp_path / "x").exists(), result.output
    result = CliRunner().invoke(app, ["index-usages", str(bilm), str(wug), str(tmp_path / "x"), "--grouping", "3"])
    assert result.exit_code == 1 and "its groupings are 1, 2" in result.output and not (tmp_path / "x").exists()
    corpus = tmp_path / "c.txt"
    corpus.write_text("A plane.\n", encoding="utf8")
    result = CliRunner().invoke(app, ["index-usages", str(bilm), str(corpus), str(tmp_path / "y"), "--grouping", "1"])
    assert result.exit_code == 2 and "not a WUG dataset" in result.output


def test_corpus_indexes_match_keys_by_lemma_or_form(setup, tmp_path):
    """build_usage_index with all_layers: the layers of each usage equal its Doc's layers."""
    tmp, bilm, wug, nlp, _ = setup
    (tmp_path / "c.txt").write_text("The plane landed.\n\nA plane of glass.\n", encoding="utf8")
    index = build_usage_index(nlp, tmp_path / "c.txt", tmp_path / "i", words=["plane"], all_layers=True, progress=False, log=lambda _: None)
    doc = nlp("The plane landed.")
    numpy.testing.assert_allclose(numpy.asarray(index.layers[0], dtype="float32"), doc._.elmo.layers[:, 1], rtol=2e-3, atol=2e-3)


@pytest.mark.slow
def test_neighbours_picks_the_layer_of_an_every_layer_index(setup):
    tmp, *_ = setup
    runner = CliRunner()
    for layer, said in (("0", "layer 0 (token layer)"), ("average", "average of layers 0-2"), (None, "layer 2")):
        extra = ["--layer", layer] if layer else []
        result = runner.invoke(app, ["neighbours", str(tmp / "wug2"), "Our plane landed in Paris , late .", "--word", "plane", *extra])
        assert result.exit_code == 0, result.output
        assert f"({said}, cosine" in result.output and "Paris" in result.output


def test_targets_that_share_a_lemma_are_refused_with_advice_that_can_be_followed(tmp_path):
    """The audit's case: the advice of the case-twin error (--words Bank_nn) could not be followed, the check ran
    before the words were chosen."""
    from spacy_elmo.change.wug import wug_targets
    from spacy_elmo.errors import InputError

    for name in ("Bank_nn", "bank_nn", "plane_nn"):
        (tmp_path / "data" / name).mkdir(parents=True)
        (tmp_path / "data" / name / "uses.csv").write_text("lemma\tpos\n", encoding="utf8")
    with pytest.raises(InputError, match="share the lemma 'bank'") as err:
        wug_targets(tmp_path)
    assert "--words Bank_nn, then --words bank_nn" in str(err.value)
    assert {k: v[0] for k, v in wug_targets(tmp_path, ["Bank_nn"]).items()} == {"bank": "Bank_nn"}
    assert {k: v[0] for k, v in wug_targets(tmp_path, ["bank_nn", "plane"]).items()} == {"bank": "bank_nn", "plane": "plane_nn"}
    with pytest.raises(InputError, match="share the lemma"):
        wug_targets(tmp_path, ["bank"])  # the lemma alone names both
