"""Change scores checked against people's: the graded and binary change of a WUG dataset (stats_groupings.csv,
and its sense clusters, clusters/opt/WORD.csv, made from people's judgments) or of SemEval-2020 Task 1's truth
files (graded.txt, binary.txt: a word and its value a line); Spearman's rho with a bootstrap interval, accuracy,
and the answer files SemEval-2020 Task 1 scores."""

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy

from ..errors import InputError
from ..types import PathLike
from ..usages.words import split_pos
from .measures import finite as _finite

GOLD_DRAWS, GOLD_SEED = 2000, 0


def ranks(values: "Sequence[float] | numpy.ndarray") -> numpy.ndarray:
    """Ranks from 1, ties given their mean rank."""
    array = numpy.asarray(values, dtype=numpy.float64)
    order = numpy.argsort(array, kind="stable")
    result = numpy.empty(len(array))
    i = 0
    while i < len(array):
        j = i
        while j + 1 < len(array) and array[order[j + 1]] == array[order[i]]:
            j += 1
        result[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(x: "Sequence[float] | numpy.ndarray", y: "Sequence[float] | numpy.ndarray") -> float:
    """Spearman's rho (ties: mean ranks); nan where either side has one value only."""
    rx, ry = ranks(x), ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    return float((rx * ry).sum() / denominator) if denominator else float("nan")


def bootstrap_interval(x: Sequence[float], y: Sequence[float], draws: int = GOLD_DRAWS, seed: int = GOLD_SEED) -> Tuple[float, float]:
    """The 95% interval of Spearman's rho over `draws` resamplings of the words with replacement (percentiles)."""
    xs, ys = numpy.asarray(x, dtype=numpy.float64), numpy.asarray(y, dtype=numpy.float64)
    rng = numpy.random.default_rng(seed)
    rhos = [spearman(xs[i], ys[i]) for i in (rng.integers(0, len(xs), len(xs)) for _ in range(draws))]
    low, high = numpy.nanpercentile(rhos, [2.5, 97.5])
    return float(low), float(high)


@dataclass
class Gold:
    """People's change: per word key ("attack"), graded and binary change, and (from a WUG dataset) each usage's
    sense cluster (identifier -> cluster; -1, WUG's noise, left out); `names` the words as the source spells them."""

    source: str
    graded: Dict[str, float] = field(default_factory=dict)
    binary: Dict[str, int] = field(default_factory=dict)
    clusters: Dict[str, Dict[str, str]] = field(default_factory=dict)
    names: Dict[str, str] = field(default_factory=dict)


def read_gold(path: PathLike) -> Gold:
    """Read people's change: a WUG dataset's root (stats/opt/stats_groupings.csv, clusters/opt/), its
    stats_groupings.csv, a SemEval-2020 Task 1 truth folder (graded.txt and/or binary.txt) or one such file."""
    path = Path(path)
    if path.is_dir():
        stats = path / "stats" / "opt" / "stats_groupings.csv"
        if stats.is_file():
            gold = _read_stats(stats)
            clusters = path / "clusters" / "opt"
            if clusters.is_dir():
                _read_clusters(gold, clusters)
            return gold
        for folder in (path, path / "truth"):
            files = [folder / f"{kind}.txt" for kind in ("graded", "binary") if (folder / f"{kind}.txt").is_file()]
            if files:
                gold = Gold(str(folder))
                for file in files:
                    _read_truth(gold, file)
                return gold
        raise InputError(
            f"{path} holds no gold: give a WUG dataset (stats/opt/stats_groupings.csv), its stats_groupings.csv, "
            "or SemEval-2020 Task 1's truth folder (graded.txt, binary.txt)"
        )
    if not path.is_file():
        raise InputError(f"{path} does not exist: give the gold change (a WUG stats_groupings.csv or SemEval truth files)")
    if path.suffix == ".csv":
        return _read_stats(path)
    gold = Gold(str(path))
    _read_truth(gold, path)
    return gold


def _lines(path: Path) -> List[str]:
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as err:
        raise InputError(f"{path} is not UTF-8 ({err.reason} at byte {err.start})") from None


def _read_stats(path: Path) -> Gold:
    gold = Gold(str(path))
    reader = csv.DictReader(_lines(path), delimiter="\t", quoting=csv.QUOTE_NONE)
    if not {"lemma", "change_graded"} <= set(reader.fieldnames or []):
        raise InputError(f"{path} has no columns lemma and change_graded: give a WUG stats_groupings.csv (tab-separated)")
    seen: Dict[str, int] = {}
    for row in reader:
        name = row["lemma"] or ""
        graded = _number(path, reader.line_num, row.get("change_graded"))
        key = split_pos(name)[0].lower()
        _once(path, seen, key, name, reader.line_num)
        gold.names[key] = name
        gold.graded[key] = graded
        if row.get("change_binary") not in (None, ""):
            gold.binary[key] = int(_number(path, reader.line_num, row["change_binary"]) > 0)
    if not gold.graded:
        raise InputError(f"{path} names no word")
    return gold


def _once(path: Path, seen: Dict[str, int], key: str, name: str, line: int) -> None:
    """Refuse, in one line naming both lines, a word a gold file gives twice (also as bank_nn and bank_vb, one key)."""
    if key in seen:
        raise InputError(
            f"{path}, lines {seen[key]} and {line}: {key!r} is given twice ({name!r} the second time; a part of speech does not tell "
            "two targets apart here): keep one row a word"
        )
    seen[key] = line


def _read_truth(gold: Gold, path: Path) -> None:
    binary = path.stem == "binary"
    seen: Dict[str, int] = {}
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        if len(parts) != 2:
            raise InputError(f"{path}, line {number}: not a word and a value")
        key = split_pos(parts[0])[0].lower()
        _once(path, seen, key, parts[0], number)
        value = _number(path, number, parts[1])
        gold.names.setdefault(key, parts[0])
        if binary:
            if value not in (0, 1):
                raise InputError(f"{path}, line {number}: binary change is 0 or 1, not {parts[1]}")
            gold.binary[key] = int(value)
        else:
            gold.graded[key] = value


def _read_clusters(gold: Gold, folder: Path) -> None:
    for file in sorted(folder.glob("*.csv")):
        key = split_pos(file.stem)[0].lower()
        reader = csv.DictReader(_lines(file), delimiter="\t", quoting=csv.QUOTE_NONE)
        if not {"identifier", "cluster"} <= set(reader.fieldnames or []):
            raise InputError(f"{file} has no columns identifier and cluster: a WUG cluster file is tab-separated")
        gold.clusters[key] = {row["identifier"]: row["cluster"] for row in reader if row["cluster"] != "-1"}


def _number(path: Path, line: int, text: Optional[str]) -> float:
    if text is None or not text.strip():
        raise InputError(f"{path}, line {line}: no value where a number belongs (a short row?): mend the row")
    try:
        value = float(text or "")
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise InputError(f"{path}, line {line}: {text!r} is not a finite number")
    return value


@dataclass
class Agreement:
    """How a measure's scores agree with people's over the words both have."""

    words: int
    spearman: float = float("nan")
    interval: Tuple[float, float] = (float("nan"), float("nan"))
    accuracy: float = float("nan")
    binary_words: int = 0
    ari: float = float("nan")
    ari_words: int = 0
    ari_by_word: Dict[str, float] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)


