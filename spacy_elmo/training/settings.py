"""The settings of a pretraining config and their defaults, stated once: a config names only what
it changes, and a misspelt setting is an error that names it."""

import math
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Tuple, Union, get_args, get_origin, get_type_hints

from confection import Config

from ..bilm import ElmoOptions
from ..errors import InputError

DEFAULTS = """
[paths]
train = null
dev = null
init_bilm = null

[system]
seed = 0
# torch threads (of each process); 0: the cores this process may use, less those busy with other
# work, followed while the run goes on; shared among this node's processes (bilm/threads.py)
threads = 0
# training processes on this machine's CPU, started by spacy-elmo itself as torchrun would start
# them (gloo): each reads its own part of the corpus and makes its own batches of batch_tokens, and
# their gradients are averaged, so an update sees processes x batch_tokens. Several GPUs: torchrun
processes = 1
# DataLoader processes that build batches; 0 builds them in the training process; null: 1 on
# CUDA, 0 on the CPU (where a worker would take cores from the step: measured 85% vs 91% of the
# step's speed with 2 cores)
data_workers = null
# -1: CPU; N: CUDA device N; null: CUDA if there is one (LOCAL_RANK under torchrun)
gpu_id = null
# on the CPU, keep the memory a step frees for the next step instead of handing it back to the
# system (glibc's malloc; training.memory): 1.2-1.3x faster steps, ~13% more peak memory
reuse_freed_memory = true

[corpus]
lang = "en"
max_length = 100
pool_size = 4000
dev_every_nth_doc = 50
# processes that tokenize raw text when it is prepared; 0: one per CPU core
prepare_processes = 0

[vocab]
max_size = 20000
min_count = 3

[softmax]
kind = "adaptive"
cutoffs = [2000, 10000]

[training]
optimizer = "adam"
learn_rate = 0.002
warmup_steps = 200
decay = "constant"
grad_clip = 10.0
dropout = 0.1
batch_tokens = 2048
max_steps = 0
max_minutes = 60
# passes over the training text after the softmax warm-up (fractions allowed; 0 = no limit);
# training stops at whichever of max_steps, max_minutes and max_epochs comes first
max_epochs = 0
log_every = 20
eval_every = 200
checkpoint_every = 100
dev_max_sentences = 2000
# fine-tuning a biLM that comes without its softmax (e.g. a released ELMo, [paths] init_bilm):
# train the new softmax alone for this many steps first (the biLM frozen; 0 = off), and the
# biLM's learning rate as a fraction of learn_rate
softmax_warmup_steps = 0
bilm_lr_scale = 1.0
# "auto", "bf16" or "no": autocast the forward pass to bfloat16 (weights, optimizer state and the
# loss stay float32). "auto": bf16 where the CPU or GPU has bfloat16 units, float32 elsewhere (said
# once); "bf16" falls back the same way. On this project's CPU bf16 reached a lower dev perplexity
# at equal time (docs/results.md, "bf16 against float32 at equal time")
mixed_precision = "auto"
# compile the LSTM cell's elementwise work with torch.compile (fewer kernels on CUDA)
compile = false

# A logger of spaCy's protocol (spacy.ConsoleLogger.v3, spacy-loggers' W&B and MLflow loggers, ...);
# log.jsonl and perplexity.png are written whichever it is.
[training.logger]
@loggers = "spacy-elmo.PretrainLogger.v1"
# a bar of the steps on a terminal (lines elsewhere)
progress_bar = true
console_output = true
"""


def fill_pretrain_config(config: Config) -> Config:
    """`config` over the defaults, checked for settings that do not exist. The [bilm] block holds
    the hyperparameters of `ElmoOptions` (missing ones: the released small size).

    RETURNS (Config): a new config with every setting present.
    """
    defaults = Config().from_str(DEFAULTS)
    defaults["bilm"] = ElmoOptions.defaults()
    unknown = [f"[{section}]" for section in config if section not in defaults]
    for section, block in config.items():
        if section in defaults and isinstance(block, dict):
            unknown += [f"{section}.{key}" for key in block if key not in defaults[section] and not key.startswith("@")]
    if unknown:
        raise InputError(f"Unknown pretraining setting(s): {', '.join(unknown)}. Known: {_known(defaults)}")
    return defaults.merge(config)


