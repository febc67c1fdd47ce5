"""Checkpoints (to resume) and model folders (to use), both written atomically.

A model folder holds the biLM in the original format (options.json + weights.hdf5), usable by
the `elmo` component and by other ELMo tools, plus what training needs to go on: vocab.txt and
softmax.pt (+ softmax.json). Files are only ever read with `torch.load(weights_only=True)`.
"""
import os
import shutil
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import srsly
import torch

from ..bilm import BiLM, find_weights_file, load_original, save_original
from ..bilm.language_model import SharedSoftmax
from .vocab import Vocabulary

PathLike = Union[str, Path]
CHECKPOINT_NAME = "checkpoint.pt"


def rng_state() -> Dict[str, Any]:
    """The random state that training depends on: torch's (dropout); batches are shuffled by
    seeds derived from the corpus position, not by a global generator."""
    return {"torch": torch.get_rng_state()}


def set_rng_state(state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])


def save_checkpoint(folder: PathLike, state: Dict[str, Any]) -> Path:
    """Write `state` to folder/checkpoint.pt through a temporary file and an atomic rename, so
    a kill at any moment leaves either the previous checkpoint or the new one."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CHECKPOINT_NAME
    tmp = folder / (CHECKPOINT_NAME + ".tmp")
    with tmp.open("wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def load_checkpoint(folder: PathLike) -> Optional[Dict[str, Any]]:
    path = Path(folder) / CHECKPOINT_NAME
    if not path.is_file():
        return None
    return torch.load(path, map_location="cpu", weights_only=True)


def save_model_dir(folder: PathLike, bilm: BiLM, vocab: Vocabulary, softmax: SharedSoftmax) -> None:
    """Write a model folder atomically (a temporary folder, then a rename)."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    save_original(bilm, tmp / "options.json", tmp / "weights.hdf5")
    vocab.to_file(tmp / "vocab.txt")
    torch.save(softmax.state_dict(), tmp / "softmax.pt")
    srsly.write_json(tmp / "softmax.json", softmax_config(softmax))
    old = folder.with_name(folder.name + ".old")
    if folder.exists():
        if old.exists():
            shutil.rmtree(old)
        folder.rename(old)
    tmp.rename(folder)
    if old.exists():
        shutil.rmtree(old)


def softmax_config(softmax: SharedSoftmax) -> Dict[str, Any]:
    config: Dict[str, Any] = {"kind": softmax.kind, "n_words": softmax.n_words}
    if softmax.kind == "adaptive":
        config["cutoffs"] = list(softmax.adaptive.cutoffs[:-1])
        config["div_value"] = softmax.adaptive.div_value
    return config


def load_model_dir(folder: PathLike) -> Tuple[BiLM, Optional[Vocabulary], Optional[SharedSoftmax]]:
    """Load a model folder; vocab and softmax are None for an original-format folder without them
    (such as a released ELMo), which can still be fine-tuned with a new softmax."""
    folder = Path(folder)
    weights = find_weights_file(folder) or folder / "weights.hdf5"  # missing: load_original names it
    bilm = load_original(folder / "options.json", weights)
    if not (folder / "vocab.txt").is_file() or not (folder / "softmax.pt").is_file():
        return bilm, None, None
    vocab = Vocabulary.from_file(folder / "vocab.txt")
    config = srsly.read_json(folder / "softmax.json")
    softmax = SharedSoftmax(
        bilm.options.projection_dim, config["n_words"], config["kind"], config.get("cutoffs", ()), config.get("div_value", 4.0)
    )
    softmax.load_state_dict(torch.load(folder / "softmax.pt", map_location="cpu", weights_only=True))
    return bilm, vocab, softmax
