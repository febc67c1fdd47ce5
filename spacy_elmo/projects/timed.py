"""Run a command and record how long it took: `timed.py TIMES_JSON NAME CMD [ARGS...]`.

TIMES_JSON maps step names to {"wall_s": wall-clock seconds, "cpu_s": CPU seconds of the command
and its children}; the results table reads it. CPU time stays meaningful when other jobs share
the machine.
"""

import resource
import subprocess
import sys
import time
from pathlib import Path

import srsly
from .written import write_json


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    times_path, name, cmd = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    start = time.monotonic()
    returncode = subprocess.call(cmd)
    if returncode != 0:
        sys.exit(returncode)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    entry = {"wall_s": round(time.monotonic() - start, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1)}
    times = srsly.read_json(times_path) if times_path.is_file() else {}
    times[name] = entry
    times_path.parent.mkdir(parents=True, exist_ok=True)
    write_json(times_path, times)


if __name__ == "__main__":
    main()
