"""biLM inference speed and peak memory for the released sizes, with a naive baseline.

Prints tokens/s and peak RSS of `BiLM` (random weights) at the released sizes on real sentences
(CoNLL-2003 dev by default), batches of 32 sentences in corpus order, 2 threads; beside it, in the
same run, a baseline of the same computation done the way AllenNLP does it (char CNN over all 50
positions of every padded token, the input and recurrent halves of the gates computed per step,
one direction after the other), and the largest difference between the two outputs.

Methods: "naive" (the baseline), "plain" (our algorithm with torch's default matmul), "ours" (with
weights prepacked for oneDNN at inference), "ours+cache" (plus the token-layer cache, warm), "onnx"
(the same biLM exported by `spacy-elmo convert ... OUT.onnx` and run by ONNX Runtime, at fp32 and
int8 of `--precision`: a process of its own that imports no torch until its timing and peak memory are
taken; its rows compare with "ours" fp32 on all the measured sentences).
`--precision fp32 bf16 int8 auto` runs "ours" and "ours+cache" at each precision (`BiLM.precision`); the
"prec" column says what ran (auto's choice, or fp32 where a precision falls back), and each row not in
fp32 gives its largest absolute difference and smallest per-token cosine against fp32 on all the
measured sentences. The first line names the CPU class (`spacy_elmo.bilm.precision.cpu_class`).

An AVX2 CPU without VNNI or bfloat16 units can be approximated on a larger one by limiting the kernels
(the same memory and clock, so a stand-in for the instruction mix only):

    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 FBGEMM_ENABLE_INSTRUCTIONS=AVX2 \\
        MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/bilm_speed.py ...

(the AllenNLP process inherits them).

`--allennlp PYTHON` adds AllenNLP 2.10's own biLM (`allennlp.modules.elmo._ElmoBiLm`, the module
`Elmo` runs), run by that Python on the same random weights written in the original format, as the
baseline of the ratios; the "ours" fp32 row then also gives its largest difference to AllenNLP's
outputs. The AllenNLP-way baseline ("naive") is slower than AllenNLP itself (its char CNN sees all 50
positions): ratios against it come out about 1.3x higher. AllenNLP 2.10.1 installs beside torch 2.13
with `pip install --no-deps allennlp==2.10.1 fairscale==0.4.6` plus `transformers spacy nltk h5py
overrides cached-path`; it imports torchvision only for image loading, which a stub module stands in
for here.

Batches are cut from the sentences in corpus order (lengths mixed in a batch), or with `--by-length` from the
sentences sorted by length, as `embed` and the elmo component cut them.

Each measurement runs in its own process so that peak memory is its own, and times `--rounds` passes
over the sentences (default 2): the best pass counts, on both sides.

    python benchmarks/bilm_speed.py                      # small, medium, original
    python benchmarks/bilm_speed.py --sizes small --sentences 64
    python benchmarks/bilm_speed.py --methods ours --precision fp32 bf16 int8 --sentences 512
    python benchmarks/bilm_speed.py --methods ours --precision fp32 int8 --per-call   # embed(..., precision=P)
    python benchmarks/bilm_speed.py --device cuda --methods naive,ours --precision fp32 bf16
    python benchmarks/bilm_speed.py --methods ours,onnx --precision fp32 int8
    python benchmarks/bilm_speed.py --sizes original --methods ours --precision fp32 bf16 int8 --per-call \
        --sentences 32 --allennlp /path/to/allennlp-venv/bin/python
"""

import argparse
import importlib.machinery
import json
import resource
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Dict, List, Optional, Tuple

SIZES: Dict[str, Tuple[int, int, int]] = {  # cell_dim, projection_dim, n_highway
    "small": (1024, 128, 1),
    "medium": (2048, 256, 1),
    "original": (4096, 512, 2),
}
# Environment variables that make PyTorch's kernels run as on a lesser CPU class; all four at AVX2
# run it as an AVX2 CPU without VNNI or bfloat16 units would (on the same memory and clock).
KERNEL_LIMITS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "FBGEMM_ENABLE_INSTRUCTIONS", "MKL_ENABLE_INSTRUCTIONS")
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "conll2003" / "eng.testa"


# --by-length: the sentences sorted by length before they are cut into batches (what embed and the elmo
# component do), instead of corpus order; set from the command line, in every measuring process
BY_LENGTH = False


def read_sentences(path: Path, limit: int) -> Tuple[List[List[str]], str]:
    """The first `limit` sentences of a CoNLL file (sorted by length with --by-length), and what they are."""
    sentences, source = _read_sentences(path, limit)
    return (sorted(sentences, key=len), source + ", sorted by length") if BY_LENGTH else (sentences, source)


