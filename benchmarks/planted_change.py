"""The planted-change benchmark of `spacy-elmo change` (Shoemark et al. 2019; Schlechtweg & Schulte im Walde 2020):
change is planted where none exists, and the command, run as a user runs it, is checked for finding it.

Per seed and setting: corpus B is a random half of Wikipedia paragraphs; corpus A is the other half ("halves": no
word truly changes between them) or Reuters paragraphs of about as many words ("genre": every word drifts). Target
nouns are drawn by a stated rule; half of them get a donor's sense in B: a share s of the target's usages in B
(10%, 15%, 20%, 30% or 50%, in turn) are the donor's usages with the donor's word replaced by the target (its capitals
kept); the other half are left alone as controls. Then, from the command line with its defaults:

    spacy-elmo change A.txt B.txt change.json --model BILM --words WORDS --evidence

and from change.json: ranking AUC (planted against controls) per measure, the verdict's recall per share and its
false-positive rate on the controls, whether the senses show a one-side sense (DWUG's rule: at most 1 usage on one
side, at least 5 on the other) and whether that sense's names hold the donor.

Rules (stated, seeded): a noun is a word form that UD English-EWT (train) tags NOUN in at least 90% of at least 3
occurrences, all letters, 4 or more, no stop word; targets, controls and donors are drawn from the nouns with
`--min-count` to `--max-count` occurrences in each side, spread over four log-frequency bins; a donor needs enough
usages in B for its share, and shares no first four letters with its target.

    python benchmarks/planted_change.py --seeds 0 1 2 --json planted.json
"""

import argparse
import gzip
import json
import math
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SHARES = (0.1, 0.15, 0.2, 0.3, 0.5)
_WORD = re.compile(r"[^\W\d_]+")


def read_paragraphs(path: Path, n: int, skip: int = 0) -> List[str]:
    """The first `n` non-empty lines (paragraphs) of a .txt.gz after `skip` of them."""
    out: List[str] = []
    with gzip.open(path, "rt", encoding="utf8") as f:
        seen = 0
        for line in f:
            line = line.strip()
            if not line:
                continue
            seen += 1
            if seen > skip:
                out.append(line)
                if len(out) >= n:
                    break
    return out


def ewt_nouns(conllu: Path, share: float = 0.9, least: int = 3) -> set:
    """Word forms (lowercase) that UD English-EWT tags NOUN in at least `share` of at least `least` occurrences."""
    tags: Dict[str, Counter] = {}
    for line in conllu.read_text(encoding="utf8").splitlines():
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) > 3 and cols[0].isdigit():
            tags.setdefault(cols[1].lower(), Counter())[cols[3]] += 1
    return {w for w, c in tags.items() if sum(c.values()) >= least and c["NOUN"] / sum(c.values()) >= share}


def counts(paragraphs: Iterable[str]) -> Counter:
    found: Counter = Counter()
    for p in paragraphs:
        found.update(w.lower() for w in _WORD.findall(p))
    return found


def word_pattern(word: str) -> "re.Pattern[str]":
    """A word as the usage index finds it: case-insensitive, not inside a longer run of word characters."""
    return re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)


def with_case_of(model: str, word: str) -> str:
    """`word` written in the capitals of `model`: all capitals, a capital first, or lowercase."""
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


PLANTED = "\ue000"  # marks a planted usage while the corpora are built (planted_windows takes it out)


def plant(paragraphs: List[str], donor: str, target: str, k: int, rng: numpy.random.Generator) -> Tuple[List[str], int]:
    """Replace `k` of the donor's usages (drawn with `rng`) by the target, its capitals kept, each marked PLANTED.
    RETURNS: the paragraphs and how many usages were replaced."""
    pattern = word_pattern(donor)
    places = [
        (i, m.start(), m.end()) for i, p in enumerate(paragraphs) for m in pattern.finditer(p) if p[m.start() - 1 : m.start()] != PLANTED
    ]
    chosen = sorted((places[j] for j in rng.choice(len(places), min(k, len(places)), replace=False)), reverse=True)
    out = list(paragraphs)
    for i, start, end in chosen:  # from the end of each paragraph: offsets before stay valid
        p = out[i]
        out[i] = p[:start] + PLANTED + with_case_of(p[start:end], target) + p[end:]
    return out, len(chosen)


