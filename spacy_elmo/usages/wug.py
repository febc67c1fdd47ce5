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
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Sequence, Tuple, Union

import numpy

from ..errors import InputError
from ..types import PathLike

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language

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
        with open(path, encoding="utf8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            missing = [c for c in required if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(
                    f"{path} has no column {', '.join(missing)}: a WUG file is tab-separated with a header naming {', '.join(required)}"
                )
            for line, row in enumerate(reader, start=2):
                yield line, row
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


def embed_uses(nlp: "Language", uses: Sequence[WugUse], batch_size: int = 32) -> numpy.ndarray:
    """Every layer's vector of each usage's target token, from Docs of the file's own tokens.

    nlp (Language): a pipeline with an `elmo` component (`load_elmo_pipeline`); only that component runs (the
        context is one biLM sequence, as the file gives it), its tokenizer is not used.
    RETURNS (numpy.ndarray): float32 (n_uses, L + 1, D).
    """
    from spacy.tokens import Doc

    from ..pipeline.loading import elmo_names

    # the whole context is one sequence of the biLM, as the file gives it (no sentencizer splits it)
    starts: List[Union[bool, int, None]] = [True]
    docs = (Doc(nlp.vocab, words=list(use.tokens), sent_starts=starts + [False] * (len(use.tokens) - 1)) for use in uses)
    vectors = []
    with nlp.select_pipes(enable=elmo_names(nlp)[:1]):
        for use, doc in zip(uses, nlp.pipe(docs, batch_size=batch_size)):
            vectors.append(doc._.elmo.layers[:, use.index])
    if not vectors:
        raise InputError("no usages to embed")
    return numpy.stack(vectors).astype(numpy.float32)
