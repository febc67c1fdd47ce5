"""The biLM's hyperparameters, as stored in the original `options.json`."""

import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import srsly

from ..errors import ElmoFormatError

# The 2048-filter char CNN of every released ELMo model.
RELEASED_FILTERS: Tuple[Tuple[int, int], ...] = (
    (1, 32),
    (2, 32),
    (3, 64),
    (4, 128),
    (5, 256),
    (6, 512),
    (7, 1024),
)
# How a token's characters become ids: "utf8" (the original files), "learned" (ELMoForManyLangs).
CHAR_VOCABS = ("utf8", "learned")
# The settings of a learned token input, which `spacy-elmo.BiLM.v2` does not take.
LEARNED_INPUT = ("char_vocab", "word_dim", "n_words")


@dataclass(frozen=True)
class ElmoOptions:
    """All hyperparameters of a biLM, and the one place they are defined: the config blocks
    (`spacy-elmo.BiLM.v2`, a pretraining config's `[bilm]`) take exactly these fields, with these
    defaults, the released "small" ELMo (elmo_2x1024_128_2048cnn_1xhighway). Field names follow spaCy
    config style; `from_json` and `to_json` convert from and to the nested layout of options.json.

    cell_dim (int): LSTM cell size C ("lstm.dim").
    projection_dim (int): token-embedding and per-direction output size P.
    n_layers (int): biLSTM layers L.
    cell_clip (Optional[float]): clip of the cell state, None for no clipping.
    proj_clip (Optional[float]): clip of the projected hidden state, None for no clipping.
    use_skip_connections (bool): residual connections on layers >= 1.
    char_embed_dim (int): size of the character embeddings.
    filters (Tuple[Tuple[int, int], ...]): (width, n_filters) of each char CNN filter.
    n_highway (int): highway layers after the char CNN.
    activation (str): "relu" or "tanh", applied after the max-pool.
    n_characters (int): 261 (files written for training) or 262 (for inference) with char_vocab
        "utf8"; with "learned", the size of the character vocabulary.
    max_characters_per_token (int): characters per token, markers included.
    char_vocab (str): "utf8": a token's characters are its UTF-8 bytes (every AllenNLP / bilm-tf
        model); "learned": a character vocabulary stored with the weights (ELMoForManyLangs).
    word_dim (int): width of a word embedding joined to the char CNN's output before the
        projection (ELMoForManyLangs); 0 for none. Needs char_vocab "learned".
    n_words (int): rows of that word embedding (its vocabulary, stored with the weights).
    """

    cell_dim: int = 1024
    projection_dim: int = 128
    n_layers: int = 2
    cell_clip: Optional[float] = 3.0
    proj_clip: Optional[float] = 3.0
    use_skip_connections: bool = True
    char_embed_dim: int = 16
    filters: Tuple[Tuple[int, int], ...] = RELEASED_FILTERS
    n_highway: int = 1
    activation: str = "relu"
    n_characters: int = 262
    max_characters_per_token: int = 50
    char_vocab: str = "utf8"
    word_dim: int = 0
    n_words: int = 0
    extra: Dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        problems = []
        for name in (
            "cell_dim",
            "projection_dim",
            "n_layers",
            "char_embed_dim",
            "n_highway",
            "n_characters",
            "max_characters_per_token",
            "word_dim",
            "n_words",
        ):
            value = getattr(self, name)
            if not _is_int(value):
                problems.append(f"{name} must be an integer, got {value!r}")
                object.__setattr__(self, name, 1)  # checked no further
            else:
                object.__setattr__(self, name, int(value))
        for name in ("cell_clip", "proj_clip"):
            value = getattr(self, name)
            if value is not None and (not _is_number(value) or not 0 < float(value) < math.inf):
                problems.append(f"{name} must be a positive number or null (no clipping), got {value!r}")
            elif value is not None:
                object.__setattr__(self, name, float(value))
        if not isinstance(self.use_skip_connections, bool):
            problems.append(f"use_skip_connections must be true or false, got {self.use_skip_connections!r}")
        filters = _filters(self.filters)
        if filters is None:
            problems.append(f"filters must be [width, number] pairs of positive integers, got {self.filters!r}")
            filters = ((1, 1),)
        object.__setattr__(self, "filters", filters)
        for name in ("cell_dim", "projection_dim", "n_layers", "char_embed_dim"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.n_highway < 0:
            problems.append(f"n_highway must be >= 0, got {self.n_highway}")
        if self.activation not in ("relu", "tanh"):
            problems.append(f"activation must be 'relu' or 'tanh', got {self.activation!r}")
        if self.char_vocab not in CHAR_VOCABS:
            problems.append(f"char_vocab must be 'utf8' or 'learned', got {self.char_vocab!r}")
        elif self.char_vocab == "utf8":
            if self.n_characters not in (261, 262):
                problems.append(f"n_characters must be 261 or 262, got {self.n_characters}")
            if self.word_dim or self.n_words:
                problems.append("a word embedding (word_dim, n_words) needs char_vocab 'learned'")
        elif self.n_characters < 1:
            problems.append(f"n_characters must be >= 1, got {self.n_characters}")
        if self.word_dim < 0 or self.n_words < 0 or (self.word_dim > 0) != (self.n_words > 0):
            problems.append(f"word_dim and n_words must both be 0 or both positive, got {self.word_dim} and {self.n_words}")
        if not self.filters:
            problems.append("filters must not be empty")
        if self.filters and self.max_width > self.max_characters_per_token:
            problems.append("the widest filter is wider than max_characters_per_token")
        if self.max_characters_per_token < 3:
            problems.append("max_characters_per_token must be >= 3")
        if self.projection_dim > self.cell_dim:
            problems.append("projection_dim must not exceed cell_dim (lstm.dim)")
        if problems:
            raise ElmoFormatError("Invalid ELMo options: " + "; ".join(problems))

    @property
    def n_filters(self) -> int:
        """RETURNS (int): F, the total number of char CNN filters."""
        return sum(n for _, n in self.filters)

    @property
    def max_width(self) -> int:
        """RETURNS (int): the widest char CNN filter."""
        return max(w for w, _ in self.filters)

    @property
    def token_input_dim(self) -> int:
        """RETURNS (int): the width before the token layer's projection: F, plus the word embedding's."""
        return self.n_filters + self.word_dim

    @property
    def has_char_projection(self) -> bool:
        """RETURNS (bool): whether the token layer ends with a projection F (+ word_dim) -> P
        (ELMoForManyLangs' always does)."""
        return self.char_vocab == "learned" or self.token_input_dim != self.projection_dim

    @property
    def has_lstm_projection(self) -> bool:
        """RETURNS (bool): whether the LSTM cell output is projected C -> P."""
        return self.projection_dim != self.cell_dim

    @property
    def output_dim(self) -> int:
        """RETURNS (int): width of every reported layer, 2P."""
        return 2 * self.projection_dim

    @property
    def n_output_layers(self) -> int:
        """RETURNS (int): L + 1, the token layer and the biLSTM layers."""
        return self.n_layers + 1

    def matches(self, other: "ElmoOptions") -> bool:
        """Whether two option sets describe the same computation (n_characters 261 and 262
        both mean the same ids and weights, so they are not compared)."""
        return not self.differences(other)

    def differences(self, other: "ElmoOptions") -> List[str]:
        """RETURNS (List[str]): "name: mine vs other's" for each setting that makes the two differ."""
        return [
            f"{name} {_config_value(getattr(self, name))} vs {_config_value(getattr(other, name))}"
            for name in self.names()
            if name != "n_characters" and getattr(self, name) != getattr(other, name)
        ]

    def check_matches(self, other: "ElmoOptions", problem: str, fix: str) -> None:
        """Raise an ElmoFormatError naming the settings that differ, unless `matches(other)`.

        problem (str): what does not match what, e.g. "The saved biLM does not match the config".
        fix (str): what to do about it.
        """
        differences = self.differences(other)
        if differences:
            raise ElmoFormatError(f"{problem}: {', '.join(differences)}. {fix}")

    @classmethod
    def names(cls) -> List[str]:
        """RETURNS (List[str]): the hyperparameters' names, in order."""
        return [f.name for f in fields(cls) if f.name != "extra"]

    @classmethod
    def utf8_names(cls) -> List[str]:
        """RETURNS (List[str]): the hyperparameters of a biLM with UTF-8 byte input (the
        settings of `spacy-elmo.BiLM.v2`, which has none of LEARNED_INPUT)."""
        return [name for name in cls.names() if name not in LEARNED_INPUT]

    @classmethod
    def defaults(cls) -> Dict[str, Any]:
        """RETURNS (Dict[str, Any]): every hyperparameter's default, as config values."""
        return cls().to_config(all_fields=True)

    def to_config(self, all_fields: bool = False) -> Dict[str, Any]:
        """The hyperparameters as config values (lists, not tuples): for a UTF-8 biLM without the
        learned-input settings (the block of `spacy-elmo.BiLM.v2`), unless `all_fields`.

        RETURNS (Dict[str, Any]): name -> value.
        """
        names = self.names() if all_fields or self.char_vocab != "utf8" else self.utf8_names()
        return {name: _config_value(getattr(self, name)) for name in names}

    @classmethod
    def from_config(cls, block: Dict[str, Any]) -> "ElmoOptions":
        """Read the hyperparameters of a config block (e.g. a pretraining config's `[bilm]`),
        without resolving it through spaCy's registry. Keys starting with "@" are ignored;
        missing ones take their defaults.

        block (Dict[str, Any]): field names of `ElmoOptions` and their values.
        RETURNS (ElmoOptions): the options.
        """
        names = cls.names()
        unknown = sorted(k for k in block if not k.startswith("@") and k not in names)
        if unknown:
            raise ElmoFormatError(f"Unknown biLM setting(s) {', '.join(unknown)}: a [bilm] block takes {', '.join(names)}")
        return cls(**{k: v for k, v in block.items() if k in names})

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ElmoOptions":
        """Read the nested dict of an original options.json; training-only keys are kept
        in `extra` and otherwise ignored.
        """
        try:
            lstm = data["lstm"]
            cnn = data["char_cnn"]
            return cls(
                cell_dim=lstm["dim"],
                projection_dim=lstm["projection_dim"],
                n_layers=lstm["n_layers"],
                cell_clip=lstm.get("cell_clip"),
                proj_clip=lstm.get("proj_clip"),
                use_skip_connections=lstm.get("use_skip_connections", False),
                char_embed_dim=cnn["embedding"]["dim"],
                filters=cnn["filters"],
                n_highway=cnn.get("n_highway", 0),
                activation=cnn.get("activation", "tanh"),
                n_characters=cnn.get("n_characters", 262),
                max_characters_per_token=cnn.get("max_characters_per_token", 50),
                char_vocab=cnn.get("char_vocab", "utf8"),
                word_dim=data.get("word_embedding", {}).get("dim", 0),
                n_words=data.get("word_embedding", {}).get("n_words", 0),
                extra={k: v for k, v in data.items() if k not in ("lstm", "char_cnn", "word_embedding")},
            )
        except ElmoFormatError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ElmoFormatError(
                f"Invalid ELMo options: missing or malformed entry {err!s}. Expected the layout "
                "of an original options.json: {'lstm': {'dim', 'projection_dim', 'n_layers', ...}, "
                "'char_cnn': {'embedding': {'dim'}, 'filters', 'n_highway', ...}}."
            ) from err

    def to_json(self) -> Dict[str, Any]:
        """RETURNS (Dict[str, Any]): the nested layout of an original options.json."""
        lstm: Dict[str, Any] = {
            "dim": self.cell_dim,
            "projection_dim": self.projection_dim,
            "n_layers": self.n_layers,
            "use_skip_connections": self.use_skip_connections,
        }
        if self.cell_clip is not None:
            lstm["cell_clip"] = self.cell_clip
        if self.proj_clip is not None:
            lstm["proj_clip"] = self.proj_clip
        data = dict(self.extra)
        data["lstm"] = lstm
        data["char_cnn"] = {
            "activation": self.activation,
            "embedding": {"dim": self.char_embed_dim},
            "filters": [list(f) for f in self.filters],
            "n_highway": self.n_highway,
            "n_characters": self.n_characters,
            "max_characters_per_token": self.max_characters_per_token,
        }
        # only where used, so that the options.json of a UTF-8 biLM keeps the original layout
        if self.char_vocab != "utf8":
            data["char_cnn"]["char_vocab"] = self.char_vocab
        if self.word_dim:
            data["word_embedding"] = {"dim": self.word_dim, "n_words": self.n_words}
        return data

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "ElmoOptions":
        data = read_json_object(path, "ELMo options file")
        try:
            return cls.from_json(data)
        except ElmoFormatError as err:
            raise ElmoFormatError(f"{path}: {err}") from None

    def to_file(self, path: Union[str, Path], overwrite: bool = True) -> None:
        """Write options.json through a temporary file and a rename (never through a link at `path`; without
        `overwrite`, only where no file has that name: `output_folders.publish_file`)."""
        from ..output_folders import write_atomically

        write_atomically(path, srsly.json_dumps(self.to_json(), indent=2), overwrite)


def read_json_object(path: Union[str, Path], what: str) -> Dict[str, Any]:
    """Read a JSON file that must hold an object; an ElmoFormatError naming `what` and the file
    where it is missing, not JSON, or not an object."""
    path = Path(path)
    if not path.is_file():
        raise ElmoFormatError(f"{what} not found: {path}")
    try:
        data = srsly.read_json(path)
    except ValueError as err:
        raise ElmoFormatError(f"{what} {path} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ElmoFormatError(f"{what} {path} must hold a JSON object")
    return data


def _config_value(value: Any) -> Any:
    return [list(v) for v in value] if isinstance(value, tuple) else value


def _is_int(value: Any) -> bool:
    """An integer, or a float that is one (1024.0); not a bool, a string or 1024.7."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _filters(value: Any) -> Optional[Tuple[Tuple[int, int], ...]]:
    """The (width, number) pairs of a filters setting, None if it is not such a list."""
    try:
        pairs = [tuple(pair) for pair in value]
    except TypeError:
        return None
    if not all(len(p) == 2 and all(_is_int(x) and x >= 1 for x in p) for p in pairs):
        return None
    return tuple((int(w), int(n)) for w, n in pairs)
