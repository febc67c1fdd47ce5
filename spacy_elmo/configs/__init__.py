"""The configs that ship with spacy-elmo, found by name: pretraining presets
(`pretrain_{name}.cfg`) and a training config per task, with ELMo and as its matching baseline
(`{task}_elmo.cfg`, `{task}_baseline.cfg`: identical except for the ELMo part), and for NER and
textcat the baseline with a tok2vec pretrained by `spacy pretrain` (`{task}_spacy_pretrain.cfg`).
Multi-label textcat (`textcat_multilabel`) has no files of its own: its configs are textcat's, made multi-label
(`task_text`), so that the two differ in nothing else. Writing configs (`spacy-elmo init-config`, `fill-config`)
edits their text: `editing.py`."""

from pathlib import Path
from typing import Union

CONFIG_DIR = Path(__file__).parent
PRETRAIN_PRESETS = ("cpu", "small", "original")
TASKS = ("ner", "textcat", "textcat_multilabel", "tagger", "parser")
VARIANTS = ("elmo", "baseline", "spacy_pretrain")
SPACY_PRETRAIN_TASKS = ("ner", "textcat", "textcat_multilabel")
# a task whose configs are another's, edited: task -> the task whose files it reads
MADE_FROM = {"textcat_multilabel": "textcat"}


def pretrain_config(name_or_path: Union[str, Path]) -> Path:
    """A pretraining config: a file, or the name of a preset ("cpu", "small", "original").

    RETURNS (Path): the config file.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    if str(name_or_path) in PRETRAIN_PRESETS:
        return CONFIG_DIR / f"pretrain_{name_or_path}.cfg"
    raise FileNotFoundError(f"{name_or_path} is neither a config file nor a pretraining preset; presets: {', '.join(PRETRAIN_PRESETS)}")


def task_config(task: str, variant: str = "elmo") -> Path:
    """The training config file of a task (of the task it is made from, for one in MADE_FROM: `task_text`).

    task (str): "ner", "textcat", "textcat_multilabel", "tagger" or "parser".
    variant (str): "elmo", "baseline" (the same without ELMo) or "spacy_pretrain" (the baseline
        with a tok2vec pretrained by `spacy pretrain`; NER and textcat).
    RETURNS (Path): the config file.
    """
    if task not in TASKS:
        raise ValueError(f"No config for the task {task!r}; tasks: {', '.join(TASKS)}")
    if variant not in VARIANTS:
        raise ValueError(f"No config variant {variant!r}; variants: {', '.join(VARIANTS)}")
    if variant == "spacy_pretrain" and task not in SPACY_PRETRAIN_TASKS:
        raise ValueError(f"No spacy pretrain config for {task!r}; there is one for {', '.join(SPACY_PRETRAIN_TASKS)}")
    return CONFIG_DIR / f"{MADE_FROM.get(task, task)}_{variant}.cfg"


def task_text(task: str, variant: str = "elmo") -> str:
    """RETURNS (str): the text of a task's training config (`task_config`), made multi-label for
    textcat_multilabel."""
    text = task_config(task, variant).read_text(encoding="utf8")
    if task == "textcat_multilabel":
        from .editing import multilabel_text

        text = multilabel_text(text)
    return text
