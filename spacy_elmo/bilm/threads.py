"""How many torch threads a process uses: decided here, by looking at the machine while the job runs.

With as many threads as cores, a job beside other busy work collapses: OpenMP's threads wait for each
other at every product, and the one that shares its core with the other work holds them all up (two
`embed --shard I/2` side by side on 2 cores ran 11x slower than one run; benchmarks/threads_under_load.py).
So where nobody set the number, a job takes the cores this process may use (its CPU affinity) less
those running other work, and looks again between batches, at most once a second: the other work on
the machine is what the kernel counts as runnable (/proc/loadavg) less this process's own running
threads (/proc/self/task). A change needs two looks in a row that agree, so a short command beside it
does not make it switch back and forth. Where the system says nothing (not Linux), the number stays.

A number that somebody set is never changed: `--threads N`, `[system] threads = N`, OMP_NUM_THREADS
or MKL_NUM_THREADS in the environment, or `torch.set_num_threads` in the program (torch's count is not
the one this module set last, or not torch's own default where it set none).

The products round differently with the number of threads (oneDNN splits the sums), so outputs that
must agree bit for bit across runs (the shards of docs/scale.md) need the same `--threads N` in each.
"""

import os
import time
from typing import List, Optional

import torch

from ..machine_load import MAX_THREADS, _physical_cores, busy_cores, default_threads, others_running, usable_cores  # noqa: F401

ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
LOOK_EVERY_S = 1.0
_LOOKS = 3  # the median of the last looks decides


class _Follower:
    """The threads of this process, for every job in it (one per process: `follower`)."""

    def __init__(self) -> None:
        self.torch_default = torch.get_num_threads()
        # A count set before this module was imported is somebody's, unless it is torch's own default.
        self.default_is_torchs = self.torch_default in (usable_cores(), _physical_cores())
        self.last_set: Optional[int] = None
        self.fixed = False
        self.looks: List[int] = []
        self.next_look = 0.0
        self.changes = 0

    def set_by_user(self) -> bool:
        """RETURNS (bool): whether somebody else decides the threads of this process."""
        if self.fixed or any(os.environ.get(name) for name in ENV_VARS):
            return True
        current = torch.get_num_threads()
        if self.last_set is not None:
            return current != self.last_set
        return not self.default_is_torchs or current != self.torch_default

    def fix(self, threads: int) -> None:
        """Use `threads` from now on and never change it (an explicit setting)."""
        torch.set_num_threads(max(threads, 1))
        self.fixed = True

    def start(self, processes: int = 1) -> str:
        """Set the threads for a job starting now, with `processes` processes of it on this node (their
        threads are not other work). RETURNS (str): why the number is not every core's share ("")."""
        if self.set_by_user():
            return ""
        threads, why = default_threads(processes, count_busy=processes == 1)
        self._set(threads)
        if processes > 1:
            self.fixed = True  # the node's share; the others' threads would read as other work
        self.looks.clear()
        self.next_look = time.monotonic() + LOOK_EVERY_S / _LOOKS
        return why

    def between_batches(self) -> None:
        """Look at the machine (at most every LOOK_EVERY_S / 3) and follow it: cheap enough to call
        before every batch. The first call in a process where no job started sets the threads."""
        now = time.monotonic()
        if now < self.next_look or self.set_by_user():
            return
        if self.last_set is None:
            self.start()
            return
        self.next_look = now + LOOK_EVERY_S / _LOOKS
        others = others_running()
        if others is None:
            self.next_look = float("inf")
            return
        cores = usable_cores()
        self.looks = (self.looks + [max(cores - others, 1)])[-_LOOKS:]
        if len(self.looks) < _LOOKS:
            return
        wanted = sorted(self.looks)[_LOOKS // 2]
        if wanted != torch.get_num_threads() and self.looks[-1] == self.looks[-2] == wanted:
            self._set(wanted)
            self.changes += 1
            self.looks.clear()

    def _set(self, threads: int) -> None:
        torch.set_num_threads(threads)
        self.last_set = threads


follower = _Follower()


def fix_threads(threads: int) -> None:
    """An explicit number of threads (`--threads N`, `[system] threads`): set now, never changed. 0
    leaves the number to `start_job` and `between_batches`; more than MAX_THREADS is refused in one line."""
    if not 0 <= threads <= MAX_THREADS:
        from ..errors import InputError

        raise InputError(f"{threads} threads: give 1 to {MAX_THREADS} (0: as many as the cores not busy with other work)")
    if threads > 0:
        follower.fix(threads)


def start_job(processes: int = 1) -> str:
    """The threads for a job starting now (see the module's docstring). RETURNS (str): a line to log
    where other work takes cores from it, else ""."""
    return follower.start(processes)


def between_batches() -> None:
    """Follow the machine between two batches of a job (nothing where the threads were set)."""
    follower.between_batches()
