"""The usage index: building (whole, in pieces, chosen words), storage, queries against a brute-force
computation on the biLM itself, the folder rules, mismatched biLMs, the component and the CLI."""

import shutil

import numpy
import pytest
import spacy
from typer.testing import CliRunner

from spacy_elmo import load_original, save_original
from spacy_elmo.errors import InputError
from spacy_elmo.cli import app
from spacy_elmo.pipeline.loading import load_elmo_pipeline
from spacy_elmo.usages import UsageIndex, build_usage_index
from spacy_elmo.usages.index import parse_layer

from ..helpers import tiny_bilm

DOCS = [
    "The children play in the park. They play football after school.",
    "Hamlet is a play by Shakespeare. The play ran for a year on Broadway.",
    "The bank raised its interest rate. She sat on the bank of the river and watched them play.",
    "A suit and tie. He filed a suit against the bank.",
]


@pytest.fixture
def bilm_dir(tmp_path):
    folder = tmp_path / "bilm"
    folder.mkdir()
    save_original(tiny_bilm(seed=3), folder / "options.json", folder / "weights.hdf5")
    return folder


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join(DOCS) + "\n", encoding="utf8")
    return path


@pytest.fixture
def nlp(bilm_dir):
    return load_elmo_pipeline(bilm_dir)


@pytest.fixture
def index(nlp, bilm_dir, corpus, tmp_path):
    return build_usage_index(nlp, corpus, tmp_path / "index", model=bilm_dir, progress=False, log=lambda _: None)


def _brute_force(bilm_dir, nlp, query_sentence, query_word, layer=-1, same_word=True):
    """Cosines of the query token to every corpus token, from the biLM's own embed (float64)."""
    bilm = load_original(bilm_dir / "options.json", bilm_dir / "weights.hdf5")
    sentences = [[t.text for t in sent] for doc in nlp.pipe(DOCS) for sent in doc.sents]
    layers = bilm.embed(sentences)
    query_words = [t.text for t in nlp(query_sentence)]
    query = bilm.embed([query_words])[0][layer, query_words.index(query_word)].astype("float64")
    found = []
    for words, sentence_layers in zip(sentences, layers):
        for i, word in enumerate(words):
            if not same_word or word.lower() == query_word.lower():
                v = sentence_layers[layer, i].astype("float64")
                found.append((float(v @ query / numpy.linalg.norm(v) / numpy.linalg.norm(query)), " ".join(words), i))
    return sorted(found, key=lambda x: -x[0])


def test_nearest_usages_equal_a_brute_force_computation(index, nlp, bilm_dir):
    doc = index.nlp("A new play opened on Broadway.")
    for same_word in (True, False):
        expected = _brute_force(bilm_dir, nlp, "A new play opened on Broadway.", "play", same_word=same_word)
        got = index.most_similar(doc[2], n=4, same_word=same_word)
        assert len(got) == 4
        numpy.testing.assert_allclose([u.score for u in got], [e[0] for e in expected[:4]], atol=2e-3)
        # the same usages (in another order only where scores tie within float16 rounding)
        for u in got:
            tied = {(e[1], e[2]) for e in expected if abs(e[0] - u.score) < 2e-3}
            assert (" ".join(t.text for t in nlp.make_doc(u.sentence)), u.token) in tied
    assert all(u.text.lower() == "play" for u in index.most_similar(doc[2], n=10))
    assert len(index.most_similar(doc[2], n=10)) == 5  # "play" occurs 5 times in DOCS


def test_usage_records_where_it_comes_from(index, corpus):
    usages = index.most_similar(index.nlp("Hamlet is a play.")[3], n=10)
    hamlet = next(u for u in usages if u.sentence.startswith("Hamlet"))
    assert hamlet.sentence == "Hamlet is a play by Shakespeare."
    assert hamlet.sentence[hamlet.start : hamlet.end] == "play" == hamlet.text
    assert hamlet.token == 3 and hamlet.doc == 1 and hamlet.file == str(corpus.resolve())


