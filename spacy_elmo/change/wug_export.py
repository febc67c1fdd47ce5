"""The model's judgments of usage pairs written as a WUG dataset, so that the WUG project's own pipeline (correlation
clustering of a usage graph, then its change scores) runs on them as on people's, beside people's.

Per word, `data/WORD/uses.csv` (the usages read: identifier, grouping 1 for A and 2 for B, the sentence as `context`
with the target's character span, and its whitespace tokens with the target's token index) and
`data/WORD/judgments.csv` (identifier1, identifier2, annotator, judgment, comment, lemma), tab-separated as the WUG
files are. The pairs: those people judged where A or B is a WUG dataset (both usages among those read), else
`PAIRS_WITHIN` pairs with usages of its own period and `PAIRS_ACROSS` with the other's for every usage, drawn with
the seed. A pair's judgment is its cosine put on the WUG scale: 1 + 3 (cosine - low) / (high - low), clipped to
1-4, where low and high are the 5th and 95th percentiles of all the pairs' cosines of the run (one scale for every
word); the cosine itself is in the comment.
"""

import csv
import io
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy

from ..output_folders import name_from_data, own_subfolder, write_atomically
from ..types import PathLike

PAIRS_WITHIN, PAIRS_ACROSS = 2, 2
LOW, HIGH = 5.0, 95.0  # the percentiles of the run's cosines that judgments 1 and 4 stand for
ANNOTATOR = "spacy-elmo"
USE_HEAD = ("lemma", "grouping", "identifier", "context", "indexes_target_token", "context_tokenized", "indexes_target_token_tokenized")
JUDGMENT_HEAD = ("identifier1", "identifier2", "annotator", "judgment", "comment", "lemma")


def people_pairs(index: Any, word: str) -> Optional[Set[Tuple[str, str]]]:
    """The usage pairs people judged for `word` (identifiers sorted), where `index` was built from a WUG dataset
    that is still where it was; None otherwise."""
    from .wug import read_judgments

    wug = index.meta.get("wug") or {}
    folder = (wug.get("targets") or {}).get(word)
    if not wug.get("dataset") or not folder:
        return None
    path = Path(wug["dataset"]) / "data" / folder / "judgments.csv"
    return set(read_judgments(path)) if path.is_file() else None


def model_pairs(
    ids: Sequence[str], vectors: numpy.ndarray, n_a: int, seed: int, judged: Optional[Set[Tuple[str, str]]] = None
) -> List[Tuple[str, str, float]]:
    """The pairs judged and their cosines: `judged` (people's) where given, else the module's rule.

    ids, vectors: the usages read, A's first `n_a`, then B's.
    """
    unit = numpy.asarray(vectors, dtype=numpy.float64)
    unit = unit / numpy.maximum(numpy.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    where = {identifier: i for i, identifier in enumerate(ids)}
    if judged is not None:
        pairs = sorted((where[x], where[y]) for x, y in judged if x in where and y in where)
    else:
        rng = numpy.random.default_rng(seed)
        n = len(ids)
        found: Set[Tuple[int, int]] = set()
        for i in range(n):
            own = numpy.arange(0, n_a) if i < n_a else numpy.arange(n_a, n)
            other = numpy.arange(n_a, n) if i < n_a else numpy.arange(0, n_a)
            for pool, count in ((own[own != i], PAIRS_WITHIN), (other, PAIRS_ACROSS)):
                for j in rng.choice(pool, min(count, len(pool)), replace=False) if len(pool) else []:
                    found.add((min(i, int(j)), max(i, int(j))))
        pairs = sorted(found)
    return [(ids[i], ids[j], round(float(unit[i] @ unit[j]), 6)) for i, j in pairs]


def judgment_scale(cosines: Sequence[float]) -> Tuple[float, float]:
    """RETURNS: the cosines that judgments 1 and 4 stand for (the LOW-th and HIGH-th percentiles)."""
    low, high = numpy.percentile(numpy.asarray(cosines, dtype=numpy.float64), [LOW, HIGH]) if len(cosines) else (0.0, 1.0)
    return float(low), float(high) if high > low else float(low) + 1e-6


def judgment(cosine: float, low: float, high: float) -> float:
    return round(float(numpy.clip(1.0 + 3.0 * (cosine - low) / (high - low), 1.0, 4.0)), 3)


def _tsv(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    writer.writerow(head)
    writer.writerows(rows)
    return out.getvalue()


def use_row(lemma: str, use: Dict[str, Any]) -> List[Any]:
    """A usage record (run.usage_record, with its side) as a uses.csv row."""
    text, start, end = use["text"], use["start"], use["end"]
    before, after = text[:start].split(), text[end:].split()
    tokens = [*before, text[start:end], *after]
    grouping = "1" if use["side"] == "A" else "2"
    return [lemma, grouping, use["id"], text, f"{start}:{end}", " ".join(tokens), len(before)]


def write_model_wug(data: Dict[str, Any], folder: PathLike, log: Callable[[str], Any] = print) -> List[Path]:
    """Write the words' pairs (their evidence's "wug_pairs" and "wug_uses") as a WUG dataset into `folder`
    (data/WORD/uses.csv, judgments.csv; never over a file this run's report did not write: `report.free_path`).
    RETURNS: the files written."""
    from .report import free_path

    words = [w for w in data["words"] if (w.get("evidence") or {}).get("wug_pairs")]
    low, high = judgment_scale([c for w in words for _, _, c in w["evidence"]["wug_pairs"]])
    root = own_subfolder(Path(folder).parent, Path(folder).name)
    data_folder = own_subfolder(root, "data")
    written = []
    for w in words:
        lemma = str(w.get("target", w["word"]))
        ev = w["evidence"]
        word_folder = own_subfolder(data_folder, name_from_data(lemma))
        uses = [use_row(lemma, use) for use in ev["wug_uses"]]
        judged = [[x, y, ANNOTATOR, judgment(c, low, high), f"cosine {c:.4f}", lemma] for x, y, c in ev["wug_pairs"]]
        for name, text in (("uses.csv", _tsv(USE_HEAD, uses)), ("judgments.csv", _tsv(JUDGMENT_HEAD, judged))):
            path = free_path(word_folder / name, log)
            write_atomically(path, text, overwrite=False)
            written.append(path)
    return written


def describe(people: bool) -> str:
    pairs = "the pairs people judged" if people else f"{PAIRS_WITHIN} pairs within its period and {PAIRS_ACROSS} across for every usage"
    return (
        f"{pairs}; judgment 1 + 3 (cosine - low) / (high - low) clipped to 1-4, low and high the {LOW:g}th and {HIGH:g}th "
        "percentiles of the run's pair cosines"
    )
