"""The `spacy-elmo` command line.

Commands are listed in the order of the work: pretrain a biLM, write a training config that uses
it, then use it. Bad input ends a command with one line on stderr naming the file and what to do
(exit status 1), not a traceback. No command replaces a file or folder it did not make:
`--overwrite` says that you mean it (folders: see output_folders.py).
"""

import errno
import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, TypeVar

import typer
import typer.core

try:
    from typer import _click  # typer >= 0.24 carries its own click
except ImportError:  # pragma: no cover
    import click as _click  # type: ignore[no-redef]

from .errors import InputError


class _HelpStyle:
    """How every command's help reads: arguments named in capitals, as the docs write them (`embed MODEL
    INPUT OUTPUT`), and on/off options, --help included, without a value type (typer writes "<bool>")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:  # type: ignore[attr-defined]
            if isinstance(param, typer.core.TyperArgument) and param.metavar is None and param.name:
                param.metavar = param.name.upper().removesuffix("_PATH")
            elif isinstance(param, typer.core.TyperOption) and (param.is_flag or getattr(param, "is_bool_flag", False)):
                param.metavar = ""

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


class _Command(_HelpStyle, typer.core.TyperCommand):
    pass


class _Group(_HelpStyle, typer.core.TyperGroup):
    def main(  # type: ignore[override]
        self, args: Any = None, prog_name: Any = None, complete_var: Any = None, standalone_mode: bool = True, **extra: Any
    ) -> Any:
        """Errors in the command line itself (a missing argument, an unknown option) end in one line on stderr,
        as every other error does, not in a panel."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            status = super().main(args, prog_name, complete_var, False, **extra)
        except _click.exceptions.ClickException as err:
            message = err.format_message().strip()
            context = getattr(err, "ctx", None)
            if message:  # empty: no arguments at all, and the help was shown
                hint = f" ('{context.command_path} --help' lists what it takes)" if context is not None else ""
                typer.echo(f"Error: {message}{hint}", err=True)
            sys.exit(err.exit_code)
        except typer.Abort:
            typer.echo("Aborted.", err=True)
            sys.exit(1)
        sys.exit(status if isinstance(status, int) else 0)


app = typer.Typer(
    name="spacy-elmo",
    cls=_Group,
    help=(
        "ELMo biLMs for spaCy. Released biLMs by name (models, download, convert); pretrain a biLM "
        "(prepare-corpus, pretrain, perplexity); write a training config that uses it (init-config, "
        "fill-config; then spacy train); and use it (embed, inspect, index-usages, index-ann, neighbours; "
        "merge joins the parts of a run split with --shard; change ranks words by how their usages differ "
        "between two corpora); machine shows what threads and precision 'auto' "
        "rest on here."
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    add_completion=False,
)

F = TypeVar("F", bound=Callable[..., Any])
MODELS_WIDTH = 100  # `spacy-elmo models` fits a 100-column terminal


def command(name: str, **settings: Any) -> Callable[[F], F]:
    """`app.command(name)`, with a user's error said in one line: an InputError (a damaged or
    mismatched file, a folder that is not ours), a missing file, a full disk."""

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except (InputError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError) as err:
                _fail(err)
            except OSError as err:
                if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                    _fail(err)
                raise

        app.command(name, cls=_Command, **settings)(run)
        return run  # type: ignore[return-value]

    return decorate


def _fail(err: BaseException) -> None:
    message = err.strerror if isinstance(err, OSError) and err.strerror and not err.filename else str(err)
    if isinstance(err, OSError) and err.filename and str(err.filename) not in message:
        message = f"{err.filename}: {err.strerror or message}"
    typer.echo(f"Error: {message}", err=True)
    raise typer.Exit(1)


def quiet_option() -> Any:
    """--quiet: the progress bar (shown on a terminal only) and progress lines off; errors and warnings stay."""
    return typer.Option(False, "--quiet", "-q", help="No progress bar or progress lines: errors and warnings only")


def threads_option() -> Any:
    return typer.Option(
        0,
        "--threads",
        help="torch threads (0: the cores not busy with other work, followed while the job runs; docs/speed.md)",
        min=0,
    )


def _threads(threads: int) -> None:
    """--threads N fixes the number; 0 takes the cores not busy now and follows the machine (logged at INFO,
    logger "spacy_elmo": stderr stays for errors and warnings)."""
    import logging

    from .bilm.threads import fix_threads, start_job

    fix_threads(threads)
    why = start_job()
    if why:
        logging.getLogger("spacy_elmo").info(why)


def shard_option() -> Any:
    return typer.Option(
        None, "--shard", help="I/N: only shard I of N (0-based) of the corpus's documents, a part that `spacy-elmo merge` joins"
    )


def ray_option() -> Any:
    return typer.Option(
        None,
        "--ray",
        help="auto or a cluster's address: run the shards on Ray and merge them (auto: $RAY_ADDRESS, else a local cluster); "
        "needs pip install 'spacy-elmo[ray]'",
    )


def workers_option() -> Any:
    return typer.Option(0, "--workers", help="With --ray: Ray actors, each loading the pipeline once (0: one per CPU of the cluster)")


def _shard(text: Optional[str], ray: Optional[str]) -> Any:
    from .shards import Shard

    if text and ray is not None:
        raise typer.BadParameter("--ray runs every shard and merges them: give --shard or --ray, not both", param_hint="--shard")
    try:
        return Shard.parse(text)
    except InputError as error:
        raise typer.BadParameter(str(error), param_hint="--shard")


def _say(quiet: bool) -> Callable[[str], None]:
    return (lambda line: None) if quiet else typer.echo


def check_output_file(path: Path, overwrite: bool) -> None:
    """Refuse to replace an existing file unless `--overwrite` was given."""
    if path.is_dir():
        raise InputError(f"{path} is a folder: give a file name")
    if os.path.lexists(path) and not overwrite:  # a link too, dangling or not (--overwrite replaces the link itself)
        raise InputError(f"{path} exists: give --overwrite to replace it, or another file name")


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
    from .training.prepared import prepare_corpus

    prepare_corpus(text, output, lang, max_length, n_process, progress=not quiet, log=_say(quiet))


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
    from thinc.api import Config

    from .configs import pretrain_config
    from .training.settings import PretrainSettings, fill_pretrain_config
    from .training.pretrain import pretrain

    try:
        config_path = pretrain_config(config)
    except FileNotFoundError as error:
        raise typer.BadParameter(str(error), param_hint="CONFIG")
    overrides = parse_config_overrides(ctx.args)
    if resume:
        overrides = _run_budget(output, overrides)
    # Defaults first, so that an override may name a setting the file leaves out.
    partial = Config().from_disk(config_path, interpolate=False)
    try:
        settings = PretrainSettings.from_config(Config().from_str(fill_pretrain_config(partial).to_str(), overrides=overrides))
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="CONFIG")
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