WINDOW = 60  # characters each side of a planted usage kept to know it again in change's output


def planted_windows(paragraphs: List[str]) -> Tuple[List[str], Dict[str, List[Tuple[str, str]]]]:
    """The paragraphs with the PLANTED marks taken out, and per planted word (lowercase) the text around each of
    its planted usages: (WINDOW characters before, WINDOW after), within its paragraph."""
    clean, windows = [], {}  # type: Tuple[List[str], Dict[str, List[Tuple[str, str]]]]
    for p in paragraphs:
        parts = p.split(PLANTED)
        text = "".join(parts)
        start = 0
        for part in parts[:-1]:
            start += len(part)
            word = re.match(r"\w+", text[start:]).group(0)  # type: ignore[union-attr]
            end = start + len(word)
            windows.setdefault(word.lower(), []).append((text[max(0, start - WINDOW) : start], text[end : end + WINDOW]))
        clean.append(text)
    return clean, windows


def is_planted(snippet: str, windows: Sequence[Tuple[str, str]], context: int = 30) -> bool:
    """Whether a map point's text ("...before[[target]]after...", run._snippet) is one of the planted usages."""
    found = re.match(r"^(?:…)?(.*?)\[\[(.+?)\]\](.*?)(?:…)?$", snippet, re.S)
    if not found:
        return False
    before, after = found.group(1)[-context:], found.group(3)[:context]
    return any(left.endswith(before) and right.startswith(after) for left, right in windows)


def draw_words(
    nouns: set, count_a: Counter, count_b: Counter, n: int, low: int, high: int, rng: numpy.random.Generator, stop: set
) -> List[str]:
    """`n` nouns with `low` to `high` occurrences in A and in B, as many from each of four log-frequency bins."""
    eligible = sorted(
        w for w in nouns if len(w) >= 4 and w.isalpha() and w not in stop and low <= count_a[w] <= high and low <= count_b[w] <= high
    )
    edges = numpy.exp(numpy.linspace(math.log(low), math.log(high + 1), 5))
    bins = [[w for w in eligible if edges[j] <= min(count_a[w], count_b[w]) < edges[j + 1]] for j in range(4)]
    drawn: List[str] = []
    for j in range(n):
        pool = [w for w in bins[j % 4] if w not in drawn] or [w for w in eligible if w not in drawn]
        drawn.append(pool[rng.integers(len(pool))])
    return drawn


def auc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """The probability that a planted word outranks a control (ties count a half)."""
    if not positive or not negative:
        return float("nan")
    wins = sum((p > q) + 0.5 * (p == q) for p in positive for q in negative)
    return wins / (len(positive) * len(negative))


MOVED = ("came in B", "went from A", "more in B", "less in B")  # what the senses' binary change counts


def one_side_sense(ev: Dict, marks: Tuple[str, ...] = ("came in B", "went from A")) -> int:
    """The index of the first sense `change` marked with one of `marks` (its evidence's sense_periods: what the page,
    TSV and JSON show, after the senses' checks); -1 where none."""
    return next((j for j, period in enumerate(ev.get("sense_periods", [])) if period in marks), -1)


def same_noun(name: str, donor: str) -> bool:
    """Whether a sense's name word is the donor, or its singular or plural (-s, -es, -ies), in any capitals."""
    a, b = name.lower(), donor.lower()

    def plurals(w: str) -> Tuple[str, ...]:
        return (w + "s", w + "es") + ((w[:-1] + "ies",) if w.endswith("y") else ())

    return a == b or a in plurals(b) or b in plurals(a)


def written_form(usage: Dict, word: str) -> str:
    """How the target is written in a usage record: "caps" (all capitals), "capital" (a capital first),
    "derived" (another form than the word) or "plain"; "" where the record does not mark it."""
    if "start" in usage:
        text = usage["text"][usage["start"] : usage["end"]]
    else:  # the map's points mark the target [[so]]
        marked = re.search(r"\[\[(.+?)\]\]", usage["text"])
        if not marked:
            return ""
        text = marked.group(1)
    if text.isupper() and len(text) > 1:
        return "caps"
    if text[:1].isupper():
        return "capital"
    return "plain" if text.lower() == word else "derived"


