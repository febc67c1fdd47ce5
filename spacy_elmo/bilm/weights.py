"""Reading and writing the original ELMo files (options.json + weights.hdf5, TF layout), and reading
the same arrays from a TensorFlow checkpoint (`tf_checkpoint.py`).

Every dataset of the file is described once, in `_datasets`, with how it maps onto the torch
parameters in both directions, so the loader and the writer cannot drift apart.
"""

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Tuple

import h5py
import numpy
import torch

from ..errors import ElmoFormatError
from ..output_folders import temporary_path
from ..types import PathLike
from .char_encoder import DEFAULT_CACHE_SIZE, conv_bias
from .model import BiLM
from .options import ElmoOptions
from .tf_checkpoint import CheckpointWeights, is_checkpoint_prefix

# Internal gate order [i, f, o, j]: block k holds the original block _TO_INTERNAL[k] ([i, j, f, o]).
_TO_INTERNAL = [0, 2, 3, 1]
_TO_ORIGINAL = [0, 3, 1, 2]


@dataclass
class _Dataset:
    path: str
    shape: Tuple[int, ...]
    read: Callable[[numpy.ndarray], None]  # copies the file's array into the model
    write: Callable[[], numpy.ndarray]  # the model's values in the file's layout


def _param_setter(param: torch.Tensor, convert: Callable[[numpy.ndarray], numpy.ndarray]) -> Callable[[numpy.ndarray], None]:
    def read(array: numpy.ndarray) -> None:
        with torch.no_grad():
            param.copy_(torch.from_numpy(numpy.ascontiguousarray(convert(array))))

    return read


def _param_getter(param: torch.Tensor, convert: Callable[[numpy.ndarray], numpy.ndarray]) -> Callable[[], numpy.ndarray]:
    return lambda: numpy.ascontiguousarray(convert(param.detach().float().cpu().numpy()))


def _reorder_gates(array: numpy.ndarray, order: List[int]) -> numpy.ndarray:
    blocks = numpy.split(array, 4, axis=-1)
    return numpy.concatenate([blocks[k] for k in order], axis=-1)


def _lstm_prefix(direction: int, layer: int, single_layer_alias: bool) -> str:
    if single_layer_alias:
        return f"RNN_{direction}/RNN/LSTMCell"
    return f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"


def _datasets(bilm: BiLM, single_layer_alias: bool = False) -> List[_Dataset]:
    opts = bilm.options
    if opts.char_vocab != "utf8":
        raise ElmoFormatError(
            "A biLM with a learned character vocabulary (ELMoForManyLangs) has no options.json + weights.hdf5 form: "
            "that format reads UTF-8 bytes. Keep it in its own folder, or in a spaCy pipeline (nlp.to_disk)."
        )
    enc = bilm.char_encoder
    E, F, P, C = opts.char_embed_dim, opts.n_filters, opts.projection_dim, opts.cell_dim
    out: List[_Dataset] = []

    def embed_read(array: numpy.ndarray) -> None:
        with torch.no_grad():
            enc.char_embed[0].zero_()
            enc.char_embed[1:].copy_(torch.from_numpy(array))

    out.append(_Dataset("char_embed", (261, E), embed_read, lambda: enc.char_embed[1:].detach().cpu().numpy()))
    for i, ((width, n), conv) in enumerate(zip(opts.filters, enc.conv_layers)):
        # TF conv2d (1, width, E, n) <-> torch Conv1d (n, E, width); no kernel flip.
        out.append(
            _Dataset(
                f"CNN/W_cnn_{i}",
                (1, width, E, n),
                _param_setter(conv.weight, lambda a: a[0].transpose(2, 1, 0)),
                _param_getter(conv.weight, lambda a: a.transpose(2, 1, 0)[None]),
            )
        )
        bias = conv_bias(conv)
        out.append(_Dataset(f"CNN/b_cnn_{i}", (n,), _param_setter(bias, lambda a: a), _param_getter(bias, lambda a: a)))
    for k, highway in enumerate(enc.highway_layers):
        for j, name in enumerate(("carry", "transform")):
            cols = slice(j * F, (j + 1) * F)
            out.append(
                _Dataset(
                    f"CNN_high_{k}/W_{name}",
                    (F, F),
                    _param_setter(highway.weight[:, cols], lambda a: a),
                    _param_getter(highway.weight[:, cols], lambda a: a),
                )
            )
            out.append(
                _Dataset(
                    f"CNN_high_{k}/b_{name}",
                    (F,),
                    _param_setter(highway.bias[cols], lambda a: a),
                    _param_getter(highway.bias[cols], lambda a: a),
                )
            )
    if enc.projection is not None:
        out.append(
            _Dataset(
                "CNN_proj/W_proj",
                (F, P),
                _param_setter(enc.projection.weight, lambda a: a.T),
                _param_getter(enc.projection.weight, lambda a: a.T),
            )
        )
        out.append(
            _Dataset(
                "CNN_proj/b_proj", (P,), _param_setter(enc.projection.bias, lambda a: a), _param_getter(enc.projection.bias, lambda a: a)
            )
        )
    for depth, layer in enumerate(bilm.lstm_layers):
        for d in range(2):
            prefix = _lstm_prefix(d, depth, single_layer_alias)
            out.append(_Dataset(f"{prefix}/W_0", (P + P, 4 * C), *_lstm_kernel(layer, d)))
            out.append(
                _Dataset(
                    f"{prefix}/B",
                    (4 * C,),
                    _param_setter(layer.bias[d], lambda a: _reorder_gates(a, _TO_INTERNAL)),
                    _param_getter(layer.bias[d], lambda a: _reorder_gates(a, _TO_ORIGINAL)),
                )
            )
            if layer.proj_weight is not None:
                out.append(
                    _Dataset(
                        f"{prefix}/W_P_0",
                        (C, P),
                        _param_setter(layer.proj_weight[d], lambda a: a),
                        _param_getter(layer.proj_weight[d], lambda a: a),
                    )
                )
    return out


