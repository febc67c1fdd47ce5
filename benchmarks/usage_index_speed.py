"""The usage index: building speed and peak memory against the plain pipeline over the same text
(the elmo component's own speed, in the same run), the index's size per million usages, and the
latency of a query (exact cosine over every usage, and over one word's usages) at several sizes.

    python benchmarks/usage_index_speed.py                       # shared biLM, 2,000 Reuters lines
    python benchmarks/usage_index_speed.py --lines 500 --sizes 10000 100000
    python benchmarks/usage_index_speed.py --bilm random         # no ../shared needed
    python benchmarks/usage_index_speed.py --ann --from-index INDEX --ann-sizes 1000000 10000000

The query sizes use synthetic vectors of the biLM's width (the exact search does not look at
values). --ann measures the approximate search (FAISS) on a real index's usages replicated with
noise up to each size: recall@10 against the exact search, query latency, bytes per usage, build
time, for IVF-PQ at several nprobe / refine settings and, at the first size, IVF-Flat and HNSW.
"""

import argparse
import gzip
import resource
import tempfile
import time
from pathlib import Path
from typing import List

import numpy

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_lines(path: Path, n: int) -> List[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    lines = []
    with opener(path, "rt", encoding="utf8") as f:  # type: ignore[operator]
        for line in f:
            if line.strip():
                lines.append(line.strip())
                if len(lines) == n:
                    break
    return lines


def pipeline(bilm: str, tmp: Path):  # type: ignore[no-untyped-def]
    from spacy_elmo.pipeline.loading import load_elmo_pipeline

    if bilm == "random":
        from spacy_elmo import ElmoOptions, save_original
        from spacy_elmo.bilm import BiLM

        folder = tmp / "random_bilm"
        folder.mkdir()
        save_original(BiLM(ElmoOptions()).eval(), folder / "options.json", folder / "weights.hdf5")
        bilm = str(folder)
    return load_elmo_pipeline(bilm), bilm


def build_speed(nlp, bilm: str, text_file: Path, tmp: Path, words: List[str]) -> None:  # type: ignore[no-untyped-def]
    from spacy_elmo.usages import build_usage_index
    from spacy_elmo.usages.layout import ARRAYS

    texts = text_file.read_text(encoding="utf8").split("\n\n")
    started = time.perf_counter()
    n_tokens = sum(len(doc) for doc in nlp.pipe(texts, batch_size=64))
    plain = time.perf_counter() - started
    print(f"plain pipeline (tokenizer, sentencizer, elmo) over {n_tokens:,} tokens: {n_tokens / plain:,.0f} tokens/s")
    for label, chosen in (("every token", None), (f"--words {','.join(words)}", words)):
        out = tmp / f"index_{'all' if chosen is None else 'words'}"
        started = time.perf_counter()
        index = build_usage_index(nlp, text_file, out, model=bilm, words=chosen, progress=False, log=lambda _: None)
        seconds = time.perf_counter() - started
        size = sum(p.stat().st_size for p in out.iterdir() if p.is_file())
        per_usage = sum((out / name).stat().st_size for name in ("vectors.bin", *ARRAYS))
        print(
            f"index-usages, {label}: {len(index):,} usages in {index.meta['n_sentences']:,} sentences, "
            f"{n_tokens / seconds:,.0f} corpus tokens/s ({seconds / plain:.2f}x the plain pipeline's time), "
            f"{size / 2**20:.1f} MiB on disk: vectors + usage tables {per_usage / max(len(index), 1) * 1e6 / 2**20:,.0f} MiB "
            f"per million usages, sentences + word types {(size - per_usage) / 2**20:.1f} MiB; peak RSS so far {peak_rss_mb():,.0f} MiB"
        )


def query_latency(dim: int, sizes: List[int], tmp: Path, repeats: int) -> None:
    from spacy_elmo.usages import UsageIndex
    from spacy_elmo.usages.storage import IndexWriter

    rng = numpy.random.default_rng(0)
    for size in sizes:
        folder = tmp / f"synthetic_{size}"
        meta = {"model": "", "fingerprint": "", "layer_weights": [0.0, 0.0, 1.0], "match": "lower", "files": []}
        with IndexWriter(folder, meta) as writer:
            writer.add_sentences([{"text": "a word", "file": 0, "doc": 0}])
            for start in range(0, size, 1 << 16):
                m = min(1 << 16, size - start)
                columns = {
                    "usage_sentence": numpy.zeros(m),
                    "usage_token": numpy.ones(m),
                    "usage_start": numpy.full(m, 2),
                    "usage_end": numpy.full(m, 6),
                }
                # one word in 100 is "word"; the rest spread over 1,000 other keys
                keys = ["word" if (start + i) % 100 == 0 else f"w{(start + i) % 1000}" for i in range(m)]
                writer.add_usages(rng.standard_normal((m, dim), dtype="float32"), columns, keys)
            writer.finish([("word", 1)], numpy.zeros((1, dim // 2), dtype="float16"))
        index = UsageIndex().from_disk(folder)
        query = rng.standard_normal(dim, dtype="float32")
        rows = index.rows_of("word")
        for label, subset in (("every usage", None), (f"one word's {len(rows):,} usages", rows)):
            index.nearest(query, 5, subset)  # first touch of the memory map
            started = time.perf_counter()
            for _ in range(repeats):
                index.nearest(query, 5, subset)
            ms = (time.perf_counter() - started) / repeats * 1e3
            print(f"query over {size:>10,} usages ({label}): {ms:8.2f} ms")


def replicated_index(source: Path, size: int, folder: Path, noise: float, seed: int = 0) -> None:
    """An index of `size` usages: rows of the real index at `source`, each plus Gaussian noise of
    `noise` times its norm (a cloud around every real usage), keys kept."""
    from spacy_elmo.usages import UsageIndex
    from spacy_elmo.usages.storage import IndexWriter

    real = UsageIndex().from_disk(source, exclude=["ann"])
    vectors = numpy.asarray(real.vectors, dtype="float32")
    norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
    dim = vectors.shape[1]
    rng = numpy.random.default_rng(seed)
    meta = {k: real.meta[k] for k in ("model", "fingerprint", "layer_weights", "match", "files", "load")}
    with IndexWriter(folder, meta) as writer:
        writer.add_sentences([{"text": "a word", "file": 0, "doc": 0}])
        for start in range(0, size, 1 << 16):
            m = min(1 << 16, size - start)
            rows = rng.integers(0, len(real), m) if size != len(real) else numpy.arange(start, start + m)
            block = vectors[rows] + rng.standard_normal((m, dim), dtype="float32") * (noise / dim**0.5) * norms[rows]
            columns = {
                "usage_sentence": numpy.zeros(m),
                "usage_token": numpy.ones(m),
                "usage_start": numpy.full(m, 2),
                "usage_end": numpy.full(m, 6),
            }
            writer.add_usages(block, columns, [real.keys[k] for k in real.arrays["usage_key"][rows]])
        writer.finish([("word", 1)], numpy.zeros((1, dim // 2), dtype="float16"))


def ann_table(source: Path, sizes: List[int], tmp: Path, n_queries: int, noise: float, others: bool) -> None:
    import faiss

    from spacy_elmo.usages import UsageIndex
    from spacy_elmo.usages import index as index_module
    from spacy_elmo.usages.ann_build import build_ann

    index_module.ANN_MIN_ROWS = 0  # every query through the approximate search
    rng = numpy.random.default_rng(1)
    print("| usages | type | nprobe | refine | recall@10 | median ms | p95 ms | ANN bytes/usage | vectors bytes/usage | build s |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        folder = tmp / f"ann_{size}"
        started = time.perf_counter()
        replicated_index(source, size, folder, noise)
        made = time.perf_counter() - started
        index = UsageIndex().from_disk(folder)
        dim = index.vectors.shape[1]
        picks = rng.integers(0, len(index), n_queries)
        queries = []
        for i in picks:  # a usage near an indexed one, not in the index
            row = numpy.asarray(index.vectors[i], dtype="float32")
            queries.append(row + rng.standard_normal(dim).astype("float32") * (noise / dim**0.5) * float(numpy.linalg.norm(row)))
        started = time.perf_counter()
        truth = [index.nearest_rows(q, 10, exact=True)[0] for q in queries]
        exact_ms = (time.perf_counter() - started) / n_queries * 1e3
        print(f"<!-- {size:,} usages of width {dim} made in {made:.0f}s; exact search {exact_ms:.1f} ms a query -->", flush=True)
        started = time.perf_counter()
        record = build_ann(folder, log=lambda _: None)
        build = time.perf_counter() - started
        index = UsageIndex().from_disk(folder)
        for nprobe in (16, 32, 48, 64, 128):
            for refine in (100, 200, 400):
                index.ann.nprobe, index.ann.refine = nprobe, refine
                recall, times = _measure(queries, truth, lambda q: index.nearest_rows(q, 10)[0])
                print(
                    f"| {size:,} | {record['type']} + exact rerank | {nprobe} | {refine} | {recall:.3f} | {numpy.median(times):.2f} | "
                    f"{numpy.percentile(times, 95):.2f} | {record['ann_bytes'] / size:.1f} | {2 * dim} | {build:.0f} |",
                    flush=True,
                )
        if not others:
            continue
        others = False
        unit = numpy.asarray(index.vectors, dtype="float32")
        unit /= numpy.linalg.norm(unit, axis=1, keepdims=True)
        for label, make, settings in (
            ("IVF-Flat", lambda: faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, record["lists"], faiss.METRIC_INNER_PRODUCT), (16, 48)),
            ("HNSW32,Flat", lambda: faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT), (64, 128)),
        ):
            started = time.perf_counter()
            other = make()
            if hasattr(other, "nlist"):
                other.train(unit[rng.choice(len(unit), min(len(unit), 64 * record["lists"]), replace=False)])
            other.add(unit)
            build = time.perf_counter() - started
            path = tmp / "other.faiss"
            faiss.write_index(other, str(path))
            for setting in settings:
                if hasattr(other, "nprobe"):
                    other.nprobe = setting
                else:
                    other.hnsw.efSearch = setting
                recall, times = _measure(queries, truth, lambda q, found=other: found.search(q[None] / numpy.linalg.norm(q), 10)[1][0])
                print(
                    f"| {size:,} | {label} (no rerank) | {setting if hasattr(other, 'nprobe') else 'efSearch ' + str(setting)} | - | "
                    f"{recall:.3f} | {numpy.median(times):.2f} | {numpy.percentile(times, 95):.2f} | "
                    f"{path.stat().st_size / size:.1f} | - | {build:.0f} |",
                    flush=True,
                )
        del unit


def _measure(queries, truth, search):  # type: ignore[no-untyped-def]
    hits, times = 0, []
    for query, expected in zip(queries, truth):
        started = time.perf_counter()
        found = search(query)
        times.append((time.perf_counter() - started) * 1e3)
        hits += len(set(map(int, found)) & set(map(int, expected)))
    return hits / (10 * len(queries)), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--bilm", default=str(SHARED / "models" / "elmo-small-wiki-reuters"), help="biLM folder, or 'random' (released small size)"
    )
    parser.add_argument("--text", type=Path, default=SHARED / "data" / "raw" / "reuters21578.txt.gz")
    parser.add_argument("--lines", type=int, default=2000, help="Text lines to index")
    parser.add_argument("--words", default="bank,play,suit", help="The chosen words of the --words build")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000], help="Index sizes for the query latency")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--ann", action="store_true", help="Measure the approximate search instead (needs faiss-cpu: the [ann] extra)")
    parser.add_argument("--from-index", type=Path, help="--ann: the real usage index whose usages are replicated")
    parser.add_argument("--ann-sizes", type=int, nargs="+", default=[1_000_000, 10_000_000], help="--ann: index sizes")
    parser.add_argument("--queries", type=int, default=100, help="--ann: queries per setting")
    parser.add_argument("--noise", type=float, default=0.3, help="--ann: replicas' noise, relative to the usage's norm")
    parser.add_argument("--no-others", action="store_true", help="--ann: IVF-PQ only (no IVF-Flat and HNSW at the first size)")
    args = parser.parse_args()
    import torch

    print(f"torch threads: {torch.get_num_threads()}")
    from spacy_elmo.bilm.precision import cpu_class

    print(f"CPU: {cpu_class().describe()}")
    if args.ann:
        if args.from_index is None:
            parser.error("--ann needs --from-index: a usage index of real text (spacy-elmo index-usages BILM TEXT INDEX)")
        with tempfile.TemporaryDirectory(dir=args.from_index.parent) as tmp_name:
            ann_table(args.from_index, args.ann_sizes, Path(tmp_name), args.queries, args.noise, not args.no_others)
        print(f"peak RSS: {peak_rss_mb():,.0f} MiB")
        return
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        nlp, bilm = pipeline(args.bilm, tmp)
        text_file = tmp / "text.txt"
        text_file.write_text("\n\n".join(read_lines(args.text, args.lines)) + "\n", encoding="utf8")
        build_speed(nlp, bilm, text_file, tmp, args.words.split(","))
        dim = 2 * nlp.get_pipe("elmo").options.projection_dim
        query_latency(dim, args.sizes, tmp, args.repeats)
        print(f"peak RSS: {peak_rss_mb():,.0f} MiB")


if __name__ == "__main__":
    main()
