"""Answers measured on this machine and kept: which precision runs the biLM's own work fastest.

CPU flags cannot say it: the same bfloat16 flag is set where bf16 products run at 2x float32 (AMD Zen 4)
and where they run at 0.57x (a Xeon whose AMX the hypervisor hides); a busy machine changes the answer
too. So "auto" times the work itself, once (as FFTW's wisdom, PyTorch's TunableOp and Triton's autotune cache
do), and keeps the answer in `measured.json` in the package's cache folder, keyed by
everything it depends on: the CPU (model, flags, kernel class), torch's and oneDNN's versions, the
threads and the biLM's sizes. An entry of another machine, version or size is simply not used; a
damaged or foreign file is ignored with one line and replaced atomically. Processes that start together
measure once: the first takes a lock, the others wait for its answer (at most LOCK_WAIT_S: past that, one line,
and this process measures for itself). The file and its lock follow the package's file rules (output_folders.py):
never opened through a link, never read or replaced when it is not a plain file. Every entry is checked before it is
used (known choices, positive timings, the choice the fastest of its own timings); one that is not is said in one
line and measured again. An answer that cannot be kept on disk is kept in memory: one measurement, one line, per
process. A kept answer stays the answer, whatever the load now or then (whether it was taken on a quiet machine is
kept beside it, to be read): another answer could give a pipeline other layers. Only the user replaces it
(`spacy-elmo machine --measure MODEL --again`, or `again=True` here).

SPACY_ELMO_MEASURE=0 turns measuring off: "auto" then follows the CPU's flags (`precision.auto_precision`),
the same on every run (CI, reproducible runs).
"""

import hashlib
import json
import logging
import math
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import torch

from ..cache_folder import cache_dir
from ..errors import InputError
from ..output_folders import FolderLock, is_plain_file, open_no_follow, write_atomically
from .threads import busy_cores

MEASURE_ENV = "SPACY_ELMO_MEASURE"
FILE_NAME = "measured.json"
FORMAT = 1
MAX_ENTRIES = 64
LOCK_WAIT_S = 5.0  # another process measuring longer than this: this one measures for itself
LATEST_WHEN = 253402300800  # 10000-01-01 in seconds since 1970: a later time is no date
CHOICES = ("fp32", "bf16", "int8", "blas", "onednn")  # what an entry may name: precisions, and training's product libraries
# Two choices closer than this (the slower's time over the faster's) are no clear answer: measured again, each keeping its
# best time, at most MAX_ROUNDS times; still that close, the answer is a toss-up and the caller's default is kept (fp32:
# where neither is clearly faster, nothing moves a pipeline's layers). Under load ten fresh measurements on one AVX2
# machine chose int8 7 times and fp32 3 times, the two within 25% either way.
CLEAR_RATIO = 1.10
MAX_ROUNDS = 4
_IN_MEMORY: Dict[str, Dict[str, Any]] = {}  # answers this process could not keep on disk, by key digest
logger = logging.getLogger("spacy_elmo")