BUDGET = ("training.max_minutes", "training.max_steps", "training.max_epochs")


def _run_budget(output: Path, overrides: dict) -> dict:
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
    from .bilm.language_model import BiLanguageModel
    from .training.checkpoint import load_model_dir
    from .training.corpus import Corpus
    from .training.evaluate import evaluate

    _threads(threads)
    bilm, vocab, softmax = load_model_dir(model)
    if vocab is None or softmax is None:
        raise typer.BadParameter(f"{model} has no vocab.txt / softmax.pt: perplexity needs the softmax", param_hint="MODEL")
    sentences = list(Corpus(text, lang, max_length))
    if not sentences:
        raise typer.BadParameter(f"{text} holds no sentences to score (is it empty?)", param_hint="TEXT")
    result = evaluate(BiLanguageModel(bilm, softmax), vocab, sentences, batch_tokens)
    typer.echo(f"forward perplexity   {result['forward']:.2f}")
    typer.echo(f"backward perplexity  {result['backward']:.2f}")
    typer.echo(f"average perplexity   {result['average']:.2f}")
    typer.echo(f"tokens               {result['tokens']}")
    typer.echo(f"OOV rate             {result['oov_rate']:.2%}")
    if unigram:
        from .training.vocab import unigram_perplexity

        typer.echo(f"unigram perplexity   {unigram_perplexity(vocab, sentences):.2f}")