def test_round_trip_to_disk(index, tmp_path):
    index.to_disk(tmp_path / "copy")
    copy = UsageIndex().from_disk(tmp_path / "copy")
    assert len(copy) == len(index) > 0
    numpy.testing.assert_array_equal(numpy.asarray(copy.vectors), numpy.asarray(index.vectors))
    for name in index.arrays:
        numpy.testing.assert_array_equal(copy.arrays[name], index.arrays[name])
    assert copy.sentences == index.sentences and copy.keys == index.keys and copy.types == index.types
    numpy.testing.assert_array_equal(numpy.asarray(copy.type_vectors), numpy.asarray(index.type_vectors))
    assert {k: v for k, v in copy.meta.items() if k != "seconds"} == {k: v for k, v in index.meta.items() if k != "seconds"}


def test_a_corpus_in_pieces_gives_the_same_index(nlp, bilm_dir, index, tmp_path):
    pieces = tmp_path / "pieces"
    pieces.mkdir()
    (pieces / "a.txt").write_text("\n\n".join(DOCS[:2]) + "\n", encoding="utf8")
    (pieces / "b.txt.gz").write_bytes(__import__("gzip").compress(("\n\n".join(DOCS[2:]) + "\n").encode("utf8")))
    other = build_usage_index(nlp, pieces, tmp_path / "index2", docs_per_batch=1, progress=False, log=lambda _: None)
    assert [s["text"] for s in other.sentences] == [s["text"] for s in index.sentences]
    assert [s["file"] for s in other.sentences] == [0] * 4 + [1] * 4
    numpy.testing.assert_allclose(numpy.asarray(other.vectors, "float32"), numpy.asarray(index.vectors, "float32"), atol=1e-3)
    for name in ("usage_sentence", "usage_token", "usage_start", "usage_end"):
        numpy.testing.assert_array_equal(other.arrays[name], index.arrays[name])
    assert [other.keys[k] for k in other.arrays["usage_key"]] == [index.keys[k] for k in index.arrays["usage_key"]]


def test_chosen_words_index_only_their_usages(nlp, index, corpus, tmp_path):
    chosen = build_usage_index(nlp, corpus, tmp_path / "chosen", words=["PLAY", "suit"], progress=False, log=lambda _: None)
    assert sorted(chosen.keys) == ["play", "suit"]
    assert len(chosen) == len(index.rows_of("play")) + len(index.rows_of("suit")) == 7
    # each usage's vector is the one of the full index (its sentence alone decides it)
    full = {
        (index.sentences[int(s)]["text"], int(t)): i
        for i, (s, t) in enumerate(zip(index.arrays["usage_sentence"], index.arrays["usage_token"]))
    }
    for row in range(len(chosen)):
        sentence = chosen.sentences[int(chosen.arrays["usage_sentence"][row])]["text"]
        twin = full[(sentence, int(chosen.arrays["usage_token"][row]))]
        numpy.testing.assert_allclose(
            numpy.asarray(chosen.vectors[row], "float32"), numpy.asarray(index.vectors[twin], "float32"), atol=1e-3
        )
    # only sentences that hold a chosen word went through the biLM
    assert len(chosen.sentences) == 7


def test_layers_and_type_neighbours(nlp, bilm_dir, corpus, tmp_path):
    index = build_usage_index(nlp, corpus, tmp_path / "l0", layer=0, progress=False, log=lambda _: None)
    bilm = load_original(bilm_dir / "options.json", bilm_dir / "weights.hdf5")
    doc = index.nlp("They play.")
    # layer 0 is context-free: every usage of "play" is at cosine 1
    assert [round(u.score, 3) for u in index.most_similar(doc[1], n=3)] == [1.0, 1.0, 1.0]
    types = [t for t, _ in index.types]
    vectors = bilm.embed_words(types)
    q = bilm.embed_words(["play"])[0]
    cos = vectors @ q / numpy.linalg.norm(vectors, axis=1) / numpy.linalg.norm(q)
    expected = [types[i] for i in numpy.argsort(-cos, kind="stable") if types[i] != "play"][:3]
    assert [w for w, _ in index.type_neighbours("play", 3)] == expected
    assert index.static_neighbours("play") is None  # the pipeline has no static vectors
    assert parse_layer("average", 3).tolist() == pytest.approx([1 / 3] * 3)
    assert parse_layer("0.2,0.3,0.5", 3).tolist() == pytest.approx([0.2, 0.3, 0.5])
    for bad in ("3", "0.5,0.5", "middle"):
        with pytest.raises(InputError):
            parse_layer(bad, 3)


