"""Checkpoints (to resume) and model folders (to use), both written atomically.

A model folder holds the biLM in the original format (options.json + weights.hdf5), usable by
the `elmo` component and by other ELMo tools, plus what training needs to go on: vocab.txt and
softmax.pt (+ softmax.json). Files are only ever read with `torch.load(weights_only=True)`.
"""

import errno
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

import srsly
import torch

from ..bilm import BiLM, save_original
from ..bilm.folders import bilm_folder
from ..bilm.language_model import SharedSoftmax
from ..errors import InputError
from ..output_folders import MARKER, SCRATCH_SUFFIX, fresh_folder_beside, kind_of, mark, read_json_file
from ..types import PathLike
from .vocab import Vocabulary

CHECKPOINT_NAME = "checkpoint.pt"


def rng_state() -> Dict[str, Any]:
    """The random state that training depends on: torch's (dropout); batches are shuffled by
    seeds derived from the corpus position, not by a global generator. On CUDA, dropout draws from
    the current device's generator, which is kept too."""
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state()
    return state


def set_rng_state(state: Dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def save_checkpoint(folder: PathLike, state: Dict[str, Any]) -> Path:
    """Write `state` to folder/checkpoint.pt through a temporary file and an atomic rename, so
    a kill at any moment leaves either the previous checkpoint or the new one."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / CHECKPOINT_NAME
    tmp = folder / (CHECKPOINT_NAME + ".tmp")
    with _writing(tmp):
        with tmp.open("wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


@contextmanager
def _writing(path: Path) -> Iterator[None]:
    """Remove a partly written `path` when writing fails; a full disk comes out as an OSError
    ENOSPC naming `path` (torch reports it as an internal RuntimeError)."""
    try:
        yield
    except BaseException as err:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if isinstance(err, (OSError, RuntimeError)) and _disk_full(err, path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path)) from err
        raise


def _disk_full(err: BaseException, path: Path) -> bool:
    chain: Optional[BaseException] = err
    while chain is not None:
        if isinstance(chain, OSError) and chain.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        chain = chain.__cause__ or chain.__context__
    if isinstance(err, RuntimeError) and ("file write failed" in str(err) or "inline_container" in str(err)):
        try:
            return shutil.disk_usage(path.parent).free < 64 << 20
        except OSError:
            return False
    return False


def _torch_load(path: Path, fix: str) -> Any:
    """torch.load(weights_only=True) of a file this package wrote; a damaged one is an InputError
    naming it (an empty file would otherwise end the command line on a bare "Aborted.")."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except PermissionError:
        raise
    except Exception as err:  # EOFError, unpickling errors, a refused class: never load it
        first = str(err).splitlines()[0] if str(err) else "empty or truncated"
        raise InputError(f"{path} is damaged or was not written by spacy-elmo ({type(err).__name__}: {first}): {fix}") from None


def load_checkpoint(folder: PathLike) -> Optional[Dict[str, Any]]:
    """The state saved by `save_checkpoint`, or None where there is none."""
    path = Path(folder) / CHECKPOINT_NAME
    if not path.is_file():
        return None
    state = _torch_load(path, "remove it to start over, or resume from a copy of the run")
    missing = [k for k in ("model", "optimizer", "scheduler", "rng", "step", "position") if not isinstance(state, dict) or k not in state]
    if missing:
        raise InputError(f"{path} is not a checkpoint of spacy-elmo pretrain (no {', '.join(missing)}): remove it, or use --overwrite")
    _check_counts(path, state)
    if not all(bool(torch.isfinite(t).all()) for t in _tensors([state["model"], state["optimizer"]]) if t.is_floating_point()):
        raise InputError(
            f"{path} holds NaN or infinite values: the file is damaged (or training diverged); "
            "resume from a copy of the run, or --overwrite"
        )
    return state


def _check_counts(path: Path, state: Dict[str, Any]) -> None:
    """Refuse, in one line, a checkpoint whose step or corpus position is no count (a step of -5 resumed "at step -5"
    and trained 11 steps; a position of a string ended in a TypeError): the file was edited or is damaged."""

    def count(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0

    positions = [state["position"]] + [r.get("position") for r in state.get("ranks") or [] if isinstance(r, dict)]
    bad = [] if count(state["step"]) else [f"step {state['step']!r}"]
    for position in positions:
        if not isinstance(position, dict) or not all(count(v) for v in position.values()):
            bad.append(f"position {position!r}")
    if bad:
        raise InputError(
            f"{path} records {'; '.join(bad[:2])}, not counts of 0 or more: the file was edited or is damaged. Resume from a "
            "copy of the run, or start it anew with --overwrite"
        )


def _tensors(tree: Any) -> Iterator[torch.Tensor]:
    if isinstance(tree, torch.Tensor):
        yield tree
    elif isinstance(tree, dict):
        for value in tree.values():
            yield from _tensors(value)
    elif isinstance(tree, (list, tuple)):
        for value in tree:
            yield from _tensors(value)


_NEW_MODEL = "model-scratch"
_OLD_MODEL = "model-backup"


def save_model_dir(folder: PathLike, bilm: BiLM, vocab: Vocabulary, softmax: SharedSoftmax) -> None:
    """Write a model folder atomically: into a scratch folder of a fresh name (made by `tempfile`
    and marked, so no user's folder is ever taken for one), then renames; the former folder is
    set aside under another such name until the new one is in place (`recover_model_dirs` puts it
    back after a kill between the two renames)."""
    folder = Path(folder)
    tmp = fresh_folder_beside(folder)
    mark(tmp, _NEW_MODEL)
    with _writing(tmp):
        save_original(bilm, tmp / "options.json", tmp / "weights.hdf5")
        vocab.to_file(tmp / "vocab.txt")
        torch.save(softmax.state_dict(), tmp / "softmax.pt")
        srsly.write_json(tmp / "softmax.json", {**softmax_config(softmax), "vocab_sha256": vocab.digest()})
    (tmp / MARKER).unlink()
    old = None
    if folder.exists():
        old = fresh_folder_beside(folder)
        os.replace(folder, old)  # onto the empty folder of a fresh name
        mark(old, _OLD_MODEL)
    os.replace(tmp, folder)
    if old is not None:
        shutil.rmtree(old)


def recover_model_dirs(run: PathLike, names: Tuple[str, ...]) -> None:
    """After a kill while a model folder was replaced: put back a set-aside folder where `run/NAME`
    is missing, and remove the scratch folders spacy-elmo made and marked (nothing else)."""
    run = Path(run)
    for name in names:
        for path in sorted(run.glob(f".{name}.*{SCRATCH_SUFFIX}")):
            kind = kind_of(path) if path.is_dir() and not path.is_symlink() else None
            if kind == _OLD_MODEL and not (run / name).exists():
                (path / MARKER).unlink()
                os.replace(path, run / name)
            elif kind in (_OLD_MODEL, _NEW_MODEL):
                shutil.rmtree(path)


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
    found = bilm_folder(folder)
    if found.format != "allennlp":
        raise InputError(f"{folder} is an ELMoForManyLangs biLM: pretraining goes on from options.json + weights.hdf5 biLMs only")
    bilm = found.load()
    if not (folder / "vocab.txt").is_file() or not (folder / "softmax.pt").is_file():
        return bilm, None, None
    fix = "copy the model folder again, or take model-last / an earlier copy"
    vocab = Vocabulary.from_file(folder / "vocab.txt")
    config = read_json_file(folder / "softmax.json", fix)
    if not isinstance(config, dict) or not isinstance(config.get("n_words"), int) or config.get("kind") not in ("full", "adaptive"):
        raise InputError(f"{folder / 'softmax.json'} is damaged (needs 'kind' and 'n_words'): {fix}")
    if len(vocab) != config["n_words"]:
        raise InputError(
            f"{folder / 'vocab.txt'} has {len(vocab)} words, but the softmax was trained for {config['n_words']}: the vocabulary "
            f"does not belong to this softmax (edited, cut or swapped). Put back the vocab.txt written with it; {fix}"
        )
    if "vocab_sha256" in config and config["vocab_sha256"] != vocab.digest():
        raise InputError(
            f"{folder / 'vocab.txt'} is not the word list the softmax was trained with (its digest differs: a word "
            f"changed or moved). Put back the vocab.txt written with it; {fix}"
        )
    state = _torch_load(folder / "softmax.pt", fix)
    try:
        softmax = SharedSoftmax(
            bilm.options.projection_dim, config["n_words"], config["kind"], config.get("cutoffs", ()), config.get("div_value", 4.0)
        )
        softmax.load_state_dict(state)
    except (RuntimeError, ValueError, TypeError) as err:
        raise InputError(f"{folder / 'softmax.pt'} does not fit softmax.json ({str(err).splitlines()[0]}): {fix}") from None
    if not all(bool(torch.isfinite(p).all()) for p in softmax.parameters()):
        raise InputError(f"{folder / 'softmax.pt'} holds NaN or infinite values: {fix}")
    return bilm, vocab, softmax
