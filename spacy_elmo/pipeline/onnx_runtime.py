"""The `elmo` component's `runtime = "onnx"`: its biLM written as an ONNX graph in memory
(bilm_onnx/graph.py) and run by ONNX Runtime whenever the component predicts; training (and
fine-tuning) keeps the PyTorch biLM. The graph is made again whenever the weights have changed
since (loaded, initialized, fine-tuned): each parameter's in-place version counter says so."""

from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import torch
from spacy.tokens import Doc
from thinc.types import Floats3d

from ..layers.bilm_model import get_bilm, predict_with

if TYPE_CHECKING:
    from ..bilm_onnx.runtime import OnnxBiLM

RUNTIMES = ("torch", "onnx")
ONNX_PRECISIONS = ("fp32", "int8")


class OnnxRunner:
    """Runs a `spacy-elmo.BiLM` model's biLM through ONNX Runtime, at `precision` ("fp32" or "int8")."""

    def __init__(self, precision: str = "fp32") -> None:
        self.precision = precision
        self._session: Optional["OnnxBiLM"] = None
        self._made_from: Optional[Tuple[Any, ...]] = None

    def predict(self, model: Any, docs: List[Doc]) -> List[Floats3d]:
        """RETURNS (List[Floats3d]): what `model.predict(docs)` gives, computed by ONNX Runtime."""
        session = self.session(model)
        return predict_with(model, docs, lambda texts: session.run(**session.batch(texts)))

    def session(self, model: Any) -> "OnnxBiLM":
        """RETURNS (OnnxBiLM): the graph of the model's biLM as it is now (made again where its weights changed)."""
        bilm = get_bilm(model)
        made_from = (id(bilm), self.precision, *(p._version for p in bilm.parameters()), *(id(p) for p in bilm.parameters()))
        if self._session is None or made_from != self._made_from:
            from ..bilm_onnx.graph import build_graph
            from ..bilm_onnx.runtime import OnnxBiLM

            graph = build_graph(bilm, int8=self.precision == "int8", source="an elmo component")
            self._session = OnnxBiLM(graph.SerializeToString(), threads=torch.get_num_threads())
            self._made_from = made_from
        return self._session
