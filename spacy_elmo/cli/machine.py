"""machine, inspect: what a run rests on, on this computer and in a trained pipeline."""

from pathlib import Path
from typing import Any, List, Optional, Tuple

import typer

from ..errors import InputError
from ..output_folders import check_output_file
from ._util import command

MixRow = Tuple[str, List[float], float]  # a listener's name, softmax(w), gamma


@command("machine")
def machine_cli(
    model: str = typer.Option(
        None, "--measure", help="Also measure (or read) the fastest inference precision of this biLM: a folder or a released name"
    ),
    again: bool = typer.Option(
        False, "--again", help="With --measure: measure anew and keep that answer in place of the kept one (nothing else replaces it)"
    ),
) -> None:
    """What this machine's speed settings rest on: the CPU class, the cores and how many are busy with
    other work now, the threads a job would start with, and the measurements that precision 'auto'
    keeps (docs/speed.md)."""
    if again and model is None:
        raise InputError("--again measures a biLM anew: give it with --measure MODEL (a folder or a released name)")
    machine_report(model, say=typer.echo, again=again)


def machine_report(model: Optional[str] = None, say: Any = print, again: bool = False) -> None:
    """Say, a line at a time, the CPU class, the cores (busy ones too), the threads a job starts with and
    the measurements kept for precision 'auto'; with MODEL, measure (or read) its precision first."""
    import datetime

    from ..bilm.measured import MEASURE_ENV, cache_file, measuring_on, read_entries
    from ..bilm.precision import cpu_class
    from ..bilm.threads import busy_cores, default_threads, usable_cores

    say(f"CPU: {cpu_class().describe()}")
    threads, why = default_threads()
    say(f"cores: {usable_cores()} usable, {busy_cores()} busy with other work now; a job would start with {threads} thread(s)")
    if not measuring_on():
        say(f"measuring: off ({MEASURE_ENV}=0): 'auto' follows the CPU's flags")
    if model is not None:
        from ..pipeline.loading import load_elmo_pipeline

        bilm = load_elmo_pipeline(model).get_pipe("elmo").bilm  # type: ignore[attr-defined]
        if again:
            bilm.measured_precision(again=True)
        bilm.precision = "auto"
        say(f"{model}: precision 'auto' runs it in {bilm.precision}")
    from ..bilm.packed_matmul import class_rule_library, onednn_available

    if onednn_available():
        say(
            f"training's products (pretraining on this CPU, float32): measured for each run's step and kept below "
            f"('training-products'; a resumed run keeps its own); without a measurement, {class_rule_library()} by the CPU class"
        )
    entries = read_entries(cache_file(), say=say)
    say(f"measurements in {cache_file()}: {len(entries)}")
    for entry in sorted(entries.values(), key=lambda e: e.get("when", 0)):
        key = entry["key"]
        options = key.get("options", {})
        size = f"cell {options.get('cell_dim')}, projection {options.get('projection_dim')}, {options.get('n_layers')} layers"
        rates = ", ".join(f"{p} {1 / s:,.0f}" for p, s in sorted(entry["seconds"].items()))
        when = datetime.datetime.fromtimestamp(entry.get("when", 0)).strftime("%Y-%m-%d %H:%M")
        say(
            f"  {key.get('kind')} ({size}; {key.get('threads')} threads, torch {key.get('torch')}): {entry['choice']} "
            f"(tokens/s {rates}; measured {when} in {entry.get('cost_s', 0):.1f} s"
            f"{'' if entry.get('quiet', True) else ', while other work ran'}{'; a toss-up' if entry.get('toss_up') else ''})"
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

    from ..bilm.precision import cpu_class
    from ..pipeline.loading import elmo_names, elmo_pipe

    if plot is not None:
        check_output_file(plot, overwrite)

    nlp = spacy.load(pipeline)
    for name in elmo_names(nlp):
        typer.echo(f"{name}: the layers are computed by {elmo_pipe(nlp, name).describe_runtime()}")
    typer.echo(f"CPU: {cpu_class().describe()}")
    rows = layer_weights(nlp)
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


def layer_weights(nlp: Any) -> List[MixRow]:
    """Each scalar mix of NLP's components: its component's name (name[i] for a second one), the learned
    layer weights softmax(w) and the scale gamma."""
    from ..layers.scalar_mix import mix_weights

    rows = []
    for name, pipe in nlp.pipeline:
        model = getattr(pipe, "model", None)
        if model is None or not hasattr(model, "walk"):
            continue
        for i, node in enumerate(n for n in model.walk() if n.name == "scalar_mix"):
            weights, gamma = mix_weights(node)
            label = name if i == 0 else f"{name}[{i}]"
            rows.append((label, [float(w) for w in weights], gamma))
    return rows


def _plot_mixes(rows: List[MixRow], path: Path) -> None:
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


@command("verify")
def verify_cli(
    path: Path = typer.Argument(..., help="A usage index folder, an .hdf5 file of embed or merge (virtual too), or a .spacy part"),
) -> None:
    """Check an output against the digests it carries: a usage index's files, an HDF5 file's datasets, a virtual
    merge's parts (where its folder says, their size and their datasets), a DocBin part. One line either way;
    exit 1 where something differs. The digests tell damage and moves apart from what was written, not deliberate
    changes with recomputed digests (docs/safety.md)."""
    from ..verify import verify

    typer.echo(verify(path))