def _lstm_kernel(layer, d: int) -> Tuple[Callable[[numpy.ndarray], None], Callable[[], numpy.ndarray]]:  # type: ignore[no-untyped-def]
    """W_0 stacks the input rows, then the recurrent rows, gates [i, j, f, o]."""
    n_in = layer.input_dim

    def read(array: numpy.ndarray) -> None:
        internal = _reorder_gates(array, _TO_INTERNAL)
        with torch.no_grad():
            layer.input_weight[d].copy_(torch.from_numpy(numpy.ascontiguousarray(internal[:n_in])))
            layer.hidden_weight[d].copy_(torch.from_numpy(numpy.ascontiguousarray(internal[n_in:])))

    def write() -> numpy.ndarray:
        stacked = torch.cat([layer.input_weight[d], layer.hidden_weight[d]], dim=0)
        return _reorder_gates(stacked.detach().float().cpu().numpy(), _TO_ORIGINAL)

    return read, write


# weights.hdf5; lm_weights.hdf5 in AllenNLP's fixtures; model.hdf5 in the NLPL repository's ELMo archives
WEIGHTS_NAMES = ("weights.hdf5", "lm_weights.hdf5", "model.hdf5")


def find_weights_file(folder: PathLike) -> Optional[Path]:
    """RETURNS (Optional[Path]): the weights file of a model folder (weights.hdf5, or the
    lm_weights.hdf5 of AllenNLP's fixtures, or the model.hdf5 of NLPL's archives, else the folder's
    only .hdf5 file, as EMBEDDIA's slovenian-elmo-weights.hdf5), or None."""
    named = next((Path(folder) / n for n in WEIGHTS_NAMES if (Path(folder) / n).is_file()), None)
    if named is not None:
        return named
    others = [p for p in Path(folder).glob("*.hdf5") if p.is_file()] if Path(folder).is_dir() else []
    return others[0] if len(others) == 1 else None


def load_original(options_file: PathLike, weights_file: PathLike, cache_size: int = DEFAULT_CACHE_SIZE) -> BiLM:
    """Load a biLM from the original ELMo files.

    options_file (PathLike): the options.json.
    weights_file (PathLike): the weights.hdf5 (TF layout, as written by bilm-tf).
    cache_size (int): see `BiLM`.
    RETURNS (BiLM): the model in eval mode, on the CPU.
    """
    options = ElmoOptions.from_file(options_file)
    check_weights_fit(options, weights_file)  # before the model's memory is allocated
    bilm = BiLM(options, cache_size=cache_size)
    read_weights(bilm, weights_file)
    return bilm.eval()


def check_weights_fit(options: ElmoOptions, weights_file: PathLike) -> None:
    """Check that every dataset the options call for is in the weights file with its shape,
    without allocating the model (it is laid out on torch's "meta" device) or reading the data."""
    with torch.device("meta"):
        shell = BiLM(options, cache_size=0)
    for _ in _file_datasets(shell, weights_file, read=False):
        pass


