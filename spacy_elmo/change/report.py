"""The change report a person opens (`spacy-elmo change ... --report DIR`): one self-contained HTML page (styles,
script, maps and data inline; nothing fetched) with the words ranked by change and their intervals, and per word
a 2-D map of its usages coloured by sense and shaped by corpus, its senses' shares, the usages nearest each
sense's centre and the usages that changed, each with the target marked; plus PNG figures (with matplotlib)."""

import html
import re
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .verdict import NO_NULL_BASIS, without_null
from .sense_marks import CAME, NAMES, WENT
from ..output_folders import MARKER, claim_folder, is_plain_file, is_plain_folder, name_from_data, own_subfolder, write_atomically
from ..digests import file_sha256
from ..errors import InputError
from ..types import PathLike

CHANGE_REPORT = "change-report"
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_MAP = 260  # the map's size in pixels

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-top:1px solid #ddd;padding-top:16px}
table{border-collapse:collapse;margin:8px 0}.wide{overflow-x:auto}
td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f6f6f6}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
mark{background:#ffe066;padding:0 2px;font-weight:600}.usage{font-size:13px;color:#333}.muted{color:#777}
.word{display:flex;gap:24px;flex-wrap:wrap}.legend span{display:inline-block;margin-right:10px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:3px}
.views{display:flex;gap:10px;flex-wrap:wrap}.views figure{margin:0}.views figcaption{font-size:12px;color:#555;text-align:center}
.bar{display:flex;align-items:center;gap:8px;margin:3px 0}.period{width:64px;font-size:12px;color:#555}
.name{font-style:italic}.changed{color:#b00;font-weight:600}
input{font:inherit;padding:3px 6px;margin:6px 0}
"""

_SCRIPT = """
(function(){
  document.body.dataset.errors = "0";
  window.addEventListener("error", function(){ document.body.dataset.errors = String(Number(document.body.dataset.errors) + 1); });
  var table = document.getElementById("ranking");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function(th, col){
    th.addEventListener("click", function(){
      var up = th.dataset.up !== "1"; th.dataset.up = up ? "1" : "0";
      rows.sort(function(a, b){
        var x = a.cells[col].dataset.v || a.cells[col].textContent, y = b.cells[col].dataset.v || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (isNaN(nx) || isNaN(ny)) ? x.localeCompare(y) : nx - ny;
        return up ? c : -c;
      });
      rows.forEach(function(r){ table.tBodies[0].appendChild(r); });
    });
  });
  document.getElementById("filter").addEventListener("input", function(e){
    var q = e.target.value.toLowerCase();
    rows.forEach(function(r){ r.style.display = r.cells[1].textContent.toLowerCase().indexOf(q) >= 0 ? "" : "none"; });
  });
  var data = JSON.parse(document.getElementById("data").textContent);
  document.getElementById("count").textContent = String(data.words.length);
  // the page fits the window's width: a wide table scrolls in its own box, the page does not
  document.body.dataset.fits = String(document.documentElement.scrollWidth <= window.innerWidth ? 1 : 0);
  // people's graded change, where shown, in view without scrolling the table
  var people = Array.prototype.find.call(document.querySelectorAll("#ranking th"),
    function(th){ return th.textContent.indexOf("people") === 0; });
  if (people) document.body.dataset.peopleInView = String(people.getBoundingClientRect().right <= window.innerWidth ? 1 : 0);
  document.body.dataset.ready = "1";
})();
"""


# control characters, and the marks and overrides that reorder text (U+202E writes what follows reversed)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _esc(text: Any) -> str:
    """HTML text of `text`: escaped, and a control or direction-changing character shown as its code (raw, a browser
    drops it, garbles the text or displays it reversed)."""
    return _CONTROL.sub(_code, html.escape(str(text), quote=True))


def _code(match: "re.Match[str]") -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point <= 0xFF else f"\\u{point:04x}"


def _number(value: Optional[float], digits: int = 3) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def marked(usage: Dict[str, Any]) -> str:
    """RETURNS (str): HTML of the usage's sentence with its target in <mark>."""
    text, start, end = usage["text"], usage["start"], usage["end"]
    return f"{_esc(text[:start])}<mark>{_esc(text[start:end])}</mark>{_esc(text[end:])}"


VIEWS = (("both periods", None), ("period A", "A"), ("period B", "B"))  # WUG's full, first and second graph views


def _svg_map(points: Sequence[Dict[str, Any]], label: str, side: Optional[str] = None) -> str:
    """One view of a word's usages on its map (the axes of all its usages, so the views line up): every usage,
    or one period's; colour: sense, shape: period (circle A, square B); a usage's text is its tooltip."""
    if not points:
        return ""
    xs, ys = [p["x"] for p in points], [p["y"] for p in points]
    lo_x, hi_x, lo_y, hi_y = min(xs), max(xs), min(ys), max(ys)
    span_x, span_y = (hi_x - lo_x) or 1.0, (hi_y - lo_y) or 1.0
    pad = 10
    marks = []
    for p in points:
        if side is not None and p["side"] != side:
            continue
        x = pad + (p["x"] - lo_x) / span_x * (_MAP - 2 * pad)
        y = _MAP - pad - (p["y"] - lo_y) / span_y * (_MAP - 2 * pad)
        colour = sense_colour(p["sense"])
        title = f"<title>{_esc(p['side'])}, sense {p['sense'] + 1}: {_esc(p.get('text', ''))}</title>"
        if p["side"] == "A":
            marks.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}" fill-opacity="0.75">{title}</circle>')
        else:
            square = f'x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7"'
            marks.append(f'<rect {square} fill="none" stroke="{colour}" stroke-width="1.5">{title}</rect>')
    return (
        f'<svg class="map" width="{_MAP}" height="{_MAP}" viewBox="0 0 {_MAP} {_MAP}" role="img" aria-label="{_esc(label)}" '
        f'style="border:1px solid #ddd;background:#fff">{"".join(marks)}</svg>'
    )


def sense_colour(sense: int) -> str:
    """RETURNS (str): sense `sense`'s colour: each of a word's senses has its own (at most MAX_SENSES of PALETTE's
    ten), and colours mean senses only (the periods are shapes and views)."""
    return PALETTE[sense % len(PALETTE)]


def _share_bars(ev: Dict[str, Any], names: Sequence[str]) -> str:
    """Each period's shares of the senses as one stacked bar (sense colours, the share written in each part)."""
    width = 420
    bars = []
    for period, counts in (("A", ev["cluster_freq_dist1"]), ("B", ev["cluster_freq_dist2"])):
        total = max(sum(counts), 1)
        x = 0.0
        parts = []
        for j, count in enumerate(counts):
            w = count / total * width
            if w <= 0:
                continue
            label = f"sense {j + 1} ({names[j]}): {count} of {total}" if names[j] else f"sense {j + 1}: {count} of {total}"
            text = (
                f'<text x="{x + w / 2:.1f}" y="14" text-anchor="middle" font-size="11" fill="#fff">{count / total:.0%}</text>'
                if w > 34
                else ""
            )
            parts.append(
                f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="20" fill="{sense_colour(j)}"><title>{_esc(label)}</title></rect>{text}'
            )
            x += w
        bars.append(
            f'<div class="bar"><span class="period">period {period}</span><svg width="{width}" height="20" role="img" '
            f'aria-label="period {period} shares">{"".join(parts)}</svg></div>'
        )
    return "".join(bars)


def _period_label(period: str) -> str:
    """A sense's period as the sense table says it (`senses.sense_periods`): a sense that came or went marked."""

    return f"<span class=changed>{_esc(period)}</span>" if period in (CAME, WENT) else _esc(period)


LABEL_ROWS = 4  # rows of the strip's word labels


def _controls_strip(data: Dict[str, Any]) -> str:
    """Each target's verdict statistic against the control words' (grey ticks: where the corpora's own drift lies),
    on one axis (sign(z) log(1 + |z|): the controls' few units and a changed word's tens both show)."""
    controls = [c["z"] for c in data.get("controls", []) if c.get("z") is not None and math.isfinite(c["z"])]
    targets = [
        (w["word"], w["verdict"]["z"], w["verdict"].get("changed")) for w in data["words"] if (w.get("verdict") or {}).get("z") is not None
    ]
    if not controls or not targets:
        return ""

    def scaled(z: float) -> float:
        return math.copysign(math.log1p(abs(z)), z)

    values = [scaled(z) for z in controls + [z for _, z, _ in targets]]
    low, high = min(values + [0.0]), max(values + [scaled(5.0)])
    width, pad = 720, 14

    def x(z: float) -> float:
        return pad + (scaled(z) - low) / ((high - low) or 1.0) * (width - 2 * pad)

    ticks = "".join(
        f'<line x1="{x(z):.1f}" y1="18" x2="{x(z):.1f}" y2="34" stroke="#999"><title>control: z {z:.1f}</title></line>' for z in controls
    )
    dots = "".join(
        f'<circle cx="{x(z):.1f}" cy="48" r="4" fill="{"#b00" if changed else "#222"}" fill-opacity="0.7"><title>{_esc(word)}: z {z:.1f}'
        f"{' (changed)' if changed else ''}</title></circle>"
        for word, z, changed in targets
    )
    # the changed words named in rows, none over another: a label goes in the first row where it clears the others
    # (about 6 px a letter), and a word that finds none is left to its dot's title
    rows: List[List[Tuple[float, float]]] = [[] for _ in range(LABEL_ROWS)]
    labels = []
    for word, z, _ in sorted([t for t in targets if t[2]], key=lambda t: -t[1]):
        at, half = x(z), 3.2 * len(word) + 4
        left, right = (at - 2 * half, at) if at > width - 80 else (at, at + 2 * half) if at < 80 else (at - half, at + half)
        row = next((r for r in range(LABEL_ROWS) if all(right < a or left > b for a, b in rows[r])), None)
        if row is None:
            continue
        rows[row].append((left, right))
        labels.append(
            f'<text x="{(left + right) / 2:.1f}" y="{66 + 12 * row}" font-size="10" text-anchor="middle" fill="#b00">{_esc(word)}</text>'
        )
    start = changed_from(data)
    # the line where "changed" starts: across the ticks and dots only, its value said in the caption
    threshold = (
        f'<line x1="{x(start) - 3:.1f}" y1="14" x2="{x(start) - 3:.1f}" y2="56" stroke="#b00" stroke-dasharray="3,3"/>'
        if start is not None
        else ""
    )
    where = f"; the dashed line: changed from z {start:.1f}, the least z of a word called changed" if start is not None else ""
    marks = "".join(
        f'<line x1="{x(v):.1f}" y1="10" x2="{x(v):.1f}" y2="14" stroke="#555"/>'
        f'<text x="{x(v):.1f}" y="9" font-size="9" text-anchor="middle" fill="#555">{v:g}</text>'
        for v in (-5, -2, 0, 2, 5, 10, 20, 50, 100)
        if low <= scaled(v) <= high
    )
    return (
        f'<figure><svg width="{width}" height="{70 + 12 * LABEL_ROWS}" role="img" aria-label="targets against the control words">'
        f"{marks}{ticks}{dots}{threshold}{''.join(labels)}</svg><figcaption class=muted>The verdict's statistic (energy z, on a log "
        f"scale) of the {len(controls)} control words (grey ticks: the corpora's own drift) and of each target (dots; red: "
        f"changed, named where there is room{where}); point at one for its word</figcaption></figure>"
    )


def by_verdict(data: Dict[str, Any]) -> bool:
    """Whether the rows are ordered by the verdict's z (run.in_order): then the headings, ranking.png and the strip
    show the z first, the score the rows go by."""
    return any((w.get("verdict") or {}).get("changed") is not None for w in data["words"])


def changed_from(data: Dict[str, Any]) -> Optional[float]:
    """The least verdict z of a word called changed: where "changed" starts on the z's axis (None: none called)."""
    zs = [w["verdict"]["z"] for w in data["words"] if (w.get("verdict") or {}).get("changed") and w["verdict"].get("z") is not None]
    return min(zs) if zs else None


def marks_line(summary: Optional[Dict[str, Any]]) -> str:
    """RETURNS (str): what the page says of the senses' marks (came, went, more, less) and how they were checked."""
    if not summary:
        return "no senses (--evidence)"
    if not summary.get("checked"):
        return "none drawn: no control words to check them against (" + summary.get("checks", "") + ")"
    marked = summary.get("marked", [])
    said = f"{len(marked)} of {summary.get('controls', 0)} control words got one" + (f" ({', '.join(marked[:6])})" if marked else "")
    if not summary.get("shown"):
        return f"withheld: {said}, more than the stated rate ({summary.get('checks', '')})"
    return f"checked: {said}, within the stated rate ({summary.get('checks', '')})"


def _interval_bar(low: Optional[float], value: Optional[float], high: Optional[float], top: float) -> str:
    if None in (low, value, high) or not all(math.isfinite(v) for v in (low, value, high)) or top <= 0:  # type: ignore[arg-type]
        return ""
    w = 120
    x0, x, x1 = (max(0.0, min(1.0, v / top)) * w for v in (low, value, high))  # type: ignore[operator]
    return (
        f'<svg width="{w}" height="12"><line x1="{x0:.1f}" y1="6" x2="{x1:.1f}" y2="6" stroke="#888" stroke-width="2"/>'
        f'<circle cx="{x:.1f}" cy="6" r="3" fill="#222"/></svg>'
    )


def write_report(
    folder: PathLike,
    data: Dict[str, Any],
    log: Callable[[str], Any] = print,
) -> Path:
    """Write the report into `folder` (new, empty, or a report written before): index.html, and ranking.png and
    maps/WORD.png where matplotlib is installed.

    data (Dict[str, Any]): what `spacy-elmo change` writes as JSON, with each word's "evidence".
    RETURNS (Path): the page.
    """
    folder = claim_folder(folder, CHANGE_REPORT, " for the report")
    _remove_earlier_files(folder, log)
    page = free_path(folder / "index.html", log)
    write_atomically(page, render_page(data), overwrite=False)
    with warnings.catch_warnings():  # matplotlib's (a glyph its font lacks, a tight layout): the page is what counts
        warnings.simplefilter("ignore")
        pngs = write_figures(folder, data, log)
    add_report_files(folder, [page, *pngs])
    if pngs:
        log(f"Wrote the report {page} and {len(pngs)} PNG figures")
    else:
        log(
            f"Wrote the report {page}; ranking.png and maps/WORD.png were not written: matplotlib is not installed (pip install matplotlib)"
        )
    return page


REPORT_FILES = ".spacy-elmo-report-files.json"  # what the last run wrote into the report folder


def free_path(path: Path, log: Callable[[str], Any]) -> Path:
    """RETURNS (Path): `path`, or where something is there after the earlier run's files went (a user's file, a link):
    a free name beside it (NAME.spacy-elmo-N.EXT), said in one line. A report never writes over what it did not write."""
    if not os.path.lexists(path):
        return path
    n = 2
    while os.path.lexists(beside := path.with_name(f"{path.stem}.spacy-elmo-{n}{path.suffix}")):
        n += 1
    log(f"{path} was not written by a report (a file put there): it was left as it is, and this run wrote {beside.name} beside it")
    return beside


def add_report_files(folder: PathLike, paths: Sequence[Path]) -> None:
    """Record `paths` (inside `folder`) as written by this run, each with the SHA-256 of what it holds, so that the next
    run into the folder removes them before it writes (no word's map or clusters file of an earlier run stays beside
    this run's), and only while they hold what this run wrote (a file edited or put in its place since stays)."""
    folder = Path(folder)
    listed = _listed(folder)
    names = {name for name, _ in listed}
    for p in paths:
        name = str(Path(p).relative_to(folder))
        if name not in names:
            listed.append((name, file_sha256(Path(p))))
            names.add(name)
    write_atomically(folder / REPORT_FILES, json.dumps([[name, digest] for name, digest in listed]) + "\n")


def check_report_files(folder: PathLike) -> None:
    """Refuse, in one line, a report folder whose record of written files (REPORT_FILES) is there but no plain file:
    a FIFO would block its reading for ever, a link would be followed. Called before the work and again on reading."""
    path = Path(folder) / REPORT_FILES
    if os.path.lexists(path) and not is_plain_file(path):
        raise InputError(
            f"{path} is not a plain file (a link, a FIFO or a folder put there): the report keeps its record of the files it "
            "wrote there. Remove it, or give another --report folder"
        )


def _listed(folder: Path) -> List[Tuple[str, Optional[str]]]:
    """The record's files: (name, SHA-256), the digest None in a record written before digests were kept."""
    check_report_files(folder)
    try:
        listed = json.loads((folder / REPORT_FILES).read_text(encoding="utf8"))
    except (OSError, ValueError):
        return []
    out: List[Tuple[str, Optional[str]]] = []
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, str):
            out.append((entry, None))
        elif isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], str):
            out.append((entry[0], entry[1]))
    return out


