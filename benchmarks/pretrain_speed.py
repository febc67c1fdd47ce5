"""Training tokens/s of a pretraining preset, and the fraction of the machine's matrix-product
peak it reaches.

Runs the preset's model, softmax and batch size on real text (Reuters by default) for a number of
steps, counts the FLOPs of one training step (forward + backward) with PyTorch's FLOP counter,
and measures in the same run the GFLOP/s of a large square matrix product as the peak.

    python benchmarks/pretrain_speed.py                       # configs/pretrain_cpu.cfg
    python benchmarks/pretrain_speed.py --config configs/pretrain_small.cfg --steps 10
"""
import argparse
import time
from itertools import islice
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "raw" / "reuters21578.txt.gz"


def matmul_peak(threads: int, size: int = 2048, repeats: int = 10) -> float:
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "pretrain_cpu.cfg")
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import torch
    from spacy.util import registry
    from thinc.api import Config
    from torch.utils.flop_counter import FlopCounterMode

    from spacy_elmo.bilm import CharBatch
    from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets
    from spacy_elmo.layers.bilm_model import get_bilm
    from spacy_elmo.training.corpus import Corpus, CorpusPosition, training_batches
    from spacy_elmo.training.vocab import Vocabulary

    if not args.text.exists():
        raise SystemExit(f"{args.text} not found: pass --text with a raw-text file")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = Config().from_disk(args.config)
    train, corpus_cfg = config["training"], config["corpus"]
    corpus = Corpus(args.text, corpus_cfg["lang"], corpus_cfg["max_length"])
    vocab = Vocabulary.build(islice(corpus, 20000), config["vocab"]["max_size"], config["vocab"]["min_count"])
    bilm = get_bilm(registry.resolve({"bilm": config["bilm"]})["bilm"])
    softmax_cfg = config["softmax"]
    softmax = SharedSoftmax(bilm.options.projection_dim, len(vocab), softmax_cfg["kind"], softmax_cfg["cutoffs"])
    lm = BiLanguageModel(bilm, softmax, dropout=train["dropout"]).train()
    optimizer = torch.optim.Adam(lm.parameters(), lr=train["learn_rate"])
    batches = training_batches(corpus, train["batch_tokens"], corpus_cfg["pool_size"], 0, CorpusPosition())

    def step(sentences):  # type: ignore[no-untyped-def]
        out = lm(CharBatch.from_sentences(sentences), batch_targets(sentences, vocab.ids, vocab.unk_id, vocab.bos_id, vocab.eos_id))
        n = int(out["n_tokens"])
        loss = (out["forward"] + out["backward"]) / (2 * n)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(lm.parameters(), train["grad_clip"])
        optimizer.step()
        return n

    data = [next(batches)[0] for _ in range(args.warmup + args.steps + 1)]
    for sentences in data[: args.warmup]:
        step(sentences)
    counter = FlopCounterMode(display=False)
    with counter:
        counted_tokens = step(data[args.warmup])
    flops_per_token = counter.get_total_flops() / counted_tokens
    n_tokens = 0
    start = time.perf_counter()
    for sentences in data[args.warmup + 1 :]:
        n_tokens += step(sentences)
    elapsed = time.perf_counter() - start
    rate = n_tokens / elapsed
    peak = matmul_peak(args.threads)
    params = sum(p.numel() for p in bilm.parameters())
    print(f"config            {args.config.name} (biLM {params / 1e6:.1f}M parameters, vocab {len(vocab)}, {softmax.kind} softmax)")
    print(f"training          {rate:.0f} tokens/s ({n_tokens} tokens in {args.steps} steps of <= {train['batch_tokens']} tokens, {args.threads} threads)")
    print(f"work              {flops_per_token / 1e6:.1f} MFLOP per token (forward + backward, counted)")
    print(f"achieved          {rate * flops_per_token / 1e9:.1f} GFLOP/s")
    print(f"matmul peak       {peak:.1f} GFLOP/s (2048^3 product, same run)")
    print(f"fraction of peak  {rate * flops_per_token / 1e9 / peak:.1%}")


if __name__ == "__main__":
    main()
