"""A biLM's weights in a TensorFlow checkpoint, seen under their names in weights.hdf5.

Two naming layouts are in use. TF Hub modules (Google's `elmo`, DeepPavlov's) keep the inference graph's
names: `bilm/char_embed` (with a zero first row for padding), `bilm/CNN/W_cnn_0`, `bilm/CNN_high_0/W_carry`,
`bilm/CNN_proj/W_proj`, `bilm/RNN_0/RNN/MultiRNNCell/Cell0/rnn/lstm_cell/{kernel,bias,projection/kernel}`,
beside `aggregation/*` (the module's own scalar mix, not read). bilm-tf's training checkpoints keep the
training graph's: `lm/char_embed`, ..., `lm/RNN_0/rnn/multi_rnn_cell/cell_0/lstm_cell/kernel`, beside the
optimizer's slots, the softmax and `global_step` (not read). The renaming follows bilm-tf's own export
(`dump_weights`); what a weights.hdf5 would hold is all that is read.
"""

from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy

from ..errors import ElmoFormatError
from ..types import PathLike
from .options import ElmoOptions
from .tf_bundle import FLOAT32, TensorBundle

LAYOUT_PREFIXES = {"bilm/": "TF Hub module", "module/bilm/": "TF Hub module", "lm/": "bilm-tf training checkpoint"}
_TRAINING_RENAMES = (("/rnn/", "/RNN/"), ("/multi_rnn_cell/", "/MultiRNNCell/"), ("/cell_", "/Cell"), ("/lstm_cell/", "/LSTMCell/"))
_LEAVES = {"projection/kernel": "W_P_0", "kernel": "W_0", "bias": "B"}


def hdf5_name(tf_name: str) -> Optional[str]:
    """RETURNS (Optional[str]): the name `tf_name` has in a weights.hdf5, None for what a weights file lacks."""
    prefix = next((p for p in LAYOUT_PREFIXES if tf_name.startswith(p)), None)
    if prefix is None:
        return None
    name = tf_name[len(prefix) :]
    if not name.startswith("RNN_"):
        return name
    if prefix == "lm/":  # as bilm-tf's dump_weights renames a training checkpoint's names
        for tf_part, part in _TRAINING_RENAMES:
            name = name.replace(tf_part, part)
    else:  # a TF Hub module: the inference graph's RNN_d/RNN/MultiRNNCell/CellL scopes, then TF's own cell scope
        name = name.replace("/rnn/lstm_cell/", "/LSTMCell/")
    cell, _, leaf = name.partition("/LSTMCell/")
    return f"{cell}/LSTMCell/{_LEAVES[leaf]}" if leaf in _LEAVES else None


class CheckpointWeights:
    """The arrays of a checkpoint by their weights.hdf5 names: `in`, `shape(name)`, `read(name)`.

    prefix (PathLike): the checkpoint's prefix.
    """

    def __init__(self, prefix: PathLike) -> None:
        self.bundle = TensorBundle(prefix)
        self.tf_names: Dict[str, str] = {}
        for tf_name in self.bundle.names():
            name = hdf5_name(tf_name)
            if name is not None and self.bundle.entries[tf_name].dtype == FLOAT32:
                self.tf_names.setdefault(name, tf_name)
        layouts = {LAYOUT_PREFIXES[p] for p in LAYOUT_PREFIXES for n in self.tf_names.values() if n.startswith(p)}
        self.layout = " + ".join(sorted(layouts)) or "no known layout"

    def __contains__(self, name: str) -> bool:
        return name in self.tf_names

    def label(self, name: str) -> str:
        """RETURNS (str): how the checkpoint names `name`."""
        return self.tf_names.get(name, name)

    def shape(self, name: str) -> Tuple[int, ...]:
        shape = self.bundle.entries[self.tf_names[name]].shape
        return (shape[0] - 1, *shape[1:]) if name == "char_embed" and shape[:1] == (262,) else shape

    def read(self, name: str) -> numpy.ndarray:
        array = self.bundle.read(self.tf_names[name])
        return array[1:] if name == "char_embed" and array.shape[0] == 262 else array


def is_checkpoint_prefix(path: PathLike) -> bool:
    """RETURNS (bool): whether `path` names a checkpoint (its `.index` exists) rather than a file."""
    return Path(f"{path}.index").is_file() and not Path(path).is_file()


# what no tensor shows, as every released ELMo (AllenNLP's, bilm-tf's defaults) sets it
RELEASED_SETTINGS: Dict[str, object] = {
    "cell_clip": 3.0,
    "proj_clip": 3.0,
    "use_skip_connections": True,
    "activation": "relu",
    "max_characters_per_token": 50,
}


def options_from_shapes(prefix: PathLike) -> ElmoOptions:
    """The options of the biLM in a checkpoint that comes without an options.json (a TF Hub module):
    every size read off the tensors' shapes, the rest (clipping, skip connections, characters per token,
    activation) as every released ELMo sets them (`RELEASED_SETTINGS`).

    RETURNS (ElmoOptions): the options, with n_characters 262 (inference).
    """
    weights = CheckpointWeights(prefix)

    def shape(name: str) -> Tuple[int, ...]:
        if name not in weights:
            raise ElmoFormatError(f"The checkpoint {prefix} ({weights.layout}) has no '{name}': its options cannot be read off it")
        return weights.shape(name)

    filters: List[Tuple[int, int]] = []
    while f"CNN/W_cnn_{len(filters)}" in weights:
        _, width, _, n = shape(f"CNN/W_cnn_{len(filters)}")
        filters.append((width, n))
    n_highway = 0
    while f"CNN_high_{n_highway}/W_carry" in weights:
        n_highway += 1
    n_layers = 0
    while f"RNN_0/RNN/MultiRNNCell/Cell{n_layers}/LSTMCell/W_P_0" in weights:
        n_layers += 1
    cell = "RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell" if n_layers else "RNN_0/RNN/LSTMCell"
    cell_dim, projection_dim = shape(f"{cell}/W_P_0")
    return ElmoOptions(
        cell_dim=cell_dim,
        projection_dim=projection_dim,
        n_layers=max(n_layers, 1),
        char_embed_dim=shape("char_embed")[1],
        filters=tuple(filters),
        n_highway=n_highway,
        n_characters=262,
        **RELEASED_SETTINGS,  # type: ignore[arg-type]
    )
