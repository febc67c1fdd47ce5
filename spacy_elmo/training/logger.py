"""How pretraining reports its progress: `[training.logger]`, a logger of spaCy's protocol
(`setup(nlp, stdout, stderr) -> (log_step, finalize)`), so that spaCy's and spacy-loggers'
loggers (console, W&B, MLflow) work here as in `spacy train`.

`log_step(None)` follows every step; `log_step(info)` every `log_every` steps and after every
evaluation, with spaCy's keys (epoch, step, score, other_scores, losses, checkpoints, seconds,
words) plus `kind` ("train" or "eval"). `score` is the last dev perplexity (lower is better).
The default, `spacy-elmo.PretrainLogger.v1`, needs no spaCy (the biLM trains without it).
"""

import sys
from typing import IO, Any, Callable, Dict, Optional, Tuple

from confection import Config

PRETRAIN_LOGGER = "spacy-elmo.PretrainLogger.v1"
LogStep = Callable[[Optional[Dict[str, Any]]], None]
Finalize = Callable[[], None]
SetupLogger = Callable[..., Tuple[LogStep, Finalize]]


class PretrainRun:
    """What a logger's setup gets in place of spaCy's `nlp`: the run's config (with the
    `eval_frequency` and `score_weights` that spaCy's loggers read) and one trainable "pipe"."""

    is_trainable = True

    def __init__(self, config: Config) -> None:
        self.config = Config(config)
        training = self.config["training"]
        training.setdefault("eval_frequency", training["eval_every"])
        training.setdefault("score_weights", {"dev_ppl": None})
        self.pipeline = [("bilm", self)]
        self.pipe_names = ["bilm"]


def pretrain_logger(progress_bar: bool = True, console_output: bool = True) -> SetupLogger:
    """The default pretraining logger: a line per evaluation and per `log_every` steps; with
    `progress_bar`, on a terminal, a bar of the steps with the latest loss, perplexity and speed
    in place of the per-step lines.

    progress_bar (bool): show a progress bar when the output is a terminal.
    console_output (bool): print anything at all.
    """

    def setup(nlp: PretrainRun, stdout: IO = sys.stdout, stderr: IO = sys.stderr) -> Tuple[LogStep, Finalize]:
        from ..progress_bar import ProgressLines, progress_bar as make_bar

        training = nlp.config["training"]
        bar = None
        if console_output and progress_bar:
            total = training["max_steps"] or None
            bar = make_bar(total=total, unit="step", file=stderr, dynamic_ncols=True, disable=None, leave=False)
            bar = None if bar.disable or isinstance(bar, ProgressLines) else bar  # no terminal: the step lines below

        def write(line: str) -> None:
            if bar is not None:
                bar.write(line, file=stdout)
            else:
                print(line, file=stdout, flush=True)

        def log_step(info: Optional[Dict[str, Any]]) -> None:
            if info is None:
                if bar is not None:
                    bar.update(1)
                return
            if not console_output:
                return
            scores = info["other_scores"]
            if info.get("kind") == "eval":
                write(
                    f"step {info['step']:>7}  dev perplexity {scores['dev_ppl']:.2f} (forward {scores['dev_ppl_forward']:.2f}, "
                    f"backward {scores['dev_ppl_backward']:.2f}, best {scores['best_dev_ppl']:.2f})"
                )
            elif bar is not None:
                bar.set_postfix_str(
                    f"loss {info['losses']['bilm']:.3f} ppl {scores['train_ppl']:.1f} {scores['tokens_per_s']:.0f} tok/s", refresh=False
                )
            else:
                write(
                    f"step {info['step']:>7}  {scores['clock']}  loss {info['losses']['bilm']:.3f}  ppl {scores['train_ppl']:9.2f}  "
                    f"{scores['tokens_per_s']:8.0f} tokens/s  left {scores['time_left']}"
                )

        def finalize() -> None:
            if bar is not None:
                bar.close()

        return log_step, finalize

    return setup


def make_logger(block: Dict[str, Any]) -> SetupLogger:
    """The logger of a `[training.logger]` block: ours directly, any other from spaCy's registry.

    RETURNS (SetupLogger): the logger's setup function.
    """
    name = block.get("@loggers")
    args = {key: value for key, value in block.items() if key != "@loggers"}
    if name == PRETRAIN_LOGGER:
        return pretrain_logger(**args)
    try:
        from spacy.util import registry
    except ImportError as error:
        raise ValueError(f"[training.logger] {name} comes from spaCy's registry: install spaCy, or use {PRETRAIN_LOGGER}") from error
    return registry.resolve({"logger": dict(block)})["logger"]
