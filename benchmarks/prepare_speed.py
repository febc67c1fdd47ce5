"""Preparing a corpus for pretraining: `prepare_corpus` with one process and with several, against
spaCy's plain tokenizer + sentencizer in one process over the same texts already in memory (the
floor of the work) and the former reading (that, in the training process, one token at a time in
Python, plus a vocabulary pass), in the same run.

    python benchmarks/prepare_speed.py                                   # Wikipedia + Reuters
    python benchmarks/prepare_speed.py --text ../shared/data/raw/reuters21578.txt.gz --n-process 2
"""

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Tuple

ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT.parent / "shared" / "data" / "raw"


def former_reading(path: Path, lang: str, max_length: int) -> int:
    """Tokens of the former `Corpus` iteration (what every epoch and the vocabulary pass did)."""
    import spacy

    from spacy_elmo.text_corpus import corpus_files, numbered_texts

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    counts: Counter = Counter()
    texts = (text for _, _, text in numbered_texts(corpus_files(path), nlp.vocab))
    for doc in nlp.pipe(texts, batch_size=256):
        for sent in doc.sents:
            words = [t.text for t in sent if not t.is_space]
            for start in range(0, len(words), max_length):
                counts.update(words[start : start + max_length])
    return sum(counts.values())


def plain_pipeline(path: Path, lang: str) -> Tuple[int, float]:
    """Tokens of `spacy.blank(lang)` + sentencizer over the texts, and the seconds it took; the
    texts are read beforehand (not timed)."""
    import spacy

    from spacy_elmo.text_corpus import corpus_files, numbered_texts

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    texts = [text for _, _, text in numbered_texts(corpus_files(path), nlp.vocab)]
    start = time.perf_counter()
    n = sum(len(doc) for doc in nlp.pipe(texts, batch_size=256))
    return n, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", type=Path, default=RAW, help="a file or folder (default: ../shared/data/raw, both files)")
    parser.add_argument("--n-process", type=int, default=0, help="processes of the parallel run (0: one per core)")
    parser.add_argument("--skip-former", action="store_true")
    args = parser.parse_args()
    import os

    from spacy_elmo.training.prepared import prepare_corpus

    n_process = args.n_process or os.cpu_count() or 1
    n, seconds = plain_pipeline(args.text, "en")
    rows = [("plain tokenizer + sentencizer", n, seconds)]
    if not args.skip_former:
        start = time.perf_counter()
        n = former_reading(args.text, "en", 100)
        rows.append(("former reading, 1 process", n, time.perf_counter() - start))
    for n_proc in sorted({1, n_process}):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            corpus = prepare_corpus(args.text, Path(tmp) / "prepared", n_process=n_proc, progress=False, log=lambda s: None)
            rows.append(
                (f"prepare_corpus, {n_proc} process{'es' if n_proc > 1 else ''}", int(corpus.starts[-1]), time.perf_counter() - start)
            )
    base = rows[0][2]
    print(f"{'':32} {'tokens':>12} {'seconds':>9} {'tokens/s':>10} {'time vs plain':>14}")
    for name, n, seconds in rows:
        print(f"{name:32} {n:12,} {seconds:9.1f} {n / seconds:10,.0f} {seconds / base:14.2f}")


if __name__ == "__main__":
    main()
