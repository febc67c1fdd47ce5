"""Point a training config at a biLM: its hyperparameters, widths and file paths."""
from pathlib import Path
from typing import Union

from thinc.api import Config

from ..bilm import ElmoFormatError, ElmoOptions, find_weights_file
from ..layers.bilm_model import bilm_config

RUNTIME_SETTINGS = ("batch_size", "window_size", "cache_size", "punct_sentences")


def fill_elmo_config(config: Config, model_dir: Union[str, Path]) -> Config:
    """Set every `elmo` component of a training config to the biLM in `model_dir`.

    The biLM block takes the hyperparameters of `model_dir/options.json` (its batch_size,
    window_size, cache_size and punct_sentences stay), `[variables] elmo_width / elmo_layers` (read by the
    listeners) follow them, and `[paths] elmo_options / elmo_weights` name the files.

    config (Config): a training config with at least one `elmo` component, not interpolated.
    model_dir (Union[str, Path]): a folder with options.json and weights.hdf5.
    RETURNS (Config): a new config.
    """
    model_dir = Path(model_dir)
    options_file = model_dir / "options.json"
    weights_file = find_weights_file(model_dir)
    if not options_file.is_file() or weights_file is None:
        raise ElmoFormatError(f"{model_dir} needs options.json and weights.hdf5 (a biLM written by `spacy-elmo pretrain`, or the original files)")
    options = ElmoOptions.from_file(options_file)
    config = config.copy()
    names = [name for name, block in config.get("components", {}).items() if block.get("factory") == "elmo"]
    if not names:
        raise ValueError("The config has no component with factory = \"elmo\": start from configs/ner_elmo.cfg or configs/textcat_elmo.cfg")
    for name in names:
        old = config["components"][name].get("model", {})
        runtime = {key: old[key] for key in RUNTIME_SETTINGS if key in old}
        config["components"][name]["model"] = bilm_config(options, **runtime)
    if "variables" in config:
        if "elmo_width" in config["variables"]:
            config["variables"]["elmo_width"] = 2 * options.projection_dim
        if "elmo_layers" in config["variables"]:
            config["variables"]["elmo_layers"] = options.n_layers + 1
    config.setdefault("paths", {})
    config["paths"]["elmo_options"] = str(options_file)
    config["paths"]["elmo_weights"] = str(weights_file)
    return config