def _remove_earlier_files(folder: Path, log: Callable[[str], Any] = print) -> None:
    """Remove what the last run recorded writing: plain files inside the folder that still hold what it wrote (a
    link, anything it did not write, and a file changed since stay, the last said in one line); start this run's
    record."""
    root = folder.resolve()
    for name, digest in _listed(folder):
        if name in (MARKER, REPORT_FILES):  # the folder's own records are never "what the last run wrote" (a tampered list)
            continue
        path = folder / name
        inside = ".." not in Path(name).parts and not Path(name).is_absolute() and root in path.resolve().parents
        if inside and is_plain_file(path) and all(is_plain_folder(p) for p in path.parents if root in p.resolve().parents):
            if digest is not None and file_sha256(path) != digest:
                log(f"{path} changed since the report wrote it: it was left as it is")
                continue
            path.unlink()
    write_atomically(folder / REPORT_FILES, "[]\n")


def render_page(data: Dict[str, Any]) -> str:
    """RETURNS (str): the report's HTML: everything inline, no network."""
    settings = data["settings"]
    measure = settings["measures"][0]
    words = data["words"]
    top = max(
        [w.get("interval", {}).get(measure, [0, 0])[1] or 0 for w in words if w.get("interval")]
        + [w.get(measure) or 0 for w in words]
        + [0]
    )
    gold = data.get("gold") or {}
    graded = gold.get("graded", {})
    tested = [m for m in settings["measures"] if m in ("apd", "prt")]
    with_verdict = any(w.get("verdict") for w in words)
    no_null = without_null(words)
    # the verdict and its own figures first, beside the word; the scores and their tests after it, marked secondary
    head = ["#", "word", "changed"] + (["people's graded change"] if graded else [])
    head += ["energy z", "q vs chance (secondary)"] if no_null else ["verdict z", "vs controls p / q"] if with_verdict else []
    head += ["usages A", "usages B", measure, "95% interval", ""]
    head += [m for m in settings["measures"][1:]] + [f"{m} p / q (secondary)" for m in tested]
    head += ["senses", "senses JSD"]
    rows = []
    for rank, w in enumerate(words, start=1):
        interval = w.get("interval", {}).get(measure)
        ev = w.get("evidence") or {}
        verdict = w.get("verdict") or {}
        changed = verdict.get("changed", ev.get("changed_fdr"))
        undecided = "<span class=muted>needs controls</span>" if verdict.get("basis") == NO_NULL_BASIS else ""
        cells = [
            f'<td class="n">{rank}</td>',
            f'<td><a href="#{_anchor(w["word"])}">{_esc(w["word"])}</a></td>',
            f"<td>{'<span class=changed>yes</span>' if changed else 'no' if changed == 0 else undecided}</td>",
        ]
        if graded:  # people's beside the model's verdict, seen without scrolling
            cells.append(f'<td class="n">{_number(graded.get(w["word"]))}</td>')
        if with_verdict:
            shown = _number(verdict.get("q")) if no_null else f"{_number(verdict.get('p_controls'))} / {_number(verdict.get('q'))}"
            cells += [
                f'<td class="n">{_number(verdict.get("z"), 1)}</td>',
                f'<td class="n" data-v="{"" if verdict.get("q") is None else verdict["q"]}">{shown}</td>',
            ]
        cells += [
            f'<td class="n">{w["n_a"]}</td>',
            f'<td class="n">{w["n_b"]}</td>',
            f'<td class="n" data-v="{w.get(measure) if w.get(measure) is not None else ""}">{_number(w.get(measure))}</td>',
            f'<td class="n">{_number(interval[0]) + "-" + _number(interval[1]) if interval else ""}</td>',
            f"<td>{_interval_bar(interval[0], w.get(measure), interval[1], top) if interval else ''}</td>",
        ]
        cells += [f'<td class="n">{_number(w.get(m))}</td>' for m in settings["measures"][1:]]
        for m in tested:
            p, q = ev.get("p_values", {}).get(m), ev.get("q_values", {}).get(m)
            cells.append(
                f'<td class="n" data-v="{"" if q is None else q}">{_number(p)} / {_number(q)}</td>' if p is not None else "<td></td>"
            )
        cells += [
            f'<td class="n">{ev.get("senses", "")}</td>',
            f'<td class="n">{_number(ev.get("sense_jsd")) if ev else ""}</td>',
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    rule = data["settings"].get("binary", "")
    sections = [_word_section(w, measure, rule, by_verdict(data)) for w in words if w.get("evidence")]
    agreement = ""
    if gold:
        agreement = f"<p><b>Against people</b> ({_esc(gold.get('source', ''))}): {_esc(gold.get('summary', ''))}</p>"
    notes = "".join(f"<li>{_esc(n)}</li>" for n in data.get("notes", []))
    title = f"Semantic change: {Path(str(settings.get('index_a', 'A'))).name} vs {Path(str(settings.get('index_b', 'B'))).name}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>Which words changed meaning</h1>
<p>A: <code>{_esc(settings.get("index_a"))}</code><br>B: <code>{_esc(settings.get("index_b"))}</code><br>
biLM: <code>{_esc(settings.get("bilm", ""))}</code>; vectors: {_esc(settings.get("layer", ""))}; measure: <b>{_esc(measure)}</b>
(intervals: {_esc(settings.get("intervals", ""))}).<br>
Senses: {_esc(settings.get("senses", ""))}.<br>
<b>Changed</b>: {_esc(settings.get("verdict", "no verdict (--permutations 0)"))}.<br>
Tests beside it: {_esc(settings.get("null", "none (--permutations 0)"))}.<br>
Sense marks: {_esc(marks_line(settings.get("sense_marks")))}.</p>
{_controls_strip(data)}
{agreement}
{f"<ul>{notes}</ul>" if notes else ""}
<p><span id="count"></span> words, {_esc(settings.get("order", f"by {measure}"))} (click a column to sort).
<input id="filter" placeholder="filter words" aria-label="filter words"></p>
<div class="wide"><table id="ranking"><thead><tr>{"".join(f"<th>{_esc(h)}</th>" for h in head)}</tr></thead>
<tbody>{"".join(rows)}</tbody></table></div>
{"".join(sections)}
<script type="application/json" id="data">{_json_for_script(data)}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def _json_for_script(data: Dict[str, Any]) -> str:
    # every "<" as \u003c (and ">", "&"): no text of the data can end the script element or open a comment there
    text = json.dumps(
        {"settings": data["settings"], "words": [{"word": w["word"], "n_a": w["n_a"], "n_b": w["n_b"]} for w in data["words"]]}
    )
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _anchor(word: str) -> str:
    return "w-" + name_from_data(word)


def _word_section(w: Dict[str, Any], measure: str, rule: str, verdict_order: bool = False) -> str:
    ev = w["evidence"]
    interval = w.get("interval", {}).get(measure)
    score = _number(w.get(measure)) + (f" (95% interval {_number(interval[0])}-{_number(interval[1])})" if interval else "")
    others = []
    for m in ("apd", "prt"):
        if m != measure and w.get(m) is not None:
            iv = w.get("interval", {}).get(m)
            others.append(f"{m} {_number(w.get(m))}" + (f" ({_number(iv[0])}-{_number(iv[1])})" if iv else ""))
    tests = [f"{m}: p {_number(p)}, q {_number(ev.get('q_values', {}).get(m))}" for m, p in sorted(ev.get("p_values", {}).items())]
    found = w.get("verdict") or {}
    changed = found.get("changed", ev.get("changed_fdr"))
    verdict = "" if changed is None else ("<b class=changed>changed</b>" if changed else "<b>not changed</b>")
    if found.get("basis") == NO_NULL_BASIS:  # no null, no verdict: `changed` is None
        verdict = "<b>no verdict</b> (it needs control words)"
        tests.insert(0, f"secondary (no null): energy z {_number(found.get('z'), 1)}, q {_number(found.get('q'))} against chance alone")
    elif found:
        tests.insert(
            0,
            f"verdict ({found.get('basis', '')}): energy z {_number(found.get('z'), 1)}"
            + (f", p {_number(found.get('p_controls'))} against the controls" if found.get("p_controls") is not None else "")
            + f", q {_number(found.get('q'))}",
        )
    names = [", ".join(n) for n in ev.get("sense_names", [[] for _ in range(ev["senses"])])]
    names += [""] * (ev["senses"] - len(names))
    legend = "".join(
        f'<span><span class="swatch" style="background:{sense_colour(j)}"></span>sense {j + 1}'
        f"{': <span class=name>' + _esc(names[j]) + '</span>' if names[j] else ''}</span>"
        for j in range(ev["senses"])
    )
    senses = []
    periods = ev.get("sense_periods", [])
    stability = ev.get("sense_stability", [])
    flags = ev.get("name_senses", [])
    for j, (na, nb) in enumerate(zip(ev["cluster_freq_dist1"], ev["cluster_freq_dist2"])):
        share_a = na / max(sum(ev["cluster_freq_dist1"]), 1)
        share_b = nb / max(sum(ev["cluster_freq_dist2"]), 1)
        examples = "".join(f'<div class="usage">{_esc(u["side"])}: {marked(u)}</div>' for u in ev["examples"][j])
        senses.append(
            f'<tr><td><span class="swatch" style="background:{sense_colour(j)}"></span>{j + 1}</td><td class="name">{_esc(names[j])}</td>'
            f"<td>{_period_label(periods[j]) if j < len(periods) else ''}"
            f"{'<br><span class=muted>names or headings</span>' if j < len(flags) and flags[j] and periods[j] != NAMES else ''}</td>"
            f'<td class="n">{na}</td><td class="n">{nb}</td><td class="n">{share_a:.2f}</td><td class="n">{share_b:.2f}</td>'
            f'<td class="n">{_number(stability[j], 2) if j < len(stability) and stability[j] is not None else "-"}</td>'
            f"<td>{examples}</td></tr>"
        )
    changed_usages = []
    for side, other in (("A", "B"), ("B", "A")):
        items = "".join(
            f'<div class="usage">{marked(u)} <span class="muted">(mean cosine to {side} less to {other}: {u["witness"]:.3f})</span></div>'
            for u in ev["changed"][side]
        )
        changed_usages.append(
            f"<p><b>Usages that most set {side} apart from {other}</b> (like {side}'s others, unlike {other}'s)</p>{items}"
        )
    word = w["word"]
    views = "".join(
        f"<figure>{_svg_map(ev['points'], f'usages of {word}, {caption}', side)}<figcaption>{caption}</figcaption></figure>"
        for caption, side in VIEWS
    )
    if verdict_order and found.get("z") is not None:  # the score the rows go by first, the measure after it
        title = f"verdict z {_number(found.get('z'), 1)} {verdict}"
        others.insert(0, f"{measure} {score}")
    else:
        title = f"{_esc(measure)} {score} {verdict}"
    return f"""
<h2 id="{_anchor(w["word"])}">{_esc(w["word"])}: {title}</h2>
<p>{_esc("; ".join(others + tests))}</p>
<div class="views">{views}</div>
<div class="legend">{legend}<br><span class="muted">circle: period A, square: period B; the first two principal components of
the senses' input; point at a usage for its text</span></div>
<p>{ev["senses"]} sense{"s" if ev["senses"] != 1 else ""} (the split the rule read: silhouette {_number(ev["silhouette"], 2)}, of the
usages of both periods{"; " + str(ev["joined"]) + " usages of unstable senses joined the nearest stable one" if ev.get("joined") else ""});
senses JSD {_number(ev["sense_jsd"])}
(95% interval {_number(ev["intervals"]["senses"][0])}-{_number(ev["intervals"]["senses"][1])});
a sense that came, went or moved ({_esc(rule)}): {"yes" if ev["binary"] else "no"}</p>
{_share_bars(ev, names)}
<table><thead><tr><th>sense</th><th>named by</th><th>period</th><th>A</th><th>B</th><th>share A</th><th>share B</th>
<th>stability</th><th>usages nearest its centre</th></tr></thead>
<tbody>{"".join(senses)}</tbody></table>
{"".join(changed_usages)}
"""


def _ranking_by_measure(plt: Any, data: Dict[str, Any], measure: str) -> Any:
    """The rows' measure with its 95% intervals, as the table orders them (no verdict)."""
    words = [w for w in data["words"] if w.get(measure) is not None and math.isfinite(w[measure])]
    if not words:
        return None
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.22 * len(words) + 1)))
    ys = list(range(len(words)))[::-1]
    values = [w[measure] for w in words]
    ends = [[w[measure] if v is None else v for v in w.get("interval", {}).get(measure, [None, None])] for w in words]
    low = [max(0.0, w[measure] - lo) for w, (lo, _) in zip(words, ends)]
    high = [max(0.0, hi - w[measure]) for w, (_, hi) in zip(words, ends)]
    ax.errorbar(values, ys, xerr=[low, high], fmt="o", ms=3, color="#222", ecolor="#888")
    ax.set_yticks(ys)
    ax.set_yticklabels([w["word"] for w in words], fontsize=7)
    ax.set_xlabel(f"{measure} (95% bootstrap interval), the order of the table")
    fig.tight_layout()
    return fig


