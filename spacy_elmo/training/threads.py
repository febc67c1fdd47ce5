"""How many torch threads a pretraining process uses where [system] threads = 0.

With as many threads as cores, a run beside another busy job collapses: OpenMP's threads wait for each
other at every product, and the one that shares its core with the other job holds them all up
(benchmarks/threads_under_load.py). So the default takes the cores this process may use (its CPU
affinity) less those busy with other work when the run starts (Linux: the runnable tasks that
/proc/loadavg counts), shared among the processes of this node.
"""

import os
import time
from typing import Tuple


def usable_cores() -> int:
    """RETURNS (int): the cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(len(os.sched_getaffinity(0)), 1)
    return os.cpu_count() or 1


def busy_cores(samples: int = 7, every_s: float = 0.02) -> int:
    """RETURNS (int): the cores busy with other work now (the median of a few looks at the runnable
    tasks, this one left out); 0 where the system does not say."""
    counts = []
    for i in range(samples):
        try:
            with open("/proc/loadavg", encoding="ascii") as f:
                running = int(f.read().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0
        counts.append(max(running - 1, 0))
        if i + 1 < samples:
            time.sleep(every_s)
    return sorted(counts)[len(counts) // 2]


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
        "(--system.threads N sets the number)"
    )
