"""Writing a biLM as an .onnx file, checked against the PyTorch biLM before it is written."""

from pathlib import Path
from typing import Dict, List

import numpy
import torch

from ..bilm.model import BiLM
from ..errors import InputError
from ..output_folders import check_output_file, write_atomically
from ..types import PathLike
from .graph import build_graph
from .runtime import OnnxBiLM

# A probe of mixed lengths (padding inside the batch), odd Unicode and a token longer than W.
PROBE = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Zürich", "naïve", "東京", "☃", "x" * 80],
    ["Yes"],
]
_MAX_BYTES = 2**31 - 1  # protobuf's limit on one file


def export_onnx(bilm: BiLM, output: PathLike, *, int8: bool = False, source: str = "", overwrite: bool = False) -> Dict[str, float]:
    """Write `bilm` to `output` as one ONNX graph (graph.py), after running it with ONNX Runtime on
    a probe batch and comparing its layers with the PyTorch biLM's: a graph that disagrees is an
    error and nothing is written.

    int8 (bool): int8 products (see graph.py).
    source (str): what the biLM was loaded from, kept in the file's metadata.
    overwrite (bool): replace `output` if it exists (a link is replaced, never written through).
    RETURNS (Dict[str, float]): "bytes", and "max_abs" (the largest difference from PyTorch over the
        probe) and "min_cosine" (the least cosine of a token's vector to PyTorch's, over every layer).
    """
    output = Path(output)
    check_output_file(output, overwrite)
    if not output.parent.is_dir():
        raise InputError(f"{output.parent} is not a folder: make it first, or write the .onnx file elsewhere")
    data = build_graph(bilm, int8=int8, source=source).SerializeToString()
    if len(data) > _MAX_BYTES:
        raise InputError(f"this biLM is {len(data) / 2**30:.1f} GiB as ONNX, above the 2 GiB one .onnx file can hold")
    figures = compare(bilm, OnnxBiLM(data), PROBE)
    scale = max(1.0, figures["largest"])
    if int8 and figures["min_cosine"] < 0.99 or not int8 and figures["max_abs"] > 1e-5 * scale:
        raise InputError(
            f"the exported graph disagrees with the PyTorch biLM on a probe (largest difference {figures['max_abs']:.3g}, "
            f"least cosine {figures['min_cosine']:.6f}): nothing was written. Please report this with the biLM's options.json"
        )
    write_atomically(output, data, overwrite)
    return {"bytes": float(len(data)), **figures}


def compare(bilm: BiLM, exported: OnnxBiLM, sentences: List[List[str]]) -> Dict[str, float]:
    """RETURNS (Dict[str, float]): over `sentences` run as one batch by both: "max_abs" (largest
    difference), "min_cosine" (least cosine of a token's vector, every layer) and "largest" (the
    largest value of the PyTorch biLM's layers)."""
    with torch.no_grad():
        bilm.eval()
        ours = bilm(bilm.batch(sentences)).float().numpy()
    theirs = exported.run(**exported.batch(sentences))
    dot = (ours * theirs).sum(-1)
    norms = numpy.linalg.norm(ours, axis=-1) * numpy.linalg.norm(theirs, axis=-1)
    real = norms > 0
    cosine = float((dot[real] / norms[real]).min()) if real.any() else 1.0
    return {"max_abs": float(numpy.abs(ours - theirs).max()), "min_cosine": cosine, "largest": float(numpy.abs(ours).max())}
