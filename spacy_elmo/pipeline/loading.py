"""Opening what a user names as MODEL: a spaCy pipeline folder with an `elmo` component, or a
biLM (a folder in any format this package reads, or a released model's name), wrapped in a blank
pipeline."""

from pathlib import Path
from typing import List, Union

from spacy.language import Language

from ..errors import InputError
from .component import Elmo


def elmo_names(nlp: Language) -> List[str]:
    """RETURNS (List[str]): the names of the pipeline's elmo components, in pipeline order."""
    return [name for name, pipe in nlp.pipeline if isinstance(pipe, Elmo)]


def elmo_pipe(nlp: Language, name: str) -> Elmo:
    """RETURNS (Elmo): the pipeline's elmo component `name`; an InputError where it is another kind."""
    pipe = nlp.get_pipe(name)
    if not isinstance(pipe, Elmo):
        raise InputError(f"the pipeline's component {name!r} is not an elmo component (those: {', '.join(elmo_names(nlp)) or 'none'})")
    return pipe


def load_elmo_pipeline(
    model: Union[str, Path], lang: str = "en", sentences: bool = True, dtype: str = "float32", precision: str = "fp32"
) -> Language:
    """Load `model`: a pipeline folder (config.cfg) with an `elmo` component, or a biLM (a folder
    with options.json + weights.hdf5 or an ELMoForManyLangs model, or a released model's name),
    which gets a blank `lang` pipeline with a sentencizer (where `sentences`) and an elmo component
    storing `dtype` layers.

    precision (str): the precision of every elmo component (fp32, bf16, int8).
    RETURNS (Language): the pipeline.
    """
    import spacy

    from ..released import resolve_bilm
    from .component import add_elmo

    if Path(model).is_dir() and (Path(model) / "config.cfg").is_file():
        model = Path(model)
        components = spacy.util.load_config(model / "config.cfg", interpolate=False).get("components", {})
        names = [name for name, block in components.items() if block.get("factory") == "elmo"]
        if not names:
            raise InputError(
                f"{model} is a spaCy pipeline without an 'elmo' component: add one (spacy_elmo.add_elmo) or give another MODEL"
            )
        return spacy.load(model, config={"components": {name: {"precision": precision} for name in names}})
    folder = resolve_bilm(model)  # a spaCy pipeline folder has config.cfg: the error says what else works
    nlp = spacy.blank(lang)
    if sentences:
        nlp.add_pipe("sentencizer")
    add_elmo(nlp, folder.path, config={"dtype": dtype, "precision": precision})
    return nlp