class _Hdf5Weights:
    """The datasets of an open weights.hdf5, in the shape `_file_datasets` reads every source."""

    def __init__(self, f: h5py.File) -> None:
        self.f = f

    def __contains__(self, name: str) -> bool:
        return name in self.f and isinstance(self.f[name], h5py.Dataset)

    def label(self, name: str) -> str:
        return name

    def shape(self, name: str) -> Tuple[int, ...]:
        return tuple(self.f[name].shape)

    def read(self, name: str) -> numpy.ndarray:
        return numpy.asarray(self.f[name][()], dtype=numpy.float32)


@contextmanager
def _open_weights(path: Path) -> Iterator[Tuple[Any, str]]:
    """The arrays at `path`, a weights.hdf5 or a TensorFlow checkpoint's prefix, and what to call them."""
    if is_checkpoint_prefix(path):
        yield CheckpointWeights(path), f"TensorFlow checkpoint {path}"
        return
    if not path.is_file():
        raise ElmoFormatError(f"ELMo weights file not found: {path}")
    with h5py.File(path, "r") as f:
        yield _Hdf5Weights(f), f"ELMo weights file {path}"


def _file_datasets(bilm: BiLM, weights_file: PathLike, read: bool) -> Iterator[Tuple[_Dataset, Optional[numpy.ndarray]]]:
    """Every dataset the biLM's options call for, checked for presence and shape, with its
    float32 values if `read` (checked to be finite); a missing, unreadable or mismatched file is
    an ElmoFormatError naming it. `weights_file` is a weights.hdf5 or a TensorFlow checkpoint's prefix."""
    path = Path(weights_file)
    try:
        with _open_weights(path) as (source, what):
            alias = bilm.options.n_layers == 1 and "RNN_0/RNN/LSTMCell/W_0" in source
            for ds in _datasets(bilm, single_layer_alias=alias):
                if ds.path not in source:
                    raise ElmoFormatError(
                        f"{what} has no dataset '{source.label(ds.path)}'. Check that the "
                        "options file belongs to these weights (n_layers, filters, n_highway, "
                        "projection_dim)."
                    )
                if source.shape(ds.path) != ds.shape:
                    raise ElmoFormatError(
                        f"{what}: dataset '{source.label(ds.path)}' has shape {source.shape(ds.path)}, but "
                        f"the options ask for {ds.shape}. The options file does not match these weights."
                    )
                array = source.read(ds.path) if read else None
                if array is not None and not numpy.isfinite(array).all():
                    raise ElmoFormatError(f"{what}: dataset '{source.label(ds.path)}' holds NaN or infinite values.")
                yield ds, array
    except ElmoFormatError:
        raise
    except (OSError, KeyError, ValueError, RuntimeError) as err:  # h5py raises RuntimeError for damaged internals
        raise ElmoFormatError(
            f"Could not read ELMo weights file {path}: {err}. The file may be truncated or not an HDF5 file; download or export it again."
        ) from err


def read_weights(bilm: BiLM, weights_file: PathLike) -> None:
    """Copy the weights of an original weights.hdf5 into `bilm`, checking every shape."""
    for ds, array in _file_datasets(bilm, weights_file, read=True):
        assert array is not None  # read=True
        ds.read(array)
    bilm.clear_caches()


def save_original(bilm: BiLM, options_file: PathLike, weights_file: PathLike, overwrite: bool = True) -> None:
    """Write a biLM as the original ELMo files, the exact inverse of `load_original`.

    The file is written to a temporary name first and then moved, so an interrupted save never
    leaves a truncated weights file behind. Without `overwrite`, a file that exists at either name
    when it is published (one that appeared meanwhile included) is left as it is, and the save fails.
    """
    from ..output_folders import publish_file

    options_path, weights_path = Path(options_file), Path(weights_file)
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    options_path.parent.mkdir(parents=True, exist_ok=True)
    datasets = _datasets(bilm)  # refuses a biLM this format cannot hold, before anything is written
    tmp = temporary_path(weights_path)
    try:
        with h5py.File(tmp, "w") as f:
            for ds in datasets:
                array = ds.write().astype(numpy.float32)
                assert array.shape == ds.shape, (ds.path, array.shape, ds.shape)
                f.create_dataset(ds.path, data=array)
        publish_file(tmp, weights_path, overwrite)
    finally:
        tmp.unlink(missing_ok=True)
    bilm.options.to_file(options_path, overwrite)
