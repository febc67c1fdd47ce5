"""prepare-corpus, pretrain, perplexity: make a biLM and score it."""

from pathlib import Path
from typing import Any, Dict

import typer

from ..errors import InputError
from ._util import command, quiet_option, say, threads_option, use_threads


@command("prepare-corpus")
def prepare_corpus_cli(
    text: Path = typer.Argument(..., help="Raw text: .txt, .txt.gz, .jsonl, .spacy or a folder of them", exists=True),
    output: Path = typer.Option(..., "--output", "-o", help="The prepared folder to write (new, empty, or prepared before)"),
    lang: str = typer.Option("en", help="spaCy language of the tokenizer (as [corpus] lang)"),
    max_length: int = typer.Option(100, help="Longest sentence, in tokens (as [corpus] max_length)"),
    n_process: int = typer.Option(
        0, "--n-process", "-n", help="Tokenizing processes (0: one per CPU core; one for less than 32 MB of text)"
    ),
    quiet: bool = quiet_option(),
) -> None:
    """Tokenize raw text once, in parallel, into memory-mapped arrays that `pretrain` reads
    (--paths.train OUTPUT). Nothing is redone if OUTPUT already holds this text prepared with
    these settings. OUTPUT must be new, empty or a folder this command prepared: nothing else
    is touched."""
    from ..training.prepared import prepare_corpus

    prepare_corpus(text, output, lang, max_length, n_process, progress=not quiet, log=say(quiet))


@command("pretrain", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def pretrain_cli(
    ctx: typer.Context,
    config: str = typer.Argument(..., help="A preset (cpu, small, original) or a config file"),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for checkpoints, models and logs (new, empty, or a run to resume)"),
    resume: bool = typer.Option(False, "--resume", help="Go on from the checkpoint in --output"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Start over where --output holds a run (removes its checkpoint, models and log)"
    ),
    gpu_id: int = typer.Option(None, "--gpu-id", "-g", help="-1: CPU; N: CUDA device N (default: [system] gpu_id, else CUDA if present)"),
) -> None:
    """Train (or fine-tune) a biLM on raw text or a prepared corpus. CONFIG is a preset shipped
    with the package (cpu: 2-core CPU; small and original: the released sizes, for GPUs) or a
    config file naming only what it changes. Settings can be overridden like spacy train's:
    --paths.train corpus.txt.gz --training.max_minutes 30. Raw text is prepared once into
    OUTPUT/corpus and reused. A run in OUTPUT is never started over without --overwrite, and
    OUTPUT is locked while it runs. Progress goes to [training.logger] (a console bar by
    default). Runs distributed under torchrun."""
    from spacy.cli._util import parse_config_overrides

    from ..training.pretrain import pretrain

    overrides = parse_config_overrides(ctx.args)
    if resume:
        overrides = run_budget(output, overrides)
    settings = pretrain_settings(config, overrides)
    result = pretrain(settings.config, output, resume=resume, gpu_id=gpu_id, overwrite=overwrite)
    if str(result.get("stopped_by", "")).startswith(("SIG", "a signal")):
        raise typer.Exit(130 if result["stopped_by"] == "SIGINT" else 143)  # it said where the checkpoint is
    warmup = f" ({result['warmup_dev_ppl']:.2f} after the softmax warm-up, with the biLM as given)" if "warmup_dev_ppl" in result else ""
    typer.echo(f"Done: {result['step']} steps, {result['tokens']} tokens, best dev perplexity {result['best_dev_ppl']:.2f}{warmup}")
    if resume and result.get("stopped_by") == "max_minutes":
        minutes = settings.training.max_minutes
        typer.echo(
            f"The run has used its [training] max_minutes = {minutes:g}: the budget counts the whole run, the parts before "
            f"--resume included. To train on, resume with a larger one (e.g. --training.max_minutes {2 * minutes:g})."
        )


def pretrain_settings(config: str, overrides: Dict[str, Any]) -> Any:
    """The settings of a run: CONFIG (a preset's name or a file naming only what it changes) over the
    defaults, then the overrides (`{"training.max_minutes": 30}`), read and checked once."""
    from thinc.api import Config

    from ..configs import pretrain_config
    from ..training.settings import PretrainSettings, fill_pretrain_config

    try:
        config_path = pretrain_config(config)
    except FileNotFoundError as error:
        raise typer.BadParameter(str(error), param_hint="CONFIG")
    # Defaults first, so that an override may name a setting the file leaves out.
    partial = Config().from_disk(config_path, interpolate=False)
    try:
        return PretrainSettings.from_config(Config().from_str(fill_pretrain_config(partial).to_str(), overrides=overrides))
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="CONFIG")


