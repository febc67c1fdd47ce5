"""`nlp.replace_listeners("elmo", COMPONENT, [...])`: what takes a listener's place, in one module.

spaCy calls two hooks that the `elmo` component's model carries in its attrs: `replace_listener`
(the model object: a copy of the biLM, frozen if the component is) and `replace_listener_cfg`
(the config block: `spacy-elmo.ElmoMix.v2` for a v2 listener, the biLM block plus the listener's
mix; legacy.py adds the block for a v1 one). The component sets them when it is built.
"""

import functools
from typing import Any, Callable, Dict, List

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from .bilm_model import ListenedTo, frozen_layer
from .listener import with_mix

MixConfig = Callable[[Dict[str, Any], Dict[str, Any], bool], Dict[str, Any]]
# Each listener architecture: the config block that replaces it (from the biLM block, the listener
# block and `frozen`); and the keys of listener blocks in a task's tok2vec block.
_MIX_CONFIGS: Dict[str, MixConfig] = {}
_LISTENER_KEYS: List[str] = []


def add_listener_kind(architecture: str, mix_config: MixConfig, *tok2vec_keys: str) -> None:
    """Teach `replace_listeners` a listener architecture: `mix_config` gives the block that
    replaces it, `tok2vec_keys` are the keys its blocks take in an ElmoTok2Vec block."""
    _MIX_CONFIGS[architecture] = mix_config
    _LISTENER_KEYS.extend(key for key in tok2vec_keys if key not in _LISTENER_KEYS)


def set_replace_listener_hooks(bilm_model: Model, frozen: bool) -> None:
    """Tell `nlp.replace_listeners` how to put a copy of `bilm_model` in a listener's place: a
    frozen copy if the elmo component is frozen. spaCy passes the config hook no component, so
    the component sets `frozen` here again when it is built (hooks are plain functions in the
    model's attrs, which spaCy copies)."""
    bilm_model.attrs["replace_listener"] = _replace_listener
    bilm_model.attrs["replace_listener_cfg"] = functools.partial(_replace_listener_cfg, frozen=frozen)


def _replace_listener(model: Model, listener: Model, elmo: "ListenedTo") -> Model:
    return frozen_layer(model) if elmo.frozen else model


def _replace_listener_cfg(bilm_cfg: Dict[str, Any], tok2vec_cfg: Dict[str, Any], *, frozen: bool) -> Dict[str, Any]:
    """The config block that takes the listener's place (ElmoMix.v2 for an ElmoListener.v2).

    spaCy passes the whole tok2vec block, not the listener's path: an ElmoTok2Vec.v2 with ELMo at
    both its input and output can only be told apart when their blocks agree.
    """
    listener_cfgs = [
        tok2vec_cfg[key]
        for key in _LISTENER_KEYS
        # a block replaced by an earlier call is an ElmoMix now
        if str((tok2vec_cfg.get(key) or {}).get("@architectures", "")).startswith("spacy-elmo.ElmoListener")
    ]
    if any(cfg != listener_cfgs[0] for cfg in listener_cfgs):
        raise ValueError(
            "replace_listeners: this ElmoTok2Vec.v2 has ELMo at its input and output with different "
            "listener blocks, and spaCy does not say which one it replaces. Give both the same mix "
            "settings, or keep the elmo component in the pipeline."
        )
    listener_cfg = listener_cfgs[0] if listener_cfgs else tok2vec_cfg
    architecture = listener_cfg.get("@architectures")
    if architecture in _MIX_CONFIGS:
        return _MIX_CONFIGS[architecture](bilm_cfg, listener_cfg, frozen)
    raise ValueError(f"replace_listeners: expected a spacy-elmo.ElmoListener block (or an ElmoTok2Vec with one), got {architecture!r}")


@registry.architectures("spacy-elmo.ElmoMix.v2")
def build_elmo_mix_v2(
    bilm: Model[List[Doc], List[Floats3d]], mix: Model[List[Floats3d], List[Floats2d]], frozen: bool = True
) -> Model[List[Doc], List[Floats2d]]:
    """A component's own copy of the biLM followed by its mix: what `nlp.replace_listeners`
    puts in place of an `ElmoListener.v2`, so the component no longer needs the elmo component.

    bilm (Model): a `spacy-elmo.BiLM.v2` block.
    mix (Model): the listener's `spacy-elmo.ScalarMix.v2` block.
    frozen (bool): run the biLM without gradients, as the elmo component's frozen setting does.
    """
    return with_mix(frozen_layer(bilm) if frozen else bilm, mix)


def _elmo_mix_v2_cfg(bilm_cfg: Dict[str, Any], listener_cfg: Dict[str, Any], frozen: bool) -> Dict[str, Any]:
    return {"@architectures": "spacy-elmo.ElmoMix.v2", "bilm": bilm_cfg, "frozen": frozen, "mix": listener_cfg["mix"]}


add_listener_kind("spacy-elmo.ElmoListener.v2", _elmo_mix_v2_cfg, "input_elmo", "output_elmo")