@command("init-config")
def init_config_cli(
    output: Path = typer.Argument(..., help="Where to write the config"),
    pipeline: str = typer.Option("ner", "--pipeline", "-p", help="The task: ner, textcat, tagger or parser"),
    bilm: str = typer.Option(
        None,
        "--bilm",
        "-b",
        help="The biLM: a folder (options.json + weights.hdf5, or ELMoForManyLangs) or a released model's name (spacy-elmo models)",
    ),
    baseline: bool = typer.Option(False, "--baseline", help="The matching config without ELMo (same features and schedule)"),
    spacy_pretrain: bool = typer.Option(
        False,
        "--spacy-pretrain",
        help="The baseline with a tok2vec that `spacy pretrain` trains on raw text "
        "(its [pretraining] block included; then --paths.init_tok2vec); ner and textcat",
    ),
    elmo_at: str = typer.Option(
        "input", "--elmo-at", help="Where ELMo joins the task's encoder: input ([x_k; ELMo_k]), output ([h_k; ELMo_k]) or both"
    ),
    vectors: Path = typer.Option(
        None,
        "--vectors",
        help="Static vectors beside the token features: a folder written by `spacy init vectors`",
        exists=True,
        file_okay=False,
    ),
    lang: str = typer.Option(
        None, "--lang", "-l", help="The pipeline's language, e.g. de (default: a released biLM's own language, else en)"
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists"),
) -> None:
    """Write a complete, commented training config for a task with ELMo (frozen biLM, learned
    scalar mix beside the task's tok2vec), or its matching baseline, ready for `spacy train
    CONFIG --paths.train train.spacy --paths.dev dev.spacy`, where CONFIG is the file written.
    The biLM's files are named by absolute paths, so the config works from any folder."""
    from .configs import task_config
    from .configs.editing import ELMO_PLACES, fill_config_text, place_elmo_text, set_values, use_static_vectors
    from .output_folders import write_atomically

    if elmo_at not in ELMO_PLACES:
        raise typer.BadParameter(f"{elmo_at!r}: use one of {', '.join(ELMO_PLACES)}", param_hint="--elmo-at")
    if baseline and spacy_pretrain:
        raise typer.BadParameter("give --baseline or --spacy-pretrain, not both", param_hint="--spacy-pretrain")
    without_elmo = baseline or spacy_pretrain
    flag = "--baseline" if baseline else "--spacy-pretrain"
    if without_elmo and bilm is not None:
        raise typer.BadParameter(f"a config without ELMo has no biLM: give {flag} or --bilm, not both", param_hint="--bilm")
    if without_elmo and elmo_at != "input":
        raise typer.BadParameter(f"a config without ELMo has no ELMo to place: leave out --elmo-at or {flag}", param_hint="--elmo-at")
    lang = _pipeline_lang(lang, bilm)
    _check_not_an_input(output, [p for p in (bilm, vectors) if p is not None])
    check_output_file(output, overwrite)
    try:
        path = task_config(pipeline, "baseline" if baseline else "spacy_pretrain" if spacy_pretrain else "elmo")
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--pipeline")
    text = path.read_text(encoding="utf8")
    if not without_elmo:
        text = place_elmo_text(text, elmo_at)
    if bilm is not None:
        text = fill_config_text(text, _bilm_source(bilm))
    if vectors is not None:
        text = use_static_vectors(text, vectors.resolve())
    text = set_values(text, "nlp", {"lang": lang})
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, text)
    what = (
        "without ELMo"
        if baseline
        else "without ELMo, tok2vec from spacy pretrain (set --paths.init_tok2vec)"
        if spacy_pretrain
        else "with ELMo"
        if bilm
        else "with ELMo (set --paths.elmo_options and --paths.elmo_weights, or give --bilm)"
    )
    typer.echo(f"Wrote {output}: {pipeline} {what}, lang = {lang}" + (f", static vectors from {vectors}" if vectors else ""))


def _pipeline_lang(lang: Optional[str], bilm: Optional[str]) -> str:
    """The language of a config's pipeline: --lang, else a released biLM's own, else English."""
    import spacy

    from .released.catalogue import CATALOGUE

    if lang is None:
        entry = CATALOGUE.get(bilm) if bilm is not None and not Path(bilm).exists() else None
        lang = entry.language if entry is not None else "en"
    try:
        spacy.util.get_lang_class(lang)
    except ImportError:
        raise typer.BadParameter(f"{lang!r} is not a language spaCy knows (e.g. en, de, fr)", param_hint="--lang")
    return lang


@command("fill-config")
def fill_config_cli(
    config_path: str = typer.Argument(
        ..., help="A training config with an elmo component, a pretraining config, or a pretraining preset (cpu, small, original)"
    ),
    model: str = typer.Argument(
        ..., help="The biLM: a folder (options.json + weights.hdf5, or ELMoForManyLangs) or a released model's name"
    ),
    output: Path = typer.Argument(..., help="Where to write the filled config"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists"),
) -> None:
    """Write CONFIG set to the biLM in MODEL, its order and comments kept. A training config: the
    elmo component's model block gets the hyperparameters of options.json (the listeners follow
    it) and \\[paths] elmo_options / elmo_weights name the files. A pretraining config: \\[bilm]
    gets the hyperparameters and \\[paths] init_bilm the folder (absolute paths). Then
    `spacy train OUTPUT ...` (or `spacy-elmo pretrain OUTPUT ...`) needs no biLM overrides."""
    from .configs import PRETRAIN_PRESETS, pretrain_config
    from .configs.editing import fill_config_text
    from .output_folders import write_atomically

    path = pretrain_config(config_path) if config_path in PRETRAIN_PRESETS else Path(config_path)
    if not path.is_file():
        raise typer.BadParameter(
            f"{config_path}: no such file, nor a pretraining preset ({', '.join(PRETRAIN_PRESETS)})", param_hint="CONFIG_PATH"
        )
    check_output_file(output, overwrite)
    text = fill_config_text(path.read_text(encoding="utf8"), _bilm_source(model))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, text)
    typer.echo(f"Wrote {output} for the biLM in {model}")


CONVERTED = ("options.json", "weights.hdf5")


