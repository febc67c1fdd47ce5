"""The WUG format of usage sets with human judgments (DWUG EN/DE/SV, DURel, SURel, RuSemShift, RuShiftEval as
distributed by the WUG project): per target word a folder `data/WORD/` with `uses.csv` and `judgments.csv`,
tab-separated despite the name.

- `uses.csv`: one usage a row; read here: `identifier`, `grouping` (the period or corpus: "1", "2"),
  `context_tokenized` (tokens split by spaces) and `indexes_target_token_tokenized` (the target's token index in
  it); `lemma` where present.
- `judgments.csv`: `identifier1`, `identifier2`, `judgment` (1 unrelated ... 4 identical; 0 "cannot decide",
  left out).

The target is the token the file marks, never found again by a tokenizer: a Doc is built from the file's own
tokens, so no re-tokenisation can shift it.
"""

import csv
import math
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy

from ..errors import InputError
from ..types import PathLike

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

    from ..usages.index import UsageIndex

USE_COLUMNS = ("identifier", "grouping", "context_tokenized", "indexes_target_token_tokenized")
JUDGMENT_COLUMNS = ("identifier1", "identifier2", "judgment")


@dataclass(frozen=True)
class WugUse:
    """One usage: its identifier, group (period), tokens and the target's token index."""

    identifier: str
    grouping: str
    tokens: Tuple[str, ...]
    index: int
    lemma: str = ""


def _rows(path: Path, required: Sequence[str]) -> Iterable[Tuple[int, Dict[str, str]]]:
    csv.field_size_limit(min(sys.maxsize, 1 << 31 - 1))
    try:
        # utf-8-sig: a byte order mark before the header is no part of its first column's name
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(
                    f"{path} has no column {', '.join(missing)}: a WUG file is tab-separated with a header naming {', '.join(required)}"
                )
            width = len(reader.fieldnames or [])
            for row in reader:
                if None in row or any(value is None for value in row.values()):
                    raise InputError(f"{path}, line {reader.line_num}: not the {width} tab-separated fields of its header: mend the row")
                yield reader.line_num, row
    except FileNotFoundError:
        raise InputError(f"{path} does not exist: a WUG word folder holds uses.csv and judgments.csv") from None
    except UnicodeDecodeError as err:
        raise InputError(f"{path} is not UTF-8 ({err.reason} at byte {err.start})") from None


def read_uses(path: PathLike) -> List[WugUse]:
    """RETURNS (List[WugUse]): the usages of a `uses.csv`, in file order; a row whose target index is not a token
    of its sentence is an error naming the line."""
    path = Path(path)
    uses = []
    for line, row in _rows(path, USE_COLUMNS):
        tokens = tuple(row["context_tokenized"].split(" "))
        if "" in tokens:
            raise InputError(
                f"{path}, line {line}: context_tokenized has an empty token (two spaces, or one at an end), which shifts the "
                "target's index: one space between tokens"
            )
        try:
            index = int(row["indexes_target_token_tokenized"].split(":")[0])
        except ValueError:
            raise InputError(
                f"{path}, line {line}: indexes_target_token_tokenized is {row['indexes_target_token_tokenized']!r}, not a token index"
            ) from None
        if not 0 <= index < len(tokens) or not tokens[index]:
            raise InputError(f"{path}, line {line}: the target index {index} is outside its sentence of {len(tokens)} tokens")
        uses.append(WugUse(row["identifier"], row["grouping"], tokens, index, row.get("lemma") or ""))
    return uses


def read_judgments(path: PathLike) -> Dict[Tuple[str, str], float]:
    """RETURNS (Dict[Tuple[str, str], float]): the mean judgment (1-4) of each usage pair (identifiers sorted),
    over its annotators; 0 ("cannot decide") left out."""
    path = Path(path)
    scores: Dict[Tuple[str, str], List[float]] = defaultdict(list)
    for line, row in _rows(path, JUDGMENT_COLUMNS):
        try:
            judgment = float(row["judgment"])
        except ValueError:
            raise InputError(f"{path}, line {line}: the judgment {row['judgment']!r} is not a number") from None
        if not (math.isfinite(judgment) and 0 <= judgment <= 4):
            raise InputError(f"{path}, line {line}: the judgment {row['judgment']!r} is not on the scale 1-4 (0: cannot decide)")
        if judgment > 0:
            a, b = sorted((row["identifier1"], row["identifier2"]))
            scores[(a, b)].append(judgment)
    return {pair: float(numpy.mean(values)) for pair, values in scores.items()}


