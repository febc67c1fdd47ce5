"""Pretraining a biLM from raw text: `spacy-elmo pretrain CONFIG --output DIR`.

Writes to the output folder: checkpoint.pt (every `checkpoint_every` steps, atomically; with
--resume, training goes on from it at the same step and data position), model-last/ and
model-best/ (by dev perplexity; see checkpoint.py), config.cfg, vocab.txt, log.jsonl and
perplexity.png. Under torchrun, each process reads its own share of the corpus, gradients are
averaged by DistributedDataParallel, and only rank 0 evaluates and writes files.
"""
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import srsly
import torch
from thinc.api import Config
from torch import nn

from ..bilm import BiLM, CharBatch
from ..bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets, perplexities
from .checkpoint import load_checkpoint, load_model_dir, rng_state, save_checkpoint, save_model_dir, set_rng_state
from .corpus import Corpus, CorpusPosition, length_batches, training_batches
from .plot import plot_log
from .vocab import Vocabulary


def _distributed() -> Tuple[int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend=backend)
    rank = torch.distributed.get_rank() if world > 1 else 0
    return rank, world


def _build_bilm(config: Config, init_bilm: Optional[str]) -> Tuple[BiLM, Optional[Vocabulary], Optional[SharedSoftmax]]:
    from spacy.util import registry

    from ..layers.bilm_model import get_bilm

    bilm = get_bilm(registry.resolve({"bilm": config["bilm"]})["bilm"])
    if init_bilm is None:
        return bilm, None, None
    loaded, vocab, softmax = load_model_dir(init_bilm)
    if not loaded.options.matches(bilm.options):
        raise ValueError(
            f"[bilm] in the config does not match the model in {init_bilm}: {loaded.options} vs {bilm.options}. "
            "Copy its options into [bilm] (spacy_elmo.bilm_config gives the block)."
        )
    bilm.load_state_dict(loaded.state_dict())
    return bilm, vocab, softmax


def _optimizer(params: List[nn.Parameter], settings: Dict[str, Any]) -> torch.optim.Optimizer:
    name = settings["optimizer"].lower()
    if name == "adam":
        return torch.optim.Adam(params, lr=settings["learn_rate"])
    if name == "adagrad":  # as in the original training code
        return torch.optim.Adagrad(params, lr=settings["learn_rate"], initial_accumulator_value=1.0)
    raise ValueError(f"[training] optimizer must be 'adam' or 'adagrad', got {settings['optimizer']!r}")


def _schedule(settings: Dict[str, Any]) -> Callable[[int], float]:
    warmup, max_steps, decay = settings["warmup_steps"], settings["max_steps"], settings["decay"]
    if decay not in ("constant", "linear"):
        raise ValueError(f"[training] decay must be 'constant' or 'linear', got {decay!r}")
    if decay == "linear" and max_steps <= 0:
        raise ValueError("[training] decay = 'linear' needs max_steps > 0")

    def factor(step: int) -> float:
        warm = min(1.0, (step + 1) / warmup) if warmup > 0 else 1.0
        if decay == "linear":
            return warm * max(0.0, 1.0 - step / max_steps)
        return warm

    return factor


@torch.no_grad()
def evaluate(lm: BiLanguageModel, vocab: Vocabulary, sentences: List[List[str]], batch_tokens: int) -> Dict[str, float]:
    """Exact forward, backward and average perplexity of `sentences`, and their OOV rate."""
    was_training = lm.training
    lm.eval()
    totals = {"forward": 0.0, "backward": 0.0}
    n_tokens = n_oov = n_words = 0
    for group in length_batches(sentences, batch_tokens):
        out = lm(CharBatch.from_sentences(group), batch_targets(group, vocab.ids, vocab.unk_id, vocab.bos_id, vocab.eos_id))
        totals["forward"] += float(out["forward"])
        totals["backward"] += float(out["backward"])
        n_tokens += int(out["n_tokens"])
        n_words += sum(len(s) for s in group)
        n_oov += sum(1 for s in group for w in s if w not in vocab.ids)
    lm.train(was_training)
    fwd, bwd, avg = perplexities(totals, n_tokens)
    return {"forward": fwd, "backward": bwd, "average": avg, "tokens": n_tokens, "oov_rate": n_oov / max(1, n_words)}