@command("convert")
def convert_cli(
    model: str = typer.Argument(..., help="A biLM folder (TensorFlow checkpoint, ELMoForManyLangs, AllenNLP) or a released model's name"),
    output: Path = typer.Argument(..., help="The folder to write options.json + weights.hdf5 into"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace options.json and weights.hdf5 if OUTPUT holds them"),
) -> None:
    """Write a biLM in the AllenNLP format (options.json + weights.hdf5, as bilm-tf's dump_weights writes
    them), for tools that read only that: a TF Hub module or a bilm-tf training checkpoint, for instance.
    `load_original` on the result gives the same layers."""
    from .bilm import save_original
    from .output_folders import check_not_inside
    from .released.download import resolve_bilm

    found = resolve_bilm(model)
    check_not_inside(output, found.path, "the biLM folder")
    others = sorted(p.name for p in output.iterdir() if p.name not in CONVERTED) if output.is_dir() else []
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise InputError(f"{output} holds other files ({shown}): convert writes into a new or empty folder, or one it wrote")
    for name in CONVERTED:
        check_output_file(output / name, overwrite)
    save_original(found.load(cache_size=0), output / "options.json", output / "weights.hdf5")
    typer.echo(f"Wrote {found.path} ({found.format}) as {output / 'options.json'} + {output / 'weights.hdf5'}")


@command("embed")
def embed_cli(
    model: str = typer.Argument(..., help="Pipeline folder, biLM folder, or a released model's name"),
    input_path: Path = typer.Argument(..., help=".txt/.txt.gz (one document per line), .jsonl or .spacy", exists=True),
    output: Path = typer.Argument(..., help=".spacy (DocBin with doc._.elmo) or .hdf5 (one dataset per document)"),
    all_layers: bool = typer.Option(False, "--all", help="HDF5: every layer, (L + 1, n_tokens, 2P) (the default)"),
    top: bool = typer.Option(False, "--top", help="HDF5: the top layer only, (n_tokens, 2P)"),
    average: bool = typer.Option(False, "--average", help="HDF5: the average of the layers, (n_tokens, 2P)"),
    pretokenized: bool = typer.Option(
        False, "--pretokenized", help="Text input is one sentence a line, tokens split by whitespace (as allennlp elmo reads it)"
    ),
    lang: str = typer.Option("en", help="Language of the tokenizer when MODEL holds original files"),
    sentences: bool = typer.Option(True, help="Split documents into sentences (original files only)"),
    dtype: str = typer.Option("float32", help="float32 or float16"),
    precision: str = typer.Option(
        "fp32",
        help="fp32 (the original computation); bf16: the biLM's large matrix products in bfloat16 (CPUs with bfloat16 units; "
        "about 3e-3 relative error); int8: in int8 (about 1e-2); auto: the fastest of these that runs on this machine",
    ),
    docs_per_batch: int = typer.Option(
        64, "--docs-per-batch", help="Documents per nlp.pipe batch (the elmo component's batch_size counts biLM sequences)"
    ),
    gpu_id: int = typer.Option(-1, "--gpu-id", "-g", help="-1: CPU; N: run on CUDA device N (needs cupy, as spaCy's --gpu-id)"),
    shard: str = shard_option(),
    ray: str = ray_option(),
    workers: int = workers_option(),
    threads: int = threads_option(),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists"),
    quiet: bool = quiet_option(),
) -> None:
    """Write the ELMo layers of every document: a DocBin (`.spacy`, tokens + `doc._.elmo`) or an
    HDF5 file laid out as `allennlp elmo` writes it (dataset "i" for line i, blank lines
    included: --all (L + 1, n_tokens, 2P), --top or --average (n_tokens, 2P); "sentence_to_index"
    a JSON string mapping each line to its dataset). OUTPUT appears only once complete.
    --shard I/N writes one part of N (`spacy-elmo merge` joins them); --ray runs every part on a
    Ray cluster and merges them (docs/scale.md)."""
    from .bilm.precision import SETTINGS as PRECISIONS
    from .pipeline.export import check_output

    if all_layers + top + average > 1:
        raise typer.BadParameter("give one of --all, --top, --average", param_hint="--all/--top/--average")
    layers = "top" if top else "average" if average else "all"
    try:
        check_output(output, layers)
    except InputError as error:
        raise typer.BadParameter(str(error), param_hint="OUTPUT")
    if pretokenized and input_path.suffix in (".spacy", ".jsonl"):
        raise typer.BadParameter("--pretokenized reads a text file, one sentence a line", param_hint="--pretokenized")
    if precision not in PRECISIONS:
        raise typer.BadParameter(f"{precision!r}: use one of {', '.join(PRECISIONS)}", param_hint="--precision")
    check_output_file(output, overwrite)
    part = _shard(shard, ray)
    _require_gpu(gpu_id)
    settings = {
        "model": _bilm_source(model),
        "input": str(input_path.resolve()),
        "layers": layers,
        "pretokenized": pretokenized,
        "lang": lang,
        "sentences": sentences,
        "dtype": dtype,
        "precision": precision,
        "docs_per_batch": docs_per_batch,
    }
    if ray is not None:
        from .distributed import run_embed

        run_embed(ray, settings, output, workers=workers, quiet=quiet)
        return
    from .pipeline.export import embed_to_file
    from .pipeline.loading import load_elmo_pipeline

    _threads(threads)
    nlp = load_elmo_pipeline(model, lang, sentences and not pretokenized, dtype, precision)
    keep, n_docs, n_tokens = embed_to_file(nlp, settings, part, output, progress=not quiet)
    what = f"shard {part} ({n_docs} of the input's {keep.n_docs} documents)" if not part.whole else f"{n_docs} documents"
    _say(quiet)(f"Wrote the ELMo layers of {what} ({n_tokens} tokens) to {output}")


def _check_not_an_input(output: Path, inputs: List[Any]) -> None:
    """Refuse an output file inside an input folder (a biLM's, the vectors'): an input is never
    an output, with --overwrite or not."""
    from .released import cache_dir

    out = output.resolve()
    folders = [Path(p).resolve() for p in inputs if Path(p).exists()]
    if any(isinstance(p, str) and not Path(p).exists() for p in inputs):
        folders.append(cache_dir().resolve())  # a released model's name: its files are in the download cache
    for folder in folders:
        if out == folder or folder in out.parents:
            raise InputError(f"{output} is inside {folder}, which this command reads: write the config somewhere else")


def _bilm_source(value: str) -> str:
    """A biLM named on the command line: an existing path (made absolute), else a released model's name."""
    return str(Path(value).resolve()) if Path(value).exists() else value


@command("models")
def models_cli(
    cache: str = typer.Option(None, "--cache", help="The download cache (default: $SPACY_ELMO_CACHE, else ~/.cache/spacy-elmo)"),
) -> None:
    """List the released ELMo models that `spacy-elmo download NAME`, `--bilm NAME` and
    `add_elmo(nlp, NAME)` take, and which are in the cache."""
    from .released import CATALOGUE, cache_dir
    from .released.download import cache_state

    rows = [("name", "lang", "format", "size", "download", "cached", "licence", "trained on")]
    for model in CATALOGUE.values():
        name = model.name + ("*" if model.sha256 else "") + ("~" if model.assumed else "")
        size = model.parameters.split(" ")[0] + ("+words" if "word embedding" in model.parameters else "")
        licence = "not stated" if model.licence.startswith("not stated") else model.licence.split(" (")[0]
        fmt = {"elmoformanylangs": "efml", "tensorflow": "tf"}.get(model.format, model.format)
        state = cache_state(model.name, cache) or "no"
        rows.append(
            (name, model.language, fmt, size, model.download, state, licence, ("lemmas: " if model.lemmas else "") + model.trained_on)
        )
    import shutil

    width = max(MODELS_WIDTH, shutil.get_terminal_size((MODELS_WIDTH, 24)).columns)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    room = width - sum(w + 2 for w in widths)
    for row in rows:
        last = row[-1] if len(row[-1]) <= room else row[-1][: max(0, room - 3)].rstrip() + "..."
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + last)
    import textwrap

    typer.echo()
    footer = (
        f"Cache: {cache_dir(cache)}. cached: yes (complete and checked), partial (a download to resume), damaged "
        "(download it again with --force). Every use checks the files against the sha256 recorded at download; the "
        "download is checked against the sha256 its source publishes for the names marked *, else only by loading it, "
        "so the server or mirror is trusted for its content. efml: ELMoForManyLangs; +words: with its word embedding; tf: a "
        "TensorFlow checkpoint (read without TensorFlow); lemmas: trained on lemmas, so the pipeline feeds lemmas; ~: the "
        "entry assumes what no source states (below). Each entry's full training text, licence and sources: "
        "spacy_elmo/released/catalogue.py."
    )
    typer.echo(textwrap.fill(footer, width, break_on_hyphens=False, break_long_words=False))
    assumptions: dict = {}
    for model in CATALOGUE.values():
        if model.assumed:
            assumptions.setdefault(model.assumed, []).append(model.name)
    for text, names in assumptions.items():
        typer.echo(textwrap.fill(f"~ {', '.join(names)}: {text}.", width, subsequent_indent="  ", break_on_hyphens=False))


