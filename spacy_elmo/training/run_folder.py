"""A pretraining run's output folder: what a run writes there, claiming and locking it, and its log.

The output folder must be new, empty or a run of `spacy-elmo pretrain` (output_folders.py): a
finished or interrupted run is never started over without `overwrite`, and it is locked while a
run uses it.
"""

import shutil
from pathlib import Path
from typing import Any, Dict, List

import srsly

from ..errors import OutputFolderError
from ..output_folders import PRETRAIN_RUN, FolderLock, claim_folder, write_atomically
from .checkpoint import CHECKPOINT_NAME, recover_model_dirs

# What a run writes into its output folder (a folder holding only these is a run, marker or not).
RUN_FILES = (
    "checkpoint.pt",
    "checkpoint.pt.tmp",
    "model-best",
    "model-last",
    "config.cfg",
    "vocab.txt",
    "log.jsonl",
    "perplexity.png",
    "corpus",
    "corpus.tmp",
)
# What starting over removes; the prepared corpus stays (it is reused when its text is unchanged).
_RESULTS = tuple(name for name in RUN_FILES if not name.startswith("corpus"))


def open_run_folder(output: Path, resume: bool, overwrite: bool) -> FolderLock:
    """Claim and lock the output folder of a run (see the module docstring).

    RETURNS (FolderLock): the held lock.
    """
    if resume and overwrite:
        raise OutputFolderError("--resume goes on with the run in the output folder and --overwrite starts it over: give one")
    claim_folder(output, PRETRAIN_RUN, ", or --resume a run of spacy-elmo pretrain there")
    lock = FolderLock(output, "spacy-elmo pretrain").acquire()
    try:
        recover_model_dirs(output, ("model-best", "model-last"))
        done = [name for name in _RESULTS if (output / name).exists()]
        if resume and done and not (output / CHECKPOINT_NAME).is_file():
            raise OutputFolderError(
                f"{output} holds a pretraining run ({', '.join(done)}) but no checkpoint.pt to go on from: nothing was "
                "changed. Give --overwrite to start over (its models and log are removed), or another --output"
            )
        if done and not resume and not overwrite:
            raise OutputFolderError(
                f"{output} holds a pretraining run{_last_step(output / 'log.jsonl')}: nothing was changed. "
                "Give --resume to go on with it, --overwrite to start over (its checkpoint, models and log are removed), "
                "or another --output"
            )
        if overwrite:
            for name in done:
                path = output / name
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    except BaseException:
        lock.release()
        raise
    return lock


def _last_step(log_path: Path) -> str:
    steps = [entry.get("step", 0) for entry in read_log(log_path)]
    return f" (logged up to step {max(steps)})" if steps else ""


def read_log(log_path: Path) -> List[Dict[str, Any]]:
    """The entries of log.jsonl; a line cut off by a kill is left out."""
    if not log_path.is_file():
        return []
    entries = []
    for line in log_path.read_text(encoding="utf8").splitlines():
        try:
            entry = srsly.json_loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def truncate_log(log_path: Path, step: int) -> None:
    """Keep the log entries up to `step` (where a resumed run goes on), so that each step is
    logged once; written through a temporary file."""
    if not log_path.is_file():
        return
    kept = [entry for entry in read_log(log_path) if entry.get("step", 0) <= step]
    write_atomically(log_path, "".join(srsly.json_dumps(entry) + "\n" for entry in kept))
