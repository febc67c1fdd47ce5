"""The paper's word-sense probe (Peters et al. 2018, Table 5) as a nearest-usage classifier.

Each sense-annotated instance of a Raganato et al. (2017) all-words WSD set is labelled with the
gold sense keys of its nearest other annotated usage of the same lemma and POS (cosine, one biLM
layer or a mix); it is right when the two share a key. Without a training corpus (SemCor), the
probe is leave-one-out within the set. Beside it: the nearest sense centroid of the others, the
most frequent sense of the others, and the share of instances whose sense occurs among the others
at all (the probe's upper bound).
"""

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Sequence, Tuple
from xml.etree import ElementTree

import numpy

from ..errors import InputError
from ..types import PathLike

MFS_TIE_RULE = "ties go to the key that occurs first (in file order) among the other usages"


@dataclass
class Instance:
    """One sense-annotated instance: tokens [start, end) of sentence `sentence`."""

    id: str
    lemma: str
    pos: str
    sentence: int
    start: int
    end: int
    keys: Tuple[str, ...] = ()


@dataclass
class WsdSet:
    """Sentences as token lists and their annotated instances, in file order."""

    sentences: List[List[str]] = field(default_factory=list)
    instances: List[Instance] = field(default_factory=list)


def read_wsd_set(data_xml: PathLike, gold_keys: PathLike) -> WsdSet:
    """Read a set in the Raganato et al. format: `*.data.xml` (sentences of `wf` and `instance`
    elements; a multi-word element is split on whitespace into several tokens) and
    `*.gold.key.txt` (an instance id, then one or more sense keys, per line)."""
    keys: Dict[str, Tuple[str, ...]] = {}
    with open(gold_keys, encoding="utf8") as f:
        for number, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 2:
                raise InputError(f"{gold_keys}:{number}: an instance id without a sense key")
            keys[parts[0]] = tuple(parts[1:])
    try:
        root = ElementTree.parse(data_xml).getroot()
    except ElementTree.ParseError as err:
        raise InputError(f"{data_xml} is not valid XML ({err}): give the *.data.xml file of a WSD set") from None
    wsd = WsdSet()
    for sentence in root.iter("sentence"):
        tokens: List[str] = []
        for element in sentence:
            words = (element.text or "").split()
            if element.tag == "instance":
                if element.get("id") not in keys:
                    raise InputError(f"{gold_keys} has no sense key for instance {element.get('id')} of {data_xml}")
                wsd.instances.append(
                    Instance(
                        element.get("id", ""),
                        element.get("lemma", "").lower(),
                        element.get("pos", ""),
                        len(wsd.sentences),
                        len(tokens),
                        len(tokens) + len(words),
                        keys[element.get("id", "")],
                    )
                )
            tokens.extend(words)
        wsd.sentences.append(tokens)
    if not wsd.instances:
        raise InputError(f"{data_xml} holds no <instance> elements: give the *.data.xml file of a WSD set")
    return wsd


def instance_vectors(wsd: WsdSet, sentence_layers: Sequence[numpy.ndarray]) -> numpy.ndarray:
    """RETURNS (numpy.ndarray): (n_instances, L + 1, D) float32, the mean of each instance's
    tokens' layers; `sentence_layers[i]` is (L + 1, n_tokens, D) for sentence i."""
    out = [sentence_layers[x.sentence][:, x.start : x.end].astype("float32").mean(axis=1) for x in wsd.instances]
    return numpy.stack(out)


def _unit(vectors: numpy.ndarray) -> numpy.ndarray:
    vectors = vectors.astype("float64")
    norms = numpy.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / numpy.maximum(norms, 1e-12)


def groups(instances: Sequence[Instance]) -> Dict[Tuple[str, str], List[int]]:
    """RETURNS: the instances of each (lemma, POS), in file order."""
    by_word: Dict[Tuple[str, str], List[int]] = defaultdict(list)
    for i, x in enumerate(instances):
        by_word[(x.lemma, x.pos)].append(i)
    return by_word


def probed(instances: Sequence[Instance]) -> List[int]:
    """RETURNS (List[int]): the instances with at least one other usage of their lemma and POS."""
    return sorted(i for members in groups(instances).values() if len(members) > 1 for i in members)


def most_frequent_sense(others: Iterable[Tuple[str, ...]]) -> str:
    """The key most of `others` carry (each usage votes for each of its keys); MFS_TIE_RULE."""
    counts: Dict[str, int] = {}
    for keys in others:
        for key in keys:
            counts[key] = counts.get(key, 0) + 1
    # dicts keep insertion order, and max keeps the first of equal maxima
    return max(counts, key=lambda k: counts[k])


def nearest_usage_predictions(instances: Sequence[Instance], vectors: numpy.ndarray) -> Dict[int, Tuple[str, ...]]:
    """RETURNS: for each probed instance, the gold keys of its nearest other usage of the same
    lemma and POS by cosine (ties: the first in file order)."""
    unit = _unit(vectors)
    out: Dict[int, Tuple[str, ...]] = {}
    for members in groups(instances).values():
        if len(members) < 2:
            continue
        sims = unit[members] @ unit[members].T
        numpy.fill_diagonal(sims, -numpy.inf)
        for row, i in enumerate(members):
            out[i] = instances[members[int(numpy.argmax(sims[row]))]].keys
    return out


def nearest_centroid_predictions(instances: Sequence[Instance], vectors: numpy.ndarray) -> Dict[int, Tuple[str, ...]]:
    """RETURNS: for each probed instance, the sense key whose centroid over the OTHER usages of
    the same lemma and POS (a usage with several keys counts for each) is nearest by cosine."""
    unit = _unit(vectors)
    out: Dict[int, Tuple[str, ...]] = {}
    for members in groups(instances).values():
        if len(members) < 2:
            continue
        for i in members:
            sums: Dict[str, numpy.ndarray] = {}
            for j in members:
                if j != i:
                    for key in instances[j].keys:
                        sums[key] = sums.get(key, 0) + unit[j]
            names = list(sums)
            centroids = _unit(numpy.stack([sums[k] for k in names]))
            out[i] = (names[int(numpy.argmax(centroids @ unit[i]))],)
    return out


def _from_others(instances: Sequence[Instance], rule: Callable[[List[Tuple[str, ...]]], Tuple[str, ...]]) -> Dict[int, Tuple[str, ...]]:
    """RETURNS: for each probed instance, `rule` applied to the gold keys of the others, in file order."""
    out = {}
    for members in groups(instances).values():
        if len(members) > 1:
            for i in members:
                out[i] = rule([instances[j].keys for j in members if j != i])
    return out


def most_frequent_sense_predictions(instances: Sequence[Instance]) -> Dict[int, Tuple[str, ...]]:
    """RETURNS: for each probed instance, the most frequent sense of the others (MFS_TIE_RULE)."""
    return _from_others(instances, lambda others: (most_frequent_sense(others),))


def upper_bound_predictions(instances: Sequence[Instance]) -> Dict[int, Tuple[str, ...]]:
    """RETURNS: for each probed instance, every key of the others (right wherever a same-sense usage exists)."""
    return _from_others(instances, lambda others: tuple(k for keys in others for k in keys))


def accuracy(instances: Sequence[Instance], predictions: Dict[int, Tuple[str, ...]]) -> float:
    """RETURNS (float): the share of predictions that share a key with the instance's gold keys."""
    if not predictions:
        raise ValueError("no instance was probed: every lemma and POS occurs once")
    right = sum(bool(set(keys) & set(instances[i].keys)) for i, keys in predictions.items())
    return right / len(predictions)