@command("download")
def download_cli(
    name: str = typer.Argument(..., help="A released model's name (spacy-elmo models lists them)"),
    cache: str = typer.Option(None, "--cache", help="The download cache (default: $SPACY_ELMO_CACHE, else ~/.cache/spacy-elmo)"),
    mirror: str = typer.Option(
        None,
        "--mirror",
        help="A server (http(s)://...) or a folder (a path or file:///...) holding NAME/FILE for each model, instead of the "
        "original URLs (default: $SPACY_ELMO_MIRROR)",
    ),
    force: bool = typer.Option(False, "--force", help="Download again what spacy-elmo downloaded before"),
) -> None:
    """Download a released model into the cache (resuming an interrupted download), check it, and
    say where it is. Later uses (`--bilm NAME`, `add_elmo(nlp, NAME)`) read it from there offline."""
    from .released import CATALOGUE, download

    folder = download(name, cache, mirror, force=force)
    size = sum(p.stat().st_size for p in folder.path.iterdir() if p.is_file() and not p.name.startswith(".")) / 1e6
    typer.echo(f"{name}: {folder.path} ({folder.format} format, {size:.1f} MB), checked")
    stated = CATALOGUE[name].download
    if stated.endswith(" MB") and not stated.startswith("~") and abs(size - float(stated[:-3])) > 0.02 * float(stated[:-3]):
        typer.echo(
            f"Note: the catalogue gives {name} as {stated}, and this copy is {size:.1f} MB: it loaded and passed every check, "
            "but it is not the size of the published file (a mirror's own copy?)"
        )


