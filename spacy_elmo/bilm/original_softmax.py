"""The softmax a released ELMo was trained with, as AllenNLP published it beside the original biLM: an HDF5 file
with the datasets `softmax/W` (words x P) and `softmax/b` (words), and the vocabulary, one word a line in the
order of W's rows (most frequent first), which the biLM's forward and backward language models predict over.

Read into a `SharedSoftmax` ("full"), optionally cut to the `max_words` most frequent words (the first rows):
the original's 793,471 words take 1.6 GB in float32, and the likeliest substitutes are frequent words.
"""

from pathlib import Path
from typing import List, Optional, Tuple

import numpy
import torch

from ..errors import InputError
from ..types import PathLike
from .language_model import SharedSoftmax

SOFTMAX_FILES = ("softmax_weights.hdf5", "vocab.txt")


def _vocabulary(folder: Path) -> List[str]:
    try:
        text = (folder / "vocab.txt").read_text(encoding="utf8")
    except FileNotFoundError:
        raise InputError(f"{folder} has no vocab.txt: a softmax comes with its vocabulary, one word a line") from None
    except UnicodeDecodeError:
        raise InputError(f"{folder / 'vocab.txt'} is not UTF-8 text: give the vocabulary published with the softmax") from None
    return text.splitlines()


def read_softmax_shapes(folder: PathLike) -> Tuple[int, int]:
    """Check that `folder`'s softmax_weights.hdf5 and vocab.txt belong together.

    RETURNS (Tuple[int, int]): the number of words and the width P of the states it reads.
    """
    import h5py

    folder = Path(folder)
    words = _vocabulary(folder)
    try:
        with h5py.File(folder / "softmax_weights.hdf5", "r") as f:
            group = f.get("softmax")
            weight, bias = (group.get("W"), group.get("b")) if isinstance(group, h5py.Group) else (None, None)
            if not isinstance(weight, h5py.Dataset) or not isinstance(bias, h5py.Dataset) or weight.ndim != 2:
                raise InputError(f"{folder / 'softmax_weights.hdf5'} has no datasets softmax/W (words x P) and softmax/b")
            n, dim = (int(x) for x in weight.shape)
            if tuple(bias.shape) != (n,):
                raise InputError(f"{folder / 'softmax_weights.hdf5'}: softmax/b holds {bias.shape}, softmax/W {n} words")
    except OSError as err:
        raise InputError(f"{folder / 'softmax_weights.hdf5'} is not a readable HDF5 file ({err})") from None
    if len(words) != n:
        raise InputError(
            f"{folder / 'vocab.txt'} has {len(words):,} words and the softmax {n:,}: they do not belong together (use the vocabulary "
            "published with the softmax)"
        )
    return n, dim


def check_softmax(folder: PathLike, projection_dim: Optional[int] = None) -> Tuple[int, int]:
    """Every check a use of the softmax in `folder` makes, so that a download says "checked" only of one its use
    takes: datasets and vocabulary that belong together (`read_softmax_shapes`), no word twice in the vocabulary,
    every value finite (read in blocks of rows), and, where given, the width of the biLM's states.

    RETURNS (Tuple[int, int]): the number of words and the width.
    """
    import h5py

    folder = Path(folder)
    n, dim = read_softmax_shapes(folder)
    if projection_dim is not None and dim != projection_dim:
        raise InputError(f"{folder}'s softmax reads states {dim} wide, the biLM's are {projection_dim}: it is another biLM's softmax")
    words = _vocabulary(folder)
    if len(set(words)) != len(words):
        seen: set = set()
        twice = next(w for w in words if w in seen or seen.add(w))  # type: ignore[func-returns-value]
        raise InputError(f"{folder / 'vocab.txt'} holds {twice!r} twice: a softmax's vocabulary names each row's word once")
    with h5py.File(folder / "softmax_weights.hdf5", "r") as f:
        weight, bias = f["softmax"]["W"], f["softmax"]["b"]
        finite = bool(numpy.isfinite(numpy.asarray(bias[:], dtype=numpy.float32)).all())
        for start in range(0, n, 65536):
            finite = finite and bool(numpy.isfinite(numpy.asarray(weight[start : start + 65536], dtype=numpy.float32)).all())
    if not finite:
        raise InputError(f"{folder / 'softmax_weights.hdf5'} holds values that are not finite: download it again")
    return n, dim


def load_original_softmax(folder: PathLike, projection_dim: int, max_words: Optional[int] = None) -> Tuple[SharedSoftmax, List[str]]:
    """The softmax and vocabulary in `folder`, its first `max_words` rows (the most frequent words) where given.

    projection_dim (int): the width of the biLM's states it must read (its options' projection_dim).
    RETURNS (Tuple[SharedSoftmax, List[str]]): the softmax ("full") and its words, in row order.
    """
    import h5py

    folder = Path(folder)
    n, dim = check_softmax(folder, projection_dim)
    keep = n if max_words is None else max(1, min(int(max_words), n))
    with h5py.File(folder / "softmax_weights.hdf5", "r") as f:
        weight = numpy.asarray(f["softmax"]["W"][:keep], dtype=numpy.float32)
        bias = numpy.asarray(f["softmax"]["b"][:keep], dtype=numpy.float32)
    softmax = SharedSoftmax(dim, keep, "full")
    with torch.no_grad():
        softmax.linear.weight.copy_(torch.from_numpy(weight))
        softmax.linear.bias.copy_(torch.from_numpy(bias))
    return softmax.eval(), _vocabulary(folder)[:keep]
