"""`spacy-elmo change` as a function: two sides (usage indexes, corpora, or a WUG dataset's groupings) compared
word by word, with the evidence behind each score (senses, changed usages, intervals), checked against people's
change where a gold is given, written as a table, JSON, answer files and a report."""

import json
import math
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy

from ..errors import InputError
from ..output_folders import KEPT_INDEXES, USAGE_INDEX, is_own, mark, read_json_file, write_atomically
from ..types import PathLike
from ..usages.words import parse_words, split_pos
from .sense_input import DEFAULT_SENSES
from .controls import corpus_controls, index_controls, match_frequencies
from .sense_checks import FEW_DOCUMENTS_MOST, FEW_DOCUMENTS_SHARE, STABILITY_RUNS
from .senses import SIDE_ALPHA, SIDE_RATIO, TESTED
from .verdict import DEFAULT_CONTROLS, VERDICT_FROM
from .measures import finite as _finite
from .measures import DEFAULT_MIN_USAGES, JSD_CLUSTERS, JSD_SEED, JSD_USAGES, UsageRows, WordChange, energy, index_change, mean_usage

Progress = Optional[Callable[..., Iterable[Any]]]  # progress(items, desc=...): a bar over the items


@dataclass
class ChangeSettings:
    """How `run_change` compares, beyond the two sides (each one named as on the command line)."""

    measures: Sequence[str] = ("apd", "prt")
    min_usages: int = DEFAULT_MIN_USAGES
    standardize: bool = False
    layer: Optional[str] = None  # None: as the indexes hold it ("top" for corpora and WUG datasets)
    model: Optional[str] = None  # indexes corpora and WUG datasets given as A or B
    lemmas: bool = False
    pos: Optional[str] = None  # only usages of this part of speech, where a corpus is indexed (WUG's attack_nn keeps its own)
    lang: str = "en"
    groupings: Tuple[str, str] = ("1", "2")  # of a WUG dataset given as A and B
    evidence: bool = False
    seed: int = 0
    draws: int = 1000
    binary_k: int = 1
    binary_n: int = 5
    senses: str = DEFAULT_SENSES  # what the senses are clustered from (sense_input.py)
    min_silhouette: float = 0.25  # one sense where no split reaches this mean silhouette (senses.SenseRule)
    side_senses: bool = True  # senses of one period kept apart (senses.SenseRule.sides)
    permutations: int = 1000  # the permutation test of each word's APD, PRT and energy distance; 0: none
    fdr: float = 0.05  # "changed": the verdict's Benjamini-Hochberg q-value at most this (verdict.py)
    controls: int = DEFAULT_CONTROLS  # control words drawn from the corpora (or indexes of every word) for the verdict
    verdict_from: str = VERDICT_FROM  # the vectors the verdict's statistic reads: a layer spec, or "scores"
    binary_change: Optional[str] = None  # binary answers (SemEval's subtask 1) where no verdict: binary.BINARY_RULES; None: none
    stability_runs: int = STABILITY_RUNS  # clusterings of resamples that measure each sense's stability (sense_checks); 0: none
    wug_pairs: bool = False  # the model's judgments of usage pairs in each word's evidence, for a WUG dataset (wug_export.py)
    keep_indexes: Optional[Path] = None  # a new folder (or one it made: resumed): the indexes of corpora or WUG datasets (A, B)


@dataclass
class ChangeResult:
    """The rows (in `in_order`'s order), everything the JSON holds (`data`), each word's evidence, and the notes said."""

    rows: List[WordChange]
    data: Dict[str, Any]
    evidence: Dict[str, Any]
    notes: List[str]


