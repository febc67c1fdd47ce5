"""The pieces the biLM's CPU inference path chose between, timed alone (microseconds a call).

- tanh against sigmoid on one LSTM step's cell (32 x 4096 float32);
- the LSTM step's elementwise part: `lstm_cell` (training), `_lstm_cell_overwriting` (inference on the CPU)
  and `lstm_cell` under `torch.compile` (needs a C++ compiler at run time);
- the char CNN: `Conv1d` + max (training) against one product per filter width over the char windows
  (`CharEncoder._pool_windows`, inference on the CPU), the released filters;
- the LSTM's input product for a whole padded batch at once against blocks of 256 rows;
- the cell step as one pass of C over the rows (compiled here with `cc` where there is one), against the
  PyTorch ops above on one thread: what a compiled kernel would gain;
- int8 products through PyTorch's FBGEMM kernel (what `precision = "int8"` runs for an LSTM step's few rows)
  against oneDNN's (what it runs for blocks of many rows, `many_rows`), at 8, 32 and 256 rows (medians of
  interleaved calls);
- one LSTM layer's two directions one after the other on all threads (what runs) against side by side,
  one thread each.

    python benchmarks/inference_kernels.py
    python benchmarks/inference_kernels.py --no-compile --threads 1
"""

import argparse
import ctypes
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import numpy
import torch


def timed(fn: Callable[[], object], repeat: int) -> float:
    for _ in range(3):
        fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e6


def interleaved(fns: Dict[str, Callable[[], object]], repeat: int) -> Dict[str, float]:
    """Median microseconds a call of each, calls taken in turn (a shared machine's drift hits all alike)."""
    times: Dict[str, List[float]] = {name: [] for name in fns}
    for _ in range(3):
        for fn in fns.values():
            fn()
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) * 1e6 for name, t in times.items()}


_CELL_C = r"""
#include <math.h>
#include <stdint.h>
static inline float sig(float x) { return 1.0f / (1.0f + expf(-x)); }
/* z: rows x 4C gate pre-activations [i, f, o, j] without the input half zx (same layout); c: rows x C,
   updated; m: rows x C, the unprojected output. */
void cell(const float* restrict z, const float* restrict zx, float* restrict c, float* restrict m, int64_t rows,
          int64_t C, float clip) {
  for (int64_t r = 0; r < rows; r++) {
    const float* zr = z + r * 4 * C;
    const float* xr = zx + r * 4 * C;
    float* cr = c + r * C;
    float* mr = m + r * C;
#pragma GCC ivdep
    for (int64_t k = 0; k < C; k++) {
      float i = sig(zr[k] + xr[k]), f = sig(zr[C + k] + xr[C + k]), o = sig(zr[2 * C + k] + xr[2 * C + k]);
      float j = 2.0f * sig(2.0f * (zr[3 * C + k] + xr[3 * C + k])) - 1.0f;
      float cn = f * cr[k] + i * j;
      cn = cn > clip ? clip : (cn < -clip ? -clip : cn);
      cr[k] = cn;
      mr[k] = o * (2.0f * sig(2.0f * cn) - 1.0f);
    }
  }
}
"""


def compiled_cell(folder: Path) -> Optional[Callable[..., None]]:
    """`_CELL_C` built with the system's C compiler (vectorized expf from glibc's libmvec), or None."""
    compiler = shutil.which("cc")
    if compiler is None:
        return None
    source, library = folder / "cell.c", folder / "cell.so"
    source.write_text(_CELL_C)
    flags = ["-O3", "-march=native", "-ffast-math", "-fPIC", "-shared"]
    if subprocess.run([compiler, *flags, str(source), "-o", str(library), "-lm"], capture_output=True).returncode != 0:
        return None
    fn = ctypes.CDLL(str(library)).cell
    fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64, ctypes.c_int64, ctypes.c_float]
    return fn


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

        compare_cells(C, args.threads)
        compare_int8_backends()
        compare_directions(bilm.layers[0], args.threads)


