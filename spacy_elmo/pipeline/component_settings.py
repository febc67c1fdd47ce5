"""The `elmo` component's settings: the factory's arguments other than the model, with their
defaults and checks in one place. The component keeps them as one `ElmoSettings`; what depends
on them (the biLM's batch size, token cache and precision, the layer cache, the replace-listener
hook) is derived from it in one method, `Elmo._apply_settings`."""

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Union

from ..bilm import DEFAULT_CACHE_SIZE
from ..layers.bilm_model import DEFAULT_BATCH_SIZE
from .elmo_data import DTYPES
from .onnx_runtime import ONNX_PRECISIONS, RUNTIMES


INPUTS = ("text", "lemma")


@dataclass(frozen=True)
class ElmoSettings:
    """dtype (str): "float32" or "float16", the dtype of the layers stored on the Doc.
    frozen (bool): keep the biLM fixed during training (as in the paper); False fine-tunes it
        with the gradients of every listening component.
    lr_scale (float): fine-tuned, the biLM's learning rate relative to the optimizer's; a
        pretrained biLM usually wants a smaller one than the task's (e.g. 0.01).
    batch_size (int): sequences per biLM batch (sorted by length to keep padding low).
    token_cache_size (int): word vectors the token layer keeps at inference; 0 disables.
    cache_mb (float): with a frozen biLM, keep up to this many MB of computed Doc layers once
        training has started, so that later epochs and evaluations do not run the biLM again;
        0 disables. A pipeline that only predicts never fills it.
    cache_dtype (str): "float16" halves the cache's memory (values rounded to float16).
    vectors (Optional[Union[str, List[float]]]): make token.vector, span.vector, doc.vector and
        .similarity come from ELMo: "top" (the top layer), "average" (of the L + 1 layers) or one
        weight per layer; null leaves spaCy's vectors alone.
    precision (str): "fp32" (the default: the original computation, the same numbers on every
        machine); "bf16": the biLM's large matrix products in bfloat16 at inference on CPUs with
        bfloat16 units (float32 sums and layers); "int8": in int8 with float32 results; "auto": the
        fastest of these that runs on this machine (see `BiLM.precision`). Training updates are
        unaffected.
    input (str): what the biLM reads of each token: "text" (its text, as every biLM trained on
        running text) or "lemma" (its lemma, for a biLM trained on lemmatized text: the pipeline
        must set lemmas before the elmo component).
    runtime (str): what computes the layers when the component predicts: "torch" (the PyTorch
        biLM) or "onnx" (the same biLM written as an ONNX graph and run by ONNX Runtime, at
        precision "fp32" or "int8"; needs `pip install spacy-elmo[onnx]`; docs/onnx.md). Training
        runs the PyTorch biLM either way.
    """

    dtype: str = "float32"
    frozen: bool = True
    lr_scale: float = 1.0
    batch_size: int = DEFAULT_BATCH_SIZE
    token_cache_size: int = DEFAULT_CACHE_SIZE
    cache_mb: float = 2048
    cache_dtype: str = "float16"
    vectors: Optional[Union[str, List[float]]] = None
    precision: str = "fp32"
    input: str = "text"
    runtime: str = "torch"

    def check(self, name: str) -> None:
        """Raise a ValueError naming the component and the setting where one is out of range
        (`vectors` and `precision` are checked where they are used: they need the biLM)."""
        if self.dtype not in DTYPES:
            raise ValueError(f"[{name}] dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.cache_dtype not in DTYPES:
            raise ValueError(f"[{name}] cache_dtype must be one of {DTYPES}, got {self.cache_dtype!r}")
        if self.batch_size < 1:
            raise ValueError(f"[{name}] batch_size must be >= 1, got {self.batch_size}")
        if self.input not in INPUTS:
            raise ValueError(f"[{name}] input must be one of {INPUTS}, got {self.input!r}")
        if self.runtime not in RUNTIMES:
            raise ValueError(f"[{name}] runtime must be one of {RUNTIMES}, got {self.runtime!r}")
        if self.runtime == "onnx" and self.precision not in ONNX_PRECISIONS:
            raise ValueError(
                f'[{name}] runtime = "onnx" runs at precision {" or ".join(map(repr, ONNX_PRECISIONS))}, got {self.precision!r}: '
                'set one of those, or runtime = "torch"'
            )
        if self.lr_scale <= 0:
            raise ValueError(f"[{name}] lr_scale must be positive, got {self.lr_scale}; frozen = true keeps the biLM fixed")

    def to_config(self) -> Dict[str, Any]:
        """RETURNS (Dict[str, Any]): the settings as the factory's config takes them."""
        return asdict(self)
