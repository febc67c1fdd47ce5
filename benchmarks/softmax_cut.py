"""What cutting a released softmax to its most frequent words costs and saves: a stand-in of the original's shape
(793,471 words x 512, random values: the published file cannot be fetched here), read whole and cut to
100,000 and 50,000 words; per cut the time to read it, the process's peak memory (RSS, each cut in a fresh
process) and the time to give 1,000 usages their 20 substitutes (`Substitutes.top`: both directions' log-softmax
over the kept words). How far the cut's substitutes agree with the whole vocabulary's needs the published weights.

    python benchmarks/softmax_cut.py            # the original's shape
    python benchmarks/softmax_cut.py --words 200000

Prints the CPU class first.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy

_ONE = """
import json, resource, sys, time
import numpy
from spacy_elmo.bilm.original_softmax import load_original_softmax
from spacy_elmo.change.substitutes import Substitutes
folder, keep, dim = sys.argv[1], (None if sys.argv[2] == "all" else int(sys.argv[2])), int(sys.argv[3])
started = time.perf_counter()
softmax, words = load_original_softmax(folder, dim, keep)
read = time.perf_counter() - started
subs = Substitutes(softmax, words)
states = numpy.random.default_rng(0).normal(size=(1000, 2 * dim)).astype("float32")
started = time.perf_counter()
subs.top(states, k=20)
top = time.perf_counter() - started
print(json.dumps({"words": len(words), "read_s": read, "top_s": top, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=793_471)
    parser.add_argument("--dim", type=int, default=512)
    args = parser.parse_args()
    import h5py

    from spacy_elmo.bilm.precision import cpu_class

    print(f"CPU class: {cpu_class()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rng = numpy.random.default_rng(0)
        with h5py.File(folder / "softmax_weights.hdf5", "w") as f:
            weight = f.create_dataset("softmax/W", (args.words, args.dim), dtype="float32")
            for start in range(0, args.words, 100_000):
                rows = min(100_000, args.words - start)
                weight[start : start + rows] = rng.normal(0, 0.05, (rows, args.dim)).astype("float32")
            f.create_dataset("softmax/b", data=rng.normal(0, 0.1, args.words).astype("float32"))
        words = ["</S>", "<S>", "<UNK>"] + [f"w{i}" for i in range(args.words - 3)]
        (folder / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf8")
        print(f"softmax: {args.words:,} x {args.dim} float32, {(folder / 'softmax_weights.hdf5').stat().st_size / 1e9:.2f} GB on disk")
        print("| kept words | read (s) | 1,000 usages' top 20 (s) | peak RSS (MB) |")
        print("|---:|---:|---:|---:|")
        for keep in ("all", "100000", "50000"):
            out = subprocess.run([sys.executable, "-c", _ONE, str(folder), keep, str(args.dim)], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {row['words']:,} | {row['read_s']:.2f} | {row['top_s']:.2f} | {row['peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
