"""What every command shares: the typer app, how errors are said, the shared options.

Bad input ends a command with one line on stderr naming the file and what to do (exit status 1), not a
traceback. No command replaces a file or folder it did not make: `--overwrite` says that you mean it
(folders: see output_folders.py).
"""

import errno
import functools
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, List, Optional, TypeVar

import typer
import typer.core

try:
    from typer import _click  # typer >= 0.24 carries its own click
except ImportError:  # pragma: no cover
    import click as _click  # type: ignore[no-redef]

from ..errors import InputError


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


_PACKAGE = str(Path(__file__).resolve().parent.parent)


def _one_line_for_the_package(default: Callable[..., str]) -> Callable[..., str]:
    """`warnings.formatwarning` that says the package's own warnings in one line ("UserWarning: ..."), without the
    file, line number and source line Python adds (the docs promise one line); other libraries' keep their form."""

    def formatwarning(message: Any, category: Any, filename: str, lineno: int, line: Optional[str] = None) -> str:
        if str(Path(filename).resolve()).startswith(_PACKAGE):
            return f"{category.__name__}: {message}\n"
        return default(message, category, filename, lineno, line)

    formatwarning.spacy_elmo_one_line = True  # type: ignore[attr-defined]
    return default if getattr(default, "spacy_elmo_one_line", False) else formatwarning


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
        warnings.formatwarning = _one_line_for_the_package(warnings.formatwarning)
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
        "between two corpora; verify checks an output against its digests); machine shows what threads and "
        "precision 'auto' rest on here."
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
                fail(err)
            except OSError as err:
                if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES):
                    fail(err)
                raise

        app.command(name, cls=_Command, **settings)(run)
        return run  # type: ignore[return-value]

    return decorate


def fail(err: BaseException) -> None:
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
        help="torch threads, at most 1,024 (0: the cores not busy with other work, followed while the job runs; docs/speed.md)",
        min=0,
        max=1024,
    )


def use_threads(threads: int) -> None:
    """--threads N fixes the number; 0 takes the cores not busy now and follows the machine (logged at INFO,
    logger "spacy_elmo": stderr stays for errors and warnings)."""
    import logging

    from ..bilm.threads import fix_threads, start_job

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
    return typer.Option(
        0, "--workers", help="With --ray: Ray actors, each loading the pipeline once (0: one per CPU of the cluster; at most that)", min=0
    )


def parse_shard(text: Optional[str], ray: Optional[str]) -> Any:
    from ..shards import Shard

    if text and ray is not None:
        raise typer.BadParameter("--ray runs every shard and merges them: give --shard or --ray, not both", param_hint="--shard")
    if ray is not None and not ray.strip():
        raise typer.BadParameter("give 'auto' or a cluster's address (host:port, ray://host:port)", param_hint="--ray")
    try:
        return Shard.parse(text)
    except InputError as error:
        raise typer.BadParameter(str(error), param_hint="--shard")


def say(quiet: bool) -> Callable[[str], None]:
    return (lambda line: None) if quiet else typer.echo


def bilm_source(value: str) -> str:
    """A biLM named on the command line: an existing path (made absolute), else a released model's name."""
    return str(Path(value).resolve()) if Path(value).exists() else value


def check_not_an_input(output: Path, inputs: List[Any]) -> None:
    """Refuse an output file inside an input folder (a biLM's, the vectors'): an input is never
    an output, with --overwrite or not."""
    from ..released import cache_dir

    out = output.resolve()
    folders = [Path(p).resolve() for p in inputs if Path(p).exists()]
    if any(isinstance(p, str) and not Path(p).exists() for p in inputs):
        folders.append(cache_dir().resolve())  # a released model's name: its files are in the download cache
    for folder in folders:
        if out == folder or folder in out.parents:
            raise InputError(f"{output} is inside {folder}, which this command reads: write the config somewhere else")


def require_gpu(gpu_id: int) -> None:
    if gpu_id >= 0:
        import spacy

        try:
            spacy.require_gpu(gpu_id)
        except ValueError as error:
            raise typer.BadParameter(f"{error} (CUDA device {gpu_id} through cupy); --gpu-id -1 runs on the CPU", param_hint="--gpu-id")
