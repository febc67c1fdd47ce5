"""The pieces the biLM's CPU inference path chose between, timed alone (microseconds a call).

- tanh against sigmoid on one LSTM step's cell (32 x 4096 float32);
- the LSTM step's elementwise part: `lstm_cell` (training), `_lstm_cell_overwriting` (inference on the CPU)
  and `lstm_cell` under `torch.compile` (needs a C++ compiler at run time);
- the char CNN: `Conv1d` + max (training) against one product per filter width over the char windows
  (`CharEncoder._pool_windows`, inference on the CPU), the released filters;
- the LSTM's input product for a whole padded batch at once against blocks of 256 rows.

    python benchmarks/inference_kernels.py
    python benchmarks/inference_kernels.py --no-compile --threads 1
"""

import argparse
import time
from typing import Callable

import numpy
import torch


def timed(fn: Callable[[], object], repeat: int) -> float:
    for _ in range(3):
        fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile row")
    args = parser.parse_args()

    from spacy_elmo.bilm import BiLM, ElmoOptions
    from spacy_elmo.bilm.char_ids import word_char_ids
    from spacy_elmo.bilm.lstm import _lstm_cell_overwriting, lstm_cell
    from spacy_elmo.bilm.packed_matmul import PackedWeights

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    C = 4096
    rows = torch.randn(32, C)
    z, c = torch.randn(1, 32, 4 * C), torch.randn(1, 32, C)
    print(f"torch {torch.__version__}, {args.threads} threads; microseconds a call")
    with torch.inference_mode():
        print(f"tanh 32 x {C}:                       {timed(lambda: torch.tanh(rows), 300):>9.0f}")
        print(f"sigmoid 32 x {C}:                    {timed(lambda: torch.sigmoid(rows), 300):>9.0f}")
        cells = {"lstm_cell": lstm_cell, "_lstm_cell_overwriting": _lstm_cell_overwriting}
        if not args.no_compile:
            cells["lstm_cell, torch.compile"] = torch.compile(lstm_cell, dynamic=True)
        for name, cell in cells.items():
            # a fresh z per call: the overwriting cell writes into it
            copies = [z.clone() for _ in range(203)]
            calls = iter(copies)
            print(f"cell step 32 x {C}, {name + ':':<25}{timed(lambda: cell(next(calls), c, C, 3.0), 200):>9.0f}")

        bilm = BiLM(ElmoOptions(cell_dim=C, projection_dim=512, n_highway=2), cache_size=0).eval()
        encoder = bilm.char_encoder
        words = [f"word{i}x{'y' * (i % 9)}" for i in range(350)]
        chars = torch.from_numpy(numpy.stack([word_char_ids(w, 50) for w in words]))[:, :16]
        windows = timed(lambda: encoder._pool_windows(chars), 20)
        with torch.no_grad():
            x = torch.nn.functional.embedding(chars, encoder.char_embed).transpose(1, 2)
            conv = timed(lambda: torch.cat([cv(x).max(dim=-1).values for cv in encoder.convs], dim=-1), 20)
        print(f"char CNN, 350 types x 16 chars, Conv1d + max:      {conv:>9.0f}")
        print(f"char CNN, 350 types x 16 chars, window products:   {windows:>9.0f}")

        layer = bilm.layers[0]
        weight = layer.input_weight[0]
        packs = PackedWeights()
        whole = torch.randn(43 * 32, 512)
        block = torch.randn(256, 512)
        n_blocks = whole.shape[0] // 256
        one = timed(lambda: packs.matmul(whole, weight, "w"), 10)
        blocks = timed(lambda: [packs.matmul(block, weight, "w") for _ in range(n_blocks)], 10)
        print(f"input product, {whole.shape[0]} rows at once:                {one:>9.0f}")
        print(f"input product, the same rows in blocks of 256:    {blocks / (n_blocks * 256) * whole.shape[0]:>9.0f}")


if __name__ == "__main__":
    main()
