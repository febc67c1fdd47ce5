"""Training tokens/s of pretraining presets, the fraction of the device's matrix-product peak they
reach, and the end-to-end speed of the real trainer (data pipeline included) beside the step alone.

For each preset: the preset's biLM, softmax and batch size on real text (Reuters by default,
prepared once into --work). "step" times the training step alone on batches already in memory;
"end-to-end" runs `Pretrainer` (what `spacy-elmo pretrain` runs: DataLoader workers, logging,
checkpoints off) for the same number of steps. FLOPs of one step (forward + backward) are counted
with PyTorch's FLOP counter; the peak is a large square matrix product in the same dtype,
measured in the same run (on CPU the faster of the default BLAS and oneDNN). Runs on CUDA when there is a GPU (or --device).

    python benchmarks/pretrain_speed.py                                  # cpu preset, fp32
    python benchmarks/pretrain_speed.py --presets cpu small original --precision no bf16
    python benchmarks/pretrain_speed.py --presets small --batch-tokens 32768 --compile
    python benchmarks/pretrain_speed.py --presets cpu small --two-processes   # threads against processes
"""

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "raw" / "reuters21578.txt.gz"


def matmul_peak(device: Any, dtype: Any, size: int, repeats: int = 10, rounds: int = 3) -> List[float]:
    """GFLOP/s of a (size x size) @ (size x size) product through the default BLAS and, on CPU,
    oneDNN where it has kernels for `dtype` (on an AVX-512 AMD CPU, MKL's float32 reached less
    than half of oneDNN's); the best of `rounds` rounds, since a shared machine's clock and
    neighbours vary from second to second."""
    import torch

    from spacy_elmo.bilm.packed_matmul import onednn_available

    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    products = [lambda: a @ b]
    if device.type == "cpu" and onednn_available():
        b_t = b.t().contiguous()
        products.append(lambda: torch.ops.mkldnn._linear_pointwise(a, b_t, None, "none", [], ""))
    rates = []
    for product in products:
        try:
            for _ in range(2):
                product()
        except RuntimeError:  # oneDNN without kernels for this dtype on this CPU
            continue
        best = 0.0
        for _ in range(rounds):
            _sync(device)
            start = time.perf_counter()
            for _ in range(repeats):
                product()
            _sync(device)
            best = max(best, 2 * size**3 * repeats / (time.perf_counter() - start) / 1e9)
        rates.append(best)
    return rates


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


# operators that are matrix products (aten's and oneDNN's), for --profile's split of the step's time
_PRODUCTS = ("mm", "addmm", "bmm", "baddbmm", "linear", "matmul", "convolution", "mkldnn", "onednn", "_weight_int8", "quantized")