def compare_cells(C: int, threads: int) -> None:
    """The cell step (with the add of the gates' input half) in PyTorch ops against one pass of C."""
    from spacy_elmo.bilm.lstm import _lstm_cell_overwriting

    zh, zx, c = torch.randn(32, 4 * C), torch.randn(32, 4 * C), torch.randn(32, C)
    with tempfile.TemporaryDirectory() as tmp:
        fn = compiled_cell(Path(tmp))
        if fn is None:
            print("cell step in C: skipped (no C compiler, or it failed)")
            return

        def in_c() -> None:
            fn(zh.data_ptr(), zx.data_ptr(), c.clone().data_ptr(), torch.empty(32, C).data_ptr(), 32, C, 3.0)

        for n in sorted({1, threads}):
            torch.set_num_threads(n)
            eager = timed(lambda: _lstm_cell_overwriting(zh.add(zx), c, C, 3.0), 200)
            print(f"cell step 32 x {C} + input half, PyTorch ops, {n} thread(s): {eager:>9.0f}")
        c_out, m_out = c.clone(), torch.empty(32, C)
        fn(zh.data_ptr(), zx.data_ptr(), c_out.data_ptr(), m_out.data_ptr(), 32, C, 3.0)
        c_ref, m_ref = _lstm_cell_overwriting(zh.add(zx), c, C, 3.0)
        diff = max(float((c_out - c_ref).abs().max()), float((m_out - m_ref).abs().max()))
        print(f"cell step 32 x {C} + input half, one pass of C, 1 thread:   {timed(in_c, 200):>9.0f}  (largest difference {diff:.1e})")
        torch.set_num_threads(threads)


def compare_int8_backends() -> None:
    """x @ W in int8 through FBGEMM (`quantized::linear_dynamic`) and oneDNN (`onednn::qlinear_pointwise`), each as
    `PackedWeights` runs it (weights per output column at `int8_weight_range`, inputs per call); the error against
    float32 relative to the largest output."""
    from spacy_elmo.bilm.packed_matmul import (
        _int8_pack,
        _int8_product,
        _onednn_int8_pack,
        _onednn_int8_product,
        int8_available,
        onednn_int8_available,
    )

    if not (int8_available() and onednn_int8_available()):
        print("int8 kernels: skipped (int8 products, or oneDNN's, are not exact here)")
        return
    # the LSTM gates of the small, medium and original sizes, the highway layers, the original's projection
    for K, N in [(128, 4096), (256, 8192), (512, 16384), (2048, 4096), (4096, 512)]:
        weight = torch.randn(K, N) * 0.05
        fbgemm, onednn = _int8_pack(weight), _onednn_int8_pack(weight)
        for rows in (8, 32, 256):
            x = torch.randn(rows, K).clamp(-3, 3)
            fns = {"FBGEMM": lambda x=x: _int8_product(x, fbgemm), "oneDNN": lambda x=x: _onednn_int8_product(x, onednn)}
            exact = x @ weight
            errors = {name: float((fn() - exact).abs().max() / exact.abs().max()) for name, fn in fns.items()}
            us = interleaved(fns, 100 if rows < 256 else 30)
            print(
                f"int8 {rows:>3} x {K:>4} x {N:<5}  FBGEMM {us['FBGEMM']:>7.0f} (rel. err {errors['FBGEMM']:.1e})"
                f"  oneDNN {us['oneDNN']:>7.0f} (rel. err {errors['oneDNN']:.1e})"
            )


def compare_directions(layer: torch.nn.Module, threads: int) -> None:
    """One layer's forward over 40 steps of 32 rows: the directions in turn on `threads` threads (what runs) against
    side by side in two Python threads, one intra-op thread each (torch releases the GIL inside its kernels)."""
    steps, batch = 40, 32
    x = torch.randn(2, steps, batch, layer.input_dim)
    state = layer.zero_state(batch, x)
    sizes = [batch] * steps

    def one(d: int) -> None:
        with torch.inference_mode():
            layer._run(slice(d, d + 1), x[d : d + 1], sizes, (state[0][d : d + 1], state[1][d : d + 1]))

    def side_by_side() -> None:
        workers = [threading.Thread(target=one, args=(d,)) for d in range(2)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    from spacy_elmo.bilm.packed_matmul import int8_available

    for dtype, name in [(torch.float32, "fp32"), (torch.qint8, "int8")][: 2 if int8_available() else 1]:
        layer.packs.set_dtype(dtype)
        torch.set_num_threads(threads)
        in_turn = timed(lambda: layer(x, sizes, state), 3)
        torch.set_num_threads(1)
        apart = timed(side_by_side, 3)
        torch.set_num_threads(threads)
        print(f"one layer, 40 steps of 32 rows, {name}: directions in turn {in_turn:>9.0f}, side by side {apart:>9.0f}")
    layer.packs.set_dtype(torch.float32)


if __name__ == "__main__":
    main()
