"""`spacy-elmo change` at scale: two usage indexes of N usages each (synthetic vectors, 256 wide, spread over
`--words` keys with Zipf's law, so a few words have 100,000s of usages and most a handful), scored for every
word in both; wall time and the command's peak memory (RSS), with and without --standardize.

    python benchmarks/change_speed.py                     # 1,000,000 usages on each side
    python benchmarks/change_speed.py --usages 200000 --words 2000

Prints the CPU class first.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy


_PEAK = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def synthetic_index(folder: Path, size: int, n_words: int, dim: int, seed: int) -> None:
    from spacy_elmo.usages.storage import IndexWriter

    rng = numpy.random.default_rng(seed)
    weights = 1.0 / numpy.arange(1, n_words + 1)
    weights /= weights.sum()
    centres = numpy.random.default_rng(1).standard_normal((n_words, dim), dtype="float32")  # the same words on both sides
    meta = {"model": "", "fingerprint": "synthetic", "layer_weights": [0.0, 0.0, 1.0], "match": "lower", "files": []}
    with IndexWriter(folder, meta) as writer:
        writer.add_sentences([{"text": "a word", "file": 0, "doc": 0}])
        for start in range(0, size, 1 << 16):
            m = min(1 << 16, size - start)
            keys = rng.choice(n_words, m, p=weights)
            vectors = centres[keys] + rng.standard_normal((m, dim), dtype="float32")
            columns = {
                "usage_sentence": numpy.zeros(m),
                "usage_token": numpy.ones(m),
                "usage_start": numpy.full(m, 2),
                "usage_end": numpy.full(m, 6),
            }
            writer.add_usages(vectors, columns, [f"w{k}" for k in keys])
        writer.finish([("word", 1)], numpy.zeros((1, dim // 2), dtype="float16"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--usages", type=int, default=1_000_000, help="usages in each index")
    parser.add_argument("--words", type=int, default=5_000)
    parser.add_argument("--dim", type=int, default=256)
    args = parser.parse_args()
    from spacy_elmo.bilm.precision import cpu_class

    print(f"CPU: {cpu_class().describe()}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        started = time.perf_counter()
        for name, seed in (("a", 0), ("b", 1)):
            synthetic_index(tmp / name, args.usages, args.words, args.dim, seed)
        print(
            f"two indexes of {args.usages:,} usages ({args.words:,} words, {args.dim} wide) built in {time.perf_counter() - started:.1f} s"
        )
        print("| command | words scored | seconds | peak RSS MB |")
        print("|---|---:|---:|---:|")
        for extra in ([], ["--standardize"]):
            out = tmp / f"change{len(extra)}.tsv"
            command = [sys.executable, "-m", "spacy_elmo", "change", str(tmp / "a"), str(tmp / "b"), str(out), "-q", *extra]
            started = time.perf_counter()
            # a process of its own runs the command, so that the peak is that command's alone
            done = subprocess.run([sys.executable, "-c", _PEAK, *command], check=True, capture_output=True, text=True)
            seconds = time.perf_counter() - started
            peak = int(done.stdout.strip().splitlines()[-1])
            scored = sum(1 for line in out.read_text().splitlines()[2:] if line.split("\t")[3])
            label = " ".join(["change A B OUT", *extra])
            print(f"| `{label}` | {scored:,} | {seconds:.1f} | {peak / 1024:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