def spelling_shares(data: Dict) -> Dict[str, List[int]]:
    """Usages written otherwise than the plain word (capitals, all capitals, derived forms), [found, of], among
    all the usages the page maps and among the farthest ("changed") usages it lists as evidence."""
    found = {"all": [0, 0], "evidence": [0, 0]}
    for w in data["words"]:
        ev = w.get("evidence") or {}
        for key, usages in (("all", ev.get("points", [])), ("evidence", [u for side in (ev.get("changed") or {}).values() for u in side])):
            for u in usages:
                form = written_form(u, w["word"])
                if form:
                    found[key][0] += form != "plain"
                    found[key][1] += 1
    return found


def read_articles(path: Path, n: int) -> List[List[str]]:
    """The articles (blocks of paragraphs between blank lines) of a .txt.gz, in file order, until `n` paragraphs."""
    articles: List[List[str]] = [[]]
    seen = 0
    with gzip.open(path, "rt", encoding="utf8") as f:
        for line in f:
            line = line.strip()
            if not line:
                if articles[-1]:
                    articles.append([])
                continue
            articles[-1].append(line)
            seen += 1
            if seen >= n:
                break
    return [a for a in articles if a]


def build_setting(args, setting: str, seed: int, work: Path, nouns: set, stop: set) -> Dict:
    """Corpora A and B of a setting, a document a paragraph ("halves", "genre") or an article ("order": A the first
    half of the articles in the dump's order, B the second: topics drift, no word's sense is planted in A)."""
    rng = numpy.random.default_rng(seed)
    if setting == "order":
        articles = read_articles(args.wiki, args.paragraphs)
        sizes = numpy.cumsum([len(x) for x in articles])
        cut = int(numpy.searchsorted(sizes, sizes[-1] / 2))
        docs_a, docs_b = articles[: cut + 1], articles[cut + 1 :]
    else:
        wiki = read_paragraphs(args.wiki, args.paragraphs)
        order = rng.permutation(len(wiki))
        half = len(wiki) // 2
        docs_b = [[wiki[i]] for i in order[half:]]
        if setting == "halves":
            docs_a = [[wiki[i]] for i in order[:half]]
        else:
            reuters = read_paragraphs(args.reuters, 10**9)
            words_b = sum(len(p.split()) for d in docs_b for p in d)
            docs_a, total = [], 0
            for i in rng.permutation(len(reuters)):
                if total >= words_b:
                    break
                docs_a.append([reuters[i]])
                total += len(reuters[i].split())
    a = [p for d in docs_a for p in d]
    b = [p for d in docs_b for p in d]
    where = [j for j, d in enumerate(docs_b) for _ in d]  # each paragraph of B's document
    count_a, count_b = counts(a), counts(b)
    n = args.targets
    words = draw_words(nouns, count_a, count_b, 2 * n, args.min_count, args.max_count, rng, stop)
    targets, controls = words[:n], words[n : 2 * n]
    planted: Dict[str, Dict] = {}
    used = set(words)
    shares = args.shares
    for j, target in enumerate(targets):
        share = shares[j % len(shares)]
        k = math.ceil(share * count_b[target] / (1 - share))
        donors = [
            w
            for w in sorted(nouns)
            if w not in used
            and w.isalpha()
            and len(w) >= 4
            and w not in stop
            and w[:4] != target[:4]
            and count_b[w] >= k + 5
            and count_b[w] <= 4 * max(k, args.max_count)
        ]
        if not donors:
            continue
        donor = donors[rng.integers(len(donors))]
        used.add(donor)
        b, done = plant(b, donor, target, k, rng)
        planted[target] = {"donor": donor, "share": share, "replaced": done, "n_b_before": count_b[target]}
    b, windows = planted_windows(b)
    folder = work / f"{setting}-{seed}"
    folder.mkdir(parents=True, exist_ok=True)
    # a blank line between documents (the unit the verdict's test shuffles), a paragraph a line
    by_doc: List[List[str]] = [[] for _ in docs_b]
    for j, p in zip(where, b):
        by_doc[j].append(p)
    (folder / "A.txt").write_text("\n\n".join("\n".join(d) for d in docs_a) + "\n", encoding="utf8")
    (folder / "B.txt").write_text("\n\n".join("\n".join(d) for d in by_doc) + "\n", encoding="utf8")
    listed = list(planted) + controls
    rng.shuffle(listed)
    (folder / "words.txt").write_text("\n".join(listed) + "\n", encoding="utf8")
    return {
        "setting": setting,
        "seed": seed,
        "folder": str(folder),
        "planted": planted,
        "controls": controls,
        "windows": {w: windows.get(w, []) for w in planted},
        "documents": [len(docs_a), len(docs_b)],
    }