def run_change(
    side_a: PathLike,
    side_b: PathLike,
    words: Any = None,
    settings: ChangeSettings = ChangeSettings(),
    gold: Optional[PathLike] = None,
    progress: Progress = None,
    log: Callable[[str], Any] = print,
    indexing_progress: bool = False,
) -> ChangeResult:
    """Compare the words of A and B (usage indexes; corpora or a WUG dataset, indexed first with `settings.model`).

    words: a file of words, one a line, a comma-separated string or a list; None: every word with enough usages.
    gold: people's change (see gold.read_gold): Spearman's rho with its interval, binary accuracy and the ARI of
        the sense clusters against people's, in RETURNS.data["gold"].
    indexing_progress: a bar (progress lines off a terminal) while corpora or WUG datasets are indexed.
    RETURNS (ChangeResult): the rows (in `in_order`'s order, said in data["settings"]["order"]) and what
        `write_table`, `write_answers`, `write_clusters` and `report.write_report` write.
    """
    from .gold import agreement_report, read_gold
    from ..usages.index import UsageIndex

    targets = parse_words(words) if words is not None else None
    # "attack_nn": its part of speech kept, and a WUG target's name as written ("Bank_nn" is not "bank_nn")
    raw_targets = parse_words(words, keep_pos=True, keep_case=True) if words is not None else None
    people = read_gold(gold) if gold is not None else None  # a bad gold is said before any embedding
    notes: List[str] = []
    wants_verdict = (settings.evidence or people is not None) and settings.permutations > 0
    with _index_folder(settings.keep_indexes) as scratch:
        sides, controls = _indexed_sides(
            [Path(side_a), Path(side_b)],
            raw_targets,
            settings,
            Path(scratch),
            log,
            settings.controls if wants_verdict else 0,
            indexing_progress,
            notes,
        )
        a, b = (UsageIndex().from_disk(side) for side in sides)
        if settings.layer is not None:
            a, b = a.with_layer(settings.layer), b.with_layer(settings.layer)
        weights = list(map(float, a.layer_weights))
        if weights[0] and not any(weights[1:]):
            notes.append(
                "layer 0 (the token layer) is context-free: every usage of a word form gets one vector, so this measures only the "
                "spelling and case of the forms on each side, not their senses; pick a biLSTM layer (layer 1, top or average)"
            )
        if targets is not None:
            absent = [w for w in targets if not len(a.rows_of(w)) and not len(b.rows_of(w))]
            if len(absent) == len(targets):
                raise InputError(
                    f"none of the {len(targets)} words has a usage in either index (keys: {a.match}): {', '.join(targets[:5])}"
                )
        if settings.lemmas and not settings.pos and targets is not None and a.match != "wug":
            _note_verb_forms(a, b, targets, notes)
        if wants_verdict and targets is not None and not controls and settings.controls:
            controls = index_controls(a, b, targets, settings)  # indexes of every word hold their own controls
        compared = None if targets is None else targets + [c for c in controls if c not in targets]
        every = index_change(
            a, b, compared, list(settings.measures), min_usages=settings.min_usages, standardize=settings.standardize, progress=progress
        )
        control_set = set(controls)
        rows = [r for r in every if r.word not in control_set]
        control_rows = [r for r in every if r.word in control_set]
        dropped = [r.word for r in control_rows if not r.scores]
        if dropped:
            notes.append(
                f"{len(dropped)} of {len(control_rows)} control words had fewer than {settings.min_usages} usages on a side and "
                f"were left out of the verdict's null: {', '.join(dropped[:12])}{', ...' if len(dropped) > 12 else ''}"
            )
        scored_controls = [r for r in control_rows if r.scores]
        found = _evidence(a, b, rows, settings, progress, notes, bool(scored_controls)) if settings.evidence or people is not None else {}
        evidence = found.get("words", {})
        marks = _marks_against_controls(a, b, evidence, scored_controls, settings, notes, progress) if evidence else None
        verdicts = _verdicts(a, b, rows, control_rows, evidence, settings, notes) if wants_verdict else {}
        rows, order = in_order(rows, verdicts.get("targets", {}), settings.measures[0])
        data = _data(a, b, side_a, side_b, rows, evidence, settings, notes, found.get("settings", {}))
        data["settings"]["order"] = order
        if wants_verdict:
            _add_verdicts(data, verdicts, control_rows, settings)
        if marks is not None:
            data["settings"]["sense_marks"] = marks["summary"]
            for c in data.get("controls", []):
                c["sense_periods"] = marks["periods"].get(c["word"])
        _add_binary_change(data, settings)
    if people is not None:
        data["gold"] = agreement_report(rows, evidence, people, settings.measures, settings.fdr, a.match == "wug")
    for note in notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    return ChangeResult(rows, data, evidence, notes)


@contextmanager
def _index_folder(keep: Optional[Path]) -> Iterator[str]:
    """Where the sides given as corpora or WUG datasets are indexed: a temporary folder, or `keep`, a new folder made
    here and marked as ours, whose A and B are then usage indexes to compare again. A folder `keep` made so before
    (a run that was interrupted, or done) is taken again: `_indexed_sides` uses the indexes in it that were built from
    the same sides and builds the others; any other folder that exists is refused, never written into."""
    if keep is None:
        with tempfile.TemporaryDirectory(prefix="spacy-elmo-change-") as scratch:
            yield scratch
        return
    keep = Path(keep)
    if keep.is_symlink() or (keep.exists() and not is_own(keep, KEPT_INDEXES)):
        raise InputError(f"{keep} exists and was not made by --keep-indexes: give --keep-indexes a new folder (the indexes are made in it)")
    if not keep.exists():
        keep.mkdir(parents=True)
        mark(keep, KEPT_INDEXES)
    yield str(keep)


