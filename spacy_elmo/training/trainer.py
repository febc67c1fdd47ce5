"""One pretraining run in this process (one of several under torchrun or `[system] processes`):
`Pretrainer` sets it up (folder, corpus, vocabulary, model, optimizer; or all of it from the
checkpoint), trains, evaluates, and writes checkpoints, models and the log. The entry point that
picks one process or several is `pretrain.pretrain`.
"""

import functools
import logging
import math
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Generator, Iterator, List, Optional, Tuple

import srsly
import torch
from confection import Config
from torch import nn

from ..bilm import BiLM, ElmoOptions
from ..bilm.folders import bilm_folder
from ..bilm.language_model import BiLanguageModel, SharedSoftmax
from ..bilm.lstm import compile_cells
from ..bilm.packed_matmul import TRAINING_LIBRARIES, set_training_library
from ..bilm.threads import between_batches, fix_threads, start_job
from ..errors import InputError
from ..output_folders import FolderLock, write_atomically
from ..text_corpus import corpus_files
from .batches import BatchEncoder, BatchStream, CorpusPosition, TrainingBatch, batch_loader, first_sentences
from .checkpoint import (
    load_checkpoint,
    load_model_dir,
    rng_state,
    save_checkpoint,
    save_model_dir,
    set_rng_state,
)
from .corpus import Corpus
from .devices import Log, autocast, forward_precision, products_library, time_products, time_step, training_device
from .evaluate import evaluate
from .logger import PretrainRun, make_logger
from .memory import reuse_freed_memory
from .optimizer import lr_schedule, make_optimizer
from .plot import can_plot, plot_log
from .prepared import PreparedCorpus, is_prepared, prepared_for_training
from .progress import Window, clock, time_left
from .run_folder import open_run_folder, truncate_log
from .settings import PretrainSettings
from .vocab import Vocabulary


def train_in_this_process(
    config: Config, output: Path, resume: bool = False, log: Log = print, gpu_id: Optional[int] = None, overwrite: bool = False
) -> Dict[str, Any]:
    """Run `Pretrainer` to the end in this process (arguments as `pretrain.pretrain`).

    RETURNS (Dict[str, Any]): step, elapsed_s, tokens, best_dev_ppl, last_eval.
    """
    trainer = Pretrainer(config, output, resume=resume, log=log, gpu_id=gpu_id, overwrite=overwrite)
    try:
        return trainer.run()
    finally:
        trainer.close()


def build_bilm(block: Dict[str, Any]) -> BiLM:
    """The torch biLM of a config's [bilm] block (its hyperparameters only; weights random)."""
    return BiLM(ElmoOptions.from_config(block))