def run_change(args, plan: Dict) -> Dict:
    """`spacy-elmo change` on the corpora, their indexes kept (--keep-indexes); where kept by an earlier run, on them."""
    folder = Path(plan["folder"])
    out = folder / "change.json"
    kept = folder / "indexes"
    if not out.exists() or args.again:
        if (kept / "B" / "meta.json").exists():
            sides = [str(kept / "A"), str(kept / "B")]
        else:
            sides = [str(folder / "A.txt"), str(folder / "B.txt"), "--keep-indexes", str(kept)]
        command = [
            sys.executable, "-m", "spacy_elmo", "change", *sides[:2], str(out), *sides[2:],
            "--model", str(args.bilm), "--words", str(folder / "words.txt"), "--evidence", "--overwrite", *args.change_args,
        ]  # fmt: skip
        started = time.perf_counter()
        subprocess.run(command, check=True)
        plan["seconds"] = time.perf_counter() - started
    return json.loads(out.read_text())


MARKS = ("came in B", "went from A", "more in B", "less in B")


def sense_purity(ev: Dict, windows: Sequence[Tuple[str, str]]) -> List[Dict]:
    """Each marked sense of a word (MARKS): its mark, its usages and how many of them are planted (read from the
    map's points: every usage the senses were found from)."""
    periods = ev.get("sense_periods", [])
    out = []
    for j, period in enumerate(periods):
        if period not in MARKS:
            continue
        members = [p for p in ev.get("points", []) if p["sense"] == j]
        planted = sum(p["side"] == "B" and is_planted(p["text"], windows) for p in members)
        out.append({"sense": j, "mark": period, "usages": len(members), "planted": planted})
    return out


PURE = 0.7  # a sense marked "came in B" holding at least this share of planted usages shows the planted sense


