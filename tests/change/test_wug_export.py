"""The model's judgments of usage pairs written as a WUG dataset (`change/wug_export.py`), read back with the
package's own WUG reader: the pairs by the stated rule or people's, the judgments on the WUG scale."""

import numpy
import pytest

from spacy_elmo.change.wug import read_dataset
from spacy_elmo.change.wug_export import PAIRS_ACROSS, PAIRS_WITHIN, judgment, judgment_scale, model_pairs, write_model_wug


def test_sampled_pairs_follow_the_rule_and_peoples_pairs_are_kept_as_given():
    rng = numpy.random.default_rng(0)
    ids = [f"a{i}" for i in range(6)] + [f"b{i}" for i in range(5)]
    vectors = rng.normal(size=(11, 8))
    pairs = model_pairs(ids, vectors, 6, seed=3)
    assert len({(x, y) for x, y, _ in pairs}) == len(pairs)
    for i in ids:  # every usage in at least its own draws: PAIRS_WITHIN within, PAIRS_ACROSS across
        mine = [(x, y) for x, y, _ in pairs if i in (x, y)]
        within = sum(x[0] == y[0] for x, y in mine)
        across = len(mine) - within
        assert within >= PAIRS_WITHIN and across >= PAIRS_ACROSS
    unit = vectors / numpy.linalg.norm(vectors, axis=1, keepdims=True)
    x, y, cosine = pairs[0]
    assert cosine == pytest.approx(float(unit[ids.index(x)] @ unit[ids.index(y)]), abs=1e-6)
    judged = {("a0", "b4"), ("a1", "a2"), ("a9", "b0")}  # a9 was not read: that pair is left out
    assert [(x, y) for x, y, _ in model_pairs(ids, vectors, 6, 0, judged)] == [("a0", "b4"), ("a1", "a2")]


def test_judgments_on_the_wug_scale_by_hand():
    low, high = judgment_scale(list(numpy.linspace(0.0, 1.0, 101)))
    assert (low, high) == pytest.approx((0.05, 0.95))
    assert judgment(0.05, low, high) == 1.0 and judgment(0.95, low, high) == 4.0 and judgment(0.5, low, high) == 2.5
    assert judgment(-1.0, low, high) == 1.0 and judgment(2.0, low, high) == 4.0


def test_the_dataset_written_reads_back_with_the_wug_reader(tmp_path):
    uses = [
        {"side": "A", "id": "u1", "text": "the river bank was steep", "start": 10, "end": 14},
        {"side": "A", "id": "u2", "text": "a bank of fog", "start": 2, "end": 6},
        {"side": "B", "id": "u3", "text": "she paid the bank today", "start": 13, "end": 17},
    ]
    pairs = [["u1", "u2", 0.9], ["u1", "u3", 0.1], ["u2", "u3", 0.5]]
    data = {"words": [{"word": "bank", "target": "bank_nn", "evidence": {"wug_pairs": pairs, "wug_uses": uses}}, {"word": "x"}]}
    written = write_model_wug(data, tmp_path / "wug", log=lambda _: None)
    assert sorted(p.name for p in written) == ["judgments.csv", "uses.csv"]
    read = read_dataset(tmp_path / "wug")
    assert list(read) == ["bank_nn"]
    read_uses, judgments = read["bank_nn"]
    assert [(u.identifier, u.grouping, u.tokens[u.index]) for u in read_uses] == [
        ("u1", "1", "bank"),
        ("u2", "1", "bank"),
        ("u3", "2", "bank"),
    ]
    low, high = judgment_scale([0.9, 0.1, 0.5])
    assert judgments == {
        ("u1", "u2"): pytest.approx(judgment(0.9, low, high)),
        ("u1", "u3"): pytest.approx(judgment(0.1, low, high)),
        ("u2", "u3"): pytest.approx(judgment(0.5, low, high)),
    }
    assert judgments[("u1", "u2")] > judgments[("u2", "u3")] > judgments[("u1", "u3")]


@pytest.mark.slow
def test_change_judgments_writes_peoples_pairs_judged_by_the_model(tmp_path):
    """From the command line on a WUG dataset: REPORT/wug holds, per word, the model's judgment of every pair people
    judged among the usages read, on the 1-4 scale, and reads back with the WUG reader."""
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    from .test_wug_route import bilm_and_wug

    bilm, wug = bilm_and_wug(tmp_path)
    args = ["change", str(wug), str(wug), str(tmp_path / "c.json"), "--model", str(bilm), "--min-usages", "2"]
    result = CliRunner().invoke(app, args + ["--report", str(tmp_path / "r"), "--judgments", "-q"])
    assert result.exit_code == 0, result.output
    mine, people = read_dataset(tmp_path / "r" / "wug"), read_dataset(wug)
    assert mine and set(mine) <= set(people)
    for word, (uses, judged) in mine.items():
        read = {u.identifier for u in uses}
        expected = {pair for pair in people[word][1] if set(pair) <= read}
        assert set(judged) == expected and all(1.0 <= v <= 4.0 for v in judged.values())
