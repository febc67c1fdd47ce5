"""How token texts become a biLM's input ids, in numpy alone (no torch): the PyTorch biLM
(bilm/char_ids.py) and the ONNX runtime (bilm_onnx/runtime.py) both read them from here.

UTF-8 input (every original ELMo file): raw ids 0-255 are UTF-8 bytes, then BOS 256, EOS 257,
BOW 258, EOW 259, PAD 260; every id is shifted by +1 so that 0 means "no token here". A token is
[BOW, bytes (at most W - 2), EOW, PAD...].

A learned character (and word) vocabulary (`LearnedVocab`): ELMoForManyLangs' `char.dic` and
`word.dic`, with the ids its own batching gives. Its `create_one_batch` writes a token as [id of
`<eow>`, its characters (unknown ones `<oov>`), id of `<bow>`, `<pad>`...] (it looks the two markers
up in swapped order, and its models were trained that way), sentence markers as [`<eow>`, `<bos>`
or `<eos>`, `<bow>`, `<pad>`...], tokens cut to max_characters_per_token - 2 characters (code
points, not bytes) before both look-ups, and words missing from `word.dic` as `<oov>`. Ids there
are shifted by +1 like the UTF-8 ids, so that 0 means "no token here" and row 0 of the char
embedding stays zero.
"""

from pathlib import Path
from typing import Any, Dict, Optional, Protocol, Sequence, Tuple, Union

import numpy

from .errors import ElmoFormatError, InputError

BOS = 256 + 1
EOS = 257 + 1
BOW = 258 + 1
EOW = 259 + 1
PAD = 260 + 1

SENTENCE_START = "<S>"
SENTENCE_END = "</S>"


def word_char_ids(word: str, max_chars: int = 50) -> numpy.ndarray:
    """The (shifted) character ids of one token. `<S>` and `</S>` give the sentence markers,
    as in the original tools.

    word (str): the token text.
    max_chars (int): ids per token, BOW and EOW included.
    RETURNS (numpy.ndarray): int64 array of shape (max_chars,).
    """
    ids = numpy.full((max_chars,), PAD, dtype=numpy.int64)
    ids[0] = BOW
    if word == SENTENCE_START or word == SENTENCE_END:
        ids[1] = BOS if word == SENTENCE_START else EOS
        ids[2] = EOW
        return ids
    # Truncate bytes, not characters, exactly like the original tools.
    data = word.encode("utf-8", "ignore")[: max_chars - 2]
    n = len(data)
    ids[1 : 1 + n] = numpy.frombuffer(data, dtype=numpy.uint8).astype(numpy.int64) + 1
    ids[1 + n] = EOW
    return ids


class TokenInput(Protocol):
    """How a biLM turns token texts into its inputs: char ids (shifted, 0 = no token) and,
    where it has a word embedding, word ids.

    start, end (str): the type keys of the sentence markers, as `char_ids` and `word_id` take them.
    pad_id (int): the (shifted) id of the padding after a token's characters.
    has_words (bool): whether `word_id` is used (a word embedding beside the char CNN).
    """

    start: str
    end: str
    pad_id: int
    has_words: bool

    def char_ids(self, word: str, max_chars: int) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): int64 (max_chars,) ids of `word` (`start`/`end`: the markers)."""

    def word_id(self, word: str, max_chars: int) -> int:
        """RETURNS (int): the word embedding's row for `word`."""


class Utf8Chars:
    """The input of every original ELMo file: UTF-8 bytes, `<S>` and `</S>` as markers."""

    start = SENTENCE_START
    end = SENTENCE_END
    pad_id = PAD
    has_words = False

    def char_ids(self, word: str, max_chars: int) -> numpy.ndarray:
        return word_char_ids(word, max_chars)

    def word_id(self, word: str, max_chars: int) -> int:
        raise ValueError("a UTF-8 biLM has no word embedding")


UTF8 = Utf8Chars()

CHAR_SPECIALS = ("<bow>", "<eow>", "<oov>", "<pad>", "<bos>", "<eos>")
WORD_SPECIALS = ("<oov>", "<pad>")


class LearnedVocab:
    """The token input of a biLM with a learned character vocabulary (`TokenInput`).

    chars (Dict[str, int]): character (or special symbol) -> row of the char embedding.
    words (Optional[Dict[str, int]]): word -> row of the word embedding, None without one.
    """

    start = "<bos>"
    end = "<eos>"

    def __init__(self, chars: Dict[str, int], words: Optional[Dict[str, int]] = None) -> None:
        _check_lexicon(chars, CHAR_SPECIALS, "character")
        if words is not None:
            _check_lexicon(words, WORD_SPECIALS, "word")
        self.chars = chars
        self.words = words
        self.pad_id = chars["<pad>"] + 1
        self.has_words = words is not None
        self._first = chars["<eow>"] + 1
        self._last = chars["<bow>"] + 1
        self._char_oov = chars["<oov>"]
        self._word_oov = words["<oov>"] if words is not None else -1

    def char_ids(self, word: str, max_chars: int) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): int64 (max_chars,) shifted char ids of `word`."""
        ids = numpy.full((max_chars,), self.pad_id, dtype=numpy.int64)
        ids[0] = self._first
        if word == self.start or word == self.end:
            ids[1] = self.chars[word] + 1
            ids[2] = self._last
            return ids
        word = word[: max_chars - 2]
        n = len(word)
        ids[1 : 1 + n] = [self.chars.get(c, self._char_oov) + 1 for c in word]
        ids[1 + n] = self._last
        return ids

    def word_id(self, word: str, max_chars: int) -> int:
        """RETURNS (int): the word embedding's row for `word` (cut as for its characters)."""
        if self.words is None:
            raise ValueError("this biLM has no word embedding")
        return self.words.get(word[: max_chars - 2], self._word_oov)

    @property
    def n_chars(self) -> int:
        return len(self.chars)

    @property
    def n_words(self) -> int:
        return len(self.words) if self.words is not None else 0

    def to_dict(self) -> Dict[str, Any]:
        return {"chars": self.chars, "words": self.words}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "LearnedVocab":
        return cls(dict(data["chars"]), None if data.get("words") is None else dict(data["words"]))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LearnedVocab) and self.chars == other.chars and self.words == other.words