def agreement(
    scores: Dict[str, float],
    gold: Gold,
    binary: Optional[Dict[str, int]] = None,
    senses: Optional[Dict[str, Dict[str, int]]] = None,
    draws: int = GOLD_DRAWS,
    seed: int = GOLD_SEED,
) -> Agreement:
    """Spearman's rho of `scores` (word -> change) against the graded change with its bootstrap interval (`draws`
    resamplings of the words, `seed`), the accuracy of `binary` (word -> 0/1) against the binary change, and the
    adjusted Rand index of `senses` (word -> usage identifier -> sense) against the gold's clusters, per word and
    their mean."""
    from .senses import adjusted_rand

    words = sorted(w for w in scores if w in gold.graded and math.isfinite(scores[w]))
    result = Agreement(words=len(words), missing=sorted(set(gold.graded) - set(scores)))
    if len(words) >= 3:
        x, y = [scores[w] for w in words], [gold.graded[w] for w in words]
        result.spearman = spearman(x, y)
        result.interval = bootstrap_interval(x, y, draws, seed)
    if binary:
        judged = [w for w in binary if w in gold.binary]
        result.binary_words = len(judged)
        if judged:
            result.accuracy = float(numpy.mean([binary[w] == gold.binary[w] for w in judged]))
    if senses and gold.clusters:
        for word, labels in senses.items():
            people = gold.clusters.get(word, {})
            shared = sorted(set(labels) & set(people))
            if len(shared) >= 2:
                result.ari_by_word[word] = adjusted_rand([labels[i] for i in shared], [people[i] for i in shared])
        if result.ari_by_word:
            result.ari_words = len(result.ari_by_word)
            result.ari = float(numpy.mean(list(result.ari_by_word.values())))
    return result