def read_dataset(folder: PathLike) -> Dict[str, Tuple[List[WugUse], Dict[Tuple[str, str], float]]]:
    """RETURNS: per target word (its folder's name under `folder/data`, e.g. "attack_nn"), its usages and mean
    judgments; a word folder without judgments.csv gets none."""
    data = Path(folder) / "data"
    if not data.is_dir():
        raise InputError(f"{folder} has no data/ folder: give the WUG dataset's root (data/WORD/uses.csv)")
    words = {}
    for word_dir in sorted(p for p in data.iterdir() if p.is_dir()):
        judgments = read_judgments(word_dir / "judgments.csv") if (word_dir / "judgments.csv").exists() else {}
        words[word_dir.name] = (read_uses(word_dir / "uses.csv"), judgments)
    if not words:
        raise InputError(f"{data} holds no word folders")
    return words


def embed_uses(nlp: "Language", uses: Sequence[WugUse], batch_size: int = 32, keep_capitals: bool = False) -> numpy.ndarray:
    """Every layer's vector of each usage's target token, from Docs of the file's own tokens (a usage set in
    capitals read lowercased, as a usage index reads it, unless `keep_capitals`).

    nlp (Language): a pipeline with an `elmo` component (`load_elmo_pipeline`); only that component runs (the
        context is one biLM sequence, as the file gives it), its tokenizer is not used.
    RETURNS (numpy.ndarray): float32 (n_uses, L + 1, D).
    """
    from ..pipeline.export import sentence_doc
    from ..pipeline.loading import elmo_names
    from ..usages.capitals import as_read

    # the whole context is one sequence of the biLM, as the file gives it (no sentencizer splits it)
    docs = (as_read(sentence_doc(nlp.vocab, list(use.tokens)), not keep_capitals) for use in uses)
    vectors = []
    with nlp.select_pipes(enable=elmo_names(nlp)[:1]):
        for use, doc in zip(uses, nlp.pipe(docs, batch_size=batch_size)):
            vectors.append(doc._.elmo.layers[:, use.index])
    if not vectors:
        raise InputError("no usages to embed")
    return numpy.stack(vectors).astype(numpy.float32)


def is_wug_dataset(path: PathLike) -> bool:
    """RETURNS (bool): whether `path` is a WUG dataset's root (data/WORD/uses.csv)."""
    data = Path(path) / "data"
    return data.is_dir() and any((word / "uses.csv").is_file() for word in data.iterdir() if word.is_dir())


