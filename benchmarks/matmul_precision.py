"""The biLM's inference matrix products at each precision this CPU offers, same run: float32 (plain
matmul, i.e. the default BLAS; through oneDNN unpacked, as training runs it (`packed_matmul.product`);
and prepacked for oneDNN as the biLM runs it at inference), bfloat16 prepacked (`precision = "bf16"`) and
int8 (`precision = "int8"`: weights int8 per output column, inputs quantized per call by PyTorch's
dynamic quantization kernels, on the VNNI units), each through the biLM's own `PackedWeights`, with
the error of each against float64.

    python benchmarks/matmul_precision.py                 # the LSTM shapes of the released sizes
    python benchmarks/matmul_precision.py --rows 32 --threads 2
    python benchmarks/matmul_precision.py --rows 205 --square 2048   # training-size rows; a 2048^3 product

Prints GFLOP/s, the ratio to prepacked float32 and the largest error relative to the largest
output, per shape. (Products of weights under 2^18 elements stay float32 at every precision: packing
does not pay there.)
"""

import argparse
import time
from typing import Callable, Dict, List, Tuple

import torch

from spacy_elmo.bilm.packed_matmul import PackedWeights, int8_available, onednn_bf16_available, product

# (name, K, N) of the products in one LSTM step: the gates (P -> 4C, input and hidden share the
# shape) and the projection (C -> P), for the released sizes (small, medium, original)
SHAPES = [
    ("small gates", 128, 4096),
    ("small projection", 1024, 128),
    ("medium gates", 256, 8192),
    ("medium projection", 2048, 256),
    ("original gates", 512, 16384),
    ("original projection", 4096, 512),
]


def timed(fn: Callable[[], torch.Tensor], min_seconds: float) -> float:
    for _ in range(3):
        fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_seconds:
        fn()
        n += 1
    return (time.perf_counter() - start) / n


def measure(rows: int, k: int, n: int, min_seconds: float) -> Dict[str, Tuple[float, float]]:
    torch.manual_seed(0)
    x = torch.randn(rows, k) * 0.5
    w = torch.randn(k, n) / k**0.5
    w_t = w.t().contiguous()  # kept by the caller, as the softmax does
    exact = (x.double() @ w.double()).float()
    scale = float(exact.abs().max())
    packs = {}
    for dtype in (torch.float32, torch.bfloat16, torch.qint8):  # the biLM's own products at each precision
        packs[dtype] = PackedWeights()
        packs[dtype].set_dtype(dtype)
    methods: Dict[str, Callable[[], torch.Tensor]] = {
        "fp32 plain": lambda: x @ w,
        "fp32 onednn": lambda: product(x, w, w_t),
        "fp32 packed": lambda: packs[torch.float32].matmul(x, w, "w"),
    }
    if int8_available():
        methods["int8 dynamic"] = lambda: packs[torch.qint8].matmul(x, w, "w")
    if onednn_bf16_available():
        methods["bf16 packed"] = lambda: packs[torch.bfloat16].matmul(x, w, "w")
    results = {}
    with torch.no_grad():
        for name, fn in methods.items():
            seconds = timed(fn, min_seconds)
            error = float((fn() - exact).abs().max()) / scale
            results[name] = (2 * rows * k * n / seconds / 1e9, error)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=32, help="rows per product (sequences per batch)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=0.5, help="time per measurement")
    parser.add_argument("--square", type=int, default=0, help="also an N x N x N product (its own N rows)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, {args.rows} rows; quantized engine {torch.backends.quantized.engine}")
    methods = ("fp32 plain", "fp32 onednn", "fp32 packed", "bf16 packed", "int8 dynamic")
    header = f"{'product':22}{'M x K x N':>19}" + "".join(f"{m:>26}" for m in methods)
    print(header)
    print(" " * 41 + "   GFLOP/s  x packed  rel.err" * len(methods))
    rows: List[str] = []
    shapes = [(name, args.rows, k, n) for name, k, n in SHAPES]
    if args.square:
        shapes.append(("square", args.square, args.square, args.square))
    for name, m, k, n in shapes:
        result = measure(m, k, n, args.seconds)
        base = result["fp32 packed"][0]
        cells = []
        for method in methods:
            if method in result:
                gflops, error = result[method]
                cells.append(f"{gflops:10.0f}{gflops / base:10.2f}{error:9.1e}")
            else:
                cells.append(f"{'-':>26}")
        rows.append(f"{name:22}{f'{m} x {k} x {n}':>19}" + "".join(cells))
        print(rows[-1], flush=True)


if __name__ == "__main__":
    main()