def evaluate(plan: Dict, data: Dict) -> Dict:
    words = {w["word"]: w for w in data["words"]}
    planted, controls = plan["planted"], plan["controls"]
    result: Dict = {"setting": plan["setting"], "seed": plan["seed"], "basis": data["settings"].get("verdict_basis")}

    def value(w: Dict, key: str) -> float:
        v = w.get(key) if key in w else (w.get("verdict") or {}).get(key)
        return float(v) if v is not None else float("-inf")

    scored = {w for w in words if words[w].get("verdict")}
    for key in ("apd", "prt", "energy", "z"):
        result[f"auc_{key}"] = auc(
            [value(words[w], key) for w in planted if w in scored], [value(words[w], key) for w in controls if w in scored]
        )
    # the page's and TSV's order (run.in_order, said in settings.order): the JSON's rows are in it, first first
    place = {w["word"]: -k for k, w in enumerate(data["words"])}
    result["auc_order"] = auc([place[w] for w in planted if w in scored], [place[w] for w in controls if w in scored])
    result["controls_changed"] = [w for w in controls if w in scored and words[w]["verdict"]["changed"]]
    result["controls_scored"] = sum(w in scored for w in controls)
    result["controls_one_side"] = [w for w in controls if w in scored and one_side_sense(words[w]["evidence"]) >= 0]
    result["controls_shifted"] = [w for w in controls if w in scored and one_side_sense(words[w]["evidence"], marks=MOVED) >= 0]
    per_share: Dict[str, Dict] = {}
    for w, info in planted.items():
        if w not in scored:
            continue
        row = per_share.setdefault(str(info["share"]), {"n": 0, "changed": 0, "one_side": 0, "shifted": 0, "named": 0})
        row["n"] += 1
        row["changed"] += words[w]["verdict"]["changed"]
        ev = words[w]["evidence"]
        row["one_side"] += one_side_sense(ev) >= 0
        row["shifted"] += one_side_sense(ev, marks=MOVED) >= 0
        j = one_side_sense(ev, marks=("came in B",))  # the planted sense is B's: named after its donor?
        j = j if j >= 0 else one_side_sense(ev, marks=("more in B",))
        if j >= 0:
            names = ev["sense_names"][j] if j < len(ev["sense_names"]) else []
            donor = info["donor"]
            row["named"] += any(same_noun(n, donor) for n in names)
    result["per_share"] = per_share
    purity = {w: sense_purity(words[w]["evidence"], plan["windows"].get(w, [])) for w in planted if w in scored}
    total_planted = {
        w: sum(p["side"] == "B" and is_planted(p["text"], plan["windows"].get(w, [])) for p in words[w]["evidence"].get("points", []))
        for w in purity
    }
    result["purity"] = {w: {"marked": purity[w], "planted_usages": total_planted[w]} for w in purity}
    result["controls_marked"] = [w for w in controls if w in scored and any(sense_purity(words[w]["evidence"], []))]
    result["spelling"] = spelling_shares(data)
    # the verdict's variants, computed again from the controls that change scored: which statistic, how many controls
    from spacy_elmo.change.senses import benjamini_hochberg
    from spacy_elmo.change.verdict import against_controls

    control_stats = data.get("controls", [])
    variants = {}
    for key in ("z", "energy"):
        for n_controls in (10, 20, 40):
            pool = [c[key] for c in control_stats[:n_controls] if c.get(key) is not None]
            if len(pool) < 8:
                continue
            names = [w for w in list(planted) + controls if w in scored]
            q = benjamini_hochberg([against_controls(value(words[w], key), pool) for w in names])
            called = {w for w, x in zip(names, q) if x <= 0.05}
            variants[f"{key}@{n_controls}"] = {
                "recall": {s: sum(1 for w in called if w in planted and str(planted[w]["share"]) == s) for s in map(str, SHARES)},
                "controls_changed": sum(1 for w in called if w in controls),
            }
    result["variants"] = variants
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    beside = "(default: %(default)s, in the folder ../shared beside this clone)"
    parser.add_argument("--bilm", type=Path, default=SHARED / "models" / "elmo-small-wiki-reuters-cont", help=f"the biLM {beside}")
    parser.add_argument("--wiki", type=Path, default=SHARED / "data" / "raw" / "enwiki-20M.txt.gz", help=f"Wikipedia text {beside}")
    parser.add_argument("--reuters", type=Path, default=SHARED / "data" / "raw" / "reuters21578.txt.gz", help=f"Reuters text {beside}")
    parser.add_argument(
        "--ewt", type=Path, default=SHARED / "data" / "ud-ewt" / "en_ewt-ud-train.conllu", help=f"UD English-EWT train {beside}"
    )
    parser.add_argument("--settings", nargs="+", default=["halves", "genre"], choices=["halves", "genre", "order"])
    parser.add_argument("--shares", nargs="+", type=float, default=list(SHARES), help="the planted shares of B's usages, in turn")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--paragraphs", type=int, default=40_000, help="Wikipedia paragraphs split into halves")
    parser.add_argument("--targets", type=int, default=20, help="planted targets, and as many controls")
    parser.add_argument("--min-count", type=int, default=100)
    parser.add_argument("--max-count", type=int, default=500)
    parser.add_argument("--work", type=Path, default=Path("planted_change"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--again", action="store_true", help="run change again where its output exists")
    parser.add_argument("--forms", action="store_true", help="also: do forced senses follow grammatical number (--lemmas)?")
    parser.add_argument("change_args", nargs="*", help="after --: more options for spacy-elmo change")
    args = parser.parse_args()
    for path in (args.bilm, args.wiki, args.reuters, args.ewt):
        if not path.exists():
            sys.exit(f"{path} not found: this benchmark reads ../shared (or give --bilm, --wiki, --reuters, --ewt)")
    from spacy.lang.en.stop_words import STOP_WORDS

    from spacy_elmo.bilm.precision import cpu_class

    print(f"CPU: {cpu_class().describe()}; biLM: {args.bilm}")
    nouns = ewt_nouns(args.ewt)
    results = []
    for setting in args.settings:
        for seed in args.seeds:
            plan = build_setting(args, setting, seed, args.work, nouns, set(STOP_WORDS))
            data = run_change(args, plan)
            result = evaluate(plan, data)
            result["plan"] = plan
            results.append(result)
            shares = ", ".join(
                f"{s}: {r['changed']}/{r['n']} changed, {r['one_side']} came/went, {r['shifted']} moved, {r['named']} named"
                for s, r in sorted(result["per_share"].items())
            )
            print(
                f"{setting} seed {seed}: AUC order {result['auc_order']:.3f} apd {result['auc_apd']:.3f} energy "
                f"{result['auc_energy']:.3f} z {result['auc_z']:.3f}; "
                f"controls changed {len(result['controls_changed'])}/{result['controls_scored']}, one-side "
                f"{len(result['controls_one_side'])}; planted {shares} ({result['basis']})",
                flush=True,
            )
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
    summarise(results)
    if args.forms:
        first = next(r["plan"] for r in results if r["setting"] == "halves")
        forced_senses_and_number(args, first)


def forced_senses_and_number(args, plan: Dict) -> None:
    """Do forced senses (k >= 2 always, --min-silhouette 0) follow grammatical number? Side A of a random-halves
    run indexed with --lemmas (as a user would: `spacy-elmo index-usages`), its target and control nouns: per noun
    whose usages are under half plural (a form ending in s), whether a sense is at least 80% plural, from the
    context-only vectors as they are and with the forms' directions out (sense_input.without_forms)."""
    from spacy_elmo.change.sense_input import without_forms
    from spacy_elmo.change.senses import SenseRule, sense_clusters
    from spacy_elmo.usages.index import UsageIndex

    folder = Path(plan["folder"])
    index_path = folder / "lemmas_A"
    if not (index_path / "meta.json").exists():
        command = [
            sys.executable, "-m", "spacy_elmo", "index-usages", str(args.bilm), str(folder / "A.txt"), str(index_path),
            "--words", str(folder / "words.txt"), "--lemmas", "--all-layers", "--quiet",
        ]  # fmt: skip
        subprocess.run(command, check=True)
    index = UsageIndex().from_disk(index_path).with_layer("context:top")
    words = [w for w in (folder / "words.txt").read_text(encoding="utf8").split() if w]
    found = {"as they are": 0, "forms out": 0}
    checked = 0
    for word in words:
        rows = numpy.sort(index.rows_of(word))[:1000]
        forms = [index.usage(int(r)).text.lower() for r in rows]
        plural = numpy.array([f != word and f.endswith("s") for f in forms])
        if len(rows) < 20 or not 0 < plural.mean() < 0.5:
            continue
        checked += 1
        vectors = numpy.asarray(index.vectors[rows], dtype=numpy.float64)
        for label, x in (("as they are", vectors), ("forms out", without_forms(vectors, forms))):
            labels = sense_clusters(x, 0, rule=SenseRule(0.0)).labels
            found[label] += any(plural[labels == j].mean() >= 0.8 for j in numpy.unique(labels))
    print(
        f"\nForced senses (--min-silhouette 0) of {checked} nouns under half plural ({plan['setting']} seed {plan['seed']}, side A, "
        f"--lemmas): a sense at least 80% plural for {found['as they are']} as the vectors are, {found['forms out']} with the "
        "forms' directions out"
    )


def pooled(rs: List[Dict], shares: Sequence[float], key: str) -> str:
    n = sum(r["per_share"].get(str(s), {}).get("n", 0) for r in rs for s in shares)
    c = sum(r["per_share"].get(str(s), {}).get(key, 0) for r in rs for s in shares)
    return f"{c}/{n}"


def summarise(results: List[Dict]) -> None:
    shares = sorted({float(s) for r in results for s in r["per_share"]})
    print(
        "\n| setting | seeds | AUC the page's order | AUC apd | AUC energy z | controls changed | "
        + " | ".join(f"recall {s:.0%}" for s in shares)
        + " |"
    )
    print("|---|---|---:|---:|---:|---:|" + "---:|" * len(shares))
    for setting in sorted({r["setting"] for r in results}):
        rs = [r for r in results if r["setting"] == setting]
        fp = sum(len(r["controls_changed"]) for r in rs)
        nc = sum(r["controls_scored"] for r in rs)
        recalls = []
        for s in map(str, shares):
            n = sum(r["per_share"].get(s, {}).get("n", 0) for r in rs)
            c = sum(r["per_share"].get(s, {}).get("changed", 0) for r in rs)
            recalls.append(f"{c}/{n}")
        print(
            f"| {setting} | {len(rs)} | {numpy.mean([r['auc_order'] for r in rs]):.3f} | {numpy.mean([r['auc_apd'] for r in rs]):.3f} | "
            f"{numpy.mean([r['auc_z'] for r in rs]):.3f} | "
            f"{fp}/{nc} | " + " | ".join(recalls) + " |"
        )
    print(
        "\n| setting | recall 10-15% | recall >= 30% | a sense came or went, >= 20% | came, went or moved, >= 20% | named (of B's "
        "sense) >= 20% | came or went, controls | came, went or moved, controls | evidence in capitals or derived / all usages |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for setting in sorted({r["setting"] for r in results}):
        rs = [r for r in results if r["setting"] == setting]
        high = [s for s in shares if s >= 0.2]
        one_side_controls = f"{sum(len(r['controls_one_side']) for r in rs)}/{sum(r['controls_scored'] for r in rs)}"
        moved_controls = f"{sum(len(r.get('controls_shifted', [])) for r in rs)}/{sum(r['controls_scored'] for r in rs)}"
        ev = [sum(r["spelling"]["evidence"][j] for r in rs) for j in (0, 1)]
        every = [sum(r["spelling"]["all"][j] for r in rs) for j in (0, 1)]
        one_side, moved = pooled(rs, high, "one_side"), pooled(rs, high, "shifted")
        print(
            f"| {setting} | {pooled(rs, [0.1, 0.15], 'changed')} | {pooled(rs, [0.3, 0.5], 'changed')} | {one_side} | {moved} | "
            f"{pooled(rs, high, 'named')} | {one_side_controls} | {moved_controls} | "
            f"{ev[0] / max(ev[1], 1):.1%} / {every[0] / max(every[1], 1):.1%} |"
        )

    summarise_purity(results)


def summarise_purity(results: List[Dict]) -> None:
    """Do the senses marked as change hold the planted usages, and do untouched words get no mark?"""
    print(
        f"\n| setting | seeds | planted >= 30%: a 'came in B' sense >= {PURE:.0%} planted | 'came in B' senses >= {PURE:.0%} planted | "
        "their planted usages / usages | planted words with any mark | untouched words with a mark | untouched words called changed |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for setting in sorted({r["setting"] for r in results}):
        rs = [r for r in results if r["setting"] == setting]
        high = found = pure = came = planted = usages = marked = 0
        for r in rs:
            for w, p in r.get("purity", {}).items():
                senses = [m for m in p["marked"] if m["mark"] == "came in B"]
                good = [m for m in senses if m["usages"] and m["planted"] / m["usages"] >= PURE]
                if r["plan"]["planted"][w]["share"] >= 0.3:
                    high += 1
                    found += bool(good)
                came += len(senses)
                pure += len(good)
                planted += sum(m["planted"] for m in senses)
                usages += sum(m["usages"] for m in senses)
                marked += bool(p["marked"])
        n_planted = sum(len(r.get("purity", {})) for r in rs)
        controls = sum(r["controls_scored"] for r in rs)
        print(
            f"| {setting} | {len(rs)} | {found}/{high} | {pure}/{came} | {planted}/{usages} | {marked}/{n_planted} | "
            f"{sum(len(r.get('controls_marked', [])) for r in rs)}/{controls} | {sum(len(r['controls_changed']) for r in rs)}/{controls} |"
        )


if __name__ == "__main__":
    main()