def read_lexicon(path: Union[str, Path]) -> Dict[str, int]:
    """Read a `char.dic` / `word.dic` as ELMoForManyLangs does: `entry<TAB>id` per line, each line
    stripped of surrounding whitespace first, so that a whitespace entry loses its key and is read
    as U+3000 (as its reader does); a later line for the same entry wins.

    RETURNS (Dict[str, int]): entry -> id.
    """
    path = Path(path)
    if not path.is_file():
        raise ElmoFormatError(f"{path} not found: an ELMoForManyLangs model folder needs it beside config.json")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ElmoFormatError(f"{path} is not UTF-8 text ({err}): download the model again.") from None
    lexicon: Dict[str, int] = {}
    # its reader (codecs) splits lines where str.splitlines does, at U+2028 and U+0085 too
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        if len(fields) != 2 or not fields[1].lstrip("-").isdigit():
            raise ElmoFormatError(
                f"{path}, line {number}: expected 'entry<TAB>id', got {line.rstrip()[:60]!r}. "
                "The file is damaged: download the model again."
            )
        lexicon[fields[0]] = int(fields[1])
    return lexicon


def _check_lexicon(lexicon: Dict[str, int], specials: tuple, what: str) -> None:
    missing = [s for s in specials if s not in lexicon]
    if missing:
        raise ElmoFormatError(
            f"The {what} vocabulary lacks the special entries {', '.join(missing)}: it is not an ELMoForManyLangs "
            f"{what} vocabulary, or it is damaged."
        )
    if any(i < 0 for i in lexicon.values()):
        raise ElmoFormatError(f"The {what} vocabulary has negative ids: it is damaged.")
    largest = max(lexicon.values())
    if largest >= len(lexicon):  # the embedding has one row per entry
        raise ElmoFormatError(
            f"The {what} vocabulary gives id {largest} to an entry, but has {len(lexicon)} entries (ids 0-{len(lexicon) - 1}): "
            "it is damaged; download the model again."
        )
    pad = lexicon["<pad>"]
    if what == "character" and sum(1 for i in lexicon.values() if i == pad) > 1:
        raise ElmoFormatError("The character vocabulary gives the id of <pad> to another entry too: it is damaged.")


def check_sentences(sentences: Any) -> None:
    """Refuse, in one line, what is not a list of sentences of token strings: a string as a sentence would be
    embedded letter by letter, and an int, None or bytes token has no characters to read."""
    if isinstance(sentences, (str, bytes)):
        raise InputError("give a list of sentences, each a list of token strings (e.g. [['Hello', 'world']]), not one string")
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, (str, bytes)):
            raise InputError(
                f"sentence {i} is a string ({str(sentence)[:40]!r}): give each sentence as its tokens, e.g. text.split() or a spaCy Doc's "
                "[t.text for t in doc], or it is read letter by letter"
            )
        for j, token in enumerate(sentence):
            if not isinstance(token, str):
                raise InputError(f"token {j} of sentence {i} is {type(token).__name__} {token!r}, not a string: give token texts")


def sentence_ids(
    sentences: Sequence[Sequence[str]], max_chars: int, vocab: TokenInput = UTF8
) -> Tuple[numpy.ndarray, Optional[numpy.ndarray]]:
    """The ids of a batch of sentences as the original tools lay them out: each sentence wrapped
    in the markers (`vocab.start` ... `vocab.end`), padded positions all 0.

    sentences (Sequence[Sequence[str]]): token texts per sentence, without markers.
    max_chars (int): ids per token.
    vocab (TokenInput): the biLM's token input; default: UTF-8 bytes.
    RETURNS (Tuple[numpy.ndarray, Optional[numpy.ndarray]]): (B, T + 2, max_chars) int64 char ids,
        and (B, T + 2) int64 word ids where `vocab` has a word embedding (0 where padded), else None.
    """
    check_sentences(sentences)
    n_steps = max((len(s) for s in sentences), default=0) + 2
    chars = numpy.zeros((len(sentences), n_steps, max_chars), dtype=numpy.int64)
    words = numpy.zeros((len(sentences), n_steps), dtype=numpy.int64) if vocab.has_words else None
    known: Dict[str, Tuple[numpy.ndarray, int]] = {}
    for row, sentence in enumerate(sentences):
        for t, word in enumerate([vocab.start, *sentence, vocab.end]):
            ids = known.get(word)
            if ids is None:
                ids = known[word] = (vocab.char_ids(word, max_chars), vocab.word_id(word, max_chars) if words is not None else 0)
            chars[row, t] = ids[0]
            if words is not None:
                words[row, t] = ids[1]
    return chars, words
