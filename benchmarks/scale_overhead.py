"""What running past one process costs: the same text embedded by one process, by spaCy's
`nlp.pipe(n_process=2)`, in shards (`embed --shard I/N` + `merge`) and on a local Ray cluster of 2
workers (`embed --ray auto`), on this machine, in one run.

    python benchmarks/scale_overhead.py                      # the shared biLM, 2,000 Wikipedia lines
    python benchmarks/scale_overhead.py --lines 500 --bilm random

Prints tokens/s of each and its ratio to nlp.pipe(n_process=2), Ray's start-up apart, and the CPU class.
"""

import argparse
import gzip
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def read_lines(path: Path, n: int) -> List[str]:
    lines = []
    with gzip.open(path, "rt", encoding="utf8") as f:
        for line in f:
            if line.strip():
                lines.append(line.strip())
                if len(lines) == n:
                    break
    return lines


def embed_settings(bilm: str, tmp: Path, text: Path, docs_per_batch: int) -> Tuple[str, Dict[str, Any]]:
    """The biLM folder (`random`: one of the released original size with random weights, written into
    `tmp`) and `embed`'s settings for every layer of `text` as float32."""
    if bilm == "random":
        from spacy_elmo import ElmoOptions, save_original
        from spacy_elmo.bilm import BiLM

        (tmp / "bilm").mkdir()
        save_original(BiLM(ElmoOptions()).eval(), tmp / "bilm" / "options.json", tmp / "bilm" / "weights.hdf5")
        bilm = str(tmp / "bilm")
    settings = {
        "model": bilm,
        "input": str(text),
        "layers": "all",
        "pretokenized": False,
        "lang": "en",
        "sentences": True,
        "dtype": "float32",
        "precision": "fp32",
        "docs_per_batch": docs_per_batch,
    }
    return bilm, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bilm", default=str(SHARED / "models" / "elmo-small-wiki-reuters"), help="biLM folder, or 'random'")
    parser.add_argument("--text", type=Path, default=SHARED / "data" / "raw" / "enwiki-20M.txt.gz")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--docs-per-batch", type=int, default=64)
    args = parser.parse_args()

    import torch

    from spacy_elmo.bilm.precision import cpu_class
    from spacy_elmo.distributed import merge_parts, run_embed
    from spacy_elmo.distributed.ray_jobs import ray_session
    from spacy_elmo.pipeline.export import embed_to_file
    from spacy_elmo.pipeline.loading import load_elmo_pipeline
    from spacy_elmo.shards import Shard

    print(f"CPU: {cpu_class().describe()}; torch threads {torch.get_num_threads()}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        text = tmp / "text.txt"
        text.write_text("\n".join(read_lines(args.text, args.lines)) + "\n", encoding="utf8")
        texts = text.read_text(encoding="utf8").splitlines()
        bilm, settings = embed_settings(args.bilm, tmp, text, args.docs_per_batch)
        nlp = load_elmo_pipeline(bilm)
        list(nlp.pipe(texts[:20]))  # warm
        rows = []

        def timed(label: str, run) -> None:  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            n_tokens = run()
            seconds = time.perf_counter() - started
            rows.append((label, seconds, n_tokens))
            print(f"{label}: {seconds:.1f}s", flush=True)

        timed("nlp.pipe, 1 process (2 threads)", lambda: sum(len(d) for d in nlp.pipe(texts, batch_size=args.docs_per_batch)))
        timed(
            "nlp.pipe(n_process=2) (1 thread each)",
            lambda: sum(len(d) for d in nlp.pipe(texts, batch_size=args.docs_per_batch, n_process=2)),
        )
        timed("embed to HDF5, 1 process (2 threads)", lambda: embed_to_file(nlp, settings, Shard(), tmp / "one.hdf5")[2])

        def shards() -> int:
            torch.set_num_threads(1)
            parts = [tmp / f"part{i}.hdf5" for i in range(2)]
            n = sum(embed_to_file(nlp, settings, Shard(i, 2), part)[2] for i, part in enumerate(parts))
            torch.set_num_threads(2)
            started = time.perf_counter()
            merge_parts(parts, tmp / "merged.hdf5", log=lambda _: None)
            size = (tmp / "merged.hdf5").stat().st_size / 2**20
            print(f"merge of the 2 parts: {time.perf_counter() - started:.1f}s for {size:,.0f} MiB of layers", flush=True)
            return n

        timed("embed --shard 0/2, 1/2 one after the other (1 thread) + merge", shards)
        started = time.perf_counter()
        with ray_session("auto"):  # started here, so that run_embed uses it and its start is not counted
            ray_start = time.perf_counter() - started
            timed(
                "embed --ray auto --workers 2 (local cluster, 1 thread each; actors start, shards, merge)",
                lambda: run_embed("auto", settings, tmp / "ray.hdf5", workers=2, quiet=True) or rows[0][2],
            )
        n_tokens = rows[0][2]
        base = next(r for r in rows if "n_process=2" in r[0])[1]
        print()
        print(f"{n_tokens:,} tokens in {len(texts):,} lines; Ray's local cluster started in {ray_start:.1f}s (not counted below)")
        print("| how | seconds | tokens/s | time vs nlp.pipe(n_process=2) |")
        print("|---|---:|---:|---:|")
        for label, seconds, _ in rows:
            print(f"| {label} | {seconds:.1f} | {n_tokens / seconds:,.0f} | {seconds / base:.2f}x |")


if __name__ == "__main__":
    main()
