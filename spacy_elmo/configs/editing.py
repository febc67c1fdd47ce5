"""Point a config at a biLM: its hyperparameters and file paths, written into the config's text so
that the file keeps its order and comments."""

import re
from pathlib import Path
from typing import Any, Dict, List, Union

import srsly
from thinc.api import Config

from ..bilm import ElmoFormatError

_SECTION = re.compile(r"^\[([^\]]+)\]\s*$")
_KEY = re.compile(r"^(@?[A-Za-z_][\w.-]*)\s*=")


def fill_config_text(text: str, source: Union[str, Path]) -> str:
    """Set a config to a biLM, changing nothing else.

    A training config: the model block of every `elmo` component gets the biLM's architecture and
    hyperparameters (listeners of `ElmoListener.v2` follow by interpolation; a v1 config's
    `[variables] elmo_width / elmo_layers` are set too); an options.json + weights.hdf5 folder is
    named by `[paths] elmo_options / elmo_weights`, any other biLM by `[initialize.components.NAME]
    bilm` (a released model by its name, read from the download cache). A pretraining config:
    `[bilm]` gets the hyperparameters and `[paths] init_bilm` the folder, so that training goes on
    from that biLM.

    text (str): the config file's text, not interpolated.
    source (Union[str, Path]): a biLM folder (absolute path) or a released model's name.
    RETURNS (str): the new text.
    """
    from ..released import implied_settings, resolve_bilm

    folder = resolve_bilm(source)
    # loaded, so that damaged weights are refused now, not inside `spacy train`
    options = folder.load(cache_size=0).options
    by_name = not Path(source).exists()
    config = Config().from_str(text, interpolate=False)
    block = options.to_config()
    if options.char_vocab != "utf8":
        block = {"@architectures": "spacy-elmo.BiLM.v3", **block}  # v1 and v2 read UTF-8 bytes only
    names = [name for name, block in config.get("components", {}).items() if block.get("factory") == "elmo"]
    if names:
        implied = implied_settings(source)
        for name in names:
            text = set_values(text, f"components.{name}.model", block)
            if implied:
                text = set_values(text, f"components.{name}", implied)
        variables = config.get("variables", {})
        widths = {"elmo_width": options.output_dim, "elmo_layers": options.n_output_layers}
        text = set_values(text, "variables", {k: v for k, v in widths.items() if k in variables})
        if folder.format == "allennlp" and not by_name:
            text = set_values(text, "paths", {"elmo_options": str(folder.options_file), "elmo_weights": str(folder.weights_file)})
        else:
            text = set_values(text, "paths", {"elmo_options": None, "elmo_weights": None})
            for name in names:
                text = set_values(text, f"initialize.components.{name}", {"bilm": str(source) if by_name else str(folder.path)})
    elif "bilm" in config:
        if folder.format == "elmoformanylangs":
            raise ElmoFormatError(
                f"{source} is an ELMoForManyLangs biLM: pretraining and adapting go on from options.json + weights.hdf5 "
                "biLMs only (its inputs are UTF-8 bytes). Use it in a training config (spacy-elmo init-config --bilm)."
            )
        if folder.format != "allennlp":
            raise ElmoFormatError(
                f"{source} is a TensorFlow checkpoint: pretraining and adapting go on from options.json + weights.hdf5; "
                f"write them with `spacy-elmo convert {source} FOLDER` and give FOLDER."
            )
        text = set_values(text, "bilm", {k: v for k, v in block.items() if not k.startswith("@")})
        text = set_values(text, "paths", {"init_bilm": str(folder.path)})
    else:
        raise ValueError(
            'The config has no component with factory = "elmo" and no [bilm] block: start from '
            "configs/ner_elmo.cfg, configs/textcat_elmo.cfg or a pretraining preset"
        )
    Config().from_str(text, interpolate=False)  # still a valid config
    return text


ELMO_PLACES = ("input", "output", "both")