class Pretrainer:
    """One pretraining run: set up in `__init__`, trained by `run`.

    config (Config): a pretraining config (filled from `settings.DEFAULTS`).
    output (Path): the output folder.
    resume (bool): go on from output/checkpoint.pt if there is one.
    log (Callable[[str], None]): where progress lines go.
    gpu_id (Optional[int]): overrides [system] gpu_id.
    overwrite (bool): start over where `output` holds a run.
    """

    def __init__(
        self, config: Config, output: Path, resume: bool = False, log: Log = print, gpu_id: Optional[int] = None, overwrite: bool = False
    ) -> None:
        self.settings = PretrainSettings.from_config(config)
        self.config = self.settings.config
        self.training = self.settings.training
        self.output = Path(output)
        self.log = log
        system = self.settings.system
        self.rank, self.world = self._init_distributed()
        torch.manual_seed(system.seed)
        fix_threads(system.threads)
        if training_device(gpu_id if gpu_id is not None else system.gpu_id).type == "cpu":
            # under torchrun the node's other processes are starting too: they are not other work
            why = start_job(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
            if why and self.rank == 0:
                log(why)
        self.device = training_device(gpu_id if gpu_id is not None else system.gpu_id)
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        elif system.reuse_freed_memory:
            reuse_freed_memory()
        self.lock: Optional[FolderLock] = None
        if self.rank == 0:
            self._check_inputs()
            self.lock = open_run_folder(self.output, resume, overwrite)
        try:
            self._set_up(resume)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Release the output folder."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def _check_inputs(self) -> None:
        """What the paths name exists, before the output folder is touched."""
        paths = self.settings.paths
        assert paths.train is not None  # PretrainSettings checks it
        if not is_prepared(paths.train):
            corpus_files(paths.train)
        if paths.dev is not None:
            corpus_files(paths.dev)
        if paths.init_bilm is not None:
            folder = bilm_folder(paths.init_bilm)
            if folder.format != "allennlp":
                raise InputError(
                    f"[paths] init_bilm: {paths.init_bilm} is an ELMoForManyLangs biLM: pretraining goes on from "
                    "options.json + weights.hdf5 biLMs only (its inputs are UTF-8 bytes)"
                )

    def _set_up(self, resume: bool) -> None:
        log = self.log
        self.checkpoint = load_checkpoint(self.output) if resume else None
        if resume and self.checkpoint is None:
            log(f"No checkpoint in {self.output}: starting from scratch")
        if self.rank == 0 and resume:
            truncate_log(self.output / "log.jsonl", self.checkpoint["step"] if self.checkpoint is not None else -1)
        self.corpus = self._prepared_corpus()
        self.hold_out = self.settings.corpus.dev_every_nth_doc if self.settings.paths.dev is None else 0
        n_docs = int(self.corpus.docs.max()) + 1 if len(self.corpus) else 0
        # fewer documents than that: held out by sentence (one document would otherwise be all the dev text)
        self.by_sentence = bool(self.hold_out) and n_docs < self.hold_out
        if self.hold_out and self.rank == 0:
            unit = "sentence" if self.by_sentence else "document"
            why = f" (the text holds {n_docs} document{'s' * (n_docs != 1)}; blank lines separate them)" if self.by_sentence else ""
            log(
                f"No [paths] dev: every {_ordinal(self.hold_out)} {unit} of the training text is held out as dev{why} "
                "([corpus] dev_every_nth_doc; --paths.dev names a dev text instead)"
            )
        self.train_sentences = self._select(rank=self.rank, world_size=self.world)
        self.lm = self._build_model()
        if self.rank > 0:  # its own dropout masks (the weights are rank 0's, which DDP broadcasts)
            torch.manual_seed(self.settings.system.seed + self.rank)
        self.optimizer = make_optimizer(self.lm, self.training, self.device)
        self.softmax_warmup = self.training.softmax_warmup_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_schedule(self.training))
        self.precision = self._forward_precision(log)
        self.autocast = autocast(self.device, self.precision)
        self.products = self._products_library(log)
        set_training_library(self.products)
        self.step, self.elapsed, self.tokens_seen, self.best = 0, 0.0, 0, math.inf
        self.signalled: Optional[str] = None  # the signal that asked the run to stop
        self.warmup_tokens = 0  # tokens_seen when the softmax warm-up ended
        # predictions per direction in one pass over the training text (all processes')
        self.epoch_tokens = int((self.corpus.lengths[self.train_sentences].astype("int64") + 1).sum()) * self.world
        self.position = CorpusPosition()
        if self.checkpoint is not None:
            self._restore(self.checkpoint)
        self.model: nn.Module = self.lm
        if self.world > 1:
            self.model = nn.parallel.DistributedDataParallel(
                self.lm, find_unused_parameters=self.softmax.kind == "adaptive" or self.softmax_warmup > 0
            )
        self.dev_sentences = self._dev_sentences() if self.rank == 0 else []
        self.log_path = self.output / "log.jsonl"
        self.last_eval: Dict[str, float] = {}
        self.last_eval_step = -1
        self.last_loss = 0.0
        self.warmup_eval: Optional[Dict[str, float]] = None
        self._said_no_plot = False
        self.log_step, self.finalize_log = (lambda info: None), (lambda: None)
        if self.rank == 0:
            setup = make_logger(self.training.logger)
            self.log_step, self.finalize_log = setup(PretrainRun(self.config))

    # --- setting up -------------------------------------------------------------------------

    def _init_distributed(self) -> Tuple[int, int]:
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world > 1 and not torch.distributed.is_initialized():
            backend = "nccl" if torch.cuda.is_available() and self.settings.system.gpu_id != -1 else "gloo"
            torch.distributed.init_process_group(backend=backend)
        return (torch.distributed.get_rank() if world > 1 else 0), world

    def _prepared_corpus(self) -> PreparedCorpus:
        """Rank 0 prepares the training text (or finds it prepared); the others wait, then read it."""
        corpus_cfg = self.settings.corpus
        train = self.settings.paths.train
        assert train is not None  # required: checked when the settings were read
        args = (train, self.output, corpus_cfg.lang, corpus_cfg.max_length)
        if self.rank == 0:
            corpus = prepared_for_training(*args, n_process=corpus_cfg.prepare_processes, log=self.log)
        if self.world > 1:
            torch.distributed.barrier()
        if self.rank != 0:
            corpus = prepared_for_training(*args, n_process=1, progress=False, log=lambda s: None)
        return corpus

    def _vocabulary(self, init_vocab: Optional[Vocabulary]) -> Vocabulary:
        vocab_path = self.output / "vocab.txt"
        if self.checkpoint is not None and vocab_path.is_file():
            return Vocabulary.from_file(vocab_path)
        if init_vocab is not None:
            return init_vocab
        settings = self.settings.vocab
        every = self._select()
        counts = self.corpus.word_counts(every)
        table = {w: int(c) for w, c in zip(self.corpus.words, counts) if c > 0}
        vocab = Vocabulary.from_sentence_counts(table, len(every), settings.max_size, settings.min_count)
        if len(vocab) <= 3:
            held = (
                f" after holding out every {_ordinal(self.hold_out)} {'sentence' if self.by_sentence else 'document'} as dev"
                if self.hold_out
                else ""
            )
            raise InputError(
                f"No training text in {self.settings.paths.train}{held}: it holds {len(self.corpus)} sentences. "
                "Give a text of at least a few sentences (blank lines separate documents)"
            )
        return vocab

    def _build_model(self) -> BiLanguageModel:
        bilm = BiLM(self.settings.bilm)
        init_bilm = self.settings.paths.init_bilm
        init_vocab: Optional[Vocabulary] = None
        init_softmax: Optional[SharedSoftmax] = None
        if init_bilm is not None:
            loaded, init_vocab, init_softmax = load_model_dir(init_bilm)
            bilm.options.check_matches(
                loaded.options,
                f"[bilm] in the config does not match the model in {init_bilm} (config vs model)",
                "Copy its options into [bilm] (spacy-elmo fill-config CONFIG MODEL does it).",
            )
            bilm.load_state_dict(loaded.state_dict())
            if init_softmax is None:
                init_vocab = None
        self.vocab = self._vocabulary(init_vocab)
        if self.rank == 0:
            self.vocab.to_file(self.output / "vocab.txt")
            write_atomically(self.output / "config.cfg", self.config.to_str())
        softmax_cfg = self.settings.softmax
        if init_softmax is not None and init_vocab is self.vocab:
            self.softmax = init_softmax
        else:
            kind = softmax_cfg.kind
            if kind == "adaptive" and not any(0 < c < len(self.vocab) for c in softmax_cfg.cutoffs):
                # A small corpus: no cluster boundary falls inside the vocabulary.
                self.log(
                    f"The vocabulary ({len(self.vocab)} words) is smaller than every [softmax] cutoff "
                    f"{list(softmax_cfg.cutoffs)}: using the full softmax"
                )
                kind = "full"
            self.softmax = SharedSoftmax(bilm.options.projection_dim, len(self.vocab), kind, softmax_cfg.cutoffs)
        self.bilm = bilm
        if self.training.compile:
            compile_cells(bilm)
        return BiLanguageModel(bilm, self.softmax, dropout=self.training.dropout).to(self.device)

    def _restore(self, checkpoint: Dict[str, Any]) -> None:
        self.lm.load_state_dict(checkpoint["model"])
        if len(checkpoint["optimizer"]["param_groups"]) != len(self.optimizer.param_groups):
            raise InputError(
                f"{self.output / 'checkpoint.pt'} was written with [training] bilm_lr_scale "
                f"{'= 1' if len(checkpoint['optimizer']['param_groups']) == 1 else '!= 1'}: resume with the setting of that run"
            )
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.scheduler.load_state_dict(checkpoint["scheduler"])
        # (a checkpoint of one process, or of several from before "ranks": every process starts from its state)
        ranks = checkpoint.get("ranks") or [{"rng": checkpoint["rng"], "position": checkpoint["position"]}] * self.world
        if len(ranks) != self.world:
            raise InputError(
                f"{self.output / 'checkpoint.pt'} was written by {len(ranks)} training process{'es' if len(ranks) > 1 else ''} and "
                f"this run has {self.world}: resume with as many (each reads its own part of the corpus)"
            )
        own = ranks[self.rank]
        set_rng_state(own["rng"])
        self.step, self.elapsed, self.tokens_seen = checkpoint["step"], checkpoint["elapsed"], checkpoint["tokens"]
        self.best = checkpoint["best_dev_ppl"]
        self.warmup_tokens = checkpoint.get("warmup_tokens", 0)
        # a checkpoint from before shuffled blocks goes on reading in corpus order, as it began
        self.position = CorpusPosition(**{"shuffle_block": 0, **own["position"]})
        p = self.position
        self.log(f"Resumed at step {self.step} (epoch {p.epoch}, pool {p.pool}, batch {p.batch})")

    def _dev_sentences(self) -> List[List[str]]:
        paths, corpus_cfg, limit = self.settings.paths, self.settings.corpus, self.training.dev_max_sentences
        if paths.dev is not None:
            sentences: List[List[str]] = []
            for sentence in Corpus(paths.dev, corpus_cfg.lang, corpus_cfg.max_length):
                sentences.append(sentence)
                if len(sentences) >= limit:
                    break
            return sentences
        if not self.hold_out:
            return []
        return first_sentences(self.corpus, self._select(only_held_out=True), limit)

    def _select(self, only_held_out: bool = False, rank: int = 0, world_size: int = 1) -> Any:
        """The training (or held-out dev) sentences of the prepared corpus, of process `rank`."""
        return self.corpus.select(self.hold_out, only_held_out, rank, world_size, by_sentence=self.by_sentence)

    def _forward_precision(self, log: Log) -> str:
        """ "fp32" or "bf16": a resumed run's own where "auto" chose it; else [training] mixed_precision."""
        mode = self.training.mixed_precision
        kept = (self.checkpoint or {}).get("precision")
        if mode == "auto" and kept in ("fp32", "bf16"):
            if self.rank == 0:
                log(f"[training] mixed_precision = auto: {kept}, as the run started")
            return str(kept)
        timed = functools.partial(self._timed_first_batch, lambda batch: time_step(self.lm, batch, self.device))
        return str(self._decided_by_rank_0(lambda: forward_precision(self.device, mode, log, timed, self._measured_sizes())))

    def _products_library(self, log: Log) -> Optional[str]:
        """ "blas" or "onednn" for training's products on the CPU: a resumed run's own (so that it multiplies as it
        started), else measured (devices.products_library); None: the CPU class's rule."""
        if self.checkpoint is not None:  # a checkpoint without the record started by the class rule (None)
            kept = self.checkpoint.get("products")
            if kept is not None and kept not in TRAINING_LIBRARIES:
                raise InputError(
                    f"the checkpoint records training's products as {kept!r}, not one of {', '.join(TRAINING_LIBRARIES)}: the file "
                    "was edited or is damaged. Resume from another checkpoint, or start the run anew"
                )
            if self.rank == 0 and self.device.type == "cpu":
                log(f"Training's products: {kept or 'the CPU class rule'}, as the run started")
            return None if kept is None else str(kept)
        timed = functools.partial(self._timed_first_batch, lambda batch: time_products(self.lm, batch))
        key = {**self._measured_sizes(), "device": self.device.type}
        return self._decided_by_rank_0(lambda: products_library(self.device, self.precision, log, timed, key))

    def _measured_sizes(self) -> Dict[str, Any]:
        """What a measurement of this run's step depends on beside the machine (bilm/measured.py's key)."""
        return {
            "options": self.bilm.options.to_config(all_fields=True),
            "softmax": self.softmax.kind,
            "vocab": len(self.vocab),
            "batch_tokens": self.training.batch_tokens,
        }

    def _decided_by_rank_0(self, decide: Callable[[], Any]) -> Any:
        """What rank 0 decides (and measures) for every process of the run."""
        chosen = [decide() if self.rank == 0 else ""]
        if self.world > 1:
            torch.distributed.broadcast_object_list(chosen, src=0)
        return chosen[0]

    def _timed_first_batch(self, timer: Callable[[Any], Dict[str, float]]) -> Dict[str, float]:
        """`timer` (devices.time_step or time_products: seconds per token, no update, nothing of the run changes) on
        this run's first batch, every parameter taking its gradient meanwhile."""
        encoder = BatchEncoder(self.corpus, self.vocab, self.bilm.options.max_characters_per_token)
        plan = BatchStream(encoder, self.train_sentences, self.training.batch_tokens, self.settings.corpus.pool_size, 0, CorpusPosition())
        was_frozen, self.lm.freeze_bilm = self.lm.freeze_bilm, False
        try:
            return timer(next(iter(plan)).to(self.device))
        finally:
            self.optimizer.zero_grad(set_to_none=True)
            self.lm.freeze_bilm = was_frozen

    def _batches(self) -> Generator[TrainingBatch, None, None]:
        encoder = BatchEncoder(self.corpus, self.vocab, self.bilm.options.max_characters_per_token)
        stream = BatchStream(
            encoder,
            self.train_sentences,
            self.training.batch_tokens,
            self.settings.corpus.pool_size,
            self.settings.system.seed,
            self.position,
        )
        workers = self.settings.system.data_workers
        if workers is None:
            workers = 1 if self.device.type == "cuda" else 0
        return batch_loader(stream, workers, self.device)

    # --- training -----------------------------------------------------------------------------

    def run(self) -> Dict[str, Any]:
        """Train until max_steps or max_minutes, evaluating, logging and checkpointing on the way."""
        self.lm.train()
        started = time.perf_counter() - self.elapsed
        if self.step == 0:
            self.evaluate()
        batches = self._batches()
        restore = self._stop_on_signals()
        try:
            self._train(batches, started)
        finally:
            restore()
            batches.close()  # ends the DataLoader's workers
            self.finalize_log()
        if self.world > 1:
            torch.distributed.barrier()
        result = {
            "step": self.step,
            "elapsed_s": self.elapsed,
            "tokens": self.tokens_seen,
            "best_dev_ppl": self.best,
            "last_eval": self.last_eval,
            "stopped_by": self.signalled or self._limit_reached(),
        }
        if self.warmup_eval is not None:
            result["warmup_dev_ppl"] = self.warmup_eval["average"]
        return result

    def _train(self, batches: Iterator[TrainingBatch], started: float) -> None:
        settings = self.training
        window = Window(self.device)
        on_cpu = self.device.type == "cpu"
        while not self._should_stop():
            if on_cpu:
                between_batches()
            batch = next(batches)
            window.add(self.train_step(batch), batch.n_tokens * self.world)
            self.position = batch.position
            self.step += 1
            self.tokens_seen += batch.n_tokens * self.world
            self.elapsed = time.perf_counter() - started
            self.log_step(None)
            if self.step == self.softmax_warmup:
                self.warmup_tokens = self.tokens_seen
            if self.step % settings.log_every == 0:
                self._log_progress(window)
                window = Window(self.device)
            if self.step % settings.eval_every == 0 or self.step == self.softmax_warmup:
                self.evaluate()
                self._plot()
            if self.step == self.softmax_warmup and self.last_eval_step == self.step:  # evaluated (rank 0, with dev text)
                self.warmup_eval = dict(self.last_eval)
                self.log(
                    f"step {self.step:>7}  softmax warm-up done: dev perplexity {self.last_eval['average']:.2f} with the biLM as it "
                    "was given (from here on the biLM trains too)"
                )
            if self.step % settings.checkpoint_every == 0:
                self.save()
        if self.signalled:  # asked to stop: the checkpoint now, no evaluation first
            self.save()
            self.log(
                f"{self.signalled} at step {self.step}: the checkpoint is saved in {self.output / 'checkpoint.pt'}; go on with --resume"
            )
            return
        if self.last_eval_step != self.step:
            self.evaluate()
        self.save()
        self._plot()

    def train_step(self, batch: TrainingBatch) -> torch.Tensor:
        """One update on `batch`: of the softmax alone during the first `softmax_warmup_steps`
        (the biLM runs without gradients), of everything after. RETURNS (torch.Tensor): the mean
        loss, on the device (reading it would wait for the device)."""
        self.lm.freeze_bilm = self.step < self.softmax_warmup
        with self.autocast():
            out = self.model(batch.chars, batch.targets)
        loss = (out["forward"] + out["backward"]).float() / (2 * max(1, batch.n_tokens))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.training.grad_clip > 0:
            nn.utils.clip_grad_norm_(self.lm.parameters(), self.training.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        return loss.detach()

    def _limit_reached(self) -> str:
        """RETURNS (str): the limit this process's run has reached ("max_steps", "max_minutes" or
        "max_epochs"), "" while none is."""
        settings = self.training
        if settings.max_steps > 0 and self.step >= settings.max_steps:
            return "max_steps"
        if settings.max_minutes > 0 and self.elapsed >= settings.max_minutes * 60:
            return "max_minutes"
        if settings.max_epochs > 0 and self.step >= self.softmax_warmup:
            if self.tokens_seen - self.warmup_tokens >= settings.max_epochs * self.epoch_tokens:
                return "max_epochs"
        return ""

    def _should_stop(self) -> bool:
        stop = bool(self._limit_reached())
        if self.world == 1:
            return stop or self.signalled is not None
        if self.training.max_minutes <= 0 and self.step % self.training.log_every:
            # the step limits agree across processes without a word; a signal is shared at the next logged
            # step, not every step (a collective and a device sync per step would slow every GPU run)
            return stop
        # All processes stop at the same step: clocks differ, so rank 0 decides max_minutes; a signal
        # to any process (Ctrl-C reaches them all, SIGTERM maybe one) stops every one.
        decides = self.rank == 0 or self.training.max_minutes <= 0
        flags = torch.tensor(
            [float(stop and decides), float(self.signalled is not None)], device=self.device if self.device.type == "cuda" else "cpu"
        )
        torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
        if flags[1].item() and self.signalled is None:
            self.signalled = "a signal to another process"
        return bool(flags[0].item()) or self.signalled is not None

    def _stop_on_signals(self) -> Callable[[], None]:
        """Until the returned function is called, SIGINT (Ctrl-C) and SIGTERM end the run after the
        step under way, with a checkpoint. RETURNS: the function that puts the former handlers back."""
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        former = {}

        def stop(signum: int, frame: Any) -> None:
            self.signalled = signal.Signals(signum).name

        for signum in (signal.SIGINT, signal.SIGTERM):
            former[signum] = signal.signal(signum, stop)

        def restore() -> None:
            for signum, handler in former.items():
                signal.signal(signum, handler)

        return restore

    def evaluate(self) -> None:
        """Dev perplexity (rank 0); keeps model-best."""
        if self.rank != 0 or not self.dev_sentences:
            return
        self.last_eval_step = self.step
        result = evaluate(self.lm, self.vocab, self.dev_sentences, self.training.batch_tokens)
        self.last_eval = result
        warmup_end = {"softmax_warmup_end": True} if 0 < self.softmax_warmup == self.step else {}
        self._write_log(
            {
                "step": self.step,
                "elapsed_s": round(self.elapsed, 1),
                "tokens": self.tokens_seen,
                "dev_ppl": result["average"],
                "dev_ppl_forward": result["forward"],
                "dev_ppl_backward": result["backward"],
                **warmup_end,
            }
        )
        if result["average"] < self.best:
            self.best = result["average"]
            save_model_dir(self.output / "model-best", self.bilm, self.vocab, self.softmax)
        self._report("eval", {"dev_ppl_forward": result["forward"], "dev_ppl_backward": result["backward"], "best_dev_ppl": self.best})

    def save(self) -> None:
        """Checkpoint and model-last, written by rank 0. Every process reads its own part of the
        corpus and draws its own dropout masks: the checkpoint keeps each one's position and
        random state ("ranks"), so that a resumed run goes on as it would have."""
        ranks = self._rank_states()
        if self.rank != 0:
            return
        state = {
            "model": self.lm.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": ranks[0]["rng"],
            "step": self.step,
            "elapsed": self.elapsed,
            "tokens": self.tokens_seen,
            "best_dev_ppl": self.best,
            "warmup_tokens": self.warmup_tokens,
            "position": ranks[0]["position"],
            "precision": self.precision,
            "products": self.products,
        }
        if self.world > 1:
            state["ranks"] = ranks
        save_checkpoint(self.output, state)
        save_model_dir(self.output / "model-last", self.bilm, self.vocab, self.softmax)

    def _rank_states(self) -> List[Dict[str, Any]]:
        """The corpus position and random state of every process (a collective: all call it)."""
        own = {"position": self.position.to_dict(), "rng": rng_state()}
        if self.world == 1:
            return [own]
        states: List[Any] = [None] * self.world
        torch.distributed.all_gather_object(states, own)
        return states

    def _log_progress(self, window: "Window") -> None:
        mean, rate = window.result()  # the one read of the device in a window
        left = time_left(self.step, self.elapsed, self.training.max_steps, self.training.max_minutes * 60)
        ppl = math.exp(min(mean, 50.0))
        self._write_log(
            {
                "step": self.step,
                "elapsed_s": round(self.elapsed, 1),
                "tokens": self.tokens_seen,
                "loss": mean,
                "train_ppl": ppl,
                "tokens_per_s": rate,
                "lr": self.scheduler.get_last_lr()[0],
            }
        )
        self.last_loss = mean
        self._report(
            "train",
            {
                "train_ppl": ppl,
                "tokens_per_s": rate,
                "lr": self.scheduler.get_last_lr()[0],
                "clock": clock(self.elapsed),
                "time_left": left,
            },
        )

    def _report(self, kind: str, scores: Dict[str, Any]) -> None:
        """One `log_step(info)` of the logger (rank 0), in spaCy's format."""
        if self.rank != 0:
            return
        # JSON-safe before the first evaluation (spaCy's jsonl logger writes every value)
        dev_ppl = self.last_eval.get("average", 0.0)
        self.log_step(
            {
                "kind": kind,
                "epoch": self.position.epoch,
                "step": self.step,
                "score": dev_ppl,
                "other_scores": {"dev_ppl": dev_ppl, **scores},
                "losses": {"bilm": self.last_loss},
                "checkpoints": [],
                "seconds": int(self.elapsed),
                "words": self.tokens_seen,
            }
        )

    def _write_log(self, entry: Dict[str, Any]) -> None:
        if self.rank == 0:
            with self.log_path.open("a", encoding="utf8") as f:
                f.write(srsly.json_dumps(entry) + "\n")

    def _plot(self) -> None:
        if self.rank == 0 and not plot_log(self.log_path, self.output / "perplexity.png") and not self._said_no_plot:
            if not can_plot():
                self._said_no_plot = True
                # a note for whoever asks (logger "spacy_elmo", INFO): the run's own lines stay about the run
                logging.getLogger("spacy_elmo").info(
                    "perplexity.png is not drawn: matplotlib is not installed (pip install 'spacy-elmo[plot]'); log.jsonl has the figures"
                )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
