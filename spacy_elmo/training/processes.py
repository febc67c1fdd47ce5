"""Pretraining as several processes on one machine ([system] processes), without torchrun.

Each process runs the trainer as torchrun would start it (RANK, WORLD_SIZE, a gloo process group
on 127.0.0.1): its own part of the corpus, its own batches, gradients averaged every step. On a
CPU with few cores this uses them better than threads, whose small per-step products and
elementwise work hardly split (docs/results.md, "Two processes against two threads"). Rank 0
logs, writes the run folder and returns the result; an error in any process stops the others and
is raised here as it was raised there.
"""

import ctypes
import multiprocessing
import os
import queue
import signal
import socket
import sys
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional

from confection import Config

from ..child_processes import from_package_entry
from ..errors import InputError
from ..bilm.threads import default_threads


def pretrain_in_processes(
    config: Config, output: Path, processes: int, resume: bool = False, overwrite: bool = False, log: Any = print
) -> Dict[str, Any]:
    """`trainer.pretrain` as `processes` processes on this machine's CPU.

    RETURNS (Dict[str, Any]): rank 0's result.
    """
    if not config["system"]["threads"]:  # torch's default (every core) in each process would oversubscribe them
        threads, why = default_threads(processes)
        if why:
            log(why)
        config = Config(config).merge({"system": {"threads": threads}})
    context = multiprocessing.get_context("spawn")
    answers = context.Queue()
    port = _free_port()
    workers = [
        context.Process(
            target=_worker,
            args=(rank, processes, port, config.to_str(), str(output), resume, overwrite, answers),
        )
        for rank in range(processes)
    ]
    with from_package_entry():  # the workers never run the caller's program again
        for worker in workers:
            worker.start()
    try:
        result, error = _wait(workers, answers, log)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()
    if error is not None:
        raise error
    if result is None:
        codes = ", ".join(str(w.exitcode) for w in workers)
        raise RuntimeError(f"a pretraining process ended without a result (exit codes {codes}): see its output above")
    return result


def _wait(workers: List[Any], answers: Any, log: Any) -> "tuple[Optional[Dict[str, Any]], Optional[BaseException]]":
    """Rank 0's result, or the first error any process reports (the others are then stopped);
    rank 0's log lines go to `log` on the way."""
    result: Optional[Dict[str, Any]] = None
    ended = False
    while True:
        try:
            kind, value = answers.get(timeout=0.5)
        except queue.Empty:
            if ended:  # the queue read once more after the processes ended: nothing was left in it
                return result, None
            # all done, or one killed without a word (e.g. out of memory); what a process said just
            # before it ended may still be on its way: read once more
            ended = all(not w.is_alive() for w in workers) or any(w.exitcode not in (None, 0) for w in workers)
            continue
        if kind == "log":
            log(value)
        elif kind == "error":
            return None, value
        else:
            result = value


def _worker(rank: int, world: int, port: int, config: str, output: str, resume: bool, overwrite: bool, answers: Any) -> None:
    _end_with_parent()
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world)})
    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    import torch

    from .trainer import train_in_this_process

    try:
        log = (lambda message: answers.put(("log", message))) if rank == 0 else _silent
        result = train_in_this_process(Config().from_str(config), Path(output), resume=resume, log=log, gpu_id=-1, overwrite=overwrite)
        if rank == 0:
            answers.put(("result", result))
    except BaseException as error:
        if not isinstance(error, (InputError, OSError, KeyboardInterrupt)):
            traceback.print_exc()  # a bug's traceback stays with its process's output
        try:
            answers.put(("error", error))
        except Exception:  # an error that does not pickle: its words
            answers.put(("error", RuntimeError(f"pretraining process {rank}: {type(error).__name__}: {error}")))
        raise SystemExit(1)
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


def _end_with_parent() -> None:
    """On Linux, have this process killed when the one that started it dies (a kill -9 of
    `spacy-elmo pretrain` must not leave its processes training on; checkpoints are written
    atomically, so a run killed at any moment resumes)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _silent(message: str) -> None:
    pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