@pytest.mark.parametrize("damage", ["truncate_vectors", "meta_json", "drop_sentences", "rows_mismatch", "no_meta"])
def test_a_damaged_index_fails_in_one_line(index, tmp_path, damage):
    folder = tmp_path / "damaged"
    shutil.copytree(index.path, folder)
    if damage == "truncate_vectors":
        data = (folder / "vectors.bin").read_bytes()
        (folder / "vectors.bin").write_bytes(data[:-2])
    elif damage == "meta_json":
        (folder / "meta.json").write_text("{not json", encoding="utf8")
    elif damage == "drop_sentences":
        (folder / "sentences.jsonl").unlink()
    elif damage == "rows_mismatch":
        numpy.save(folder / "usage_token.npy", numpy.zeros(3, dtype="int32"))
    else:
        (folder / "meta.json").unlink()
    with pytest.raises(InputError) as err:
        UsageIndex().from_disk(folder)
    assert "\n" not in str(err.value) and str(folder) in str(err.value)


def test_another_biLM_is_refused(index, tmp_path, corpus):
    other_dir = tmp_path / "other_bilm"
    other_dir.mkdir()
    save_original(tiny_bilm(seed=4), other_dir / "options.json", other_dir / "weights.hdf5")
    with pytest.raises(InputError, match="differs") as err:
        index.use_pipeline(load_elmo_pipeline(other_dir))
    assert "\n" not in str(err.value)
    run = CliRunner().invoke(app, ["neighbours", str(index.path), "They play.", "--word", "play", "--model", str(other_dir)])
    assert run.exit_code == 1 and "differs" in run.output and run.output.count("\n") == 1


def test_build_refuses_a_foreign_folder_and_keeps_user_files(nlp, corpus, tmp_path, index):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine", encoding="utf8")
    with pytest.raises(InputError, match="not empty"):
        build_usage_index(nlp, corpus, foreign, progress=False, log=lambda _: None)
    assert sorted(p.name for p in foreign.iterdir()) == ["thesis.tex"]
    # an index folder with a user's file in it: built again, the file stays
    (index.path / "notes.txt").write_text("keep me", encoding="utf8")
    again = build_usage_index(nlp, corpus, index.path, words=["bank"], progress=False, log=lambda _: None)
    assert (index.path / "notes.txt").read_text(encoding="utf8") == "keep me"
    assert again.keys == ["bank"] and not list(index.path.parent.glob(".*.spacy-elmo-scratch"))


def test_lemmas_without_a_lemmatizer_add_spacys_lookup_lemmas_or_say_what_to_install(nlp, bilm_dir, tmp_path, monkeypatch):
    """A plain biLM folder has no lemmatizer: spaCy's lookup lemmas for its language are added (named in the
    index's meta); without spacy-lookups-data, or for a language it has no lemmas for, one line."""
    import importlib.metadata

    import spacy

    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    lines = []
    forms = tmp_path / "forms.txt"
    forms.write_text("She plays the piano.\n\nThey played a play.\n", encoding="utf8")
    index = build_usage_index(nlp, forms, tmp_path / "lemmas", words=["play"], lemmas=True, progress=False, log=lines.append)
    assert index.meta["match"] == "lemma" and "lookup lemmatizer for en" in index.meta["lemmatizer"]
    # every form is filed under its lemma; matching forms would find "play" only
    assert sorted(index.usage(int(r)).text for r in index.rows_of("play")) == ["play", "played", "plays"]
    assert any("Lemmas: spaCy's lookup lemmatizer" in line for line in lines)
    xx = spacy.blank("xx")
    from spacy_elmo.usages.builder import add_lookup_lemmatizer

    with pytest.raises(InputError, match="spaCy has no lookup lemmas for 'xx'"):
        add_lookup_lemmatizer(xx)
    assert "lemmatizer" not in xx.pipe_names

    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    with pytest.raises(InputError, match=r"pip install 'spacy-elmo\[lemmas\]'"):
        build_usage_index(load_elmo_pipeline(bilm_dir), forms, tmp_path / "l2", words=["play"], lemmas=True, progress=False)
    assert not (tmp_path / "l2").exists()