def _read_sentences(path: Path, limit: int) -> Tuple[List[List[str]], str]:
    if not path.is_file():
        from spacy.lang.en.examples import sentences as examples

        words = [s.split() for s in examples]
        out = (words * (limit // len(words) + 1))[:limit]
        return out, f"{path} not found: spaCy's English example sentences, repeated"
    sentences: List[List[str]] = []
    current: List[str] = []
    for line in path.read_text(encoding="utf8").splitlines():
        if not line.strip() or line.startswith("-DOCSTART-"):
            if current:
                sentences.append(current)
                current = []
            continue
        current.append(line.split()[0])
    if current:
        sentences.append(current)
    return sentences[:limit], str(path)


def naive_forward(bilm, char_ids):  # type: ignore[no-untyped-def]
    """The AllenNLP-style computation over a (B, T, 50) char-id tensor (stateless)."""
    import torch

    opts = bilm.options
    enc = bilm.char_encoder
    B, T, W = char_ids.shape
    mask = char_ids[:, :, 0] > 0
    x = torch.nn.functional.embedding(char_ids.view(-1, W), enc.char_embed).transpose(1, 2)
    h = torch.cat([conv(x).amax(dim=-1) for conv in enc.convs], dim=-1)
    h = torch.relu(h) if opts.activation == "relu" else torch.tanh(h)
    for hw in enc.highways:
        h = hw(h)
    if enc.projection is not None:
        h = enc.projection(h)
    tokens = (h.view(B, T, -1) * mask.unsqueeze(-1)).float()
    lengths = mask.sum(1)
    C = opts.cell_dim
    outputs = [torch.cat([tokens, tokens], -1)]
    x_dirs = [tokens, torch.stack([torch.cat([t[:n].flip(0), t[n:]]) for t, n in zip(tokens, lengths)])]
    for depth, layer in enumerate(bilm.layers):
        new_dirs = []
        for d in range(2):
            c = tokens.new_zeros(B, C)
            hid = tokens.new_zeros(B, opts.projection_dim)
            steps = []
            for t in range(T):
                z = x_dirs[d][:, t] @ layer.input_weight[d] + hid @ layer.hidden_weight[d] + layer.bias[d] + layer.forget_bias
                i, f, o, j = z.split(C, dim=-1)
                c_new = (torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(j)).clamp(-opts.cell_clip, opts.cell_clip)
                h_new = ((torch.sigmoid(o) * torch.tanh(c_new)) @ layer.proj_weight[d]).clamp(-opts.proj_clip, opts.proj_clip)
                live = (t < lengths).unsqueeze(-1)
                c = torch.where(live, c_new, c)
                hid = torch.where(live, h_new, hid)
                steps.append(h_new * live)
            out = torch.stack(steps, 1)
            if depth > 0 and opts.use_skip_connections:
                out = out + x_dirs[d]
            new_dirs.append(out)
        x_dirs = new_dirs
        backward = torch.stack([torch.cat([t[:n].flip(0), t[n:]]) for t, n in zip(x_dirs[1], lengths)])
        outputs.append(torch.cat([x_dirs[0], backward], -1))
    return torch.stack(outputs)


def random_bilm(size: str, cache_size: int = 0):  # type: ignore[no-untyped-def]
    """The benchmark's biLM: random weights, the same in every process."""
    import torch

    from spacy_elmo.bilm import BiLM, ElmoOptions

    torch.manual_seed(0)
    cell, proj, highway = SIZES[size]
    return BiLM(ElmoOptions(cell_dim=cell, projection_dim=proj, n_highway=highway), cache_size=cache_size).eval()


def save_weights(size: str, folder: Path) -> None:
    from spacy_elmo.bilm import save_original

    save_original(random_bilm(size), folder / "options.json", folder / "weights.hdf5")


def measure_allennlp(size: str, n_sentences: int, batch_size: int, threads: int, data: Path, folder: Path, rounds: int = 1) -> Dict:
    """AllenNLP's `_ElmoBiLm` on the weights in `folder`; saves its outputs for the first 8
    sentences there (check.npy, mask.npy) for the comparison. Char ids are made before the clock
    starts (ours are made inside it)."""
    import numpy
    import torch

    if "torchvision" not in sys.modules:  # imported by allennlp.data's image loader only
        stub = types.ModuleType("torchvision")
        stub.__spec__ = importlib.machinery.ModuleSpec("torchvision", None)
        sys.modules["torchvision"] = stub
    import allennlp
    from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids

    torch.set_num_threads(threads)
    bilm = _ElmoBiLm(str(folder / "options.json"), str(folder / "weights.hdf5")).eval()
    sentences, source = read_sentences(data, n_sentences)
    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    ids = [batch_to_ids(batch) for batch in batches]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with torch.no_grad():
        out = bilm(batch_to_ids(batches[0][:8]))  # the first call starts from zero states: stateless
        numpy.save(folder / "check.npy", torch.stack(out["activations"]).numpy())
        numpy.save(folder / "mask.npy", out["mask"].numpy())
        bilm(ids[0])  # warm-up
        n_tokens = sum(len(s) for s in sentences)
        elapsed = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            for x in ids:
                bilm(x)
            elapsed = min(elapsed, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "size": size,
        "method": "allennlp",
        "precision": "fp32",
        "per_call": False,
        "device": "cpu",
        "params_m": round(sum(p.numel() for p in bilm.parameters()) / 1e6, 1),
        "tokens": n_tokens,
        "tokens_per_s": round(n_tokens / elapsed, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "peak_rss_delta_mb": round((peak - rss_before) / 1024, 1),
        "peak_cuda_mb": None,
        "max_abs_diff_vs_naive": None,
        "data": source,
        "threads": threads,
        "allennlp": allennlp.__version__,
        "numpy": numpy.__version__,
        "torch": torch.__version__,
    }


def measure(
    size: str,
    method: str,
    n_sentences: int,
    batch_size: int,
    threads: int,
    data: Path,
    precision: str = "fp32",
    device: str = "cpu",
    per_call: bool = False,
    allennlp_outputs: Optional[Path] = None,
    rounds: int = 1,
) -> Dict:
    if method == "onnx":
        return measure_onnx(size, n_sentences, batch_size, threads, data, precision, allennlp_outputs, rounds)
    import numpy
    import torch

    from spacy_elmo.bilm import CharBatch, sentences_to_char_ids
    from spacy_elmo.bilm.packed_matmul import PackedWeights, onednn_available

    torch.set_num_threads(threads)
    PackedWeights.enabled = method != "plain"
    bilm = random_bilm(size, cache_size=50_000 if method == "ours+cache" else 0).to(device)
    bilm.precision = "fp32" if per_call else precision
    sentences, source = read_sentences(data, n_sentences)
    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    ran = bilm.precision  # what the products run at ("auto" and a fall-back resolved)

    def run(batch: List[List[str]]):  # type: ignore[no-untyped-def]
        nonlocal ran
        if method == "naive":
            return naive_forward(bilm, sentences_to_char_ids(batch).to(device))
        if per_call:  # what embed(..., precision=P) does around each call
            bilm.precision = precision
            ran = bilm.precision
            try:
                return bilm(CharBatch.from_sentences(batch))
            finally:
                bilm.precision = "fp32"
        return bilm(CharBatch.from_sentences(batch))

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    with torch.inference_mode():
        run(batches[0])  # warm-up (fills the cache for "ours+cache", as a running pipeline would)
        diff = diff_allennlp = None
        if method in ("plain", "ours"):
            check = batches[0][:8]
            diff = float((run(check) - naive_forward(bilm, sentences_to_char_ids(check).to(device))).abs().max())
        if allennlp_outputs is not None and method == "ours" and precision == "fp32":
            theirs = torch.from_numpy(numpy.load(allennlp_outputs / "check.npy"))
            mask = torch.from_numpy(numpy.load(allennlp_outputs / "mask.npy")).bool()
            ours = run(batches[0][:8]).cpu()
            diff_allennlp = float((ours - theirs).abs()[:, mask].max())
        n_tokens = sum(len(s) for s in sentences)
        elapsed = float("inf")
        for _ in range(rounds):
            sync()
            start = time.perf_counter()
            for batch in batches:
                run(batch)
            sync()
            elapsed = min(elapsed, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    params = sum(p.numel() for p in bilm.parameters())
    error = {}
    if method != "naive" and ran != "fp32":
        error = error_vs_fp32(bilm.embed(sentences, precision=precision), bilm.embed(sentences, precision="fp32"))
    return {
        "size": size,
        "method": method,
        "precision": ran,
        "precision_asked": precision,
        "per_call": per_call,
        "device": device,
        **error,
        "params_m": round(params / 1e6, 1),
        "tokens": n_tokens,
        "tokens_per_s": round(n_tokens / elapsed, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "peak_rss_delta_mb": round((peak - rss_before) / 1024, 1),
        "peak_cuda_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1) if device.startswith("cuda") else None,
        "max_abs_diff_vs_naive": diff,
        "max_abs_diff_vs_allennlp": diff_allennlp,
        "data": source,
        "threads": threads,
        "onednn": onednn_available(),
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "cpu": cpu_description(),
    }


def export_onnx_files(size: str, folder: Path) -> None:
    """The benchmark's biLM as fp32.onnx and int8.onnx in `folder` (made in the parent process)."""
    from spacy_elmo.bilm_onnx.export import export_onnx

    for precision in ("fp32", "int8"):
        export_onnx(random_bilm(size), folder / f"{precision}.onnx", int8=precision == "int8")


def measure_onnx(
    size: str, n_sentences: int, batch_size: int, threads: int, data: Path, precision: str, folder: Optional[Path], rounds: int
) -> Dict:
    """ONNX Runtime's tokens/s and peak memory for the exported biLM (torch imported only after)."""
    import numpy
    import onnxruntime

    from spacy_elmo.bilm_onnx.runtime import OnnxBiLM

    assert folder is not None and precision in ("fp32", "int8"), "onnx runs fp32 or int8, from the files the parent wrote"
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    exported = OnnxBiLM(folder / f"{precision}.onnx", threads=threads)
    sentences, source = read_sentences(data, n_sentences)
    batches = [sentences[i : i + batch_size] for i in range(0, len(sentences), batch_size)]
    exported.run(**exported.batch(batches[0]))  # warm-up
    elapsed = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for batch in batches:
            exported.run(**exported.batch(batch))
        elapsed = min(elapsed, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    torch_free = "torch" not in sys.modules
    import torch  # only now: the comparison with the PyTorch biLM

    torch.set_num_threads(threads)
    bilm = random_bilm(size)
    error = error_vs_fp32(exported.embed(sentences, batch_size=batch_size), bilm.embed(sentences))
    n_tokens = sum(len(s) for s in sentences)
    return {
        "size": size,
        "method": "onnx",
        "precision": precision,
        "precision_asked": precision,
        "per_call": False,
        "device": "cpu",
        **error,
        "params_m": round(sum(p.numel() for p in bilm.parameters()) / 1e6, 1),
        "tokens": n_tokens,
        "tokens_per_s": round(n_tokens / elapsed, 1),
        "peak_rss_mb": round(peak / 1024, 1),
        "peak_rss_delta_mb": round((peak - rss_before) / 1024, 1),
        "peak_cuda_mb": None,
        "torch_free_while_timed": torch_free,
        "max_abs_diff_vs_naive": None,
        "max_abs_diff_vs_allennlp": None,
        "data": source,
        "threads": threads,
        "onnxruntime": onnxruntime.__version__,
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "cpu": cpu_description(),
    }


def error_vs_fp32(low: List, exact: List) -> Dict[str, float]:
    """RETURNS: the largest difference and the least per-token cosine of `low` to `exact` (float32):
    lists of (L + 1, n, 2P) arrays, one per sentence."""
    import numpy

    a = numpy.concatenate([x.reshape(-1, x.shape[-1]) for x in low])
    b = numpy.concatenate([x.reshape(-1, x.shape[-1]) for x in exact])
    cos = (a * b).sum(-1) / numpy.maximum(numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1), 1e-12)
    return {"max_abs_diff_vs_fp32": float(numpy.abs(a - b).max()), "min_cosine_vs_fp32": float(cos.min())}


def cpu_description() -> str:
    """The CPU class (what decides each precision's speed), with the settings that restrict the
    kernels below the CPU's own class when they are set."""
    import os

    from spacy_elmo.bilm.precision import cpu_class

    limits = [f"{k}={os.environ[k]}" for k in KERNEL_LIMITS if os.environ.get(k)]
    return cpu_class().describe() + (f" (limited by {' '.join(limits)})" if limits else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="small,medium,original")
    parser.add_argument("--methods", default="naive,plain,ours,ours+cache")
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="timed passes over the sentences per method; the best counts")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--precision", nargs="+", default=["fp32"], help="fp32, bf16 and/or int8, for ours and ours+cache")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument(
        "--per-call", action="store_true", help="ask for the precision per call (as embed(..., precision=P) does), not on the model"
    )
    parser.add_argument(
        "--by-length", action="store_true", help="batches of sentences sorted by length (as embed and the component make them)"
    )
    parser.add_argument("--allennlp", default=None, metavar="PYTHON", help="a Python with allennlp 2.10: its biLM is the baseline")
    parser.add_argument("--one", nargs=3, metavar=("SIZE", "METHOD", "PRECISION"), help=argparse.SUPPRESS)
    parser.add_argument("--weights", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global BY_LENGTH
    BY_LENGTH = args.by_length
    if args.one:
        size, method, precision = args.one
        if method == "save":
            save_weights(size, args.weights)
            return
        if method == "export":
            export_onnx_files(size, args.weights)
            return
        if method == "allennlp":
            row = measure_allennlp(size, args.sentences, args.batch_size, args.threads, args.data, args.weights, args.rounds)
        else:
            row = measure(
                size,
                method,
                args.sentences,
                args.batch_size,
                args.threads,
                args.data,
                precision,
                args.device,
                args.per_call,
                args.weights,
                args.rounds,
            )
        print(json.dumps(row))
        return
    common = (
        [
            "--sentences",
            str(args.sentences),
            "--batch-size",
            str(args.batch_size),
            "--threads",
            str(args.threads),
            "--data",
            str(args.data),
            "--device",
            args.device,
            "--rounds",
            str(args.rounds),
        ]
        + (["--per-call"] if args.per_call else [])
        + (["--by-length"] if args.by_length else [])
    )

    def one(python: str, size: str, method: str, precision: str, weights: Optional[Path]) -> Dict:
        # the folder: AllenNLP's weights and outputs (which the "ours" rows compare with), the ONNX files
        needs = weights is not None and (method in ("allennlp", "save", "export", "onnx") or args.allennlp)
        cmd = [python, __file__, "--one", size, method, precision] + common + (["--weights", str(weights)] if needs else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{size} {method} {precision} failed:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1]) if method not in ("save", "export") else {}

    baseline_name = "AllenNLP" if args.allennlp else "naive"
    rows = []
    print(f"CPU: {cpu_description()}")
    print(
        f"{'size':<9}{'method':<12}{'prec':<6}{'params':>8}{'tokens/s':>10}{'x ' + baseline_name:>11}{'x fp32':>8}"
        f"{'peak MB':>9}{'diff':>10}{'vs fp32':>10}{'min cos':>9}"
    )
    for size in args.sizes.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            methods = args.methods.split(",")
            weights = Path(tmp) if args.allennlp or "onnx" in methods else None
            runs = [(m, p) for m in methods for p in (args.precision if m.startswith("ours") else ["fp32"])]
            if "onnx" in methods:
                one(sys.executable, size, "export", "fp32", weights)
                onnx_runs = [("onnx", p) for p in args.precision if p in ("fp32", "int8")] or [("onnx", "fp32")]
                at = next(i for i, (m, _) in enumerate(runs) if m == "onnx")
                runs[at : at + 1] = onnx_runs
            if args.allennlp:
                one(sys.executable, size, "save", "fp32", weights)
                runs.insert(0, ("allennlp", "fp32"))
            baseline = None
            fp32: Dict[str, float] = {}
            for method, precision in runs:
                row = one(args.allennlp if method == "allennlp" else sys.executable, size, method, precision, weights)
                rows.append(row)
                if method == baseline_name.lower():
                    baseline = row["tokens_per_s"]
                if row["precision"] == "fp32":
                    fp32[method] = row["tokens_per_s"]
                ratio = f"{row['tokens_per_s'] / baseline:.2f}" if baseline else "-"
                reference = "ours" if method == "onnx" else method  # ONNX rows against the PyTorch biLM's fp32
                vs_fp32 = f"{row['tokens_per_s'] / fp32[reference]:.2f}" if reference in fp32 and row is not None else "-"
                found = row.get("max_abs_diff_vs_allennlp") if args.allennlp else row["max_abs_diff_vs_naive"]
                diff = f"{found:.1e}" if found is not None else "-"
                err = f"{row['max_abs_diff_vs_fp32']:.1e}" if "max_abs_diff_vs_fp32" in row else "-"
                cos = f"{row['min_cosine_vs_fp32']:.5f}" if "min_cosine_vs_fp32" in row else "-"
                print(
                    f"{size:<9}{method:<12}{row['precision']:<6}{row['params_m']:>7}M{row['tokens_per_s']:>10}{ratio:>11}"
                    f"{vs_fp32:>8}{row['peak_rss_mb']:>9}{diff:>10}{err:>10}{cos:>9}",
                    flush=True,
                )
    extra = f"; AllenNLP {rows[0]['allennlp']}" if args.allennlp else ""
    print(
        f"data: {rows[-1]['data']}; {rows[-1]['tokens']} tokens per run, best of {args.rounds} rounds; batch {args.batch_size}; "
        f"{args.threads} threads; torch {rows[-1]['torch']}{extra}; diff: largest |ours - {baseline_name}| (fp32 rows)"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
