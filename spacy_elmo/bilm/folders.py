"""Recognising a biLM folder, in every format this package reads: the one place that decides.

- "allennlp": options.json + weights.hdf5 (or lm_weights.hdf5, model.hdf5): AllenNLP / bilm-tf, NLPL's ELMo
  models, and what `spacy-elmo pretrain` writes.
- "tensorflow": options.json + a TensorFlow checkpoint (a TF Hub module's variables/, or a bilm-tf training
  run's model.ckpt-N), read without TensorFlow (`tf_bundle.py`, `tf_checkpoint.py`).
- "elmoformanylangs": config.json + char.dic (+ word.dic) + token_embedder.pkl + encoder.pkl.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..errors import InputError
from ..types import PathLike
from . import elmoformanylangs
from .model import BiLM
from .options import ElmoOptions
from .tf_bundle import checkpoint_prefix
from .weights import find_weights_file, load_original, read_weights


def not_a_bilm_folder(path: PathLike, why: str = "") -> InputError:
    """RETURNS (InputError): the one error for a path that is no biLM folder (`why` adds what was seen)."""
    return InputError(
        f"{path} is not a biLM folder{f' ({why})' if why else ''}: give a folder with options.json + weights.hdf5 "
        "(AllenNLP, bilm-tf, NLPL, spacy-elmo pretrain) or with config.json + char.dic + token_embedder.pkl + "
        "encoder.pkl (ELMoForManyLangs), or a released model's name (spacy-elmo models lists them)."
    )


@dataclass(frozen=True)
class BilmFolder:
    """A folder holding a biLM, and its format: "allennlp" (options.json + weights.hdf5), "tensorflow"
    (options.json + a TensorFlow checkpoint: a TF Hub module's variables or a bilm-tf training run) or
    "elmoformanylangs"."""

    path: Path
    format: str

    @property
    def options_file(self) -> Optional[Path]:
        """RETURNS (Optional[Path]): options.json of an AllenNLP-format or TensorFlow folder, else None."""
        return self.path / "options.json" if self.format in ("allennlp", "tensorflow") else None

    @property
    def weights_file(self) -> Optional[Path]:
        """RETURNS (Optional[Path]): the weights.hdf5 of an AllenNLP-format folder, else None."""
        return find_weights_file(self.path) if self.format == "allennlp" else None

    def options(self) -> ElmoOptions:
        """RETURNS (ElmoOptions): the biLM's hyperparameters (the weights are not read)."""
        if self.options_file is not None:
            return ElmoOptions.from_file(self.options_file)
        return elmoformanylangs.read_folder(self.path)[0]

    @property
    def weights(self) -> Optional[Path]:
        """RETURNS (Optional[Path]): what `load_original` takes as weights: the weights.hdf5, or the
        TensorFlow checkpoint's prefix; None for ELMoForManyLangs."""
        return self.weights_file if self.format == "allennlp" else checkpoint_prefix(self.path) if self.format == "tensorflow" else None

    def load(self, cache_size: Optional[int] = None) -> BiLM:
        """RETURNS (BiLM): the biLM with its weights, in eval mode, on the CPU."""
        if self.options_file is not None:
            weights = self.weights
            assert weights is not None
            return (
                load_original(self.options_file, weights)
                if cache_size is None
                else load_original(self.options_file, weights, cache_size=cache_size)
            )
        return elmoformanylangs.load_elmoformanylangs(self.path, cache_size)

    def read_into(self, bilm: BiLM) -> None:
        """Copy the folder's weights (and vocabulary) into `bilm`, whose options must match."""
        if self.format == "elmoformanylangs":
            elmoformanylangs.read_weights(bilm, self.path)  # reads the folder once, options checked there
            return
        self.options().check_matches(
            bilm.options,
            f"The biLM in {self.path} differs from the model config (folder vs config)",
            "Build the config from that folder (spacy-elmo init-config --bilm FOLDER, spacy-elmo fill-config, or "
            "spacy_elmo.add_elmo(nlp, FOLDER)).",
        )
        weights = self.weights
        assert weights is not None
        read_weights(bilm, weights)


def find_bilm_folder(path: PathLike) -> Optional[BilmFolder]:
    """RETURNS (Optional[BilmFolder]): the biLM folder at `path`, None if it holds none."""
    path = Path(path)
    if not path.is_dir():
        return None
    if (path / "options.json").is_file() and find_weights_file(path) is not None:
        return BilmFolder(path, "allennlp")
    if (path / "options.json").is_file() and checkpoint_prefix(path) is not None:
        return BilmFolder(path, "tensorflow")
    if elmoformanylangs.is_elmoformanylangs_folder(path):
        return BilmFolder(path, "elmoformanylangs")
    return None


def bilm_folder(path: PathLike) -> BilmFolder:
    """RETURNS (BilmFolder): the biLM folder at `path`; an InputError naming what it lacks if none."""
    found = find_bilm_folder(path)
    if found is not None:
        return found
    path = Path(path)
    if not path.exists():
        raise not_a_bilm_folder(path, "it does not exist")
    if not path.is_dir():
        raise not_a_bilm_folder(path, "it is a file")
    if (path / "options.json").is_file():
        raise not_a_bilm_folder(path, "options.json without weights.hdf5 or a TensorFlow checkpoint")
    if checkpoint_prefix(path) is not None:
        raise not_a_bilm_folder(
            path,
            "a TensorFlow checkpoint without options.json: a released model's comes with `spacy-elmo download NAME`; "
            "otherwise write the biLM's options.json beside it",
        )
    if (path / "config.json").is_file() and not (path / "config.cfg").is_file():
        missing = [n for n in elmoformanylangs.MARKER_FILES if not (path / n).is_file()]
        raise not_a_bilm_folder(path, f"config.json without {', '.join(missing)}")
    models = [name for name in ("model-best", "model-last") if find_bilm_folder(path / name) is not None]
    if models:
        raise not_a_bilm_folder(path, f"a pretraining run: its biLM is {path / models[0]}")
    raise not_a_bilm_folder(path)
