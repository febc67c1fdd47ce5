"""The `elmo` pipeline component."""
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union

import torch
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Config, Model, Optimizer
from thinc.types import Floats3d

from ..bilm import BiLM, ElmoFormatError, ElmoOptions
from ..layers.bilm_model import bilm_config, get_bilm, load_weights_into
from .elmo_data import DTYPES, ElmoData
from .extensions import register_extensions

DEFAULT_MODEL_CONFIG = """
[model]
@architectures = "spacy-elmo.BiLM.v1"
cell_dim = 1024
projection_dim = 128
n_layers = 2
cell_clip = 3.0
proj_clip = 3.0
use_skip_connections = true
char_embed_dim = 16
filters = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]
n_highway = 1
activation = "relu"
n_characters = 262
max_characters_per_token = 50
batch_size = 32
window_size = 128
cache_size = 50000
"""
DEFAULT_MODEL = Config().from_str(DEFAULT_MODEL_CONFIG)["model"]


def _one_thread_in_forked_child() -> None:
    torch.set_num_threads(1)


# A process forked after its parent ran multi-threaded (OpenMP) torch ops hangs on its first
# parallel op; this is what `nlp.pipe(n_process=...)` does on Linux. Worker processes share the
# cores anyway, so each gets one intra-op thread.
os.register_at_fork(after_in_child=_one_thread_in_forked_child)


@Language.factory(
    "elmo",
    assigns=["doc._.elmo"],
    default_config={"model": DEFAULT_MODEL, "dtype": "float32"},
)
def make_elmo(nlp: Language, name: str, model: Model[List[Doc], List[Floats3d]], dtype: str) -> "Elmo":
    """Create an `elmo` component: runs the biLM and sets `doc._.elmo`.

    model (Model[List[Doc], List[Floats3d]]): a `spacy-elmo.BiLM.v1` model.
    dtype (str): "float32" or "float16", the dtype of the stored layers.
    """
    return Elmo(nlp.vocab, model, name, dtype=dtype)


class Elmo(TrainablePipe):
    """Runs an ELMo biLM over each Doc and stores its layers as `doc._.elmo` (ElmoData)."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], List[Floats3d]],
        name: str = "elmo",
        *,
        dtype: str = "float32",
    ) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"[elmo] dtype must be one of {DTYPES}, got {dtype!r}")
        register_extensions()
        self.vocab = vocab
        self.model = model
        self.name = name
        self.cfg: Dict[str, Any] = {"dtype": dtype}

    @property
    def bilm(self) -> BiLM:
        """RETURNS (BiLM): the torch biLM inside the component."""
        return get_bilm(self.model)

    @property
    def options(self) -> ElmoOptions:
        return self.bilm.options

    def predict(self, docs: Iterable[Doc]) -> List[Floats3d]:
        """Run the biLM without gradients.

        RETURNS (List[Floats3d]): one (L + 1, n_tokens, 2P) array per Doc.
        """
        docs = list(docs)
        if not docs:
            return []
        return self.model.predict(docs)

    def set_annotations(self, docs: Iterable[Doc], layers: List[Floats3d]) -> None:
        dtype = self.cfg["dtype"]
        for doc, doc_layers in zip(docs, layers):
            doc._.elmo = ElmoData(self.model.ops.to_numpy(doc_layers).astype(dtype, copy=False))

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Annotate the predicted Docs of a training batch. The biLM stays as it is."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        docs = [eg.predicted for eg in examples]
        self.set_annotations(docs, self.predict(docs))
        return losses

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        options_file: Optional[Union[str, Path]] = None,
        weights_file: Optional[Union[str, Path]] = None,
    ) -> None:
        """Load original ELMo weights, if given; otherwise keep the current weights.

        options_file (Optional[Union[str, Path]]): options.json, checked against the model config.
        weights_file (Optional[Union[str, Path]]): weights.hdf5 in the original format.
        """
        if weights_file is not None:
            self.load_original(options_file, weights_file)
        elif options_file is not None:
            raise ValueError(
                "[elmo] initialize got an options_file but no weights_file. Add "
                "'weights_file' to [initialize.components.elmo]."
            )

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        with _explain_mismatch(self):
            return super().from_bytes(bytes_data, exclude=exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Elmo":
        with _explain_mismatch(self):
            return super().from_disk(path, exclude=exclude)

    def load_original(
        self, options_file: Optional[Union[str, Path]], weights_file: Union[str, Path]
    ) -> "Elmo":
        """Copy the weights of an original ELMo weights.hdf5 into the component; the
        options.json, if given (not None), must match the component's model config."""
        load_weights_into(self.model, options_file, weights_file)
        return self


@contextmanager
def _explain_mismatch(pipe: Elmo) -> Iterator[None]:
    """Thinc checks layer widths before the biLM's own check can name the setting."""
    try:
        yield
    except ValueError as err:
        if isinstance(err, ElmoFormatError) or "dimension" not in str(err):
            raise
        raise ElmoFormatError(
            f"[{pipe.name}] The saved biLM does not fit the model config ({err}). The settings in "
            f"[components.{pipe.name}.model] (projection_dim, cell_dim, n_layers, filters, ...) must be "
            "those of the saved model."
        ) from err


def add_elmo(
    nlp: Language,
    options_file: Union[str, Path],
    weights_file: Union[str, Path],
    *,
    name: str = "elmo",
    dtype: str = "float32",
    batch_size: int = 32,
    window_size: int = 128,
    cache_size: int = 50_000,
    **add_pipe_kwargs: Any,
) -> Elmo:
    """Add an `elmo` component built from the original ELMo files to `nlp`.

    >>> nlp = spacy.blank("en")
    >>> add_elmo(nlp, "options.json", "weights.hdf5")
    RETURNS (Elmo): the component, with the weights loaded.
    """
    options = ElmoOptions.from_file(options_file)
    model = bilm_config(options, batch_size=batch_size, window_size=window_size, cache_size=cache_size)
    elmo = nlp.add_pipe("elmo", name=name, config={"model": model, "dtype": dtype}, **add_pipe_kwargs)
    return elmo.load_original(options_file, weights_file)
