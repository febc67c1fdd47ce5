"""Run a command and record how long it took: `timed.py TIMES_JSON NAME CMD [ARGS...]`.

TIMES_JSON maps step names to wall-clock seconds; the results table reads it.
"""
import subprocess
import sys
import time
from pathlib import Path

import srsly


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    times_path, name, cmd = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    start = time.monotonic()
    returncode = subprocess.call(cmd)
    if returncode != 0:
        sys.exit(returncode)
    times = srsly.read_json(times_path) if times_path.is_file() else {}
    times[name] = round(time.monotonic() - start, 1)
    times_path.parent.mkdir(parents=True, exist_ok=True)
    srsly.write_json(times_path, times)


if __name__ == "__main__":
    main()