KEPT_SIDES = "sides.json"  # in a --keep-indexes folder: what each of its indexes was built from


def _side_record(side: Path, settings: "ChangeSettings", words: Optional[List[str]], k: int) -> Dict[str, Any]:
    """What an index of `side` (a corpus file or folder, a WUG dataset) is built from: the side's files (path, size,
    time of change), the model, the words and how they are matched. An index kept with another record is not used."""
    root = side.resolve()
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {
        "side": str(root),
        "files": [[str(f), s.st_size, s.st_mtime_ns] for f, s in ((f, f.stat()) for f in files)],
        "model": str(settings.model),
        "words": sorted(words) if words is not None else None,
        "lemmas": settings.lemmas,
        "pos": settings.pos,
        "grouping": settings.groupings[k],
    }


def _kept_index(folder: Path, record: Dict[str, Any], log: Callable) -> bool:
    """Whether `folder` (KEEP/A or KEEP/B) holds a finished index built from `record` (`_side_record`), to use as it
    is; False where there is none yet. An index there built from anything else is refused: nothing is overwritten."""
    path = folder.parent / KEPT_SIDES
    kept = read_json_file(path, "give --keep-indexes a new folder") if path.is_file() else {}
    kept = kept if isinstance(kept, dict) else {}
    if not is_own(folder, USAGE_INDEX):
        kept[folder.name] = record  # said before the build: a build that is interrupted leaves its record
        write_atomically(path, json.dumps(kept, indent=1))
        return False
    if kept.get(folder.name) != record:
        raise InputError(
            f"{folder} holds an index of other sides, words or settings than these: give --keep-indexes a new folder, or give "
            f"{folder} itself as the side to compare it"
        )
    log(f"Using the index kept in {folder} (built from {record['side']})")
    return True


def in_order(rows: List[WordChange], verdicts: Dict[str, Any], measure: str) -> Tuple[List[WordChange], str]:
    """The rows in the order the table, page and TSV show them, and that order in words: by the verdict's z where
    there is a verdict (control words scored: the words called changed are its first), else by `measure`; words
    without a score last. Measured on both kinds of truth (docs/results.md): where change was planted, the z ranks
    planted words above untouched ones at AUC 0.88-0.92 and APD at 0.47-0.74 (a word's APD is mostly the spread of its
    usages); against people's graded change on DWUG EN, which has no control words, APD at Spearman 0.44 and the z
    at 0.17."""
    judged = any(v.changed is not None for v in verdicts.values())

    def key(r: WordChange) -> Tuple[bool, float, str]:
        if not judged:
            return (not r.scores, -r.scores.get(measure, 0.0), r.word)
        v = verdicts.get(r.word)
        return (not r.scores, -(v.z if v is not None and math.isfinite(v.z) else -math.inf), r.word)

    ordered = sorted(rows, key=key)
    if judged:
        return ordered, "by the verdict's energy z (the words called changed first; the z against the control words')"
    return ordered, f"by {measure}" + (" (no verdict: it needs control words)" if verdicts else "")


def _indexed_sides(
    sides: List[Path],
    targets: Optional[List[str]],
    settings: ChangeSettings,
    scratch: Path,
    log: Callable,
    n_controls: int = 0,
    progress: bool = False,
    notes: Optional[List[str]] = None,
) -> Tuple[List[Path], List[str]]:
    """The sides, each corpus or WUG dataset among them replaced by its usage index (every layer kept) in `scratch`;
    where both are corpora and targets are given, `n_controls` control words (verdict.py) indexed with them.
    RETURNS: the sides' indexes and the control words drawn."""
    from .wug import build_wug_index, is_wug_dataset

    if all(is_own(side, USAGE_INDEX) for side in sides):
        return sides, []
    if settings.model is None:
        other = next(side for side in sides if not is_own(side, USAGE_INDEX))
        raise InputError(f"{other} is not a usage index: give --model MODEL to index it as a corpus, or give an index")
    from ..pipeline.loading import load_elmo_pipeline
    from ..usages.builder import build_usage_index

    nlp = load_elmo_pipeline(settings.model, settings.lang)
    corpora = not any(is_own(side, USAGE_INDEX) or is_wug_dataset(side) for side in sides)
    controls = (
        corpus_controls(nlp, sides, targets, settings, log, notes if notes is not None else [])
        if corpora and targets and n_controls
        else []
    )
    words = None if targets is None else targets + controls
    built = []
    for k, side in enumerate(sides):
        folder = scratch / "AB"[k]
        if is_own(side, USAGE_INDEX):
            built.append(side)
        elif is_own(scratch, KEPT_INDEXES) and _kept_index(folder, _side_record(side, settings, words, k), log):
            built.append(folder)
        elif is_wug_dataset(side):
            grouping = settings.groupings[k]
            log(f"Indexing the usages of grouping {grouping} of the WUG dataset {side} with {settings.model}")
            build_wug_index(
                nlp, side, folder, model=settings.model, grouping=grouping, words=targets, all_layers=True, progress=progress, log=log
            )
            built.append(folder)
        else:
            log(f"Indexing the corpus {side} with {settings.model}")
            build_usage_index(
                nlp,
                side,
                folder,
                model=settings.model,
                words=words,
                lemmas=settings.lemmas,
                pos=settings.pos,
                all_layers=True,
                progress=progress,
                log=log,
            )
            built.append(folder)
    return built, controls


