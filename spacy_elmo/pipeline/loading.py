"""Opening what a user names as MODEL: a spaCy pipeline folder with an `elmo` component, or a
folder with the original ELMo files (options.json + weights.hdf5), wrapped in a blank pipeline."""
from pathlib import Path
from typing import List, Union

from spacy.language import Language

from ..bilm.errors import InputError
from .component import Elmo


def elmo_names(nlp: Language) -> List[str]:
    """RETURNS (List[str]): the names of the pipeline's elmo components, in pipeline order."""
    return [name for name, pipe in nlp.pipeline if isinstance(pipe, Elmo)]


def load_elmo_pipeline(
    model: Union[str, Path], lang: str = "en", sentences: bool = True, dtype: str = "float32", precision: str = "fp32"
) -> Language:
    """Load `model`: a pipeline folder (config.cfg) with an `elmo` component, or a folder with
    options.json and weights.hdf5 (or lm_weights.hdf5), which gets a blank `lang` pipeline with a
    sentencizer (where `sentences`) and an elmo component storing `dtype` layers.

    precision (str): the precision of every elmo component (fp32, bf16, int8).
    RETURNS (Language): the pipeline.
    """
    import spacy

    from ..bilm import find_weights_file
    from .component import add_elmo

    model = Path(model)
    if not model.is_dir():
        raise InputError(f"{model} is not a folder: give a spaCy pipeline folder or a folder with options.json + weights.hdf5")
    if (model / "config.cfg").is_file():
        components = spacy.util.load_config(model / "config.cfg", interpolate=False).get("components", {})
        names = [name for name, block in components.items() if block.get("factory") == "elmo"]
        if not names:
            raise InputError(f"{model} is a spaCy pipeline without an 'elmo' component: add one (spacy_elmo.add_elmo) or give another MODEL")
        return spacy.load(model, config={"components": {name: {"precision": precision} for name in names}})
    weights = find_weights_file(model)
    if not (model / "options.json").is_file() or weights is None:
        raise InputError(f"{model} holds neither a spaCy pipeline (config.cfg) nor options.json + weights.hdf5")
    nlp = spacy.blank(lang)
    if sentences:
        nlp.add_pipe("sentencizer")
    add_elmo(nlp, model / "options.json", weights, config={"dtype": dtype, "precision": precision})
    return nlp
