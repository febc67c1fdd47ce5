"""The package's progress bars: tqdm's, without its monitor thread.

tqdm starts a thread on its first bar that stays for the life of the process (it adjusts a stalled
bar's refresh); a process forked later by anything copies it with whatever lock it holds then
(docs/safety.md, "Processes"). The package's bars do without it.
"""

from typing import Any


def progress_bar(*args: Any, **kwargs: Any) -> Any:
    """RETURNS (tqdm): `tqdm(*args, **kwargs)` that starts no monitor thread."""
    from tqdm import tqdm

    class Bar(tqdm):  # type: ignore[misc]
        monitor_interval = 0

    return Bar(*args, **kwargs)
