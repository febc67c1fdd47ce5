"""The word-sense probe: reading the Raganato et al. format, and each prediction rule against
hand-worked examples."""

import numpy
import pytest

from spacy_elmo.errors import InputError
from spacy_elmo.usages import sense_probe as probe

XML = """<?xml version="1.0" encoding="UTF-8" ?>
<corpus lang="en" source="test">
<text id="d0">
<sentence id="d0.s0">
<wf lemma="the" pos="DET">The</wf>
<instance id="d0.s0.t0" lemma="bank" pos="NOUN">bank</instance>
<instance id="d0.s0.t1" lemma="look_up" pos="VERB">looked up</instance>
<wf lemma="." pos=".">.</wf>
</sentence>
<sentence id="d0.s1">
<instance id="d0.s1.t0" lemma="bank" pos="NOUN">Banks</instance>
<instance id="d0.s1.t1" lemma="bank" pos="VERB">bank</instance>
</sentence>
<sentence id="d0.s2">
<instance id="d0.s2.t0" lemma="bank" pos="NOUN">bank</instance>
<instance id="d0.s2.t1" lemma="bank" pos="NOUN">bank</instance>
</sentence>
</text>
</corpus>
"""
KEYS = """d0.s0.t0 bank%1:14:00::
d0.s0.t1 look_up%2:32:00::
d0.s1.t0 bank%1:17:01:: bank%1:14:00::
d0.s1.t1 bank%2:40:00::
d0.s2.t0 bank%1:17:01::
d0.s2.t1 bank%1:14:00::
"""


@pytest.fixture
def wsd(tmp_path):
    (tmp_path / "set.data.xml").write_text(XML, encoding="utf8")
    (tmp_path / "set.gold.key.txt").write_text(KEYS, encoding="utf8")
    return probe.read_wsd_set(tmp_path / "set.data.xml", tmp_path / "set.gold.key.txt")


def test_reading_splits_multiword_instances_and_keeps_every_key(wsd):
    assert wsd.sentences == [["The", "bank", "looked", "up", "."], ["Banks", "bank"], ["bank", "bank"]]
    looked = wsd.instances[1]
    assert (looked.lemma, looked.pos, looked.sentence, looked.start, looked.end) == ("look_up", "VERB", 0, 2, 4)
    assert wsd.instances[2].keys == ("bank%1:17:01::", "bank%1:14:00::")
    # bank/NOUN has 4 usages; bank/VERB and look_up/VERB one each
    assert probe.probed(wsd.instances) == [0, 2, 4, 5]


def test_instance_vectors_average_their_tokens(wsd):
    layers = [numpy.arange(2 * len(words) * 3, dtype="float32").reshape(2, len(words), 3) for words in wsd.sentences]
    vectors = probe.instance_vectors(wsd, layers)
    numpy.testing.assert_allclose(vectors[1], layers[0][:, 2:4].mean(axis=1))
    assert vectors.shape == (6, 2, 3)


def test_nearest_usage_and_centroid_by_hand(wsd):
    # bank/NOUN usages 0, 2, 4, 5 at these directions; the others anywhere
    v = numpy.zeros((6, 2))
    v[0], v[2], v[4], v[5] = [1, 0], [0.9, 0.1], [0, 1], [0.2, 1]
    v[1], v[3] = [1, 1], [1, 1]
    nearest = probe.nearest_usage_predictions(wsd.instances, v)
    assert nearest == {0: wsd.instances[2].keys, 2: wsd.instances[0].keys, 4: wsd.instances[5].keys, 5: wsd.instances[4].keys}
    # right: 0 (shares 1:14:00 with 2), 2 (shares 1:14:00 with 0); wrong: 4 (17:01 vs 14:00), 5 (14:00 vs 17:01)
    assert probe.accuracy(wsd.instances, nearest) == 0.5
    centroids = probe.nearest_centroid_predictions(wsd.instances, v)
    # for 4, the others' senses: 14:00 from 0, 2, 5 -> centroid of their unit vectors; 17:01 from 2 alone
    assert centroids[4] == ("bank%1:14:00::",)
    assert centroids[0] == ("bank%1:14:00::",)  # 14:00 (2, 5) vs 17:01 (2, 4): 2 + 5 is nearer [1, 0]


def test_most_frequent_sense_of_the_others_and_its_tie_rule(wsd):
    mfs = probe.most_frequent_sense_predictions(wsd.instances)
    # for 0: others 2 (17:01, 14:00), 4 (17:01), 5 (14:00): 2 votes each, 17:01 seen first
    assert mfs[0] == ("bank%1:17:01::",)
    # for 5: others 0 (14:00), 2 (17:01, 14:00), 4 (17:01): a tie, 14:00 seen first
    assert mfs[5] == ("bank%1:14:00::",)
    # for 2: 14:00 (0, 5) over 17:01 (4); for 4: 14:00 (0, 2, 5) over 17:01 (2)
    assert mfs[2] == ("bank%1:14:00::",) and mfs[4] == ("bank%1:14:00::",)
    assert probe.accuracy(wsd.instances, mfs) == 0.5  # right: 2 and 5
    assert probe.accuracy(wsd.instances, probe.upper_bound_predictions(wsd.instances)) == 1.0


def test_bad_files_are_named(tmp_path):
    (tmp_path / "a.xml").write_text("<corpus><sentence>", encoding="utf8")
    (tmp_path / "a.key").write_text("", encoding="utf8")
    with pytest.raises(InputError, match="not valid XML"):
        probe.read_wsd_set(tmp_path / "a.xml", tmp_path / "a.key")
    (tmp_path / "b.xml").write_text(XML, encoding="utf8")
    with pytest.raises(InputError, match="no sense key for instance d0.s0.t0"):
        probe.read_wsd_set(tmp_path / "b.xml", tmp_path / "a.key")