def _require_gpu(gpu_id: int) -> None:
    if gpu_id >= 0:
        import spacy

        try:
            spacy.require_gpu(gpu_id)
        except ValueError as error:
            raise typer.BadParameter(f"{error} (CUDA device {gpu_id} through cupy); --gpu-id -1 runs on the CPU", param_hint="--gpu-id")


@command("index-usages")
def index_usages_cli(
    model: str = typer.Argument(..., help="Pipeline folder with elmo, biLM folder, or a released model's name"),
    corpus: Path = typer.Argument(..., help=".txt/.txt.gz/.jsonl/.spacy, a file or a folder of them", exists=True),
    output: Path = typer.Argument(..., help="The index folder to write (new, empty, or an index built before)"),
    words: str = typer.Option(
        "", "--words", "-w", help="Index only these words, comma-separated (matched on token.lower_); default: every token"
    ),
    lemmas: bool = typer.Option(False, "--lemmas", help="Match --words on lemmas (the pipeline needs a lemmatizer)"),
    layer: str = typer.Option(
        "top", "--layer", help="The vectors: top, average, a layer number (0 = token layer) or one weight per layer (0.2,0.3,0.5)"
    ),
    lang: str = typer.Option("en", help="Language of the tokenizer when MODEL holds original files"),
    docs_per_batch: int = typer.Option(64, "--docs-per-batch", help="Documents per nlp.pipe batch"),
    shard: str = shard_option(),
    ray: str = ray_option(),
    workers: int = workers_option(),
    ann: bool = typer.Option(
        False, "--ann", help="Also build the approximate search (FAISS; pip install 'spacy-elmo[ann]'): see index-ann"
    ),
    threads: int = threads_option(),
    quiet: bool = quiet_option(),
) -> None:
    """Index the usages of words in a corpus, each with its ELMo vector, for `spacy-elmo
    neighbours`. With --words, only the sentences that hold one go through the biLM. OUTPUT
    appears complete or not at all; files you put in it stay. --shard I/N writes one part of N
    (`spacy-elmo merge` joins them); --ray runs every part on a Ray cluster and merges them."""

    part = _shard(shard, ray)
    if ann:
        from .usages.ann import faiss_module

        faiss_module()  # before the work: a missing extra is said now
    chosen = [w for w in words.split(",") if w.strip()] if words else None
    if words and not chosen:
        raise typer.BadParameter("name one or more words, comma-separated", param_hint="--words")
    settings = {
        "model": _bilm_source(model),
        "corpus": str(corpus.resolve()),
        "words": chosen,
        "lemmas": lemmas,
        "layer": layer,
        "lang": lang,
        "docs_per_batch": docs_per_batch,
    }
    if ray is not None:
        from .distributed import run_index_usages

        run_index_usages(ray, settings, output, workers=workers, quiet=quiet)
    else:
        from .pipeline.loading import load_elmo_pipeline
        from .usages.builder import build_from_settings

        _threads(threads)
        build_from_settings(load_elmo_pipeline(model, lang), settings, output, part, progress=not quiet, log=_say(quiet))
    if ann:
        from .usages.ann_build import build_ann

        build_ann(output, log=_say(quiet))