def pretrain(config: Config, output: Path, resume: bool = False, log: Callable[[str], None] = print) -> Dict[str, Any]:
    """Train a biLM as configured; see the module docstring for what is written."""
    rank, world = _distributed()
    paths, train_cfg, corpus_cfg = config["paths"], config["training"], config["corpus"]
    torch.manual_seed(config["system"]["seed"])
    if config["system"].get("threads"):
        torch.set_num_threads(int(config["system"]["threads"]))
    output = Path(output)
    checkpoint = load_checkpoint(output) if resume else None
    if resume and checkpoint is None:
        log(f"No checkpoint in {output}: starting from scratch")

    def corpus(**kwargs: Any) -> Corpus:
        return Corpus(paths["train"], corpus_cfg["lang"], corpus_cfg["max_length"], **kwargs)

    held_out = corpus_cfg["dev_every_nth_doc"] if paths.get("dev") is None else 0
    train_corpus = corpus(rank=rank, world_size=world, hold_out=held_out)
    bilm, init_vocab, init_softmax = _build_bilm(config, paths.get("init_bilm"))
    if rank == 0:
        output.mkdir(parents=True, exist_ok=True)
    vocab_path = output / "vocab.txt"
    if checkpoint is not None and vocab_path.is_file():
        vocab = Vocabulary.from_file(vocab_path)
    elif init_vocab is not None and init_softmax is not None:
        vocab = init_vocab
    else:
        log("Building the vocabulary...")
        vocab = Vocabulary.build(corpus(hold_out=held_out), config["vocab"]["max_size"], config["vocab"]["min_count"])
        if len(vocab) <= 3:
            raise ValueError(f"No training text in {paths['train']} (after holding out every {held_out}th document)")
    if rank == 0:
        vocab.to_file(vocab_path)
        config.to_disk(output / "config.cfg")
    softmax_cfg = config["softmax"]
    if init_softmax is not None and init_vocab is vocab:
        softmax = init_softmax
    else:
        softmax = SharedSoftmax(bilm.options.projection_dim, len(vocab), softmax_cfg["kind"], softmax_cfg["cutoffs"])
    lm = BiLanguageModel(bilm, softmax, dropout=train_cfg["dropout"])
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if torch.cuda.is_available() else torch.device("cpu")
    lm.to(device)
    optimizer = _optimizer(list(lm.parameters()), train_cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(train_cfg))
    step, elapsed, tokens_seen, best = 0, 0.0, 0, math.inf
    position = CorpusPosition()
    if checkpoint is not None:
        lm.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        set_rng_state(checkpoint["rng"])
        step, elapsed, tokens_seen = checkpoint["step"], checkpoint["elapsed"], checkpoint["tokens"]
        best = checkpoint["best_dev_ppl"]
        position = CorpusPosition(**checkpoint["position"])
        log(f"Resumed at step {step} (epoch {position.epoch}, pool {position.pool}, batch {position.batch})")
    model: nn.Module = lm
    if world > 1:
        model = nn.parallel.DistributedDataParallel(lm, find_unused_parameters=softmax.kind == "adaptive")
    dev_sentences: List[List[str]] = []
    if rank == 0:
        dev_source = (
            Corpus(paths["dev"], corpus_cfg["lang"], corpus_cfg["max_length"])
            if paths.get("dev") is not None
            else (corpus(hold_out=held_out, only_held_out=True) if held_out else None)
        )
        if dev_source is not None:
            for sentence in dev_source:
                dev_sentences.append(sentence)
                if len(dev_sentences) >= train_cfg["dev_max_sentences"]:
                    break
    log_path = output / "log.jsonl"
    max_steps, max_seconds = train_cfg["max_steps"], train_cfg["max_minutes"] * 60
    last_eval: Dict[str, float] = {}
    last_eval_step = -1

    def write_log(entry: Dict[str, Any]) -> None:
        if rank == 0:
            with log_path.open("a", encoding="utf8") as f:
                f.write(srsly.json_dumps(entry) + "\n")

    def save() -> None:
        if rank != 0:
            return
        state = {
            "model": lm.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": rng_state(),
            "step": step,
            "elapsed": elapsed,
            "tokens": tokens_seen,
            "best_dev_ppl": best,
            "position": position.to_dict(),
        }
        save_checkpoint(output, state)
        save_model_dir(output / "model-last", bilm, vocab, softmax)

    def run_eval() -> None:
        nonlocal best, last_eval, last_eval_step
        if rank != 0 or not dev_sentences:
            return
        last_eval_step = step
        last_eval = evaluate(lm, vocab, dev_sentences, train_cfg["batch_tokens"])
        write_log({"step": step, "elapsed_s": round(elapsed, 1), "tokens": tokens_seen, "dev_ppl": last_eval["average"],
                   "dev_ppl_forward": last_eval["forward"], "dev_ppl_backward": last_eval["backward"]})
        if last_eval["average"] < best:
            best = last_eval["average"]
            save_model_dir(output / "model-best", bilm, vocab, softmax)
        log(f"step {step:>7}  dev perplexity {last_eval['average']:.2f} (forward {last_eval['forward']:.2f}, "
            f"backward {last_eval['backward']:.2f}, best {best:.2f})")

    lm.train()
    window_start, window_tokens, window_loss, window_n = time.perf_counter(), 0, 0.0, 0
    started = time.perf_counter() - elapsed
    if step == 0:
        run_eval()
    batches = training_batches(train_corpus, train_cfg["batch_tokens"], corpus_cfg["pool_size"], config["system"]["seed"], position)
    while True:
        stop = (max_steps > 0 and step >= max_steps) or (max_seconds > 0 and elapsed >= max_seconds)
        if world > 1:
            flag = torch.tensor([float(stop)], device=device)
            torch.distributed.broadcast(flag, 0)
            stop = bool(flag.item())
        if stop:
            break
        sentences, next_position = next(batches)
        targets = batch_targets(sentences, vocab.ids, vocab.unk_id, vocab.bos_id, vocab.eos_id)
        out = model(CharBatch.from_sentences(sentences), targets)
        n = max(1, int(out["n_tokens"]))
        loss = (out["forward"] + out["backward"]) / (2 * n)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if train_cfg["grad_clip"] > 0:
            nn.utils.clip_grad_norm_(lm.parameters(), train_cfg["grad_clip"])
        optimizer.step()
        scheduler.step()
        step += 1
        position = next_position
        tokens_seen += n * world
        window_tokens += n * world
        window_loss += loss.item() * n
        window_n += n
        elapsed = time.perf_counter() - started
        if step % train_cfg["log_every"] == 0:
            rate = window_tokens / max(1e-9, time.perf_counter() - window_start)
            mean = window_loss / max(1, window_n)
            left = _time_left(step, elapsed, max_steps, max_seconds)
            write_log({"step": step, "elapsed_s": round(elapsed, 1), "tokens": tokens_seen, "loss": mean,
                       "train_ppl": math.exp(min(mean, 50.0)), "tokens_per_s": rate, "lr": scheduler.get_last_lr()[0]})
            if rank == 0:
                log(f"step {step:>7}  {_clock(elapsed)}  loss {mean:.3f}  ppl {math.exp(min(mean, 50.0)):9.2f}  "
                    f"{rate:8.0f} tokens/s  left {left}")
            window_start, window_tokens, window_loss, window_n = time.perf_counter(), 0, 0.0, 0
        if step % train_cfg["eval_every"] == 0:
            run_eval()
            if rank == 0:
                plot_log(log_path, output / "perplexity.png")
        if step % train_cfg["checkpoint_every"] == 0:
            save()
    if last_eval_step != step:
        run_eval()
    save()
    if rank == 0:
        plot_log(log_path, output / "perplexity.png")
    if world > 1:
        torch.distributed.barrier()
    return {"step": step, "elapsed_s": elapsed, "tokens": tokens_seen, "best_dev_ppl": best, "last_eval": last_eval}


def _clock(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(seconds))


def _time_left(step: int, elapsed: float, max_steps: int, max_seconds: float) -> str:
    lefts = []
    if max_steps > 0 and step > 0:
        lefts.append(elapsed / step * (max_steps - step))
    if max_seconds > 0:
        lefts.append(max_seconds - elapsed)
    return _clock(max(0.0, min(lefts))) if lefts else "-"
