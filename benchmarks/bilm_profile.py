"""Where the biLM's inference time goes: torch.profiler over a few batches, grouped by part.

Random weights at a released size, CoNLL-2003 dev sentences in batches of 32 in corpus order, the
precision asked per call, the token cache off (as `bilm_speed.py --per-call` measures it). Parts:
the LSTM's input products (one per block of running rows), its per-step products (hidden -> gates,
cell -> projection), the char CNN's window products, the highway and projection products, the
cell's elementwise work, the char CNN's max-pooling, and everything else (data movement, Python).

    python benchmarks/bilm_profile.py --size original --precision int8
    python benchmarks/bilm_profile.py --size small --precision fp32 bf16 int8 --batches 8
"""

import argparse
from collections import defaultdict
from pathlib import Path
from typing import Dict, List

from bilm_speed import DEFAULT_DATA, SIZES, random_bilm, read_sentences

PRODUCTS = (
    "mkldnn::_linear_pointwise",
    "quantized::linear_dynamic",
    "onednn::qlinear_pointwise",
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
)
ELEMENTWISE = (
    "aten::sigmoid",
    "aten::sigmoid_",
    "aten::tanh",
    "aten::tanh_",
    "aten::mul",
    "aten::mul_",
    "aten::addcmul",
    "aten::sub_",
    "aten::clamp",
    "aten::clamp_",
    "aten::add",
    "aten::add_",
)


def part_of(name: str, shapes: List, size: str) -> str:
    cell, proj, _ = SIZES[size]
    if name in PRODUCTS and shapes and shapes[0]:
        rows, width = shapes[0][-2], shapes[0][-1]
        if name in ("quantized::linear_dynamic", "onednn::qlinear_pointwise") and width in (proj + 4, cell + 4):
            width -= 4  # int8's anchor columns (bilm/packed_matmul.py, ANCHOR_COLUMNS)
        if width == proj:
            return "LSTM input products" if rows > 32 else "LSTM step products (hidden)"
        if width == cell:
            return "LSTM step products (projection)"
        if width <= 7 * 16:
            return "char CNN window products"
        return "highway + projection products"
    if name in ELEMENTWISE:
        return "elementwise (cell, biases)"
    if name in ("aten::amax", "aten::max", "aten::max_pool1d", "aten::mkldnn_convolution"):
        return "char CNN pooling / conv"
    return "other (copies, indexing, Python)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="original", choices=list(SIZES))
    parser.add_argument("--precision", nargs="+", default=["fp32", "bf16", "int8"])
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile

    from spacy_elmo.bilm import CharBatch

    torch.set_num_threads(args.threads)
    bilm = random_bilm(args.size)
    sentences, source = read_sentences(args.data, 32 * args.batches)
    batches = [CharBatch.from_sentences(sentences[i : i + 32]) for i in range(0, len(sentences), 32)]
    n_tokens = sum(len(s) for s in sentences)
    for precision in args.precision:
        with torch.inference_mode():
            bilm.precision = precision
            bilm(batches[0])  # packs the weights
            with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
                for batch in batches:
                    bilm(batch)
            bilm.precision = "fp32"
        parts: Dict[str, float] = defaultdict(float)
        for event in prof.key_averages(group_by_input_shape=True):
            parts[part_of(event.key, event.input_shapes, args.size)] += event.self_cpu_time_total / 1e3
        total = sum(parts.values())
        print(
            f"{args.size}, {precision}: {total:.0f} ms of operator time for {n_tokens} tokens "
            f"({n_tokens / total * 1e3:,.0f} tokens/s under the profiler)"
        )
        for part, ms in sorted(parts.items(), key=lambda kv: -kv[1]):
            print(f"  {part:<36}{ms:>8.0f} ms {100 * ms / total:>5.1f}%")
        others: Dict[str, float] = defaultdict(float)
        calls: Dict[str, int] = defaultdict(int)
        for event in prof.key_averages():
            if event.key not in PRODUCTS and part_of(event.key, [], args.size).startswith("other"):
                others[event.key] += event.self_cpu_time_total / 1e3
                calls[event.key] += event.count
        print(
            "  of which: " + ", ".join(f"{k} {ms:.0f} ms ({calls[k]} calls)" for k, ms in sorted(others.items(), key=lambda kv: -kv[1])[:6])
        )
    print(f"data: {source}; batches of 32; {args.threads} threads; torch {torch.__version__}")


if __name__ == "__main__":
    main()