VERB_FORMS_SHARE = 0.1  # under --lemmas without --pos: a target this share of whose usages are -ed / -ing forms is named


def _note_verb_forms(a: Any, b: Any, targets: List[str], notes: List[str], most: int = 2000) -> None:
    """Under --lemmas without --pos, a lemma files a verb's forms with a noun's ("attacked", "attacking" under
    "attack"): name, in a note, the targets of which at least VERB_FORMS_SHARE of the usages (at most `most` a side,
    the first by row) are written as an -ed or -ing form the target itself is not, so that one part of speech can
    be asked for."""
    import numpy

    found = []
    for target in targets:
        word = split_pos(target)[0].lower()
        forms = [
            index.usage(int(r)).text.lower()
            for index in (a, b)
            for r in numpy.sort(numpy.asarray(index.rows_of(target), dtype=numpy.int64))[:most]
        ]
        verbal = sum(f != word and f.endswith(("ed", "ing")) and not word.endswith(("ed", "ing")) for f in forms)
        if forms and verbal / len(forms) >= VERB_FORMS_SHARE:
            found.append(f"{target} {verbal / len(forms):.0%}")
    if found:
        notes.append(
            "under --lemmas without --pos a lemma holds every part of speech written alike, so a verb's -ed and -ing forms are "
            f"scored with the noun's usages: {', '.join(found[:8])}{', ...' if len(found) > 8 else ''} of the usages are such "
            "forms; for one part of speech give --pos NOUN (or VERB) and, as --model, a spaCy pipeline with a tagger and an elmo "
            "component (a trained pipeline with add_elmo, saved with nlp.to_disk)"
        )


def _verdicts(
    a: Any,
    b: Any,
    rows: List[WordChange],
    control_rows: List[WordChange],
    evidence: Dict[str, Any],
    settings: ChangeSettings,
    notes: List[str],
) -> Dict[str, Any]:
    """Each scored target's verdict (verdict.py), its statistic read from the vectors the scores read."""
    from .senses import evidence_rows, permutation_test
    from .verdict import MIN_CONTROLS, VERDICT_MEASURE, WordVerdict, decide

    centres = [mean_usage(i) if settings.standardize else None for i in (a, b)]
    if settings.verdict_from != "scores":
        if a.context is not None and b.context is not None:
            a, b = a.with_layer(settings.verdict_from), b.with_layer(settings.verdict_from)
            centres = [None, None]
        else:
            notes.append(
                "A and B keep no context-only vectors (built without --all-layers): the verdict reads the vectors the scores read, "
                "in which a word's spelling and case count; build the indexes with --all-layers"
            )

    def statistic(word: str) -> WordVerdict:
        ua = UsageRows(a.vectors, a.rows_of(word), centres[0])
        ub = UsageRows(b.vectors, b.rows_of(word), centres[1])
        rows_a, rows_b = evidence_rows(ua, ub, seed=settings.seed)
        va = UsageRows(a.vectors, rows_a, centres[0]).sample(len(rows_a))
        vb = UsageRows(b.vectors, rows_b, centres[1]).sample(len(rows_b))
        groups = usage_documents(a, b, rows_a, rows_b)
        if groups is None:
            by_usage.append(word)
        test = permutation_test(va, vb, VERDICT_MEASURE, settings.permutations, settings.seed, groups=groups)
        read[word] = (len(rows_a), len(rows_b))
        return WordVerdict(energy(va, vb), test.z, test.p)

    read: Dict[str, Tuple[int, int]] = {}
    by_usage: List[str] = []
    targets = {r.word: statistic(r.word) for r in rows if r.scores}
    controls = {r.word: statistic(r.word) for r in control_rows if r.scores}
    if by_usage and a.match != "wug":
        notes.append(
            f"{len(by_usage)} of {len(targets) + len(controls)} words had fewer than {MIN_DOCUMENTS} documents on a side, so the "
            "verdict's test shuffled their usages, not their documents (usages of one document are alike, so such a test calls "
            "change too readily): in a .txt corpus a blank line separates documents, and a file without one is one document; "
            f"give the corpora with blank lines between documents (words: {', '.join(by_usage[:8])}{', ...' if len(by_usage) > 8 else ''})"
        )
    if len(controls) >= MIN_CONTROLS:
        match_frequencies(targets, {w: read[w] for w in controls}, read, notes)
    else:
        if not settings.controls:
            why = "no control words were asked for (--controls 0)"
        elif not controls:
            why = "no control words could be drawn (a WUG dataset holds its targets' usages alone, and so do indexes of the targets)"
        else:
            why = f"only {len(controls)} control words could be scored (at least {MIN_CONTROLS})"
        notes.append(
            f"{why}: no word is called changed or not, since a verdict needs control words (the corpora's own drift as its "
            "null); give corpora with --model and --words, or indexes of every word, for control words"
        )
    decide(targets, controls, settings.fdr)
    for word, verdict in targets.items():
        if word in evidence:
            evidence[word]["changed_fdr"] = verdict.changed
    return {"targets": targets, "controls": controls}