@command("merge")
def merge_cli(
    output: Path = typer.Argument(..., help="The merged output: an index folder, or a .hdf5 / .spacy file"),
    parts: List[Path] = typer.Argument(
        ..., help="Every part: the outputs of index-usages or embed with --shard 0/N ... N-1/N", exists=True
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it is a file that exists"),
    quiet: bool = quiet_option(),
) -> None:
    """Join the N parts that `index-usages` or `embed` wrote with --shard I/N into the output one
    run over the whole corpus writes (the same usages, sentences and vectors, bit for bit, in
    corpus order). Parts made with different pipelines, biLMs, layers or corpora, or a shard
    missing or given twice, are refused. Joining usage indexes loads the index's biLM once."""
    from .distributed.merge import merge_parts

    merge_parts(parts, output, overwrite=overwrite, log=_say(quiet))


@command("index-ann")
def index_ann_cli(
    index_path: Path = typer.Argument(..., metavar="INDEX", help="A folder written by spacy-elmo index-usages or merge", exists=True),
    lists: int = typer.Option(0, "--lists", help="Inverted lists (0: a power of two near 2 sqrt(usages), at most usages / 64)", min=0),
    code_bytes: int = typer.Option(0, "--code-bytes", help="Bytes per usage of the product-quantized codes (0: width / 8)", min=0),
    train_size: int = typer.Option(0, "--train-size", help="Usages to train on (0: 64 per list, at least 100,000)", min=0),
    quiet: bool = quiet_option(),
) -> None:
    """Build (or build again) the approximate search of a usage index with FAISS (pip install
    'spacy-elmo[ann]'): an IVF-PQ index beside the vectors, which `neighbours` and
    `UsageIndex.most_similar` then use for searches over more than 100,000 usages, scoring its
    candidates exactly. Without one, every search is exact."""
    from .usages.ann_build import build_ann

    build_ann(index_path, lists=lists, code_bytes=code_bytes, train_size=train_size, log=_say(quiet))


@command("neighbours")
def neighbours_cli(
    index_path: Path = typer.Argument(..., metavar="INDEX", help="A folder written by spacy-elmo index-usages", exists=True),
    sentence: str = typer.Argument(..., help="The sentence the word is used in"),
    word: str = typer.Option(..., "--word", "-w", help="The word of the sentence to look up (its first occurrence; case-insensitive)"),
    n: int = typer.Option(5, "--n", "-n", help="How many neighbours", min=1),
    model: Path = typer.Option(
        None,
        "--model",
        help="Embed the sentence with this pipeline (default: the one the index was built with); it must hold the same biLM",
    ),
    any_word: bool = typer.Option(False, "--any-word", help="Search the usages of every word, not only of WORD"),
    min_count: int = typer.Option(
        1, "--min-count", help="Context-free neighbours: only word types seen this often in the indexed sentences", min=1
    ),
    exact: bool = typer.Option(False, "--exact", help="Search exactly, also where the index has an approximate search"),
    threads: int = threads_option(),
) -> None:
    """The usages in INDEX nearest to WORD as used in SENTENCE (cosine of their ELMo vectors),
    and WORD's context-free neighbours (the biLM's token layer; static vectors where the pipeline
    has them): the paper's Table 4 on your corpus."""
    from .usages.index import UsageIndex
    from .usages.report import neighbours_table

    _threads(threads)
    index = UsageIndex().from_disk(index_path)
    if model is not None:
        index.use_model(model)
    doc = index.nlp(sentence)
    token = next((t for t in doc if t.lower_ == word.lower()), None)
    if token is None:
        raise typer.BadParameter(f"{word!r} is not a token of the sentence ({' '.join(t.text for t in doc)})", param_hint="--word")
    typer.echo(neighbours_table(index, token, n=n, same_word=not any_word, min_count=min_count, exact=exact))


@command("change")
def change_cli(
    index_a: Path = typer.Argument(
        ..., metavar="INDEX_A", help="Usage index of corpus A (spacy-elmo index-usages), e.g. the earlier period", exists=True
    ),
    index_b: Path = typer.Argument(
        ..., metavar="INDEX_B", help="Usage index of corpus B, built with the same MODEL, --layer and --lemmas", exists=True
    ),
    output: Path = typer.Argument(..., help="The table to write: .tsv, or .json"),
    words: Path = typer.Option(
        None, "--words", "-w", help="The target words, one a line (default: every word with --min-usages in both)", exists=True
    ),
    measure: List[str] = typer.Option(
        ["apd", "prt"], "--measure", "-m", help="apd and/or prt (repeat the option); the first orders the rows"
    ),
    min_usages: int = typer.Option(5, "--min-usages", help="Fewer usages in either index: listed with a note, never scored", min=1),
    standardize: bool = typer.Option(False, "--standardize", help="Subtract each index's mean usage vector first"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace OUTPUT if it exists"),
    quiet: bool = quiet_option(),
) -> None:
    """Which words changed meaning between two corpora: for each word, its usages in each index and how much
    they differ, APD (the mean cosine distance over all pairs of one usage from each, exact) and PRT (1 / cosine
    of the two mean usages), most changed first (Kutuzov & Giulianelli 2020; docs/senses.md)."""
    from .progress_bar import progress_bar
    from .usages.change import MEASURES, read_words, write_changes
    from .usages.index import UsageIndex

    bad = [m for m in measure if m not in MEASURES]
    if bad:
        raise typer.BadParameter(f"{', '.join(bad)}: use apd and/or prt", param_hint="--measure")
    if output.suffix not in (".tsv", ".json"):
        raise typer.BadParameter(f"{output.name}: write a .tsv or a .json file", param_hint="OUTPUT")
    check_output_file(output, overwrite)
    targets = read_words(words) if words is not None else None
    a, b = UsageIndex().from_disk(index_a), UsageIndex().from_disk(index_b)
    if targets is not None:
        absent = [w for w in targets if not len(a.rows_of(w)) and not len(b.rows_of(w))]
        if len(absent) == len(targets):
            raise InputError(f"none of the {len(targets)} words of {words} has a usage in either index (keys: {a.match})")

    def progress(items):  # type: ignore[no-untyped-def]
        return progress_bar(list(items), unit=" words", disable=True if quiet else None, leave=False)

    rows = a.change(b, targets, measure, min_usages=min_usages, standardize=standardize, progress=progress)
    settings = {"index_a": str(index_a), "index_b": str(index_b), "min_usages": min_usages, "standardize": standardize}
    write_changes(rows, output, measure, settings)
    scored = sum(1 for r in rows if r.scores)
    _say(quiet)(f"Wrote the change of {len(rows)} words to {output} ({scored} scored, {len(rows) - scored} with too few usages)")


@command("machine")
def machine_cli(
    model: str = typer.Option(
        None, "--measure", help="Also measure (or read) the fastest inference precision of this biLM: a folder or a released name"
    ),
) -> None:
    """What this machine's speed settings rest on: the CPU class, the cores and how many are busy with
    other work now, the threads a job would start with, and the measurements that precision 'auto'
    keeps (docs/speed.md)."""
    import datetime

    from .bilm.measured import MEASURE_ENV, cache_file, measuring_on, read_entries
    from .bilm.precision import cpu_class
    from .bilm.threads import busy_cores, default_threads, usable_cores

    typer.echo(f"CPU: {cpu_class().describe()}")
    threads, why = default_threads()
    typer.echo(f"cores: {usable_cores()} usable, {busy_cores()} busy with other work now; a job would start with {threads} thread(s)")
    if not measuring_on():
        typer.echo(f"measuring: off ({MEASURE_ENV}=0): 'auto' follows the CPU's flags")
    if model is not None:
        from .pipeline.loading import load_elmo_pipeline

        bilm = load_elmo_pipeline(model).get_pipe("elmo").bilm  # type: ignore[attr-defined]
        bilm.precision = "auto"
        typer.echo(f"{model}: precision 'auto' runs it in {bilm.precision}")
    entries = read_entries(cache_file(), say=typer.echo)
    typer.echo(f"measurements in {cache_file()}: {len(entries)}")
    for entry in sorted(entries.values(), key=lambda e: e.get("when", 0)):
        key = entry["key"]
        options = key.get("options", {})
        size = f"cell {options.get('cell_dim')}, projection {options.get('projection_dim')}, {options.get('n_layers')} layers"
        rates = ", ".join(f"{p} {1 / s:,.0f}" for p, s in sorted(entry["seconds"].items()))
        when = datetime.datetime.fromtimestamp(entry.get("when", 0)).strftime("%Y-%m-%d %H:%M")
        typer.echo(
            f"  {key.get('kind')} ({size}; {key.get('threads')} threads, torch {key.get('torch')}): {entry['choice']} "
            f"(tokens/s {rates}; measured {when} in {entry.get('cost_s', 0):.1f} s)"
        )


@command("inspect")
def inspect_cli(
    pipeline: Path = typer.Argument(..., help="A trained spaCy pipeline folder", exists=True),
    plot: Path = typer.Option(None, "--plot", help="Also draw the layer weights as a bar chart (PNG)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the --plot file if it exists"),
) -> None:
    """Print the precision each elmo component's biLM runs at on this machine, and, for each
    component that listens to ELMo, its learned layer weights softmax(w) and scale gamma (the
    paper's analysis of which biLM layers each task uses)."""
    import spacy

    from .bilm.precision import cpu_class
    from .layers.scalar_mix import mix_weights
    from .pipeline.loading import elmo_names, elmo_pipe

    if plot is not None:
        check_output_file(plot, overwrite)

    nlp = spacy.load(pipeline)
    for name in elmo_names(nlp):
        bilm = elmo_pipe(nlp, name).bilm
        typer.echo(f"{name}: the biLM runs in {bilm.precision} (precision = {bilm.precision_setting!r}) on {bilm.device.type}")
    typer.echo(f"CPU: {cpu_class().describe()}")
    rows = []
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for i, node in enumerate(n for n in model.walk() if n.name == "scalar_mix"):
            weights, gamma = mix_weights(node)
            label = name if i == 0 else f"{name}[{i}]"
            rows.append((label, [float(w) for w in weights], gamma))
    if not rows:
        typer.echo(f"No component of {pipeline} listens to ELMo.")
        raise typer.Exit(1)
    n_output_layers = len(rows[0][1])
    header = "component".ljust(16) + "".join(f"layer {j}".rjust(10) for j in range(n_output_layers)) + "gamma".rjust(10)
    typer.echo(header)
    for label, mix, gamma in rows:
        typer.echo(label.ljust(16) + "".join(f"{w:10.4f}" for w in mix) + f"{gamma:10.4f}")
    if plot is not None:
        _plot_mixes(rows, plot)
        typer.echo(f"Wrote {plot}")


def _plot_mixes(rows, path: Path) -> None:  # type: ignore[no-untyped-def]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise typer.BadParameter("--plot needs matplotlib: pip install 'spacy-elmo[plot]'") from err
    n_output_layers = len(rows[0][1])
    width = 0.8 / len(rows)
    fig, ax = plt.subplots(figsize=(1.5 + 1.2 * n_output_layers, 3.2))
    for k, (label, weights, gamma) in enumerate(rows):
        xs = [j + (k - (len(rows) - 1) / 2) * width for j in range(n_output_layers)]
        ax.bar(xs, weights, width=width, label=f"{label} (gamma {gamma:.2f})")
    ax.axhline(1 / n_output_layers, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(n_output_layers))
    ax.set_xticklabels(["token"] + [f"biLSTM {j}" for j in range(1, n_output_layers)])
    ax.set_ylabel("softmax(w)")
    ax.set_title("Learned ELMo layer weights")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
