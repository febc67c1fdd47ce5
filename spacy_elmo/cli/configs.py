"""init-config, fill-config: training configs that use a biLM."""

from pathlib import Path
from typing import Optional

import typer

from ..output_folders import check_output_file
from ._util import bilm_source, check_not_an_input, command


@command("init-config")
def init_config_cli(
    output: Path = typer.Argument(..., help="Where to write the config"),
    pipeline: str = typer.Option("ner", "--pipeline", "-p", help="The task: ner, textcat, textcat_multilabel, tagger or parser"),
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
        "(its [pretraining] block included; then --paths.init_tok2vec); ner, textcat and textcat_multilabel",
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
    from ..configs import task_config
    from ..configs.editing import ELMO_PLACES
    from ..output_folders import write_atomically

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
    check_not_an_input(output, [p for p in (bilm, vectors) if p is not None])
    check_output_file(output, overwrite)
    variant = "baseline" if baseline else "spacy_pretrain" if spacy_pretrain else "elmo"
    try:
        task_config(pipeline, variant)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--pipeline")
    text = init_config(pipeline, variant, bilm=bilm, elmo_at=elmo_at, vectors=vectors, lang=lang)
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


def init_config(
    pipeline: str,
    variant: str = "elmo",
    *,
    bilm: Optional[str] = None,
    elmo_at: str = "input",
    vectors: Optional[Path] = None,
    lang: str = "en",
) -> str:
    """The text of a training config for PIPELINE (ner, textcat, textcat_multilabel, tagger, parser): with ELMo joining the
    encoder at ELMO_AT ("elmo"), its baseline ("baseline") or the baseline with a `spacy pretrain` tok2vec
    ("spacy_pretrain"); BILM (a folder or a released name) filled in where given."""
    from ..configs import task_text
    from ..configs.editing import fill_config_text, place_elmo_text, set_values, use_static_vectors

    text = task_text(pipeline, variant)
    if variant == "elmo":
        text = place_elmo_text(text, elmo_at)
    if bilm is not None:
        text = fill_config_text(text, bilm_source(bilm))
    if vectors is not None:
        text = use_static_vectors(text, vectors.resolve())
    return set_values(text, "nlp", {"lang": lang})


def _pipeline_lang(lang: Optional[str], bilm: Optional[str]) -> str:
    """The language of a config's pipeline: --lang, else a released biLM's own, else English."""
    import spacy

    from ..released.catalogue import CATALOGUE

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
    from ..configs import PRETRAIN_PRESETS, pretrain_config
    from ..configs.editing import fill_config_text
    from ..output_folders import write_atomically

    path = pretrain_config(config_path) if config_path in PRETRAIN_PRESETS else Path(config_path)
    if not path.is_file():
        raise typer.BadParameter(
            f"{config_path}: no such file, nor a pretraining preset ({', '.join(PRETRAIN_PRESETS)})", param_hint="CONFIG_PATH"
        )
    check_output_file(output, overwrite)
    text = fill_config_text(path.read_text(encoding="utf8"), bilm_source(model))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(output, text)
    typer.echo(f"Wrote {output} for the biLM in {model}")
