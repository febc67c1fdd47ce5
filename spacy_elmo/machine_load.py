"""What the machine is doing, read without torch: the cores this process may use and those busy with other
work (bilm/threads.py explains the rule; the ONNX runtime follows it too, so it lives on the ground floor)."""

import os
import time
from pathlib import Path
from typing import Optional, Tuple

MAX_THREADS = 1024  # more is a typo, not a machine: each thread's stack alone would take gigabytes
LOOK_EVERY_S = 1.0  # the load is looked at no more often than this


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


class LoadLooks:
    """The threads a job wants while the load changes: every LOOK_EVERY_S, at most, the cores this process may use
    less those running other work; a new number once two looks in a row agree on it (a short command beside the
    job does not make it switch back and forth)."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.next_look = time.monotonic() + LOOK_EVERY_S
        self.last: Optional[int] = None

    def wanted(self) -> int:
        """RETURNS (int): the threads to use now (the current number until the load says otherwise)."""
        now = time.monotonic()
        if now < self.next_look:
            return self.threads
        self.next_look = now + LOOK_EVERY_S
        others = others_running()
        if others is None:
            self.next_look = float("inf")
            return self.threads
        look = max(usable_cores() - others, 1)
        if look == self.last and look != self.threads:
            self.threads = look
        self.last = look
        return self.threads