@pytest.mark.slow
def test_a_lemma_index_from_a_bilm_folder_can_be_queried(nlp, bilm_dir, tmp_path):
    """An index built with --lemmas from a plain biLM folder (spaCy's lookup lemmatizer added while building)
    answers `neighbours` and `most_similar` on `index.nlp`'s Docs: the query pipeline gets the same lemmatizer."""
    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    forms = tmp_path / "forms.txt"
    forms.write_text("She plays the piano.\n\nThey played a play.\n\nWe play chess.\n", encoding="utf8")
    build_usage_index(nlp, forms, tmp_path / "lemmas", model=bilm_dir, words=["play"], lemmas=True, progress=False, log=lambda _: None)
    index = UsageIndex().from_disk(tmp_path / "lemmas")
    doc = index.nlp("He played well.")
    assert doc[1].lemma_ == "play"
    found = index.most_similar(doc[1], n=3)
    assert sorted(u.text for u in found) == ["play", "played", "plays"]
    run = CliRunner().invoke(app, ["neighbours", str(index.path), "He played well.", "--word", "played"])
    assert run.exit_code == 0, run.output
    assert "among 4 usages of 'play'" in run.output and "piano" in run.output


def test_component_gives_token_usages_and_saves_only_the_path(index, nlp, tmp_path, bilm_dir):
    nlp.add_pipe("elmo_usages", config={"index": str(index.path)})
    doc = nlp("A new play opened on Broadway.")
    assert doc[2]._.elmo_usages(3) == index.most_similar(doc[2], n=3)
    nlp.to_disk(tmp_path / "pipeline")
    saved = sorted(p.name for p in (tmp_path / "pipeline").rglob("*"))
    assert "vectors.bin" not in saved and "elmo_usages" not in saved
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.config["components"]["elmo_usages"]["index"] == str(index.path)
    doc = loaded("A new play opened on Broadway.")
    index.check_pipeline(loaded)  # a Doc of another pipeline is taken once its biLM is checked
    assert [u.sentence for u in doc[2]._.elmo_usages(2)] == [u.sentence for u in index.most_similar(doc[2], n=2)]
    other_dir = tmp_path / "other_bilm"
    other_dir.mkdir()
    save_original(tiny_bilm(seed=5), other_dir / "options.json", other_dir / "weights.hdf5")
    other = load_elmo_pipeline(other_dir)
    other.add_pipe("elmo_usages", config={"index": str(index.path)})
    with pytest.raises(InputError, match="another biLM"):
        other("A play.")


@pytest.mark.slow
def test_cli_builds_and_queries(bilm_dir, corpus, tmp_path):
    runner = CliRunner()
    run = runner.invoke(app, ["index-usages", str(bilm_dir), str(corpus), str(tmp_path / "cli_index"), "--words", "play,bank"])
    assert run.exit_code == 0, run.output
    assert "Indexed 8 usages" in run.output  # play 5, bank 3
    run = runner.invoke(app, ["neighbours", str(tmp_path / "cli_index"), "They sat on the bank.", "--word", "bank", "--n", "2"])
    assert run.exit_code == 0, run.output
    rows = [line for line in run.output.splitlines() if line.strip()[:1].isdigit()]
    assert len(rows) == 2 and all("[bank]" in line for line in rows)
    assert "token layer:" in run.output and "static vectors: none in this pipeline" in run.output
    run = runner.invoke(app, ["neighbours", str(tmp_path / "cli_index"), "They sat down.", "--word", "bank"])
    assert run.exit_code == 2 and "not a token" in run.output


def test_static_neighbours_come_from_the_pipelines_vectors(index, nlp):
    words = ["play", "game", "drama", "bank", "river"]
    table = numpy.array([[1, 0, 0], [0.9, 0.1, 0], [0.6, 0.8, 0], [0, 0, 1], [0, 0.2, 1]], dtype="float32")
    for word, row in zip(words, table):
        nlp.vocab.set_vector(word, row)
    index.use_pipeline(nlp)
    got = index.static_neighbours("play", n=2)
    unit = table / numpy.linalg.norm(table, axis=1, keepdims=True)
    cos = unit[1:] @ unit[0]
    assert [w for w, _ in got] == ["game", "drama"]
    numpy.testing.assert_allclose([s for _, s in got], sorted(cos, reverse=True)[:2], atol=1e-4)  # spaCy rounds to 4 places
    assert index.static_neighbours("unseen") is None