def _marks_against_controls(
    a: Any,
    b: Any,
    evidence: Dict[str, Any],
    control_rows: List[WordChange],
    settings: ChangeSettings,
    notes: List[str],
    progress: Progress = None,
) -> Dict[str, Any]:
    """The control words' senses found and marked as the targets' are (sense_checks); where more than MARK_RATE of
    them get a mark, every target's marks withheld, said in a note. RETURNS: {"summary": what the JSON's settings say,
    "periods": each control word's sense periods}."""
    from .sense_checks import MARK_RATE, control_marks, describe_checks, withhold_marks

    if not control_rows:
        had = withhold_marks(evidence)
        notes.append(
            "no control words, so no sense is marked as come, gone or moved: without the corpora's own drift to check them "
            f"against, such marks are unchecked{f' ({had} words would have had one)' if had else ''}; the senses are shown, "
            "unmarked, and none is looked for as one period's; give corpora with --model and --words for control words"
        )
        return {"summary": {"checks": describe_checks(), "controls": 0, "checked": False, "shown": False}, "periods": {}}
    found = _evidence(a, b, control_rows, settings, progress, [], desc="The control words' senses").get("words", {})
    checked = control_marks(found)
    summary = {"checks": describe_checks(), "controls": checked["controls"], "marked": checked["marked"], "checked": True}
    summary["shown"] = checked["within"]
    if not checked["within"]:
        had = withhold_marks(evidence)
        notes.append(
            f"{len(checked['marked'])} of {checked['controls']} control words got a sense marked as come, gone or moved (more than "
            f"{MARK_RATE:.0%}: {', '.join(checked['marked'][:8])}): the corpora differ beyond the targets' senses (topic, genre), so "
            f"the marks of {had} target words are withheld; their senses are shown, unmarked"
        )
    return {"summary": summary, "periods": {w: ev["sense_periods"] for w, ev in found.items()}}


MIN_DOCUMENTS = 10  # documents a side the verdict's test shuffles; fewer: it shuffles usages


def document_keys(index: Any, rows: Any) -> List[Tuple[int, int]]:
    """RETURNS: each usage's document in the index, (file number, document number), in the order of `rows`."""
    sentence_of = numpy.asarray(index.arrays["usage_sentence"])[numpy.asarray(rows, dtype=numpy.int64)]
    return [(int(index.sentences[int(s)].get("file", 0)), int(index.sentences[int(s)].get("doc", 0))) for s in sentence_of]


def concentrated_sides(a: Any, b: Any, rows_a: Any, rows_b: Any) -> List[str]:
    """RETURNS: the sides ("A", "B") at least FEW_DOCUMENTS_SHARE of whose usages (of at least 10) come from
    FEW_DOCUMENTS_MOST documents or fewer: what the word's usages say there is those documents' topic."""
    from collections import Counter

    found = []
    for side, index, rows in (("A", a, rows_a), ("B", b, rows_b)):
        if len(rows) < 10 or a.match == "wug":
            continue
        docs = Counter(document_keys(index, rows))
        if sum(n for _, n in docs.most_common(FEW_DOCUMENTS_MOST)) >= FEW_DOCUMENTS_SHARE * len(rows):
            found.append(side)
    return found


