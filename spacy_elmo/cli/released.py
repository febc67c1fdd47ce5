"""models, download, convert: the released biLMs and their formats (ONNX among them)."""

from pathlib import Path
from typing import Dict, List, Optional

import typer

from ..errors import InputError
from ..output_folders import check_output_file
from ._util import command

MODELS_WIDTH = 100  # `spacy-elmo models` fits a 100-column terminal
CONVERTED = ("options.json", "weights.hdf5")


@command("models")
def models_cli(
    cache: str = typer.Option(None, "--cache", help="The download cache (default: $SPACY_ELMO_CACHE, else ~/.cache/spacy-elmo)"),
) -> None:
    """List the released ELMo models that `spacy-elmo download NAME`, `--bilm NAME` and
    `add_elmo(nlp, NAME)` take, and which are in the cache."""
    import shutil

    width = max(MODELS_WIDTH, shutil.get_terminal_size((MODELS_WIDTH, 24)).columns)
    for line in models_table(cache, width):
        typer.echo(line)


def models_table(cache: Optional[str] = None, width: int = MODELS_WIDTH) -> List[str]:
    """The lines of `spacy-elmo models`: one row per released model (the last column cut to WIDTH), then
    what the columns and marks mean."""
    import textwrap

    from ..released import CATALOGUE, cache_dir
    from ..released.download import cache_state

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
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    room = width - sum(w + 2 for w in widths)
    lines = []
    for row in rows:
        last = row[-1] if len(row[-1]) <= room else row[-1][: max(0, room - 3)].rstrip() + "..."
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + last)
    lines.append("")
    footer = (
        f"Cache: {cache_dir(cache)}. cached: yes (complete and checked), partial (a download to resume), damaged "
        "(download it again with --force). Every use checks the files against the sha256 recorded at download; the "
        "download is checked against the sha256 its source publishes for the names marked *, else only by loading it, "
        "so the server or mirror is trusted for its content. efml: ELMoForManyLangs; +words: with its word embedding; tf: a "
        "TensorFlow checkpoint (read without TensorFlow); lemmas: trained on lemmas, so the pipeline feeds lemmas; ~: the "
        "entry assumes what no source states (below). Each entry's full training text, licence and sources: "
        "spacy_elmo/released/catalogue.py."
    )
    lines.append(textwrap.fill(footer, width, break_on_hyphens=False, break_long_words=False))
    assumptions: dict = {}
    for model in CATALOGUE.values():
        if model.assumed:
            assumptions.setdefault(model.assumed, []).append(model.name)
    for text, names in assumptions.items():
        lines.append(textwrap.fill(f"~ {', '.join(names)}: {text}.", width, subsequent_indent="  ", break_on_hyphens=False))
    return lines


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
    softmax: bool = typer.Option(
        False,
        "--softmax",
        help="Also the softmax published beside the biLM (original, original-5.5b: about 1.6 and 1.0 GB): its lexical "
        "substitutes, which name the senses of spacy-elmo change",
    ),
) -> None:
    """Download a released model into the cache (resuming an interrupted download), check it, and
    say where it is. Later uses (`--bilm NAME`, `add_elmo(nlp, NAME)`) read it from there offline."""
    from ..released import CATALOGUE, download
    from ..released.catalogue import released_softmax
    from ..released.download import download_softmax

    if softmax:
        released_softmax(name)  # one without a softmax is said before any download
    folder = download(name, cache, mirror, force=force)
    size = sum(p.stat().st_size for p in folder.path.iterdir() if p.is_file() and not p.name.startswith(".")) / 1e6
    typer.echo(f"{name}: {folder.path} ({folder.format} format, {size:.1f} MB), checked")
    stated = CATALOGUE[name].download
    if stated.endswith(" MB") and not stated.startswith("~") and abs(size - float(stated[:-3])) > 0.02 * float(stated[:-3]):
        typer.echo(
            f"Note: the catalogue gives {name} as {stated}, and this copy is {size:.1f} MB: it loaded and passed every check, "
            "but it is not the size of the published file (a mirror's own copy?)"
        )
    if softmax:
        found = download_softmax(name, cache, mirror, force=force)
        size = sum(p.stat().st_size for p in found.iterdir() if p.is_file() and not p.name.startswith(".")) / 1e6
        typer.echo(f"{name}'s softmax: {found} ({size:.1f} MB), checked; change names senses by its substitutes")