def _known(defaults: Dict[str, Any]) -> str:
    return "; ".join(f"[{section}] {', '.join(block)}" for section, block in defaults.items())


@dataclass(frozen=True)
class PathSettings:
    """[paths]: the training text (a file, folder or prepared corpus), the dev text (None: held
    out from the training text), and a model folder to go on from (None: a new biLM)."""

    train: Optional[str]
    dev: Optional[str]
    init_bilm: Optional[str]


@dataclass(frozen=True)
class SystemSettings:
    """[system]: see DEFAULTS."""

    seed: int
    threads: int
    processes: int
    data_workers: Optional[int]
    gpu_id: Optional[int]
    reuse_freed_memory: bool


@dataclass(frozen=True)
class CorpusSettings:
    """[corpus]: see DEFAULTS."""

    lang: str
    max_length: int
    pool_size: int
    dev_every_nth_doc: int
    prepare_processes: int


@dataclass(frozen=True)
class VocabSettings:
    """[vocab]: see DEFAULTS."""

    max_size: int
    min_count: int


@dataclass(frozen=True)
class SoftmaxSettings:
    """[softmax]: see DEFAULTS."""

    kind: str
    cutoffs: Tuple[int, ...]


@dataclass(frozen=True)
class TrainingSettings:
    """[training]: see DEFAULTS."""

    optimizer: str
    learn_rate: float
    warmup_steps: int
    decay: str
    grad_clip: float
    dropout: float
    batch_tokens: int
    max_steps: int
    max_minutes: float
    max_epochs: float
    log_every: int
    eval_every: int
    checkpoint_every: int
    dev_max_sentences: int
    softmax_warmup_steps: int
    bilm_lr_scale: float
    mixed_precision: str
    compile: bool
    logger: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PretrainSettings:
    """A pretraining config read once: filled from DEFAULTS, every setting checked (type and
    range) in one place, so that a run fails before it touches its output folder, in one message
    that names every bad setting.

    config (Config): the filled config (what the run folder's config.cfg records).
    """

    config: Config
    paths: PathSettings
    system: SystemSettings
    corpus: CorpusSettings
    vocab: VocabSettings
    softmax: SoftmaxSettings
    training: TrainingSettings
    bilm: ElmoOptions

    @classmethod
    def from_config(cls, config: Config) -> "PretrainSettings":
        """RETURNS (PretrainSettings): the settings of `config`; an InputError naming every bad one."""
        filled = fill_pretrain_config(config)
        problems: List[str] = []
        sections = {
            name: _section(kind, filled[name], name, problems)
            for name, kind in (
                ("paths", PathSettings),
                ("system", SystemSettings),
                ("corpus", CorpusSettings),
                ("vocab", VocabSettings),
                ("softmax", SoftmaxSettings),
                ("training", TrainingSettings),
            )
        }
        if not problems:
            problems += _ranges(sections)
        try:
            bilm = ElmoOptions.from_config(filled["bilm"])
        except InputError as err:
            problems.append(f"[bilm] {err}")
            bilm = ElmoOptions()
        if problems:
            raise InputError("Invalid pretraining setting(s): " + "; ".join(problems))
        return cls(filled, bilm=bilm, **sections)  # type: ignore[arg-type]


def _section(kind: type, block: Dict[str, Any], name: str, problems: List[str]) -> Any:
    """The dataclass `kind` of a config block, each value checked against its field's type."""
    values: Dict[str, Any] = {}
    hints = get_type_hints(kind)
    for f in fields(kind):
        value = block.get(f.name)
        if f.name == "logger":
            logger_block = block.get("logger", {})
            if not isinstance(logger_block, dict) or not isinstance(logger_block.get("@loggers", ""), str):
                problems.append(
                    f'[{name}] logger must be a block naming a logger (@loggers = "spacy-elmo.PretrainLogger.v1", or one of '
                    f"spaCy's registry), got {logger_block!r}"
                )
                logger_block = {}
            values[f.name] = dict(logger_block)
            continue
        checked = _typed(value, hints[f.name])
        if checked is _BAD:
            problems.append(f"[{name}] {f.name} must be {_type_name(hints[f.name])}, got {value!r}")
            checked = None
        values[f.name] = checked
    return kind(**values)


_BAD = object()