def place_elmo_text(text: str, place: str) -> str:
    """Move a task config's ELMo to the encoder's `place`: "input" (as shipped, [x_k; ELMo_k]),
    "output" ([h_k; ELMo_k]) or "both" (two listeners, each with its own mix), by renaming or
    copying the `input_elmo` listener block of its `spacy-elmo.ElmoTok2Vec.v2` tok2vec in the text
    (order and comments kept).
    """
    if place not in ELMO_PLACES:
        raise ValueError(f"ELMo's place must be one of {', '.join(ELMO_PLACES)}, not {place!r}")
    if place == "input":
        return text
    lines = text.splitlines(keepends=True)
    architecture = '@architectures = "spacy-elmo.ElmoTok2Vec.v2"'
    tok2vec = [i for i, line in enumerate(lines) if line.strip() == architecture]
    if len(tok2vec) != 1:
        raise ValueError("expected one spacy-elmo.ElmoTok2Vec.v2 block in the config to place ELMo in")
    owner = _section_name(lines[tok2vec[0] - 1]) if tok2vec[0] else None
    if owner is None:
        raise ValueError("the ElmoTok2Vec.v2 architecture must follow its section header directly")
    listener = f"{owner}.input_elmo"
    starts = [i for i, line in enumerate(lines) if _section_name(line) == listener]
    if not starts:
        raise ValueError(f"expected an [{listener}] block (ELMo at the encoder's input) to place elsewhere")
    # the listener's sections ([...input_elmo] and [...input_elmo.mix]) and the comment lines just before the next section
    start = starts[0]
    end = next((i for i in range(start + 1, len(lines)) if _outside(_section_name(lines[i]), listener)), len(lines))
    while end > start and lines[end - 1].lstrip().startswith("#"):
        end -= 1
    block = lines[start:end]
    if block and block[-1].strip():
        block.append("\n")

    def renamed(key: str) -> List[str]:
        return [line.replace(f"[{listener}", f"[{owner}.{key}", 1) if _section_name(line) else line for line in block]

    new_block = renamed("output_elmo") if place == "output" else block + renamed("output_elmo")
    where = {"output": "at the encoder's output, [h_k; ELMo_k]", "both": "at the encoder's input and output, each with its own mix"}
    note = [f"# ELMo placed {where[place]}\n"]
    return "".join(note + lines[:start] + new_block + lines[end:])


_MULTILABEL = [
    # (what textcat's config says, what multi-label textcat's says): each must be there exactly once
    ('"textcat"]', '"textcat_multilabel"]'),
    ('factory = "textcat"\n', 'factory = "textcat_multilabel"\n'),
    ("exclusive_classes = true\n", "exclusive_classes = false\n"),
    ("threshold = 0.0\n", "threshold = 0.5\n"),
]
_MULTILABEL_SCORES = """# Multi-label: scored by spaCy's cats_score, the macro AUC over the labels (textcat_multilabel's own)
[training.score_weights]
cats_score = 1.0
cats_macro_f = 0.0
cats_micro_f = 0.0
cats_macro_auc = 0.0
cats_score_desc = null
cats_micro_p = null
cats_micro_r = null
cats_macro_p = null
cats_macro_r = null
cats_f_per_type = null
cats_auc_per_type = null
"""


def multilabel_text(text: str) -> str:
    """RETURNS (str): a textcat training config made multi-label (spaCy's textcat_multilabel: each label a yes/no
    of its own, threshold 0.5, scored by macro AUC), its component renamed to `textcat_multilabel` and nothing
    else changed."""
    for old, new in _MULTILABEL:
        if text.count(old) != 1:
            raise ValueError(f"a textcat config holds {old.strip()!r} {text.count(old)} times, not once: it cannot be made multi-label")
        text = text.replace(old, new)
    text = re.sub(r"^\[components\.textcat([.\]])", r"[components.textcat_multilabel\1", text, flags=re.M)
    text = text.replace("components.textcat.", "components.textcat_multilabel.")  # interpolations, comments
    scores = re.search(r"^(#[^\n]*\n)*\[training\.score_weights\]\n(?:[^\n\[]*\n)*", text, flags=re.M)
    if scores is None:
        raise ValueError("a textcat config without [training.score_weights]: it cannot be made multi-label")
    text = text[: scores.start()] + _MULTILABEL_SCORES + "\n" + text[scores.end() :].lstrip("\n")
    text = text.replace("--pipeline textcat ", "--pipeline textcat_multilabel ").replace("textcat_baseline.cfg", "its --baseline")
    return re.sub(r"^# TEXTCAT", "# TEXTCAT_MULTILABEL", text, count=1)