def measuring_on() -> bool:
    """RETURNS (bool): whether "auto" measures (SPACY_ELMO_MEASURE is not 0/false/no/off)."""
    return os.environ.get(MEASURE_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def onednn_version() -> str:
    match = re.search(r"(?:MKL-DNN|oneDNN)\s+v?([\w.]+)", torch.__config__.show())
    return match.group(1) if match else "none"


def machine_key(kind: str, threads: Optional[int] = None, **sizes: Any) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): what a measurement of `kind` depends on, here and now.

    threads (Optional[int]): the thread count the measurement runs at (`at_threads`); None: the current one. An
        answer that must not follow the load (inference's precision: the layers of a pipeline) is measured at a
        fixed count, so that one answer holds whatever threads the load leaves it.
    """
    from .precision import _cpuinfo, cpu_class

    cpu = cpu_class()
    flags, _ = _cpuinfo()
    return {
        "kind": kind,
        "cpu": cpu.model,
        "capability": cpu.capability,
        "flags": hashlib.sha256(" ".join(sorted(flags)).encode()).hexdigest()[:16],
        "int8_range": cpu.int8_range,
        "bf16_units": cpu.bf16_units,
        "torch": torch.__version__,
        "onednn": onednn_version(),
        "threads": torch.get_num_threads() if threads is None else threads,
        **sizes,
    }


def _digest(key: Dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def cache_file() -> Path:
    return cache_dir() / FILE_NAME


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Only one process at a time measures and writes: the package's folder lock on `measured.json.lock` (never
    through a link), waited for at most LOCK_WAIT_S."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with FolderLock(path.parent, "precision 'auto' measuring", name=path.name + ".lock", wait_s=LOCK_WAIT_S):
        yield


def entry_problem(entry: Any, choices: Optional[Sequence[str]] = None) -> str:
    """RETURNS (str): why a kept entry cannot be used ("" where it can): the choices it names must be known (and
    among `choices`, where given), its timings positive numbers, its choice the fastest of them, its times numbers."""
    if not isinstance(entry, dict) or not isinstance(entry.get("key"), dict):
        return "not an entry"
    seconds = entry.get("seconds")
    if not isinstance(seconds, dict) or not seconds:
        return "no timings"
    allowed = set(CHOICES) if choices is None else set(choices)
    unknown = sorted(str(k) for k in seconds if k not in allowed)
    if unknown:
        return f"it names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} not among {', '.join(sorted(allowed))}"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in seconds.values()):
        return "its timings are not positive numbers"
    choice = entry.get("choice")
    if choice != min(seconds, key=seconds.__getitem__) and not (entry.get("toss_up") is True and _close_to_fastest(seconds, choice)):
        return f"its choice {choice!r} is not the fastest of its own timings"
    for field in ("when", "cost_s"):
        value = entry.get(field, 0)
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            return f"its {field} is not a number"
    if not 0 <= entry.get("when", 0) < LATEST_WHEN:
        return "its time is not a date (before 1970 or after 9999)"
    if not isinstance(entry["key"].get("options", {}), dict):
        return "its options are not a block of settings"
    return ""


def read_entries(path: Optional[Path] = None, say: Callable[[str], None] = logger.warning) -> Dict[str, Any]:
    """RETURNS (Dict[str, Any]): the kept measurements by key digest; {} (said in one line) where the
    file is damaged or another program's."""
    path = path or cache_file()
    if not os.path.lexists(path):
        return {}
    if not is_plain_file(path):  # a link or a FIFO is never read (a FIFO would block for ever)
        say(f"{path} is {'a symbolic link' if path.is_symlink() else 'not a plain file'}: ignored; measured for this process alone")
        return {}
    try:
        with os.fdopen(open_no_follow(path, os.O_RDONLY), "rb") as f:
            data = json.loads(f.read().decode("utf8"))
    except InputError:  # replaced by a link or a FIFO between the look and the open
        say(f"{path} is not a plain file: ignored; measured for this process alone")
        return {}
    except (OSError, ValueError, UnicodeDecodeError) as err:
        say(f"{path} is damaged ({type(err).__name__}): ignored; the measurements are taken again")
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
        say(f"{path} is not spacy-elmo's measurements (format {FORMAT}): ignored and replaced")
        return {}
    entries = {}
    for k, v in data["entries"].items():
        problem = entry_problem(v)
        if not problem and _digest(v["key"]) == k:
            entries[k] = v
        elif problem:
            say(f"{path}: an entry is not used ({problem}); it is measured again")
    return entries


def measured(
    key: Dict[str, Any],
    measure: Callable[[], Dict[str, float]],
    choices: Optional[Sequence[str]] = None,
    again: bool = False,
    default: Optional[str] = None,
) -> Dict[str, Any]:
    """The kept measurement for `key`, or a new one taken with `measure` and kept.

    measure (Callable[[], Dict[str, float]]): seconds per unit of work for each choice.
    choices (Optional[Sequence[str]]): what runs here: a kept entry naming another is measured again.
    again (bool): measure anew and replace the kept answer (the user's request; nothing else replaces one).
    default (Optional[str]): the choice kept where the fastest is no clear answer (CLEAR_RATIO, after MAX_ROUNDS).
    RETURNS (Dict[str, Any]): {"key", "seconds", "choice" (the fastest, or `default` in a toss-up), "toss_up",
        "rounds", "cost_s" (what measuring took), "when", "quiet" (no other work ran meanwhile), "cached" (whether it
        was read, not measured now)}.
    """
    path = cache_file()
    digest = _digest(key)
    if digest in _IN_MEMORY and not again:
        return {**_IN_MEMORY[digest], "cached": True}
    entry: Optional[Dict[str, Any]] = None
    try:
        with _locked(path):
            entries = read_entries(path)
            kept = entries.get(digest)
            problem = entry_problem(kept, choices) if kept is not None else ""
            if problem:
                logger.warning("%s: the kept answer is not used (%s): measured again", path, problem)
                kept = None
            if kept is not None and not again:  # kept is kept: a new answer could change a pipeline's layers
                return {**kept, "cached": True}
            entry = _measure(key, measure, default)
            if os.path.lexists(path) and not is_plain_file(path):  # a link or a FIFO is not ours to replace
                return _keep_in_memory(digest, entry, f"{path} is not a plain file")
            entries[digest] = entry
            newest = dict(sorted(entries.items(), key=lambda kv: kv[1].get("when", 0))[-MAX_ENTRIES:])
            write_atomically(path, json.dumps({"format": FORMAT, "entries": newest}, indent=1, sort_keys=True))
            return {**entry, "cached": False}
    except InputError as err:  # the lock held past LOCK_WAIT_S, or a lock file that is a link
        return _keep_in_memory(digest, entry or _measure(key, measure, default), str(err))
    except OSError as err:  # a read-only or full cache: measure (once), keep in memory
        return _keep_in_memory(digest, entry or _measure(key, measure, default), err.strerror or type(err).__name__)


def _keep_in_memory(digest: str, entry: Dict[str, Any], why: str) -> Dict[str, Any]:
    logger.warning("the measurement cannot be kept in %s (%s): kept for this process only", cache_file(), why)
    _IN_MEMORY[digest] = entry
    return {**entry, "cached": False}


def _measure(key: Dict[str, Any], measure: Callable[[], Dict[str, float]], default: Optional[str] = None) -> Dict[str, Any]:
    """Measure until the fastest is clear (`is_clear`), at most MAX_ROUNDS times, each choice keeping its best time."""
    quiet = busy_cores(samples=3) == 0
    started = time.perf_counter()
    seconds = measure()
    rounds = 1
    while not is_clear(seconds) and rounds < MAX_ROUNDS:
        again = measure()
        seconds = {name: min(seconds[name], again.get(name, seconds[name])) for name in seconds}
        rounds += 1
    toss_up = not is_clear(seconds)
    return {
        "quiet": quiet and busy_cores(samples=3) == 0,
        "key": key,
        "seconds": seconds,
        "choice": default if toss_up and _close_to_fastest(seconds, default) else min(seconds, key=seconds.__getitem__),
        "toss_up": toss_up,
        "rounds": rounds,
        "cost_s": round(time.perf_counter() - started, 3),
        "when": time.time(),
    }


def _close_to_fastest(seconds: Dict[str, float], choice: Any) -> bool:
    """RETURNS (bool): whether `choice` is timed within CLEAR_RATIO of the fastest (the fastest itself included)."""
    return choice in seconds and seconds[choice] <= min(seconds.values()) * CLEAR_RATIO


def is_clear(seconds: Dict[str, float]) -> bool:
    """RETURNS (bool): whether the fastest choice is faster than every other by more than CLEAR_RATIO."""
    return sum(_close_to_fastest(seconds, name) for name in seconds) < 2


def how_measured(entry: Dict[str, Any]) -> str:
    """RETURNS (str): where an answer comes from, for the line that says it: measured now (in how long), or kept from
    when (and whether other work ran then), with the command that measures again; a toss-up said as one."""
    import datetime

    if entry.get("cached"):
        when = datetime.datetime.fromtimestamp(entry.get("when", 0)).strftime("%Y-%m-%d %H:%M")
        load = "" if entry.get("quiet", True) else ", while other work ran"
        how = f"kept from a measurement of {when}{load}; `spacy-elmo machine --measure MODEL --again` measures again"
    else:
        load = "" if entry.get("quiet", True) else "; other work ran meanwhile"
        how = f"measured in {entry.get('cost_s', 0):.1f} s{load}"
    if entry.get("toss_up"):
        how += f"; no choice was clearly faster (within {CLEAR_RATIO - 1:.0%}), so {entry['choice']} is kept"
    return how


@contextmanager
def at_threads(threads: int) -> Iterator[None]:
    """Run the block at `threads` PyTorch threads, and give the former count back after it."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fastest_of(
    runs: Dict[str, Callable[[], Any]], repeats: int = 2, budget_s: float = 1.0, most: int = 6, sync: Callable[[], None] = lambda: None
) -> Dict[str, float]:
    """Time each of `runs` after one untimed (warm-up) call each, in turn: at least `repeats` times, and
    again while the timing has taken less than `budget_s` (at most `most` times). Taken in turn, a load
    that comes or goes slows them alike.

    RETURNS (Dict[str, float]): the fastest time of each, in seconds.
    """
    for run in runs.values():
        run()
    sync()
    best = {name: float("inf") for name in runs}
    started_all = time.perf_counter()
    for i in range(most):
        if i >= repeats and time.perf_counter() - started_all > budget_s:
            break
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            sync()
            best[name] = min(best[name], time.perf_counter() - started)
    return best
