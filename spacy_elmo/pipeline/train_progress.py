"""`spacy train`'s console log with progress from the first step: spaCy's own table (spacy.ConsoleLogger.v3), and
between its rows a line at most every `every_s` seconds saying the step and what the biLM has read. Before the cache
holds a Doc's layers, the biLM reads each training batch and, at step 0, the whole dev set: minutes on a CPU, during
which spaCy's table says nothing."""

import sys
import time
from typing import IO, Any, Callable, Dict, Optional, Tuple, Union

from pathlib import Path
from spacy.language import Language
from spacy.training.loggers import console_logger_v3
from spacy.util import registry

LogStep = Callable[[Optional[Dict[str, Any]]], None]


class FirstPassProgress:
    """Counts the steps and the Docs and tokens the biLM reads, and says them in a line at most every `every_s`."""

    def __init__(
        self, write: Callable[[str], None], every_s: float, clock: Callable[[], float] = time.monotonic, cached: bool = True
    ) -> None:
        self.write = write
        self.cached = cached  # frozen with a layer cache: each Doc read once; else (fine-tuned, no cache) read every time
        self.every_s = every_s
        self.clock = clock
        self.started = self.last = clock()
        self.step = 0
        self.docs = self.tokens = 0

    def biLM_ran(self, docs: int, tokens: int) -> None:
        self.docs += docs
        self.tokens += tokens
        self._maybe_say()

    def stepped(self) -> None:
        self.step += 1
        self._maybe_say()

    def logged(self) -> None:
        """spaCy's table printed a row: the next line is due `every_s` after it."""
        self.last = self.clock()

    def _maybe_say(self) -> None:
        now = self.clock()
        if now - self.last < self.every_s:
            return
        self.last = now
        self.write(
            f"  step {self.step:,} ({now - self.started:,.0f} s): the biLM has read {self.docs:,} docs, {self.tokens:,} tokens "
            + (
                "(each once: their layers are then cached)"
                if self.cached
                else "(it reads every batch, and the dev set at each evaluation: fine-tuned or without a layer cache, nothing is cached)"
            )
        )


@registry.loggers("spacy-elmo.ConsoleLogger.v1")
def console_logger_v1(
    progress_bar: Optional[str] = None,
    console_output: bool = True,
    output_file: Optional[Union[str, Path]] = None,
    every_s: float = 15.0,
) -> Callable[[Language, IO, IO], Tuple[LogStep, Callable[[], None]]]:
    """spacy.ConsoleLogger.v3 (the same settings and table; its output_file holds each evaluation's epoch, step,
    losses and scores), with a progress line at most every `every_s` seconds between the table's rows while a
    pipeline's elmo component runs its biLM (0: none)."""
    spacy_setup = console_logger_v3(progress_bar=progress_bar, console_output=console_output, output_file=output_file)

    def setup(nlp: Language, stdout: IO = sys.stdout, stderr: IO = sys.stderr) -> Tuple[LogStep, Callable[[], None]]:
        from .loading import elmo_names, elmo_pipe

        log_step, finalize = spacy_setup(nlp, stdout, stderr)
        elmos = [elmo_pipe(nlp, name) for name in elmo_names(nlp)]
        if not console_output or not elmos or every_s <= 0:
            return log_step, finalize
        cached = all(elmo.frozen and elmo.settings.cache_mb > 0 for elmo in elmos)
        progress = FirstPassProgress(lambda line: print(line, file=stdout, flush=True), every_s, cached=cached)
        print(
            f"  The first row comes after step 0 and the first evaluation, once the biLM has read the dev set; until "
            f"then and between rows, a line every {every_s:g} s or so says how far training is",
            file=stdout,
            flush=True,
        )
        for elmo in elmos:
            elmo.on_biLM_run = progress.biLM_ran

        def step(info: Optional[Dict[str, Any]]) -> None:
            log_step(info)
            if info is None:
                progress.stepped()
            else:
                progress.step = int(info.get("step", progress.step))
                progress.logged()

        def done() -> None:
            for elmo in elmos:
                elmo.on_biLM_run = None
            finalize()

        return step, done

    return setup