def usage_documents(a: Any, b: Any, rows_a: Any, rows_b: Any) -> Optional[Any]:
    """RETURNS: each usage's document (A's and B's apart), for the verdict's test to shuffle documents, not usages;
    None where a side has fewer than MIN_DOCUMENTS (a WUG dataset's usages, one document)."""
    keys = []
    for side, index, rows in (("A", a, rows_a), ("B", b, rows_b)):
        found = [(side, f, d) for f, d in document_keys(index, numpy.sort(numpy.asarray(rows, dtype=numpy.int64)))]
        if len(set(found)) < MIN_DOCUMENTS:
            return None
        keys += found
    _, groups = numpy.unique(numpy.array([f"{s}:{f}:{d}" for s, f, d in keys]), return_inverse=True)
    return groups


def _add_verdicts(data: Dict[str, Any], verdicts: Dict[str, Any], control_rows: List[WordChange], settings: ChangeSettings) -> None:
    from .verdict import NO_NULL_BASIS, describe

    targets, controls = verdicts["targets"], verdicts["controls"]
    basis = next((v.basis for v in targets.values()), NO_NULL_BASIS)
    data["settings"]["verdict"] = describe(basis, len(controls), settings.permutations, settings.fdr, settings.seed)
    data["settings"]["verdict_basis"] = basis
    for w in data["words"]:
        v = targets.get(w["word"])
        if v is not None:
            w["verdict"] = {
                "energy": _finite(v.energy),
                "z": _finite(v.z),
                "p_chance": v.p_chance,
                "p_controls": v.p_controls,
                "q": v.q,
                "changed": v.changed,
                "basis": v.basis,
                "frequency_matched": v.matched,
            }
    data["controls"] = [
        {
            "word": r.word,
            "n_a": r.n_a,
            "n_b": r.n_b,
            **{m: _finite(x) for m, x in r.scores.items()},
            "energy": _finite(controls[r.word].energy) if r.word in controls else None,
            "z": _finite(controls[r.word].z) if r.word in controls else None,
            "p_chance": controls[r.word].p_chance if r.word in controls else None,
            "note": r.note,
        }
        for r in control_rows
    ]


def _add_binary_change(data: Dict[str, Any], settings: ChangeSettings) -> None:
    """Each word's binary change by the stated rule (binary.py: the verdict's where there is one), null where the rule
    gives none, and the rule in the settings: every route's rows carry the same `binary_change` field."""
    from .binary import VERDICT_ONLY, binary_change

    rule, answers = binary_change(data["words"], settings.binary_change or VERDICT_ONLY, settings.measures[0])
    data["settings"]["binary_change"] = rule
    for w in data["words"]:
        w["binary_change"] = answers.get(w["word"])


def usage_record(index: Any, row: int) -> Dict[str, Any]:
    """RETURNS: a usage of the index as the JSON and the report show it: its identifier (a WUG dataset's, else
    file:document:sentence:token), its sentence and the target's character offsets."""
    sentence_number = int(index.arrays["usage_sentence"][row])
    sentence = index.sentences[sentence_number]
    usage = index.usage(row)
    identifier = sentence.get("id") or f"{usage.file and Path(usage.file).name}:{usage.doc}:{sentence_number}:{usage.token}"
    return {"id": identifier, "text": usage.sentence, "start": usage.start, "end": usage.end}