def agreement_report(
    rows: Sequence[Any], evidence: Dict[str, Any], gold: "Gold", measures: Sequence[str], fdr: float, wug: bool
) -> Dict[str, Any]:
    """Every measure's agreement with people (`agreement`), the senses' against people's clusters where `wug`, and the
    binary answers' accuracy, as the JSON's "gold" and its one-line summary."""

    scored = [r for r in rows if r.scores]
    binary = {w: e["binary"] for w, e in evidence.items()}
    senses = {w: e["labels"] for w, e in evidence.items()} if wug else None
    by_measure = {}
    for measure in measures:
        result = agreement({r.word: r.scores[measure] for r in scored}, gold, binary, senses)
        by_measure[measure] = {
            "spearman": _finite(result.spearman),
            "interval": [_finite(v) for v in result.interval],
            "words": result.words,
        }
    result_senses = agreement({w: e["sense_jsd"] for w, e in evidence.items()}, gold, binary, senses)
    by_measure["senses_jsd"] = {
        "spearman": _finite(result_senses.spearman),
        "interval": [_finite(v) for v in result_senses.interval],
        "words": result_senses.words,
    }
    first = measures[0]
    head: Dict[str, Any] = by_measure[first]
    lines = [
        f"{first} against graded change: Spearman {_figure(head['spearman'])} (95% interval "
        f"{_figure(head['interval'][0])} to {_figure(head['interval'][1])}, {GOLD_DRAWS:,} resamplings of "
        f"the {head['words']} words, seed {GOLD_SEED})"
    ]
    for name in by_measure:  # every measure's agreement said, not the first's alone
        if name != first:
            found: Dict[str, Any] = by_measure[name]
            label = "the senses' JSD" if name == "senses_jsd" else name
            lines.append(
                f"{label}: Spearman {_figure(found['spearman'])} ({_figure(found['interval'][0])} to {_figure(found['interval'][1])})"
            )
    if result_senses.binary_words:
        lines.append(
            f"binary change from the senses (a sense came, went or moved): accuracy {result_senses.accuracy:.3f} over "
            f"{result_senses.binary_words} words"
        )
    from .binary import above_median

    _, by_median = above_median({r.word: r.scores.get(first) for r in scored})
    result_median = agreement({}, gold, by_median) if by_median else None
    if result_median is not None and result_median.binary_words:
        judged = [w for w in by_median if w in gold.binary]
        none_changed = sum(1 - gold.binary[w] for w in judged) / len(judged)
        lines.append(
            f"binary change from {first} above the targets' median: accuracy {result_median.accuracy:.3f} over "
            f"{result_median.binary_words} words (calling none changed: {none_changed:.3f})"
        )
    tested = {w: e["changed_fdr"] for w, e in evidence.items() if e.get("changed_fdr") is not None}
    result_tested = agreement({}, gold, tested) if tested else None
    if result_tested is not None and result_tested.binary_words:
        lines.append(
            f"binary change from the verdict (against control words, q <= {fdr}): accuracy {result_tested.accuracy:.3f} "
            f"over {result_tested.binary_words} words"
        )
    one_sense = None
    if result_senses.ari_words and senses:
        one_sense = agreement({}, gold, None, {w: {i: 0 for i in labels} for w, labels in senses.items()}).ari
        lines.append(
            f"senses against people's clusters: mean adjusted Rand index {result_senses.ari:.3f} over {result_senses.ari_words} words "
            f"(one sense for every word: {one_sense:.3f})"
        )
    if result_senses.missing:
        lines.append(f"{len(result_senses.missing)} gold words have no row: {', '.join(result_senses.missing[:5])}")
    return {
        "source": gold.source,
        "measures": by_measure,
        "binary_accuracy": _finite(result_senses.accuracy),
        "binary_words": result_senses.binary_words,
        "changed_accuracy": _finite(result_tested.accuracy) if result_tested is not None else None,
        "median_accuracy": _finite(result_median.accuracy) if result_median is not None else None,
        "ari": _finite(result_senses.ari),
        "ari_one_sense": _finite(one_sense) if one_sense is not None else None,
        "ari_by_word": result_senses.ari_by_word,
        "graded": gold.graded,
        "names": gold.names,
        "summary": "; ".join(lines),
    }


def _figure(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:.3f}"