def _profile_steps(trainer: Any, batches: List[Any]) -> None:
    """Print where the step's CPU time goes: matrix products against everything else, and the ten
    costliest other operators (self time, torch.profiler over `batches`)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for batch in batches:
            trainer.train_step(batch)
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    by_shape = [e for e in prof.key_averages(group_by_input_shape=True) if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    products = sum(e.self_cpu_time_total for e in events if any(k in e.key.lower() for k in _PRODUCTS))
    share = 100 * products / total
    print(f"  profile              matrix products {share:.1f}% of the step's CPU time, the rest {100 - share:.1f}%:")
    others = sorted((e for e in events if not any(k in e.key.lower() for k in _PRODUCTS)), key=lambda e: -e.self_cpu_time_total)
    for event in others[:10]:
        print(f"    {100 * event.self_cpu_time_total / total:5.1f}%  {event.key} ({event.count} calls)")
    print("  the products:")
    products_by_time = sorted((e for e in events if any(k in e.key.lower() for k in _PRODUCTS)), key=lambda e: -e.self_cpu_time_total)
    for event in products_by_time[:6]:
        print(f"    {100 * event.self_cpu_time_total / total:5.1f}%  {event.key} ({event.count} calls)")
    print("  the costliest other operators by their inputs' shapes:")
    shaped_others = sorted((e for e in by_shape if not any(k in e.key.lower() for k in _PRODUCTS)), key=lambda e: -e.self_cpu_time_total)
    for event in shaped_others[:8]:
        shapes = [s for s in event.input_shapes if s]
        print(f"    {100 * event.self_cpu_time_total / total:5.1f}%  {event.key} {shapes} ({event.count} calls)")
    print("  the costliest products by their inputs' shapes:")
    shaped = sorted((e for e in by_shape if any(k in e.key.lower() for k in _PRODUCTS)), key=lambda e: -e.self_cpu_time_total)
    for event in shaped[:10]:
        shapes = [s for s in event.input_shapes if s]
        per_call = event.self_cpu_time_total / max(1, event.count)
        print(f"    {100 * event.self_cpu_time_total / total:5.1f}%  {event.key} {shapes} ({event.count} calls, {per_call:,.0f} us each)")


def step_speed(
    config: Any, prepared: Any, device: Any, steps: int, warmup: int, profile: bool = False, products: str = "measured"
) -> Dict[str, Any]:
    """Tokens/s and FLOP/token of the training step alone, batches prepared beforehand.

    products (str): the library of training's products on the CPU: "measured" (what the run measures and keeps, as
        `spacy-elmo pretrain` does), "rule" (the CPU class's rule), "blas" or "onednn".
    """
    from torch.utils.flop_counter import FlopCounterMode

    from spacy_elmo.bilm.packed_matmul import set_training_library, training_library
    from spacy_elmo.training.batches import BatchEncoder, BatchStream, batch_loader
    from spacy_elmo.training.trainer import Pretrainer

    trainer = Pretrainer(config, Path(tempfile.mkdtemp()), log=lambda s: None, gpu_id=_gpu_id(device))
    if products != "measured":
        set_training_library(None if products == "rule" else products)
    encoder = BatchEncoder(trainer.corpus, trainer.vocab, trainer.bilm.options.max_characters_per_token)
    stream = BatchStream(
        encoder, trainer.train_sentences, trainer.training.batch_tokens, config["corpus"]["pool_size"], 0, trainer.position
    )
    loader = batch_loader(stream, 0, device)
    data = [next(loader) for _ in range(warmup + steps + 1)]
    trainer.lm.train()
    for batch in data[:warmup]:
        trainer.train_step(batch)
    from spacy_elmo.bilm.lstm import BiLstmLayer
    from spacy_elmo.bilm.packed_matmul import PackedWeights

    # The counter sees aten's products only: count a step whose products are all aten's (the same
    # products, without the oneDNN ones that float32 training uses on CPU), and whose LSTM runs step
    # by step (the one-node loop's weight gradients also multiply the zeros of padded positions:
    # work done, but not the model's).
    counter = FlopCounterMode(display=False)
    PackedWeights.enabled, BiLstmLayer.one_node_training = False, False
    try:
        with counter:
            trainer.train_step(data[warmup])
    finally:
        PackedWeights.enabled, BiLstmLayer.one_node_training = True, True
    flops_per_token = counter.get_total_flops() / data[warmup].n_tokens
    _sync(device)
    start = time.perf_counter()
    n_tokens = 0
    for batch in data[warmup + 1 :]:
        trainer.train_step(batch)
        n_tokens += batch.n_tokens
    _sync(device)
    seconds = time.perf_counter() - start
    if profile:
        _profile_steps(trainer, data[warmup + 1 : warmup + 1 + min(steps, 10)])
    params = sum(p.numel() for p in trainer.bilm.parameters())
    return {
        "tokens_per_s": n_tokens / seconds,
        "flops_per_token": flops_per_token,
        "params": params,
        "vocab": len(trainer.vocab),
        "softmax": trainer.softmax.kind,
        "precision": trainer.precision,  # what ran: "auto" measured it, a precision without units falls back
        "library": training_library() if device.type == "cpu" else "cuda",
    }


def end_to_end_speed(config: Any, device: Any, steps: int, warmup: int) -> float:
    """Tokens/s of the real trainer (data pipeline, logging and bookkeeping included) over
    `steps` steps that follow `warmup` steps, read from its own log.jsonl (`logged_speed`)."""
    from spacy_elmo.training.trainer import Pretrainer

    output = Path(tempfile.mkdtemp())
    with _Utilisation(device) as utilisation:
        Pretrainer(_timed_run_config(config, steps, warmup), output, log=lambda s: None, gpu_id=_gpu_id(device)).run()
    if utilisation.samples:
        print(
            f"  GPU utilisation {sum(utilisation.samples) / len(utilisation.samples):10.0f} % "
            "(mean of NVML samples during the end-to-end run)"
        )
    return logged_speed(output / "log.jsonl")


def two_process_speed(config: Any, steps: int, warmup: int) -> float:
    """Tokens/s of the real trainer as two processes of one thread each on this machine
    (torch.distributed.run, gloo; each process its own batches of batch_tokens), measured as
    `end_to_end_speed` measures one process."""
    import os
    import subprocess
    import sys

    config = _timed_run_config(config, steps, warmup)
    config["system"]["threads"] = 1
    work = Path(tempfile.mkdtemp())
    config.to_disk(work / "config.cfg")
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "spacy_elmo"]
    command += ["pretrain", str(work / "config.cfg"), "--output", str(work / "run"), "--gpu-id", "-1"]
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return logged_speed(work / "run" / "log.jsonl")


def _timed_run_config(config: Any, steps: int, warmup: int) -> Any:
    """`config` for a timed run of the trainer: `warmup` + `steps` steps (whole windows), a log
    window every `warmup` steps, no dev text, no evaluation or checkpoint on the way."""
    config = config.copy()
    steps = max(warmup, steps // warmup * warmup)
    config["training"].update({"max_steps": warmup + steps, "eval_every": 10**9, "checkpoint_every": 10**9, "log_every": warmup})
    config["paths"]["dev"] = None
    config["corpus"]["dev_every_nth_doc"] = 0
    return config


def logged_speed(log_path: Path) -> float:
    """Tokens/s over the log windows of a run after its first (start-up)."""
    import srsly

    windows = [row for row in srsly.read_jsonl(log_path) if "tokens_per_s" in row]
    if len(windows) < 2:
        raise ValueError(f"{log_path} has fewer than two log windows: too short a run to time")
    tokens = [b["tokens"] - a["tokens"] for a, b in zip(windows, windows[1:])]
    seconds = [n / row["tokens_per_s"] for n, row in zip(tokens, windows[1:])]
    return sum(tokens) / sum(seconds)


class _Utilisation:
    """Samples the GPU's utilisation (NVML, as nvidia-smi shows it) every 0.2 s, where available."""

    def __init__(self, device: Any) -> None:
        self.device = device
        self.samples: List[float] = []
        self._stop = False

    def __enter__(self) -> "_Utilisation":
        import threading

        if self.device.type == "cuda":
            try:
                import pynvml

                pynvml.nvmlInit()
                handle = pynvml.nvmlDeviceGetHandleByIndex(self.device.index or 0)
            except Exception:  # no NVML: no figure
                return self

            def sample() -> None:
                while not self._stop:
                    self.samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                    time.sleep(0.2)

            self._thread = threading.Thread(target=sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop = True


def _gpu_id(device: Any) -> int:
    return -1 if device.type == "cpu" else (device.index or 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="+", default=["cpu"], help="cpu, small, original, or config paths")
    parser.add_argument("--precision", nargs="+", default=["no"], help="no, bf16 and/or auto ([training] mixed_precision)")
    parser.add_argument("--text", type=Path, default=DEFAULT_TEXT, help="raw text or a prepared folder")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "spacy-elmo-bench", help="where the text is prepared")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="torch threads on CPU")
    parser.add_argument(
        "--workers", type=int, default=None, help="DataLoader workers in the end-to-end run (default: the trainer's: 1 on CUDA, 0 on CPU)"
    )
    parser.add_argument("--batch-tokens", type=int, default=0, help="override the preset's batch size")
    parser.add_argument("--compile", action="store_true", help="[training] compile = true")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    parser.add_argument("--no-end-to-end", action="store_true")
    parser.add_argument(
        "--two-processes", action="store_true", help="on CPU, also the end-to-end trainer as two processes of one thread (torchrun, gloo)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--profile", action="store_true", help="also print where the step's CPU time goes (torch.profiler, 10 steps)")
    parser.add_argument(
        "--products",
        nargs="+",
        default=["measured"],
        help="the library of training's products on the CPU: measured (as pretrain), rule (the CPU class's), blas, onednn",
    )
    args = parser.parse_args()

    import torch
    from confection import Config

    from spacy_elmo.configs import pretrain_config
    from spacy_elmo.training.prepared import is_prepared, prepare_corpus

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.set_num_threads(args.threads)
    if not args.text.exists():
        raise SystemExit(f"{args.text} not found: pass --text with a raw-text file")
    prepared = args.text if is_prepared(args.text) else prepare_corpus(args.text, args.work / "corpus", log=print).folder
    from bilm_speed import cpu_description

    print(f"CPU: {cpu_description()}; torch {torch.__version__}, {args.threads} threads")
    results: List[Dict[str, Any]] = []
    for preset, precision, products in [(p, q, r) for p in args.presets for q in args.precision for r in args.products]:
        path = pretrain_config(preset)
        config = Config().from_disk(path)
        config["paths"]["train"] = str(prepared)
        config["system"]["threads"] = args.threads if device.type == "cpu" else 0
        config["system"]["data_workers"] = args.workers
        config["training"]["mixed_precision"] = precision
        config["training"]["compile"] = args.compile
        config["training"]["max_minutes"] = 0
        if args.batch_tokens:
            config["training"]["batch_tokens"] = args.batch_tokens
        torch.manual_seed(0)
        step = step_speed(config, prepared, device, args.steps, args.warmup, profile=args.profile, products=products)
        # The trainer trains in float32 where the device has no bfloat16 units (AVX2-only CPUs) or
        # where "auto" measured float32 faster: the step is then measured against the float32 peak.
        dtype = torch.bfloat16 if step["precision"] == "bf16" else torch.float32
        rates = matmul_peak(device, dtype, 8192 if device.type == "cuda" else 2048)
        peak = max(rates)
        achieved = step["tokens_per_s"] * step["flops_per_token"] / 1e9
        row = {
            "preset": path.stem,
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "cpu": cpu_description(),
            "precision": precision,
            "products": f"{products}: {step['library']}",
            "step_dtype": str(dtype).replace("torch.", ""),
            "compile": args.compile,
            "batch_tokens": config["training"]["batch_tokens"],
            "step_tokens_per_s": round(step["tokens_per_s"]),
            "mflop_per_token": round(step["flops_per_token"] / 1e6, 2),
            "achieved_gflops": round(achieved, 1),
            "peak_gflops": round(peak, 1),
            "fraction_of_peak": round(achieved / peak, 4),
        }
        print(
            f"{path.stem} ({step['params'] / 1e6:.1f}M-parameter biLM, {step['softmax']} softmax over {step['vocab']} words), "
            f"{row['device']}, mixed_precision={precision} (products in {row['step_dtype']}), compile={args.compile}, "
            f"batch_tokens={row['batch_tokens']}, training's products: {row['products']}"
        )
        print(f"  step only       {step['tokens_per_s']:10.0f} tokens/s   ({args.steps} steps)")
        print(f"  work            {step['flops_per_token'] / 1e6:10.1f} MFLOP per token (forward + backward, counted)")
        print(f"  achieved        {achieved:10.1f} GFLOP/s")
        print(
            f"  matmul peak     {peak:10.1f} GFLOP/s (same dtype, same run; "
            + " / ".join(f"{n} {r:.0f}" for n, r in zip(("BLAS", "oneDNN"), rates))
            + ")"
        )
        print(f"  fraction        {achieved / peak:10.1%}")
        if not args.no_end_to_end:
            e2e = end_to_end_speed(config, device, args.steps, args.warmup)
            row["end_to_end_tokens_per_s"] = round(e2e)
            row["end_to_end_ratio"] = round(e2e / step["tokens_per_s"], 3)
            print(
                f"  end-to-end      {e2e:10.0f} tokens/s   ({e2e / step['tokens_per_s']:.0%} of the step alone; "
                f"Pretrainer, data_workers={args.workers})"
            )
        if args.two_processes and device.type == "cpu":
            two = two_process_speed(config, args.steps, args.warmup)
            row["two_processes_tokens_per_s"] = round(two)
            row["two_processes_fraction_of_peak"] = round(two * step["flops_per_token"] / 1e9 / peak, 4)
            print(
                f"  two processes   {two:10.0f} tokens/s   ({two / step['tokens_per_s']:.2f}x the step at {args.threads} threads; "
                f"{row['two_processes_fraction_of_peak']:.1%} of the peak; end to end, one thread each)"
            )
        results.append(row)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