def use_static_vectors(text: str, vectors: Union[str, Path]) -> str:
    """Give a task config static vectors: every `spacy.MultiHashEmbed` block gets
    `include_static_vectors = true`, `[paths] vectors` names the pipeline folder that `spacy init
    vectors` wrote, and `[initialize] vectors` loads it. Comments and order stay.

    text (str): the config file's text, not interpolated.
    vectors (Union[str, Path]): a folder written by `spacy init vectors`.
    RETURNS (str): the new text.
    """
    config = Config().from_str(text, interpolate=False)
    embeds = [path for path, block in _blocks(config) if str(block.get("@architectures", "")).startswith("spacy.MultiHashEmbed")]
    if not embeds:
        raise ValueError("the config has no spacy.MultiHashEmbed block to give static vectors to")
    for path in embeds:
        text = set_values(text, path, {"include_static_vectors": True})
    text = set_values(text, "paths", {"vectors": str(vectors)})
    text = set_values(text, "initialize", {"vectors": Reference("paths.vectors")})
    Config().from_str(text, interpolate=False)  # still a valid config
    return text


def _blocks(config: Dict[str, Any], prefix: str = ""):  # type: ignore[no-untyped-def]
    """Every section of a config, as (dotted path, block), depth first."""
    for key, value in config.items():
        if isinstance(value, dict):
            path = f"{prefix}.{key}" if prefix else key
            yield path, value
            yield from _blocks(value, path)


def _outside(section: Union[str, None], parent: str) -> bool:
    """Whether a line that opens `section` (None: no section) ends the sections of `parent`."""
    return section is not None and section != parent and not section.startswith(parent + ".")


def set_values(text: str, section: str, values: Dict[str, Any]) -> str:
    """Set `key = value` lines of one section of a config's text: a key's line (and its
    continuation lines) is replaced where it is, a missing key goes after the section's last
    setting, a missing section goes before the first one. Comments and order stay.

    RETURNS (str): the new text.
    """
    if not values:
        return text
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if _section_name(line) == section), None)
    if start is None:
        first = next((i for i, line in enumerate(lines) if _section_name(line) is not None), len(lines))
        block = [f"[{section}]", *(f"{key} = {_dump(value)}" for key, value in values.items()), ""]
        lines[first:first] = block
        return "\n".join(lines) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if _section_name(lines[i]) is not None), len(lines))
    missing = dict(values)
    out: List[str] = lines[: start + 1]
    last_setting = start + 1
    i = start + 1
    while i < end:
        match = _KEY.match(lines[i])
        span = 1
        while match and i + span < end and lines[i + span][:1] in (" ", "\t") and lines[i + span].strip():
            span += 1  # a value continued on indented lines
        if match and match.group(1) in missing:
            out.append(f"{match.group(1)} = {_dump(missing.pop(match.group(1)))}")
        else:
            out.extend(lines[i : i + span])
        if match:
            last_setting = len(out)
        i += span
    out[last_setting:last_setting] = [f"{key} = {_dump(value)}" for key, value in missing.items()]
    return "\n".join(out + lines[end:]) + "\n"


def _section_name(line: str) -> Union[str, None]:
    match = _SECTION.match(line.strip())
    return match.group(1) if match else None


class Reference(str):
    """A value written as the interpolation `${name}`, unquoted."""


def _dump(value: Any) -> str:
    return "${" + value + "}" if isinstance(value, Reference) else srsly.json_dumps(value)
