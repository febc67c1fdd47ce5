"""What `spacy-elmo change` writes beside its report: the table (TSV with its settings, or JSON), SemEval-2020
Task 1's answer files and WUG cluster files; and the check that no output lands on what the command reads."""

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

from ..errors import InputError
from ..output_folders import name_from_data, own_subfolder, write_atomically
from ..types import PathLike
from .sense_marks import BOTH
from .senses import TESTED
from .verdict import without_null

if TYPE_CHECKING:  # pragma: no cover
    from .run import ChangeResult


def write_table(result: "ChangeResult", path: PathLike, overwrite: bool = True) -> List[Path]:
    """Write the rows as plain TSV (a header line, then a word a line; the settings in a sidecar OUT.settings.json)
    or, where `path` ends in .json, everything as JSON (no NaN or Infinity: null); without `overwrite`, never over a
    file that appeared meanwhile (`output_folders.publish_file`). RETURNS the files written."""
    path = Path(path)
    data = result.data
    if path.suffix == ".json":
        write_atomically(path, json.dumps(data, indent=1, allow_nan=False) + "\n", overwrite)
        return [path]
    measures = data["settings"]["measures"]
    with_intervals = any("interval" in w for w in data["words"])
    head = ["word", "n_a", "n_b", *measures]
    tested = [m for m in measures if m in ("apd", "prt")]
    tested_p = [m for m in measures if m in TESTED]
    with_verdict = any("verdict" in w for w in data["words"])
    no_null = without_null(data["words"])  # without control words the q is against chance, not a verdict's
    if with_intervals:
        head += [f"{m}_{end}" for m in tested for end in ("low", "high")]
        head += [f"{m}_{end}" for m in tested_p for end in ("p", "q")]
        verdict_head = [
            "energy_z",
            "controls_p",
            "q_vs_chance" if no_null else "changed_q",
            "changed",
            "verdict_basis",
            "frequency_matched",
        ]
        head += verdict_head if with_verdict else ["changed"]
        # the senses' own yes/no (a sense came, went or moved), apart from binary_change, the stated rule's answer
        head += ["senses", "senses_jsd", "senses_binary", "sense_periods", "sense_names"]
    head += ["binary_change"]
    lines = ["\t".join([*head, "note"])]
    for w in data["words"]:
        values = [tsv_text(w["word"]), str(w["n_a"]), str(w["n_b"])] + [_cell(w.get(m)) for m in measures]
        if with_intervals:
            ev = w.get("evidence") or {}
            for m in tested:
                values += [_cell(v) for v in w.get("interval", {}).get(m, [None, None])]
            for m in tested_p:
                values += [_cell(ev.get("p_values", {}).get(m)), _cell(ev.get("q_values", {}).get(m))]
            verdict = w.get("verdict") or {}
            if with_verdict:
                values += [_cell(verdict.get("z")), _cell(verdict.get("p_controls")), _cell(verdict.get("q"))]
            changed = verdict.get("changed", ev.get("changed_fdr"))
            values += ["" if changed is None else str(changed)]
            if with_verdict:
                matched = verdict.get("frequency_matched")
                values += [verdict.get("basis", ""), "" if matched is None else str(int(matched))]
            values += [str(ev.get("senses", ""))]
            values += [_cell(ev.get("sense_jsd")), str(ev.get("binary", "")), sense_periods_cell(ev)]
            values += [tsv_text(sense_names_cell(ev.get("sense_names", [])))]
        values += ["" if w.get("binary_change") is None else str(w["binary_change"])]
        lines.append("\t".join([*values, tsv_text(w["note"])]))
    sidecar = path.with_suffix(".settings.json")
    write_atomically(path, "\n".join(lines) + "\n", overwrite)
    write_atomically(sidecar, json.dumps({k: v for k, v in data.items() if k != "words"}, indent=1, allow_nan=False) + "\n", overwrite)
    return [path, sidecar]


