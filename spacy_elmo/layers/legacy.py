"""The v1 architectures, kept so that configs and pipelines written with them load and compute
the same. New configs use the current ones: `spacy-elmo.BiLM.v2` (bilm_model.py),
`spacy-elmo.ElmoListener.v2` (listener.py) and `spacy-elmo.ElmoMix.v2` (replace_listener.py).

- `spacy-elmo.BiLM.v1`: the hyperparameters and the runtime settings (batch_size, window_size,
  cache_size, punct_sentences) in one block; v2 moves the segmentation into a `sequences` block
  and batch_size and cache_size to the component.
- `spacy-elmo.ElmoListener.v1`: the mix's settings inline, with `n_layers` = L + 1 and `width` = 2P
  given by hand; v2 takes a mix block and the biLM's own P and L.
- `spacy-elmo.ElmoMix.v1`: what `nlp.replace_listeners` puts in place of a v1 listener.
- `spacy-elmo.ScalarMix.v1` and `spacy-elmo.LayerSelect.v1`: v2 names the layer count
  `n_output_layers`.
- `spacy-elmo.ElmoTok2Vec.v1`: ELMo at the encoder's input only, its listener under the key `elmo`;
  v2 takes `input_elmo` and/or `output_elmo`.

The v1 settings keep their names (saved configs use them): here, and only here, `n_layers` is
L + 1, the biLM's output layers.
"""

from typing import Any, Dict, List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from ..bilm import BiLM, ElmoOptions
from .bilm_model import DEFAULT_BATCH_SIZE, ElmoModelT, frozen_layer, with_hyperparameters, wrap_bilm
from .listener import ElmoListener, build_elmo_tok2vec_v2, with_mix
from .replace_listener import add_listener_kind
from .scalar_mix import LayerSelect, ScalarMix
from .segments import configure_sentences


def build_bilm_model_v1(
    batch_size: int = DEFAULT_BATCH_SIZE,
    window_size: int = 128,
    cache_size: int = 50_000,
    punct_sentences: bool = False,
    **hyperparameters: Any,
) -> ElmoModelT:
    """`spacy-elmo.BiLM.v1`: the hyperparameters and the runtime settings in one block (v2 moves
    the segmentation into a `sequences` block, batch_size and cache_size to the component). Kept so
    that v1 configs and pipelines load; such a model keeps its own batch_size and cache_size.
    """
    model = wrap_bilm(
        BiLM(ElmoOptions.from_config(hyperparameters), cache_size=cache_size),
        configure_sentences(window_size, punct_sentences),
        batch_size=batch_size,
    )
    model.attrs["own_batching"] = True
    return model


registry.architectures("spacy-elmo.BiLM.v1")(with_hyperparameters(build_bilm_model_v1))


@registry.architectures("spacy-elmo.ElmoListener.v1")
def build_elmo_listener_v1(
    width: int,
    n_layers: int = 3,
    upstream: str = "*",
    layer_norm: bool = False,
    dropout: float = 0.0,
    l2: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """The task's own mix of the ELMo layers, one `width`-dimensional vector per token.

    width (int): 2 * projection_dim of the upstream biLM (256 for the released small model).
    n_layers (int): L + 1 (3 for every released model).
    upstream (str): the name of the elmo component, or "*" for any.
    layer_norm, dropout, l2: see `spacy-elmo.ScalarMix.v2`.
    """
    listener = ElmoListener(upstream, n_layers, width)
    model = with_mix(listener, ScalarMix(n_layers, width, layer_norm, dropout, l2))
    model.set_ref("listener", listener)
    return model


@registry.architectures("spacy-elmo.ElmoMix.v1")
def build_elmo_mix_v1(
    bilm: Model[List[Doc], List[Floats3d]],
    width: int,
    n_layers: int = 3,
    frozen: bool = True,
    layer_norm: bool = False,
    dropout: float = 0.0,
    l2: float = 0.0,
) -> Model[List[Doc], List[Floats2d]]:
    """A component's own copy of the biLM followed by its mix: what `nlp.replace_listeners`
    puts in place of an `ElmoListener.v1`, so the component no longer needs the elmo component.

    bilm (Model): a `spacy-elmo.BiLM.v1`.
    frozen (bool): run the biLM without gradients, as the elmo component's frozen setting does.
    """
    return with_mix(frozen_layer(bilm) if frozen else bilm, ScalarMix(n_layers, width, layer_norm, dropout, l2))


@registry.layers("spacy-elmo.ScalarMix.v1")
def build_scalar_mix_v1(
    n_layers: Optional[int] = None,
    width: Optional[int] = None,
    layer_norm: bool = False,
    dropout: float = 0.0,
    l2: float = 0.0,
    lr_scale: float = 1.0,
) -> Model[List[Floats3d], List[Floats2d]]:
    """`spacy-elmo.ScalarMix.v2` with its layer count named `n_layers` (L + 1)."""
    return ScalarMix(n_layers, width, layer_norm, dropout, l2, lr_scale)


@registry.layers("spacy-elmo.LayerSelect.v1")
def build_layer_select_v1(layer: int, n_layers: Optional[int] = None, width: Optional[int] = None) -> Model[List[Floats3d], List[Floats2d]]:
    """`spacy-elmo.LayerSelect.v2` with its layer count named `n_layers` (L + 1)."""
    return LayerSelect(layer, n_layers, width)


@registry.architectures("spacy-elmo.ElmoTok2Vec.v1")
def build_elmo_tok2vec_v1(
    elmo: Model[List[Doc], List[Floats2d]],
    embed: Model[List[Doc], List[Floats2d]],
    encode: Optional[Model[List[Floats2d], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """`spacy-elmo.ElmoTok2Vec.v2` with ELMo at the input only, its listener given as `elmo`."""
    return build_elmo_tok2vec_v2(embed, encode, input_elmo=elmo)


def _elmo_mix_v1_cfg(bilm_cfg: Dict[str, Any], listener_cfg: Dict[str, Any], frozen: bool) -> Dict[str, Any]:
    settings = {k: v for k, v in listener_cfg.items() if k not in ("@architectures", "upstream")}
    return {"@architectures": "spacy-elmo.ElmoMix.v1", "bilm": bilm_cfg, "frozen": frozen, **settings}


add_listener_kind("spacy-elmo.ElmoListener.v1", _elmo_mix_v1_cfg, "elmo")
