"""Run a command once per seed: `seeds.py SEEDS CMD [ARGS...]`, SEEDS comma-separated (e.g. 0,1,2).

In every argument, {seed} becomes the seed and {run} the suffix of its run folder: "" for seed 0
(so a one-seed run keeps the usual layout), "_s1", "_s2", ... otherwise. Stops at the first
failure with its exit status.
"""

import subprocess
import sys
from typing import List


def parse_seeds(text: str) -> List[int]:
    try:
        seeds = [int(s) for s in text.replace(" ", "").split(",") if s]
    except ValueError:
        sys.exit(f"seeds: expected comma-separated integers like 0,1,2, got {text!r}")
    if not seeds or len(set(seeds)) != len(seeds):
        sys.exit(f"seeds: expected distinct seeds like 0,1,2, got {text!r}")
    return seeds


def run_suffix(seed: int) -> str:
    return "" if seed == 0 else f"_s{seed}"


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for seed in parse_seeds(sys.argv[1]):
        cmd = [arg.replace("{seed}", str(seed)).replace("{run}", run_suffix(seed)) for arg in sys.argv[2:]]
        returncode = subprocess.call(cmd)
        if returncode != 0:
            sys.exit(returncode)


if __name__ == "__main__":
    main()
