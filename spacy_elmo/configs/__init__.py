"""The configs that ship with spacy-elmo, found by name: pretraining presets
(`pretrain_{name}.cfg`) and a training config per task, with ELMo and as its matching baseline
(`{task}_elmo.cfg`, `{task}_baseline.cfg`: identical except for the ELMo part)."""
from pathlib import Path
from typing import Union

CONFIG_DIR = Path(__file__).parent
PRETRAIN_PRESETS = ("cpu", "small", "original")
TASKS = ("ner", "textcat", "tagger", "parser")


def pretrain_config(name_or_path: Union[str, Path]) -> Path:
    """A pretraining config: a file, or the name of a preset ("cpu", "small", "original").

    RETURNS (Path): the config file.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    if str(name_or_path) in PRETRAIN_PRESETS:
        return CONFIG_DIR / f"pretrain_{name_or_path}.cfg"
    raise FileNotFoundError(
        f"{name_or_path} is neither a config file nor a pretraining preset; presets: {', '.join(PRETRAIN_PRESETS)}"
    )


def task_config(task: str, elmo: bool = True) -> Path:
    """The training config of a task, with ELMo or as the matching baseline.

    task (str): "ner", "textcat", "tagger" or "parser".
    RETURNS (Path): the config file.
    """
    if task not in TASKS:
        raise ValueError(f"No config for the task {task!r}; tasks: {', '.join(TASKS)}")
    return CONFIG_DIR / f"{task}_{'elmo' if elmo else 'baseline'}.cfg"
