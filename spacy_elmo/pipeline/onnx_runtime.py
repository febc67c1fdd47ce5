"""The `elmo` component's `runtime = "onnx"`: its biLM written as an ONNX graph in memory
(bilm_onnx/graph.py) and run by ONNX Runtime whenever the component predicts; training (and
fine-tuning) keeps the PyTorch biLM. The graph is made again whenever the weights have changed
since (loaded, initialized, fine-tuned, written in place by any route): `weights_state` says so.

ONNX Runtime does not survive a fork while a session's threads exist: a forked process (what
`nlp.pipe(n_process=...)` starts on Linux) hung making its own session, 3 times in 3 here. So every
runner lets go of its session just before the process forks (`os.register_at_fork`; the parent
makes it again when it next predicts), each process makes its own, and a runner pickles without it."""

import os
import weakref
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import torch
from spacy.tokens import Doc
from thinc.types import Floats3d

from ..layers.bilm_model import get_bilm, predict_with

if TYPE_CHECKING:
    from ..bilm_onnx.runtime import OnnxBiLM

RUNTIMES = ("torch", "onnx")
ONNX_PRECISIONS = ("fp32", "int8")
_RUNNERS: "weakref.WeakSet[OnnxRunner]" = weakref.WeakSet()
_fork_hook_registered = False


def _forget_sessions_before_fork() -> None:
    for runner in list(_RUNNERS):
        runner.forget()


@torch.no_grad()
def weights_state(bilm: torch.nn.Module) -> Tuple[Any, ...]:
    """RETURNS: what changes with any change of the biLM's weights: each parameter's identity, its data's
    storage, and two sums of its values (float64). A version counter is not enough: an optimizer that assigns
    `param.data` (thinc's), writes through `.data` or a numpy view, or `vector_to_parameters` leave it as it was."""
    state: List[Any] = []
    for p in bilm.parameters():
        values = p.detach().double()
        state += [id(p), p.data_ptr(), float(values.sum()), float(values.square().sum())]
    return tuple(state)


class OnnxRunner:
    """Runs a `spacy-elmo.BiLM` model's biLM through ONNX Runtime, at `precision` ("fp32" or "int8")."""

    def __init__(self, precision: str = "fp32") -> None:
        global _fork_hook_registered
        self.precision = precision
        self._session: Optional["OnnxBiLM"] = None
        self._made_from: Optional[Tuple[Any, ...]] = None
        _RUNNERS.add(self)
        if not _fork_hook_registered and hasattr(os, "register_at_fork"):
            _fork_hook_registered = True
            os.register_at_fork(before=_forget_sessions_before_fork)

    def forget(self) -> None:
        """Let go of the session (and its threads); the next prediction makes it again."""
        self._session = self._made_from = None

    def predict(self, model: Any, docs: List[Doc]) -> List[Floats3d]:
        """RETURNS (List[Floats3d]): what `model.predict(docs)` gives, computed by ONNX Runtime."""
        session = self.session(model)
        return predict_with(model, docs, lambda texts: session.run(**session.batch(texts)))

    def session(self, model: Any) -> "OnnxBiLM":
        """RETURNS (OnnxBiLM): the graph of the model's biLM as it is now (made again where its weights changed)."""
        bilm = get_bilm(model)
        made_from = (os.getpid(), id(bilm), self.precision, weights_state(bilm))
        if self._session is None or made_from != self._made_from:
            from ..bilm_onnx.graph import build_graph
            from ..bilm_onnx.runtime import OnnxBiLM

            graph = build_graph(bilm, int8=self.precision == "int8", source="an elmo component")
            self._session = OnnxBiLM(graph.SerializeToString(), threads=torch.get_num_threads())
            self._made_from = made_from
        return self._session

    def __getstate__(self) -> Dict[str, Any]:
        return {"precision": self.precision, "_session": None, "_made_from": None}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["precision"])  # type: ignore[misc]
