"""Target words as a user gives them: a file (one a line), a comma-separated string or a list, lowercased; a
WUG-style part of speech ("attack_nn") read off the word, and the Universal POS tag it asks for."""

import csv
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import InputError
from ..types import PathLike


def read_words(path: PathLike, keep_pos: bool = False, keep_case: bool = False) -> List[str]:
    """The target words of a file, lowercased (as written with `keep_case`): one a line (WUG's `attack_nn` is read as
    `attack`, or kept with `keep_pos`), `#` lines skipped."""
    words = []
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            for row in csv.reader(f, delimiter="\t"):
                if row and row[0].strip() and not row[0].startswith("#"):
                    word = row[0].strip()
                    word = word if keep_pos else split_pos(word)[0]
                    words.append(word if keep_case else word.lower())
    except UnicodeDecodeError as err:
        raise InputError(f"{path} is not UTF-8 ({err.reason} at byte {err.start}): save the word list as UTF-8") from None
    if not words:
        raise InputError(f"{path} names no word: one target word a line")
    return list(dict.fromkeys(words))


def parse_words(words: Union[PathLike, Sequence[str]], keep_pos: bool = False, keep_case: bool = False) -> List[str]:
    """The target words, lowercased (as written with `keep_case`: a WUG dataset's target names, "Bank_nn" apart from
    "bank_nn"), from a file (one a line, see `read_words`), a comma-separated string or a list; a WUG-style part of
    speech ("attack_nn") left out, or kept with `keep_pos` (see `target_pos`)."""

    def one(word: str) -> str:
        if keep_case:
            return word if keep_pos else split_pos(word)[0]
        return word.lower() if keep_pos else split_pos(word)[0].lower()

    if isinstance(words, (list, tuple)):
        found = [one(w.strip()) for w in words if w.strip()]
    elif Path(str(words)).is_file():
        return read_words(str(words), keep_pos, keep_case)
    else:
        found = [one(w.strip()) for w in str(words).split(",") if w.strip()]
    if not found:
        raise InputError(f"{words!r} names no word: give a file (one word a line) or words separated by commas")
    return list(dict.fromkeys(found))


WUG_POS = ("nn", "vb", "jj", "rb", "NN", "VB", "JJ", "RB")


WUG_UPOS = {"nn": "NOUN", "vb": "VERB", "jj": "ADJ", "rb": "ADV"}
UPOS = ("NOUN", "PROPN", "VERB", "AUX", "ADJ", "ADV", "ADP", "DET", "PRON", "NUM", "CCONJ", "SCONJ", "PART", "INTJ", "PUNCT", "SYM", "X")


def target_pos(words: Optional[Sequence[str]], pos: Optional[str] = None) -> Dict[str, str]:
    """RETURNS (Dict[str, str]): the part of speech (a Universal POS tag) each target word's usages must have:
    WUG's suffix ("attack_nn": NOUN), else `pos` for every word ("*" where no words are given); none: {}."""
    if pos is not None and pos.upper() not in UPOS:
        raise InputError(f"--pos {pos!r} is not a Universal POS tag: give one of {', '.join(UPOS)}")
    default = pos.upper() if pos else None
    if words is None:
        return {"*": default} if default else {}
    found = {}
    for word in words:
        stem, suffix = split_pos(word)
        tag = WUG_UPOS.get(suffix.lower()) or default
        if tag:
            found[stem.lower()] = tag
    return found


def split_pos(word: str) -> Tuple[str, str]:
    """("attack", "nn") for WUG's "attack_nn"; (word, "") where it has no part-of-speech suffix."""
    stem, _, pos = word.rpartition("_")
    return (stem, pos) if stem and pos in WUG_POS else (word, "")