def test_fewer_neighbours_are_a_prefix_of_more(index):
    """Ties (float16 products tie often) never make the n best depend on n."""
    doc = index.nlp("A new play opened on Broadway.")
    everything = index.most_similar(doc[2], n=len(index), same_word=False)
    assert len(everything) == len(index)
    assert all(a.score >= b.score for a, b in zip(everything, everything[1:]))
    for n in (1, 3, 7, 20):
        assert index.most_similar(doc[2], n=n, same_word=False) == everything[:n]


def test_a_string_query_says_what_to_give_and_a_word_without_usages_warns(index):
    with pytest.raises(TypeError, match="a token in its context.*index.nlp"):
        index.most_similar("play")
    doc = index.nlp("A cat sat.")
    with pytest.warns(UserWarning, match="no usage of 'cat'"):
        assert index.most_similar(doc[1]) == []
    bilm = index.meta["model"]
    assert (
        repr(index)
        == f"UsageIndex({str(index.path)!r}, bilm={bilm!r}, layer='layer 2', usages={len(index)}, words={len(index.keys)}, match='lower')"
    )
    assert "empty" in repr(type(index)())


@pytest.mark.slow
def test_a_part_of_speech_keeps_the_nouns_apart_from_interesting(nlp, bilm_dir, tmp_path):
    """--lemmas files "interesting" under "interest"; a part of speech (WUG's interest_nn, or --pos NOUN) keeps only
    the nouns, from the pipeline's tags; a pipeline without a tagger is refused in one line before any work."""
    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    corpus = tmp_path / "interest.txt"
    corpus.write_text("The interest rate rose.\n\nThe film was interesting.\n\nHer interests grew.\n", encoding="utf8")
    quiet = {"progress": False, "log": lambda _: None}
    plain = build_usage_index(nlp, corpus, tmp_path / "all", words=["interest"], lemmas=True, **quiet)
    assert sorted(plain.usage(int(r)).text for r in plain.rows_of("interest")) == ["interest", "interesting", "interests"]
    with pytest.raises(InputError, match="has no tagger"):
        build_usage_index(load_elmo_pipeline(bilm_dir), corpus, tmp_path / "none", words=["interest_nn"], lemmas=True, **quiet)
    assert not (tmp_path / "none").exists()
    tagged = load_elmo_pipeline(bilm_dir)
    ruler = tagged.add_pipe("attribute_ruler", before="elmo")
    ruler.add([[{"LOWER": {"IN": ["interest", "interests"]}}]], {"POS": "NOUN"})
    ruler.add([[{"LOWER": "interesting"}]], {"POS": "ADJ"})
    for words, pos in ((["interest_nn"], None), (["interest"], "NOUN")):
        index = build_usage_index(tagged, corpus, tmp_path / f"n{pos}", words=words, lemmas=True, pos=pos, **quiet)
        assert sorted(index.usage(int(r)).text for r in index.rows_of("interest")) == ["interest", "interests"]
        assert index.meta["pos"] == {"interest": "NOUN"}
    with pytest.raises(InputError, match="not a Universal POS tag"):
        build_usage_index(tagged, corpus, tmp_path / "bad", words=["interest"], pos="noun_phrase", **quiet)


def test_a_query_in_capitals_is_read_as_the_index_read_its_sentences(nlp, bilm_dir, tmp_path):
    """An index lets the biLM read sentences set in capitals lowercased (unless keep_capitals): a query
    sentence in capitals is read the same way, so it finds its own copy in the index at cosine 1."""
    shouted = "THE BANK RAISED ITS RATE AGAIN."
    corpus = tmp_path / "with_capitals.txt"
    corpus.write_text("\n\n".join(DOCS + [shouted]) + "\n", encoding="utf8")
    indexes = {}
    for keep in (False, True):
        index = indexes[keep] = build_usage_index(
            nlp, corpus, tmp_path / f"index_{keep}", model=bilm_dir, keep_capitals=keep, progress=False, log=lambda _: None
        )
        doc = index.nlp(shouted)
        best = index.most_similar(doc[1], n=1)[0]
        assert best.sentence == shouted and best.score == pytest.approx(1.0, abs=2e-3), keep
        lowercase = index.nlp(shouted.lower())
        assert numpy.array_equal(index.vector_of(doc[1]), index.vector_of(lowercase[1])) != keep
    # a query in a Doc of several sentences: the token's sentence alone is judged and read lowercased
    index = indexes[False]
    doc = index.nlp("Rates rose sharply today. " + shouted)
    assert doc[6].text == "BANK" and doc.has_annotation("SENT_START")
    assert numpy.array_equal(index.vector_of(doc[6]), index.vector_of(index.nlp(shouted)[1]))