def build_wug_index(
    nlp: "Language",
    dataset: PathLike,
    output: PathLike,
    *,
    model: Optional[PathLike] = None,
    grouping: Optional[str] = None,
    words: Optional[Sequence[str]] = None,
    layer: Union[str, int, Sequence[float]] = "top",
    all_layers: bool = False,
    keep_capitals: bool = False,
    batch_size: int = 32,
    progress: bool = True,
    log: Callable[[str], Any] = print,
) -> "UsageIndex":
    """Index the usages a WUG dataset marks: each usage's target token (never found again by a tokenizer) in
    its whole context, one biLM sequence as the file gives it (as `embed_uses`), filed under its target's
    lemma ("attack" for data/attack_nn), with its identifier and grouping kept (sentences.jsonl "id",
    "grouping"). The same usage index format as `build_usage_index`'s, so `change`, `neighbours` and the
    report read it alike.

    grouping (Optional[str]): only the usages of this grouping (period), e.g. "1"; None: every usage.
    words (Optional[Sequence[str]]): only these targets ("attack" or "attack_nn"); None: every target.
    keep_capitals (bool): let the biLM read usages set in capitals as written (default: lowercased; capitals.py).
    RETURNS (UsageIndex): the index.
    """

    from ..output_folders import check_claimable, check_not_inside
    from ..pipeline.loading import elmo_names, elmo_pipe
    from ..progress_bar import progress_bar
    from ..pipeline.export import sentence_doc
    from ..usages.builder import UsageLayers, bilm_meta
    from ..usages.capitals import as_read
    from ..usages.index import UsageIndex, mixed, parse_layer
    from ..usages.layout import USAGE_INDEX
    from ..usages.storage import IndexWriter

    names = elmo_names(nlp)
    if not names:
        raise InputError("the pipeline has no elmo component: give a pipeline with one, or a folder with options.json + weights.hdf5")
    pipe = elmo_pipe(nlp, names[0])
    weights = parse_layer(layer, pipe.options.n_output_layers)
    targets = wug_targets(dataset, words)
    check_not_inside(output, dataset, "the WUG dataset")
    check_claimable(output, USAGE_INDEX, " for the index")
    meta = {
        **bilm_meta(nlp, pipe, model, weights, all_layers, keep_capitals),
        "lemmatizer": None,
        "match": "wug",
        "words": sorted(targets),
        "files": [str((folder / "uses.csv").resolve()) for _, folder in targets.values()],
        "wug": {"dataset": str(Path(dataset).resolve()), "grouping": grouping, "targets": {k: name for k, (name, _) in targets.items()}},
    }
    types: Counter = Counter()
    n_uses = 0
    layers_of = UsageLayers(pipe) if all_layers else None
    with IndexWriter(output, meta) as writer:
        for file_number, (key, (name, folder)) in enumerate(
            progress_bar(list(targets.items()), desc="Indexing usages", disable=not progress)
        ):
            uses = [use for use in read_uses(folder / "uses.csv") if grouping is None or use.grouping == grouping]
            for start in range(0, len(uses), batch_size):
                batch = uses[start : start + batch_size]
                docs = [sentence_doc(nlp.vocab, list(u.tokens)) for u in batch]
                records = [
                    {"text": doc.text, "file": file_number, "doc": start + k, "id": u.identifier, "grouping": u.grouping}
                    for k, (u, doc) in enumerate(zip(batch, docs))
                ]
                first = writer.add_sentences(records)
                vectors, layers, context = [], [], []
                columns: Dict[str, List[int]] = {"usage_sentence": [], "usage_token": [], "usage_start": [], "usage_end": []}
                read = pipe.pipe([as_read(doc, not keep_capitals) for doc in docs])
                for k, (use, original, doc) in enumerate(zip(batch, docs, read)):
                    types.update(use.tokens)
                    vectors.append(mixed(doc._.elmo.layers[:, use.index : use.index + 1], weights))
                    if all_layers:
                        assert layers_of is not None
                        own, around = layers_of.of(doc, [use.index])
                        layers.append(own)
                        context.append(around)
                    token = original[use.index]
                    columns["usage_sentence"].append(first + k)
                    columns["usage_token"].append(use.index)
                    columns["usage_start"].append(token.idx)
                    columns["usage_end"].append(token.idx + len(token.text))
                writer.add_usages(
                    numpy.concatenate(vectors),
                    {c: numpy.asarray(v) for c, v in columns.items()},
                    [key] * len(batch),
                    numpy.concatenate(layers) if all_layers else None,
                    numpy.concatenate(context) if all_layers else None,
                )
            n_uses += len(uses)
        if n_uses == 0:
            raise InputError(f"no usage of grouping {grouping!r} in {dataset}: its groupings are {', '.join(wug_groupings(dataset))}")
        type_list = sorted(types.items(), key=lambda item: (-item[1], item[0]))
        folder_out = writer.finish(type_list, pipe.bilm.embed_words([t for t, _ in type_list]))
    index = UsageIndex().from_disk(folder_out)
    index._embed_with(nlp, pipe.name)
    which = f"grouping {grouping}" if grouping is not None else "every grouping"
    log(f"Indexed {len(index):,} marked usages of {len(targets)} target words ({which}) of the WUG dataset {dataset}: {folder_out}")
    return index


def wug_targets(dataset: PathLike, words: Optional[Sequence[str]] = None) -> Dict[str, Tuple[str, Path]]:
    """RETURNS (Dict[str, Tuple[str, Path]]): per target key (the lemma, lowercased: "attack"), its name in the
    dataset ("attack_nn") and its folder; only `words` (keys or names) where given."""
    from ..usages.words import split_pos

    data = Path(dataset) / "data"
    if not is_wug_dataset(dataset):
        raise InputError(f"{dataset} is not a WUG dataset: give its root, with data/WORD/uses.csv")
    folders = sorted(p for p in data.iterdir() if p.is_dir() and (p / "uses.csv").is_file())
    if words is not None:  # chosen before the lemmas are checked apart: a target named as the dataset names it is that one
        given = [w.strip() for w in words if w.strip()]
        names = {f.name for f in folders}
        exact = {w for w in given if w in names}
        wanted = {split_pos(w)[0].lower() for w in given if w not in exact}
        keys = {split_pos(f.name)[0].lower() for f in folders}
        absent = sorted(wanted - keys)
        if absent:
            raise InputError(f"{dataset} has no target {', '.join(absent)} (it has {', '.join(sorted(keys)[:8])}, ...)")
        folders = [f for f in folders if f.name in exact or split_pos(f.name)[0].lower() in wanted]
    targets: Dict[str, Tuple[str, Path]] = {}
    for folder in folders:
        key = split_pos(folder.name)[0].lower()
        if key in targets:
            raise InputError(
                f"{dataset}: the targets {targets[key][0]} and {folder.name} share the lemma {key!r}: index them apart, one "
                f"at a time (--words {targets[key][0]}, then --words {folder.name})"
            )
        targets[key] = (folder.name, folder)
    return targets


def wug_groupings(dataset: PathLike) -> List[str]:
    """RETURNS (List[str]): the groupings (periods) that the dataset's usages name, sorted."""
    found: set = set()
    for _, folder in wug_targets(dataset).values():
        found.update(use.grouping for use in read_uses(folder / "uses.csv"))
    return sorted(found)