def tsv_text(text: str) -> str:
    r"""RETURNS (str): `text` as one TSV cell: a backslash, tab, newline or carriage return written as \\, \t, \n
    and \r (a WUG target's name may hold one; raw, it would split the row or the cell)."""
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def sense_names_cell(names: Sequence[Sequence[str]]) -> str:
    """RETURNS (str): the senses' names in one cell: "advice, hint, suggestion | end, point, top"."""
    return " | ".join(", ".join(name) or "-" for name in names)


def sense_periods_cell(evidence: Dict[str, Any]) -> str:
    """RETURNS (str): the senses not of both periods in one cell, each with its number and counts in A and in B:
    "2 came in B 0/41 | 3 less in B 30/9"; "" where every sense is of both."""
    periods = evidence.get("sense_periods", [])
    counts = zip(evidence.get("cluster_freq_dist1", []), evidence.get("cluster_freq_dist2", []))
    return " | ".join(f"{j + 1} {p} {na}/{nb}" for j, (p, (na, nb)) in enumerate(zip(periods, counts)) if p != BOTH)


def _cell(value: Optional[float]) -> str:
    return "" if value is None else f"{value:.6f}"


def write_answers(result: "ChangeResult", folder: Path, language: str = "english", log: Callable[[str], Any] = print) -> List[Path]:
    """SemEval-2020 Task 1's answer files: task1/LANGUAGE.txt (binary change by the stated rule: `binary.py`,
    `ChangeSettings.binary_change`) and task2/LANGUAGE.txt (the first measure), a word and its value a line, the words
    as the gold or the WUG dataset spell them. Inside a report folder, whose earlier run's files are gone by now
    (`report.write_report`): a file found at a name is somebody's, and this run's goes beside it (`free_path`)."""
    from .report import free_path

    names = (result.data.get("gold") or {}).get("names", {})
    measure = result.data["settings"]["measures"][0]
    written = []
    for task, value in (("task1", lambda w: w.get("binary_change")), ("task2", lambda w: w.get(measure))):
        if task == "task1" and not any(value(w) is not None for w in result.data["words"]):
            log(
                "task1 (binary change) was not written: no word is called changed without a verdict against control words; "
                "give --binary-change median or senses for binary answers by a stated rule"
            )
            continue
        lines = [
            f"{tsv_text(str(names.get(w['word'], w.get('target', w['word']))))}\t{value(w)}"
            for w in sorted(result.data["words"], key=lambda w: w["word"])
            if value(w) is not None
        ]
        path = free_path(own_subfolder(own_subfolder(folder.parent, folder.name), task) / name_from_data(language, ".txt"), log)
        write_atomically(path, "\n".join(lines) + "\n", overwrite=False)
        written.append(path)
    return written


def write_clusters(result: "ChangeResult", folder: Path, log: Callable[[str], Any] = print) -> List[Path]:
    """A WUG clusters file per word (WORD.csv: identifier, cluster; tab-separated, as clusters/opt/WORD.csv); never
    over a file this run's report did not write (as `write_answers`)."""
    from .report import free_path

    folder = own_subfolder(folder.parent, folder.name)
    written = []
    for w in result.data["words"]:
        ev = w.get("evidence")
        if not ev:
            continue
        path = free_path(folder / name_from_data(str(w.get("target", w["word"])), ".csv"), log)
        lines = ["identifier\tcluster"] + [f"{i}\t{s}" for i, s in sorted(ev["labels"].items())]
        write_atomically(path, "\n".join(lines) + "\n", overwrite=False)
        written.append(path)
    return written


def check_outputs(outputs: Sequence[Optional[PathLike]], inputs: Sequence[PathLike]) -> None:
    """Refuse an output that is an input, lies inside an input folder or holds one, with --overwrite or not."""
    for output in outputs:
        if output is None:
            continue
        out = Path(output).resolve()
        for source in inputs:
            src = Path(source).resolve()
            if out == src or src in out.parents or out in src.parents:
                where = "over" if out == src else "inside or around"
                raise InputError(f"{output} would be written {where} {source}, which this command reads: write it elsewhere")