def _evidence(
    a: Any,
    b: Any,
    rows: List[WordChange],
    settings: ChangeSettings,
    progress: Progress,
    notes: List[str],
    checked: bool = True,
    desc: str = "The senses",
) -> Dict[str, Any]:
    """Each scored word's senses and evidence (senses.word_evidence); senses of one period looked for only where
    `checked` (control words check them: `_marks_against_controls`)."""
    from .sense_checks import name_like
    from .sense_input import SenseInput
    from .senses import SenseRule, benjamini_hochberg, evidence_rows, word_evidence

    out: Dict[str, Any] = {}
    scored = [r for r in rows if r.scores]
    # the vectors the scores read: each index's mean usage subtracted where the scores were standardized
    centres = [mean_usage(i) if settings.standardize else None for i in (a, b)]
    inputs = SenseInput(a, b, settings.senses, settings.lang, notes)
    rule = SenseRule(settings.min_silhouette, sides=settings.side_senses and checked)
    index_of = {"A": a, "B": b}
    named: Dict[str, Any] = {}  # each word's (bags, labels, senses): named once every word's bags are known
    concentrated: List[str] = []  # "word in A": a side whose usages come from a few documents
    for row in progress(scored, desc=desc) if progress is not None else scored:
        ua = UsageRows(a.vectors, a.rows_of(row.word), centres[0])
        ub = UsageRows(b.vectors, b.rows_of(row.word), centres[1])
        sampled = evidence_rows(ua, ub, seed=settings.seed)
        sense_vectors, bags, witness_vectors = inputs.word(sampled, row.word)
        concentrated += [f"{row.word} in {side}" for side in concentrated_sides(a, b, *sampled)]
        records = {(side, int(r)): usage_record(index_of[side], int(r)) for side, side_rows in zip("AB", sampled) for r in side_rows}
        ev = word_evidence(
            ua,
            ub,
            settings.measures,
            settings.seed,
            draws=settings.draws,
            binary_k=settings.binary_k,
            binary_n=settings.binary_n,
            sense_vectors=sense_vectors,
            rule=rule,
            permutations=settings.permutations,
            witness_vectors=witness_vectors,
            groups=usage_documents(a, b, *sampled),
            name_usages=[name_like(u["text"], u["start"], u["end"]) for u in records.values()],
            stability_runs=settings.stability_runs,
        )
        ids = {key: record["id"] for key, record in records.items()}
        if settings.wug_pairs:  # the usages read and the model's judgments of pairs of them (wug_export.py)
            from .wug_export import model_pairs, people_pairs

            pair_vectors = numpy.concatenate(
                [UsageRows(i.vectors, r, c).sample(len(r)) for i, r, c in ((a, sampled[0], centres[0]), (b, sampled[1], centres[1]))]
            )
            order = [ids[(side, int(r))] for side, side_rows in zip("AB", sampled) for r in side_rows]
            judged = people_pairs(a, row.word) if a.match == "wug" else None
            wug_pairs = model_pairs(order, pair_vectors, len(sampled[0]), settings.seed, judged)
        usage_labels = [ev.labels[side][int(r)] for side, side_rows in zip("AB", sampled) for r in side_rows]
        named[row.word] = (bags, usage_labels, ev.senses)

        def record(side: str, r: int, **more: Any) -> Dict[str, Any]:
            return {"side": side, **records.get((side, r), usage_record(index_of[side], r)), **more}

        out[row.word] = {
            "senses": ev.senses,
            "silhouette": _finite(ev.silhouette),
            "cluster_freq_dist1": ev.freq_a,
            "cluster_freq_dist2": ev.freq_b,
            "sense_periods": ev.periods,
            "sense_stability": ev.stability,
            "joined": ev.joined,
            "name_senses": ev.names,
            "period_p": [[round(x, 6) for x in pair] for pair in ev.period_p],
            "sense_jsd": ev.sense_jsd,
            "binary": ev.binary,
            "intervals": {m: [_finite(x) for x in v] for m, v in ev.intervals.items()},
            "p_values": ev.p_values,
            "examples": [[record(side, r) for side, r in sense] for sense in ev.examples],
            "changed": {side: [record(side, r, witness=c) for r, c in items] for side, items in ev.changed.items()},
            "points": [
                {"side": side, "x": round(x, 5), "y": round(y, 5), "sense": s, "id": ids[(side, r)], "text": _snippet(records[(side, r)])}
                for side, r, x, y, s in ev.points
            ],
            # every usage's sense by its identifier: the clusters file, and the ARI against people's clusters
            "labels": {ids[(side, r)]: s for side, by_row in ev.labels.items() for r, s in by_row.items()},
        }
        if settings.wug_pairs:
            out[row.word]["wug_pairs"] = wug_pairs
            out[row.word]["wug_uses"] = [{"side": side, **records[(side, r)]} for side, r in records]
            out[row.word]["wug_pairs_from"] = "people" if judged is not None else "sampled"
    if concentrated:
        many = len(concentrated) > 1
        its = "their" if many else "its"
        notes.append(
            f"{len(concentrated)} word{'s have' if many else ' has'} half or more of {its} usages on a side from "
            f"{FEW_DOCUMENTS_MOST} documents or fewer, so {its} change there may be those documents' topic, not the word's: "
            f"{', '.join(concentrated[:8])}{', ...' if len(concentrated) > 8 else ''}"
        )
    for word, names in sense_names_of(named, inputs.background if inputs.names_from == "context words" else None, inputs.singular).items():
        out[word] = {"sense_names": names, **out[word]}
    for measure in [m for m in settings.measures if m in TESTED] if settings.permutations else []:
        words = [w for w in out if measure in out[w]["p_values"]]
        for w, q in zip(words, benjamini_hochberg([out[w]["p_values"][measure] for w in words])):
            out[w].setdefault("q_values", {})[measure] = float(q)
    for w in out:
        out[w]["changed_fdr"] = None  # the verdict's (_verdicts), where a permutation test ran
    out_settings = {"senses_input": inputs.describe(), "sense_rule": rule.describe(), "names_from": inputs.names_from}
    return {"words": out, "settings": out_settings}