@pytest.mark.slow
def test_lemmas_of_a_sentence_in_capitals_are_those_of_its_words_as_the_bilm_reads_them(bilm_dir, tmp_path):
    """The audit's case: with --lemmas, a headline's "BANKS" was looked up as written, found nothing and was filed
    under "banks", so --words bank dropped headline usages. Read lowercased (as the biLM reads it), it is "bank";
    with --keep-capitals the sentence is read as written, lemmas too."""
    pytest.importorskip("spacy_lookups_data", reason="needs spacy-lookups-data (pip install 'spacy-elmo[lemmas]')")
    corpus = tmp_path / "news.txt"
    corpus.write_text("BANKS RAISE RATES AS PROFITS FALL\n\nThe banks raised their rates.\n", encoding="utf8")
    index = build_usage_index(
        load_elmo_pipeline(bilm_dir), corpus, tmp_path / "idx", words=["bank"], lemmas=True, progress=False, log=lambda _: None
    )
    assert sorted(index.usage(int(r)).text for r in index.rows_of("bank")) == ["BANKS", "banks"]
    query = index.nlp("BANKS CUT RATES AGAIN TODAY")  # a query set in capitals is keyed as the index read them
    assert index.key_of(query[0]) == "bank" and len(index.most_similar(query[0], n=2)) == 2
    written = build_usage_index(
        load_elmo_pipeline(bilm_dir),
        corpus,
        tmp_path / "kept",
        words=["bank"],
        lemmas=True,
        keep_capitals=True,
        progress=False,
        log=lambda _: None,
    )
    assert [written.usage(int(r)).text for r in written.rows_of("bank")] == ["banks"]


def test_a_headline_joined_to_its_story_is_read_lowercased_and_the_story_as_written(nlp, bilm_dir, tmp_path):
    """The planted benchmark's case: a Reuters headline has no full stop, so the sentence splitter joins it to the
    story ("SAS TO UPGRADE CABIN SERVICE Scandinavian Airlines said ..."), the sentence is not set in capitals, and
    its SERVICE was read as written: among the farthest usages of every word, 44% of them in capitals against 11%
    of all. The run of capitals is read lowercased; the story's words, a name and a lone acronym as written."""
    from spacy_elmo.usages.capitals import capital_runs, folded

    words = "SAS TO UPGRADE CABIN SERVICE < SAS > IN 1987 Scandinavian Airlines , SAS , said the NATO pact held".split()
    assert capital_runs(words) == [range(0, 9)]
    read = folded(words)
    assert read[:9] == [w.lower() for w in words[:9]] and read[9:] == words[9:]
    assert folded("The US and NATO said the EU agreed .".split()) is None
    joined = "SAS TO UPGRADE CABIN SERVICE Scandinavian Airlines said it will improve its cabin service."
    corpus = tmp_path / "news.txt"
    corpus.write_text(joined + "\n", encoding="utf8")
    index = build_usage_index(nlp, corpus, tmp_path / "idx", model=bilm_dir, words=["service"], progress=False, log=lambda _: None)
    assert len(index.rows_of("service")) == 2
    lowered = index.nlp(joined.replace("SAS TO UPGRADE CABIN SERVICE", "sas to upgrade cabin service"))
    as_written = index.nlp(joined)
    first = next(t for t in lowered if t.lower_ == "service")
    found = index.most_similar(next(t for t in as_written if t.text == "SERVICE"), n=1)[0]
    assert found.text == "SERVICE" and found.score == pytest.approx(1.0, abs=2e-3)
    assert numpy.array_equal(index.vector_of(next(t for t in as_written if t.text == "SERVICE")), index.vector_of(first))
