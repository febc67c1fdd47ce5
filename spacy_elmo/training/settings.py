"""The settings of a pretraining config and their defaults, stated once: a config names only what
it changes, and a misspelt setting is an error that names it."""
from typing import Any, Dict

from confection import Config

from ..bilm import ElmoOptions

DEFAULTS = """
[paths]
train = null
dev = null
init_bilm = null

[system]
seed = 0
# torch threads; 0 leaves torch's default
threads = 0
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
        raise ValueError(f"Unknown pretraining setting(s): {', '.join(unknown)}. Known: {_known(defaults)}")
    return defaults.merge(config)


def _known(defaults: Dict[str, Any]) -> str:
    return "; ".join(f"[{section}] {', '.join(block)}" for section, block in defaults.items())
