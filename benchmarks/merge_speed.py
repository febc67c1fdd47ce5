"""What `spacy-elmo merge` costs per MiB of layers: the copying merge (which checks every part's digest as
it reads) and `merge --virtual` (HDF5 virtual datasets: nothing copied), on the same parts, in one run,
with the time that reading and digesting the parts alone takes (what the checks add at most).

    python benchmarks/merge_speed.py                          # the shared biLM, 1,000 Wikipedia lines, 4 parts
    python benchmarks/merge_speed.py --lines 300 --bilm random --parts 2

Prints seconds and MiB/s of each, its ratio to the copying merge, and the CPU class.
"""

import argparse
import tempfile
import time
from pathlib import Path

from scale_overhead import SHARED, embed_settings, read_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bilm", default=str(SHARED / "models" / "elmo-small-wiki-reuters"), help="biLM folder, or 'random'")
    parser.add_argument("--text", type=Path, default=SHARED / "data" / "raw" / "enwiki-20M.txt.gz")
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="each merge this many times; the fastest is kept")
    args = parser.parse_args()

    import h5py

    from spacy_elmo.bilm.precision import cpu_class
    from spacy_elmo.digests import DataDigest
    from spacy_elmo.distributed import merge_parts
    from spacy_elmo.pipeline.export import embed_to_file
    from spacy_elmo.pipeline.loading import load_elmo_pipeline
    from spacy_elmo.shards import Shard

    print(f"CPU: {cpu_class().describe()}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        text = tmp / "text.txt"
        text.write_text("\n".join(read_lines(args.text, args.lines)) + "\n", encoding="utf8")
        bilm, settings = embed_settings(args.bilm, tmp, text, 16)
        nlp = load_elmo_pipeline(bilm)
        parts = [tmp / f"part{i}.hdf5" for i in range(args.parts)]
        started = time.perf_counter()
        n_tokens = sum(embed_to_file(nlp, settings, Shard(i, args.parts), part)[2] for i, part in enumerate(parts))
        mib = sum(p.stat().st_size for p in parts) / 2**20
        print(f"{args.parts} parts: {n_tokens:,} tokens, {mib:,.0f} MiB of layers, embedded in {time.perf_counter() - started:.0f}s")

        def timed(virtual: bool) -> float:
            best = float("inf")
            for _ in range(args.rounds):
                out = tmp / "merged.hdf5"
                out.unlink(missing_ok=True)
                started = time.perf_counter()
                merge_parts(parts, out, log=lambda _: None, virtual=virtual)
                best = min(best, time.perf_counter() - started)
            return best

        rows = [("copy (every part's digest checked as it is read)", timed(False)), ("--virtual", timed(True))]
        started = time.perf_counter()
        for part in parts:  # what the checks add: the digest of every dataset, alone
            with h5py.File(part, "r") as f:
                digest = DataDigest()
                for name in f:
                    if name.isdigit():
                        digest.add(int(name), f[name][()])
        rows.append(("(reading and digesting the parts alone)", time.perf_counter() - started))
        base = rows[0][1]
        print()
        print("| merge | seconds | MiB/s | time vs the copying merge |")
        print("|---|---:|---:|---:|")
        for label, seconds in rows:
            print(f"| {label} | {seconds:.2f} | {mib / seconds:,.0f} | {seconds / base:.2f}x |")
        n_docs = len(text.read_text(encoding="utf8").splitlines())
        print(f"\n{n_docs:,} datasets: --virtual {1000 * rows[1][1] / n_docs:.2f} ms a dataset, whatever its size")


if __name__ == "__main__":
    main()
