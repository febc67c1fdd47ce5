"""Words/s of NER training per epoch, with a frozen ELMo and without, and of the trained
pipelines at prediction time.

Both pipelines come from the example configs (configs/ner_baseline.cfg, configs/ner_elmo.cfg),
identical but for ELMo; the biLM is the released "small" size (C 1024, P 128) with random weights
(speed does not depend on the weight values). Epoch 1 runs the biLM; from epoch 2 on, the frozen
component serves the layers from its cache.

    python benchmarks/ner_train_speed.py --sentences 1000 --epochs 3
"""

import argparse
import time
from pathlib import Path
from typing import Dict, List

from spacy_elmo.configs import CONFIG_DIR as CONFIGS

DEFAULT_TRAIN = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2003" / "eng.train"
DEFAULT_DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2003" / "eng.testa"


def read_conll(path: Path, n_sentences: int):  # type: ignore[no-untyped-def]
    from spacy.training.converters import conll_ner_to_docs

    lines: List[str] = []
    count = 0
    for line in path.read_text(encoding="utf8").splitlines():
        lines.append(line)
        if not line.strip():
            count += 1
            if count >= n_sentences:
                break
    return list(conll_ner_to_docs("\n".join(lines), n_sents=10, no_print=True))


def run(config_name: str, train_docs, dev_docs, epochs: int, batch_words: int, threads: int) -> Dict:  # type: ignore[no-untyped-def]
    import spacy
    import torch
    from spacy.tokens import Doc
    from spacy.training import Example
    from spacy.util import load_config, load_model_from_config

    torch.set_num_threads(threads)
    random_biLM = {"initialize.components.elmo.allow_random": True} if "elmo" in config_name else {}  # speed only: no weights needed
    config = load_config(CONFIGS / config_name, overrides=random_biLM)
    nlp = load_model_from_config(config, auto_fill=True)
    examples = [Example(Doc(nlp.vocab, words=[t.text for t in d], spaces=[bool(t.whitespace_) for t in d]), d) for d in train_docs]
    optimizer = nlp.initialize(lambda: examples)
    n_words = sum(len(eg.reference) for eg in examples)
    epoch_rates = []
    for _ in range(epochs):
        start = time.perf_counter()
        batch: List[Example] = []
        size = 0
        for eg in examples:
            batch.append(eg)
            size += len(eg.reference)
            if size >= batch_words:
                nlp.update(batch, sgd=optimizer, drop=0.1)
                batch, size = [], 0
        if batch:
            nlp.update(batch, sgd=optimizer, drop=0.1)
        epoch_rates.append(n_words / (time.perf_counter() - start))
    texts = [d.text for d in dev_docs]
    fresh = spacy.util.load_model_from_config(config, auto_fill=True)  # a pipeline that only predicts
    fresh.initialize(lambda: examples)
    fresh.from_bytes(nlp.to_bytes())
    start = time.perf_counter()
    n_dev_words = sum(len(doc) for doc in fresh.pipe(texts, batch_size=64))
    predict_rate = n_dev_words / (time.perf_counter() - start)
    return {"config": config_name, "epochs": epoch_rates, "predict": predict_rate, "train_words": n_words, "dev_words": n_dev_words}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--dev-sentences", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-words", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    parser.add_argument("--dev", type=Path, default=DEFAULT_DEV)
    args = parser.parse_args()
    if not args.train.is_file():
        raise SystemExit(f"{args.train} not found: pass --train and --dev (CoNLL-2003 files)")
    train_docs = read_conll(args.train, args.sentences)
    dev_docs = read_conll(args.dev, args.dev_sentences)
    rows = [run(c, train_docs, dev_docs, args.epochs, args.batch_words, args.threads) for c in ("ner_baseline.cfg", "ner_elmo.cfg")]
    base = rows[0]
    print(f"{'config':<20}" + "".join(f"{'epoch ' + str(i + 1):>12}" for i in range(args.epochs)) + f"{'predict':>12}")
    for row in rows:
        print(f"{row['config']:<20}" + "".join(f"{r:12.0f}" for r in row["epochs"]) + f"{row['predict']:12.0f}")
    elmo = rows[1]
    ratios = [e / b for e, b in zip(elmo["epochs"], base["epochs"])]
    print(f"{'elmo / baseline':<20}" + "".join(f"{r:12.2f}" for r in ratios) + f"{elmo['predict'] / base['predict']:12.2f}")
    print(
        f"words/s; {base['train_words']} training words, {base['dev_words']} dev words; batches of "
        f"{args.batch_words} words; {args.threads} threads; biLM: small size, random weights"
    )


if __name__ == "__main__":
    main()