BUDGET = ("training.max_minutes", "training.max_steps", "training.max_epochs")


def run_budget(output: Path, overrides: dict) -> dict:
    """A resumed run keeps its own budget (the run's config.cfg), where the command line names none."""
    from thinc.api import Config

    saved_path = output / "config.cfg"
    if not saved_path.is_file():
        return overrides
    try:
        saved = Config().from_disk(saved_path, interpolate=False)
    except Exception:  # a damaged config.cfg: the checkpoint's own checks say so
        return overrides
    kept = dict(overrides)
    for key in BUDGET:
        section, name = key.split(".")
        if key not in overrides and name in saved.get(section, {}):
            kept[key] = saved[section][name]
    said = ", ".join(f"{k.split('.')[1]} = {kept[k]}" for k in BUDGET if k in kept and k not in overrides)
    if said:
        typer.echo(f"Resuming with the run's own budget ({said}); --training.max_minutes and the like change it")
    return kept


@command("perplexity")
def perplexity_cli(
    model: Path = typer.Argument(..., help="A model folder written by pretrain (model-best, model-last)", exists=True),
    text: Path = typer.Argument(..., help="Text to score: .txt, .txt.gz, .jsonl, .spacy or a folder", exists=True),
    lang: str = typer.Option("en", help="spaCy language of the tokenizer"),
    max_length: int = typer.Option(100, help="Longest sentence, in tokens"),
    batch_tokens: int = typer.Option(4096, help="Tokens per batch"),
    unigram: bool = typer.Option(False, "--unigram", help="Also print a unigram model's perplexity (same vocabulary)"),
    threads: int = threads_option(),
) -> None:
    """Print the forward, backward and average perplexity of a text, its token count and OOV
    rate (exact: the softmax is always normalised over the whole vocabulary)."""
    use_threads(threads)
    result = perplexity(model, text, lang, max_length, batch_tokens, unigram=unigram)
    typer.echo(f"forward perplexity   {result['forward']:.2f}")
    typer.echo(f"backward perplexity  {result['backward']:.2f}")
    typer.echo(f"average perplexity   {result['average']:.2f}")
    typer.echo(f"tokens               {result['tokens']}")
    typer.echo(f"OOV rate             {result['oov_rate']:.2%}")
    if unigram:
        typer.echo(f"unigram perplexity   {result['unigram']:.2f}")


def perplexity(
    model: Path, text: Path, lang: str = "en", max_length: int = 100, batch_tokens: int = 4096, *, unigram: bool = False
) -> Dict[str, float]:
    """The perplexities of TEXT under the biLM and softmax in MODEL (a pretrain model folder): "forward",
    "backward", "average", "tokens", "oov_rate" (and "unigram": a unigram model's, same vocabulary)."""
    from ..bilm.language_model import BiLanguageModel
    from ..training.checkpoint import load_model_dir
    from ..training.corpus import Corpus
    from ..training.evaluate import evaluate

    bilm, vocab, softmax = load_model_dir(model)
    if vocab is None or softmax is None:
        raise InputError(f"{model} has no vocab.txt / softmax.pt: perplexity needs the softmax")
    sentences = list(Corpus(text, lang, max_length))
    if not sentences:
        raise InputError(f"{text} holds no sentences to score (is it empty?)")
    result = dict(evaluate(BiLanguageModel(bilm, softmax), vocab, sentences, batch_tokens))
    if unigram:
        from ..training.vocab import unigram_perplexity

        result["unigram"] = unigram_perplexity(vocab, sentences)
    return result