def sense_names_of(
    named: Dict[str, Any], background: Optional[Any], lemma: Optional[Callable[[str], str]] = None
) -> Dict[str, List[List[str]]]:
    """Each word's sense names (sense_names.name_senses) from its usages' bags: told apart from `background` (the
    index's words, for context words) or, for substitutes, from the substitutes of the other words' usages, so
    that names tell words apart too (against everything, "people" and "place" named 16 and 15 of DWUG EN's 46);
    one name word of each `lemma`."""
    from collections import Counter

    from .sense_names import name_senses

    per_word = {w: Counter(x for bag in bags for x in set(bag)) for w, (bags, _, _) in named.items()}
    everything = sum(per_word.values(), Counter())
    out = {}
    for word, (bags, labels, k) in named.items():
        others = background if background is not None else everything - per_word[word]
        out[word] = name_senses(bags, labels, k, others or None, lemma=lemma)
    return out


SNIPPET = 90  # characters of a usage's text each side of its target in a tooltip


def _snippet(usage: Dict[str, Any]) -> str:
    """RETURNS (str): the usage's text around its target, the target in [[ ]]: a map point's tooltip."""
    text, start, end = usage["text"], usage["start"], usage["end"]
    before, after = text[max(0, start - SNIPPET) : start], text[end : end + SNIPPET]
    return f"{'…' if start > SNIPPET else ''}{before}[[{text[start:end]}]]{after}{'…' if len(text) - end > SNIPPET else ''}"


def _data(
    a: Any,
    b: Any,
    side_a: PathLike,
    side_b: PathLike,
    rows: List[WordChange],
    evidence: Dict[str, Any],
    settings: ChangeSettings,
    notes: List[str],
    sense_settings: Dict[str, Any],
) -> Dict[str, Any]:
    from ..usages.index import describe_representation
    from .senses import CLUSTER_METHOD, EVIDENCE_USAGES

    info: Dict[str, Any] = {
        "index_a": str(side_a),
        "index_b": str(side_b),
        "bilm": a.meta.get("model", ""),
        "layer": describe_representation(a.representation, list(map(float, a.layer_weights))),
        "match": a.match,
        "measures": list(settings.measures),
        "min_usages": settings.min_usages,
        "standardize": settings.standardize,
    }
    if "jsd" in settings.measures:
        info["jsd"] = f"{JSD_CLUSTERS} clusters, at most {JSD_USAGES} usages a side, seed {JSD_SEED}"
    if evidence:
        info["senses"] = (
            f"{sense_settings['senses_input']}; {CLUSTER_METHOD}, {sense_settings['sense_rule']}; at most {EVIDENCE_USAGES} usages a "
            f"side; seed {settings.seed}"
        )
        info["senses_from"] = settings.senses
        info["min_silhouette"] = settings.min_silhouette
        if settings.permutations:
            info["null"] = (
                f"the permutation test of each word's {', '.join(m for m in settings.measures if m in TESTED)}: its usages' period "
                f"labels shuffled {settings.permutations} times (seed {settings.seed}), p = (1 + shuffles scoring at least the "
                f"observed) / (1 + {settings.permutations}); q: Benjamini-Hochberg across the words"
            )
        info["intervals"] = f"95%, {settings.draws} resamplings of each side's usages, seed {settings.seed}"
        usages = "usage" if settings.binary_k == 1 else "usages"
        info["binary"] = (
            f"came or went: at most {settings.binary_k} {usages} in one period, at least {settings.binary_n} in the other (DWUG's "
            f"rule); moved: its share of one period at least {SIDE_RATIO:g}x the other's, binomial test at {SIDE_ALPHA:g} / k"
        )
    targets = a.meta.get("wug", {}).get("targets", {}) if a.match == "wug" else {}
    words = []
    for r in rows:
        entry: Dict[str, Any] = {"word": r.word, "n_a": r.n_a, "n_b": r.n_b, **{m: _finite(v) for m, v in r.scores.items()}, "note": r.note}
        if r.word in targets:
            entry["target"] = targets[r.word]
        if r.word in evidence:
            entry["interval"] = {m: v for m, v in evidence[r.word]["intervals"].items() if m != "senses"}
            entry["evidence"] = evidence[r.word]
        words.append(entry)
    return {"settings": info, "words": words, "notes": notes}
