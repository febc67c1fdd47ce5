"""Pretraining a biLM from raw text: `spacy-elmo pretrain CONFIG --output DIR`.

Writes to the output folder: corpus/ (the training text, prepared once; see prepared.py),
checkpoint.pt (every `checkpoint_every` steps, atomically; with --resume, training goes on from it
at the same step and data position), model-last/ and model-best/ (by dev perplexity; see
checkpoint.py), config.cfg, vocab.txt, log.jsonl and perplexity.png (run_folder.py says what a run
may hold and when it may be started over). Under torchrun, each process reads its own share of the
corpus, gradients are averaged by DistributedDataParallel, and only rank 0 evaluates and writes
files; `[system] processes = N` on a CPU starts N such processes itself (processes.py).
"""

import errno
import os
from pathlib import Path
from typing import Any, Dict, Optional

from confection import Config

from .devices import Log, training_device
from .processes import pretrain_in_processes
from .settings import PretrainSettings
from .trainer import train_in_this_process


def pretrain(
    config: Config, output: Path, resume: bool = False, log: Log = print, gpu_id: Optional[int] = None, overwrite: bool = False
) -> Dict[str, Any]:
    """Train a biLM as configured; see the module docstring for what is written.

    resume (bool): go on from the checkpoint in `output`.
    overwrite (bool): start over where `output` holds a run (its results are removed).
    gpu_id (Optional[int]): overrides [system] gpu_id (-1: CPU, N: CUDA device N).
    RETURNS (Dict[str, Any]): step, elapsed_s, tokens, best_dev_ppl, last_eval.
    """
    try:
        system = PretrainSettings.from_config(config).system
        if system.processes > 1 and "WORLD_SIZE" not in os.environ:  # (under torchrun, torchrun's processes)
            if training_device(gpu_id if gpu_id is not None else system.gpu_id).type == "cpu":
                return pretrain_in_processes(config, Path(output), system.processes, resume=resume, overwrite=overwrite, log=log)
            log(f"[system] processes = {system.processes} is for the CPU: training on the GPU as one process (several GPUs: torchrun)")
        return train_in_this_process(config, Path(output), resume=resume, log=log, gpu_id=gpu_id, overwrite=overwrite)
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        raise OSError(
            err.errno,
            f"No space left on the device while writing {err.filename or output}: free some space, then go on "
            "with --resume (the last complete checkpoint and models are kept)",
        ) from err