def _ranking_by_z(plt: Any, data: Dict[str, Any]) -> Any:
    """The verdict's z of each row, in the table's order, beside the control words' range; a dashed line where
    "changed" starts."""
    words = [w for w in data["words"] if (w.get("verdict") or {}).get("z") is not None]
    if not words:
        return None
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.22 * len(words) + 1)))
    ys = list(range(len(words)))[::-1]
    controls = [c["z"] for c in data.get("controls", []) if c.get("z") is not None]
    if controls:
        ax.axvspan(min(controls), max(controls), color="#ddd", label=f"the {len(controls)} control words' z")
    colours = ["#b00" if w["verdict"].get("changed") else "#222" for w in words]
    ax.scatter([w["verdict"]["z"] for w in words], ys, c=colours, s=12, zorder=3)
    start = changed_from(data)
    if start is not None:
        ax.axvline(start, color="#b00", linestyle="--", linewidth=1, label=f"changed from z {start:.1f}")
    ax.set_yticks(ys)
    ax.set_yticklabels([w["word"] for w in words], fontsize=7)
    ax.set_xlabel("the verdict's z (energy distance against the control words), the order of the table; red: changed")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def write_figures(folder: Path, data: Dict[str, Any], log: Callable[[str], Any] = print) -> List[Path]:
    """ranking.png (the scores with their intervals) and maps/WORD.png; RETURNS the files written, none without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    measure = data["settings"]["measures"][0]
    written = []
    figure = _ranking_by_z(plt, data) if by_verdict(data) else _ranking_by_measure(plt, data, measure)
    if figure is not None:
        ranking = free_path(folder / "ranking.png", log)
        figure.savefig(ranking, dpi=110)
        plt.close(figure)
        written.append(ranking)
    maps = None
    for w in data["words"]:
        ev = w.get("evidence")
        if not ev:
            continue
        maps = maps or own_subfolder(folder, "maps")
        fig, ax = plt.subplots(figsize=(3.6, 4.4))
        for side, marker in (("A", "o"), ("B", "s")):
            points = [p for p in ev["points"] if p["side"] == side]
            ax.scatter(
                [p["x"] for p in points],
                [p["y"] for p in points],
                c=[sense_colour(p["sense"]) for p in points],
                marker=marker,
                s=14,
                alpha=0.7,
            )
            # the periods' legend in grey: colours mean senses only
            ax.scatter([], [], c="#555", marker=marker, s=14, label=f"period {side}")
        names = ev.get("sense_names", [])
        for j, period in enumerate(ev.get("sense_periods", [])):  # a swatch a sense: its number, name and period
            name = ", ".join(names[j][:2]) if j < len(names) and names[j] else ""
            said = "" if period == "both" else f" ({period})"
            ax.scatter([], [], c=sense_colour(j), marker="o", s=14, label=f"sense {j + 1}{': ' + name if name else ''}{said}")
        ax.set_title(f"{w['word']}: {ev['senses']} sense{'s' if ev['senses'] != 1 else ''}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, frameon=False)
        fig.tight_layout()
        path = free_path(maps / name_from_data(w["word"], ".png"), log)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
