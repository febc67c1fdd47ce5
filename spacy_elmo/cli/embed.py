"""embed: the ELMo layers of every document of a file, to HDF5 or a DocBin."""

from pathlib import Path
from typing import Any, Dict, Optional

import typer

from ..errors import InputError
from ..output_folders import check_output_file
from ._util import (
    bilm_source,
    command,
    parse_shard,
    quiet_option,
    ray_option,
    require_gpu,
    say,
    shard_option,
    threads_option,
    use_threads,
    workers_option,
)


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
    from ..bilm.precision import SETTINGS as PRECISIONS
    from ..pipeline.export import check_output

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
    if docs_per_batch < 1:
        raise typer.BadParameter(f"{docs_per_batch}: give 1 or more documents per batch", param_hint="--docs-per-batch")
    check_output_file(output, overwrite)
    part = parse_shard(shard, ray)
    if part is not None and not part.whole and output.suffix == ".spacy":
        from ..pipeline.export import shard_sidecar

        check_output_file(shard_sidecar(output), overwrite)  # the part's record beside it: the same rule, before any work
    require_gpu(gpu_id)
    settings = {
        "model": bilm_source(model),
        "input": str(input_path.resolve()),
        "layers": layers,
        "pretokenized": pretokenized,
        "lang": lang,
        "sentences": sentences,
        "dtype": dtype,
        "precision": precision,
        "docs_per_batch": docs_per_batch,
    }
    if ray is None:
        use_threads(threads)
    written = embed(settings, output, shard=part, ray=ray, workers=workers, quiet=quiet, overwrite=overwrite)
    if written is not None:
        say(quiet)(written)


def embed(
    settings: Dict[str, Any],
    output: Path,
    *,
    shard: Any = None,
    ray: Optional[str] = None,
    workers: int = 0,
    quiet: bool = False,
    overwrite: bool = True,
) -> Optional[str]:
    """Write the layers that SETTINGS ask for (embed's options by name: "model", "input", "layers", ...)
    to OUTPUT: shard SHARD of the input, or every shard on the Ray cluster RAY, merged. Returns what was
    written, in a line (None for a Ray run, which says it itself)."""
    if ray is not None:
        from ..distributed import run_embed

        run_embed(ray, settings, output, workers=workers, quiet=quiet)
        return None
    from ..pipeline.export import embed_to_file
    from ..pipeline.loading import load_elmo_pipeline
    from ..shards import Shard, balance_note

    part = shard if shard is not None else Shard.parse(None)
    sentences = settings["sentences"] and not settings["pretokenized"]
    nlp = load_elmo_pipeline(settings["model"], settings["lang"], sentences, settings["dtype"], settings["precision"])
    keep, n_docs, n_tokens = embed_to_file(nlp, settings, part, output, progress=not quiet, overwrite=overwrite)
    what = f"shard {part} ({n_docs} of the input's {keep.n_docs} documents)" if not part.whole else f"{n_docs} documents"
    note = balance_note(part, keep.chunk_docs, keep.n_docs)
    return f"Wrote the ELMo layers of {what} ({n_tokens} tokens) to {output}" + (f"\n{note}" if note else "")
