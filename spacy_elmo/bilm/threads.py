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
from pathlib import Path
from typing import List, Optional, Tuple

import torch

ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
LOOK_EVERY_S = 1.0
_LOOKS = 3  # the median of the last looks decides


def usable_cores() -> int:
    """RETURNS (int): the cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def _physical_cores() -> int:
    """The cores of this process's affinity counted once per physical core (torch's default on some builds)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    siblings = set()
    for cpu in cpus:
        try:
            siblings.add(Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list").read_text().strip())
        except OSError:
            return len(cpus)
    return max(len(siblings), 1)


def others_running() -> Optional[int]:
    """RETURNS (Optional[int]): the runnable threads of other processes now (one look), None where the
    system does not say."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            running = int(f.read().split()[3].split("/")[0])
        ours = 0
        for task in os.scandir("/proc/self/task"):
            try:
                with open(f"{task.path}/stat", encoding="ascii", errors="replace") as f:
                    ours += f.read().rpartition(")")[2].split()[0] == "R"
            except OSError:
                continue
    except (OSError, ValueError, IndexError):
        return None
    return max(running - max(ours, 1), 0)


def busy_cores(samples: int = 5, every_s: float = 0.01) -> int:
    """RETURNS (int): the cores busy with other work now (the median of a few looks); 0 where the system
    does not say."""
    counts = []
    for i in range(samples):
        count = others_running()
        if count is None:
            return 0
        counts.append(count)
        if i + 1 < samples:
            time.sleep(every_s)
    # running tasks can outnumber the cores: never more busy cores than this process may use
    return min(sorted(counts)[len(counts) // 2], usable_cores())


def default_threads(processes: int = 1, count_busy: bool = True) -> Tuple[int, str]:
    """RETURNS (Tuple[int, str]): the threads of each of `processes` processes on this node, and why
    ("" where that is simply every core's share)."""
    cores = usable_cores()
    busy = min(busy_cores(), cores - 1) if count_busy else 0
    threads = max((cores - busy) // max(processes, 1), 1)
    if not busy:
        return threads, ""
    return threads, (
        f"{threads} thread{'s' * (threads != 1)} a process: {busy} of the {cores} cores are busy with other work "
        "(--threads N, or --system.threads N for pretrain, sets the number)"
    )


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


MAX_THREADS = 1024  # more is a typo, not a machine: each thread's stack alone would take gigabytes


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
