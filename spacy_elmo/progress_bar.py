"""The package's progress: a bar on a terminal, progress lines elsewhere.

On a terminal, tqdm's bar, without its monitor thread: tqdm starts a thread on its first bar that
stays for the life of the process (it adjusts a stalled bar's refresh); a process forked later by
anything copies it with whatever lock it holds then (docs/safety.md, "Processes"). Where stderr is
a file or a pipe (a job's log), frames would be noise and silence hides a long run: a line every
LINE_SECONDS instead, as pretraining logs, saying how far the job is. `--quiet` turns off both.
"""

import sys
import time
from typing import Any, Iterable, Iterator, Optional

LINE_SECONDS = 30.0


def progress_bar(*args: Any, **kwargs: Any) -> Any:
    """RETURNS: `tqdm(*args, **kwargs)` that starts no monitor thread; where `disable` is None (shown
    on a terminal only) and stderr is no terminal, `ProgressLines` with the same arguments."""
    if kwargs.get("disable", False) is None and not _stderr_is_terminal():
        return ProgressLines(*args, **kwargs)
    from tqdm import tqdm

    class Bar(tqdm):  # type: ignore[misc]
        monitor_interval = 0

    return Bar(*args, **kwargs)


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressLines:
    """What a tqdm bar is to the package's code (iterate, `update`, `set_postfix_str`, `close`), as a
    line on stderr every LINE_SECONDS: "Embedding: 12,800 docs of 40,000 (32%), 41.2 docs/s, 5:10"."""

    def __init__(
        self,
        iterable: Optional[Iterable[Any]] = None,
        desc: Optional[str] = None,
        total: Optional[float] = None,
        unit: str = "it",
        unit_scale: bool = False,
        initial: float = 0,
        **_: Any,
    ) -> None:
        self.iterable = iterable
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)  # type: ignore[arg-type]
        self.desc, self.unit, self.unit_scale = desc or "Progress", unit.strip() or "it", unit_scale
        self.n = self._start = initial
        self.postfix = ""
        self.disable = False
        self.started = self._said = time.monotonic()

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)

    def __enter__(self) -> "ProgressLines":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: float = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._said >= LINE_SECONDS:
            self._said = now
            print(self.line(now), file=sys.stderr, flush=True)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def close(self) -> None:
        pass

    def write(self, text: str, file: Any = None, **_: Any) -> None:
        print(text, file=file or sys.stdout, flush=True)

    def line(self, now: Optional[float] = None) -> str:
        """RETURNS (str): how far the job is, in a line."""
        elapsed = (now or time.monotonic()) - self.started
        done = f"{self._amount(self.n)} {self.unit}"
        if self.total:
            done += f" of {self._amount(self.total)} ({100 * self.n / self.total:.0f}%)"
        rate = (self.n - self._start) / elapsed if elapsed > 0 else 0.0
        # under one a second, seconds an item (as tqdm): "0.0 words/s" said nothing
        one = self.unit[:-1] if self.unit.endswith("s") and len(self.unit) > 2 else self.unit  # "s/word", not "s/words"
        speed = f"{self._amount(rate, rate=True)} {self.unit}/s" if rate >= 1 or rate == 0 else f"{1 / rate:,.1f} s/{one}"
        text = f"{self.desc}: {done}, {speed}, {_clock(elapsed)} elapsed"
        if self.total and rate > 0 and self.n < self.total:
            text += f", about {_clock((self.total - self.n) / rate)} left"
        return text + (f", {self.postfix}" if self.postfix else "")

    def _amount(self, value: float, rate: bool = False) -> str:
        if self.unit_scale:
            for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
                if value >= scale:
                    return f"{value / scale:.1f}{prefix}"
        return f"{value:,.1f}" if rate else f"{value:,.0f}"


def _clock(seconds: float) -> str:
    """RETURNS (str): seconds as M:SS, or H:MM:SS from an hour."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