def _typed(value: Any, hint: Any) -> Any:
    """`value` as the type `hint` asks for (an int given as 3.0 stays 3), or _BAD."""
    if get_origin(hint) is Union:
        if value is None:
            return None
        hint = next(h for h in get_args(hint) if h is not type(None))
    if get_origin(hint) is tuple:
        if not isinstance(value, (list, tuple)) or not all(_typed(v, int) is not _BAD for v in value):
            return _BAD
        return tuple(int(v) for v in value)
    if hint is bool:
        return value if isinstance(value, bool) else _BAD
    if hint is int:
        ok = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        return int(value) if ok and not isinstance(value, bool) else _BAD
    if hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return float(value) if ok else _BAD
    if hint is str:
        return value if isinstance(value, str) else _BAD
    return value


def _type_name(hint: Any) -> str:
    if get_origin(hint) is Union:
        return _type_name(next(h for h in get_args(hint) if h is not type(None))) + " or null"
    if get_origin(hint) is tuple:
        return "a list of integers"
    return {bool: "true or false", int: "an integer", float: "a finite number", str: "a string"}.get(hint, str(hint))


def _ranges(s: Dict[str, Any]) -> List[str]:
    """Every range and choice rule of the settings, in one place."""
    corpus, vocab, softmax, training, paths = s["corpus"], s["vocab"], s["softmax"], s["training"], s["paths"]
    system = s["system"]
    rules = [
        (system.threads >= 0, f"[system] threads must be >= 0, got {system.threads}"),
        (system.processes >= 1, f"[system] processes must be >= 1, got {system.processes}"),
        (paths.train is not None, "[paths] train must name the training text: --paths.train FILE_OR_FOLDER"),
        (corpus.max_length >= 1, f"[corpus] max_length must be >= 1, got {corpus.max_length}"),
        (corpus.pool_size >= 1, f"[corpus] pool_size must be >= 1, got {corpus.pool_size}"),
        (corpus.dev_every_nth_doc >= 0, f"[corpus] dev_every_nth_doc must be >= 0, got {corpus.dev_every_nth_doc}"),
        (corpus.prepare_processes >= 0, f"[corpus] prepare_processes must be >= 0, got {corpus.prepare_processes}"),
        (vocab.max_size >= 4, f"[vocab] max_size must be >= 4 (3 special words and one more), got {vocab.max_size}"),
        (vocab.min_count >= 1, f"[vocab] min_count must be >= 1, got {vocab.min_count}"),
        (softmax.kind in ("full", "adaptive"), f"[softmax] kind must be 'full' or 'adaptive', got {softmax.kind!r}"),
        (
            list(softmax.cutoffs) == sorted(set(softmax.cutoffs)) and all(c > 0 for c in softmax.cutoffs),
            f"[softmax] cutoffs must be increasing positive integers, got {list(softmax.cutoffs)}",
        ),
        (
            training.optimizer.lower() in ("adam", "adagrad"),
            f"[training] optimizer must be 'adam' or 'adagrad', got {training.optimizer!r}",
        ),
        (training.decay in ("constant", "linear"), f"[training] decay must be 'constant' or 'linear', got {training.decay!r}"),
        (training.decay != "linear" or training.max_steps > 0, "[training] decay = 'linear' needs max_steps > 0"),
        (
            training.mixed_precision in ("no", "bf16", "auto"),
            f"[training] mixed_precision must be 'no', 'bf16' or 'auto', got {training.mixed_precision!r}",
        ),
        (training.learn_rate > 0, f"[training] learn_rate must be positive, got {training.learn_rate}"),
        (training.bilm_lr_scale > 0, f"[training] bilm_lr_scale must be positive, got {training.bilm_lr_scale}"),
        (0 <= training.dropout < 1, f"[training] dropout must be in [0, 1), got {training.dropout}"),
        (training.batch_tokens >= 1, f"[training] batch_tokens must be >= 1, got {training.batch_tokens}"),
    ]
    for name in ("warmup_steps", "grad_clip", "max_steps", "max_minutes", "max_epochs", "dev_max_sentences", "softmax_warmup_steps"):
        value = getattr(training, name)
        rules.append((value >= 0, f"[training] {name} must be >= 0, got {value}"))
    for name in ("log_every", "eval_every", "checkpoint_every"):
        value = getattr(training, name)
        rules.append((value >= 1, f"[training] {name} must be >= 1, got {value}"))
    return [message for ok, message in rules if not ok]