@command("convert")
def convert_cli(
    model: str = typer.Argument(
        ...,
        help="A biLM folder (TensorFlow checkpoint, ELMoForManyLangs, AllenNLP, spacy-elmo pretrain), a released model's name, "
        "or (for OUT.onnx) a spaCy pipeline folder with an elmo component",
    ),
    output: Path = typer.Argument(..., help="The folder to write options.json + weights.hdf5 into, or a file OUT.onnx"),
    int8: bool = typer.Option(False, "--int8", help="OUT.onnx only: int8 products (ONNX Runtime's dynamic quantization)"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace options.json and weights.hdf5 (or OUT.onnx) if they exist"),
    component: Optional[str] = typer.Option(
        None, "--component", help="OUT.onnx of a pipeline with several elmo components: the one whose biLM to export"
    ),
) -> None:
    """Write a biLM in the AllenNLP format (options.json + weights.hdf5, as bilm-tf's dump_weights writes
    them), for tools that read only that: a TF Hub module or a bilm-tf training checkpoint, for instance.
    `load_original` on the result gives the same layers. With OUTPUT ending in .onnx: one ONNX graph from
    char ids to every layer, run by ONNX Runtime without PyTorch (docs/onnx.md)."""
    if output.suffix.lower() == ".onnx":
        figures = convert_onnx(model, output, int8=int8, overwrite=overwrite, component=component)
        check = f"least cosine {figures['min_cosine']:.6f}" if int8 else f"largest difference {figures['max_abs']:.2g}"
        typer.echo(
            f"Wrote {output} ({'int8' if int8 else 'fp32'}, {figures['bytes'] / 2**20:.1f} MiB); "
            f"on a probe batch its layers match the PyTorch biLM's ({check})"
        )
        return
    if int8 or component is not None:
        option = "--int8" if int8 else "--component"
        raise InputError(f"{option} is for an .onnx output: give OUTPUT as a file name ending in .onnx")
    found = convert(model, output, overwrite=overwrite)
    typer.echo(f"Wrote {found.path} ({found.format}) as {output / 'options.json'} + {output / 'weights.hdf5'}")


def convert_onnx(
    model: str, output: Path, *, int8: bool = False, overwrite: bool = False, component: Optional[str] = None
) -> Dict[str, float]:
    """Write the biLM MODEL (a folder of any format read, a released name, or a pipeline folder with
    an elmo component: `component` names it where there are several) as the ONNX file OUTPUT.
    RETURNS (Dict[str, float]): `export_onnx`'s figures."""
    from ..bilm_onnx.export import export_onnx

    path = Path(model)
    if path.is_dir() and (path / "config.cfg").is_file():
        from ..pipeline.loading import elmo_names, load_elmo_pipeline

        nlp = load_elmo_pipeline(path)
        names = elmo_names(nlp)
        if component is not None and component not in names:
            raise InputError(f"{path} has no elmo component {component!r}: its elmo components are {', '.join(names)}")
        if component is None and len(names) > 1:
            raise InputError(
                f"{path} has {len(names)} elmo components ({', '.join(names)}): name the one to export, e.g. --component {names[0]}"
            )
        name = component or names[0]
        bilm = nlp.get_pipe(name).bilm  # type: ignore[attr-defined]
        source = f"the spaCy pipeline {path.name} (component {name})"
    elif component is not None:
        raise InputError(f"--component picks an elmo component of a spaCy pipeline folder, and {model} is not one")
    else:
        from ..released.download import resolve_bilm

        found = resolve_bilm(model)
        bilm = found.load(cache_size=0)
        source = f"{found.format} biLM {found.path.name}"
    return export_onnx(bilm, output, int8=int8, source=source, overwrite=overwrite)


def convert(model: str, output: Path, *, overwrite: bool = False):  # type: ignore[no-untyped-def]
    """Write the biLM MODEL (a folder of any format read, or a released name) as OUTPUT/options.json +
    weights.hdf5; OUTPUT is new, empty or holds only those. Returns what MODEL was found to be."""
    from ..bilm import save_original
    from ..output_folders import check_not_inside
    from ..released.download import resolve_bilm

    if output.exists() and not output.is_dir():
        raise InputError(f"{output} is a file: convert writes options.json + weights.hdf5 into a folder (or one file OUT.onnx)")
    found = resolve_bilm(model)
    check_not_inside(output, found.path, "the biLM folder")
    others = sorted(p.name for p in output.iterdir() if p.name not in CONVERTED) if output.is_dir() else []
    if others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise InputError(f"{output} holds other files ({shown}): convert writes into a new or empty folder, or one it wrote")
    for name in CONVERTED:
        check_output_file(output / name, overwrite)
    save_original(found.load(cache_size=0), output / "options.json", output / "weights.hdf5", overwrite=overwrite)
    return found
