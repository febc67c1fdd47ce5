"""The task-specific mix of the biLM layers: `spacy-elmo.ScalarMix.v2`, and the fixed choice of
one layer, `spacy-elmo.LayerSelect.v2` (the paper's probes of what each layer encodes). Both take
the biLM's L + 1 output layers (`n_output_layers`; the listener sets it).

`ELMo_k = gamma * sum_j softmax(w)_j * h_{k,j}` (Peters et al. 2018, eq. 1), with w = 0 and
gamma = 1 at the start, optional layer normalisation of each layer first (one mean and one
variance per layer over all values of the batch, as in the original), an L2 penalty
`l2 * ||w||^2` added through the gradient, dropout on the mixed vector, and its own learning
rate. Thinc scales a step by the `lr_scale` given to the optimizer per call, but the mix's
parameters are updated in the call of the task component that owns the listener, with the rest of
its model, so the mix re-parametrises instead: with `lr_scale = s` the stored parameters are w / s
and gamma / s, so Adam, whose steps do not depend on the gradient's scale, moves w and gamma s
times as far per step as the rest of the task model (with plain SGD the factor would be s^2).
"""

from typing import Callable, List, Optional, Tuple, cast

from spacy.util import registry
from thinc.api import Dropout, Model, chain
from thinc.types import Floats1d, Floats2d, Floats3d

LAYER_NORM_EPS = 1e-12


@registry.layers("spacy-elmo.ScalarMix.v2")
def ScalarMix(
    n_output_layers: Optional[int] = None,
    width: Optional[int] = None,
    layer_norm: bool = False,
    dropout: float = 0.0,
    l2: float = 0.0,
    lr_scale: float = 1.0,
) -> Model[List[Floats3d], List[Floats2d]]:
    """Mix the L + 1 layers of each Doc into one vector per token.

    n_output_layers (Optional[int]): L + 1, the biLM's output layers (3 for every released model);
        None: set by the listener it belongs to.
    width (Optional[int]): 2P, the width of each layer and of the output; None: likewise.
    layer_norm (bool): normalise each layer before mixing.
    dropout (float): dropout rate on the mixed vectors.
    l2 (float): lambda of the penalty `lambda * ||w||^2` on the mix weights.
    lr_scale (float): the learning rate of w and gamma relative to the optimizer's (Adam).
    """
    if lr_scale <= 0:
        raise ValueError(f"ScalarMix: lr_scale must be positive, got {lr_scale}")
    mix: Model[List[Floats3d], List[Floats2d]] = Model(
        "scalar_mix",
        _forward,
        init=_init,
        params={"w": None, "gamma": None},
        dims={"nL": n_output_layers, "nO": width},
        attrs={"layer_norm": layer_norm, "l2": l2, "lr_scale": lr_scale},
    )
    if dropout > 0:
        model: Model[List[Floats3d], List[Floats2d]] = chain(mix, Dropout(dropout))
        model.set_ref("scalar_mix", mix)
        return model
    return mix


@registry.layers("spacy-elmo.LayerSelect.v2")
def LayerSelect(layer: int, n_output_layers: Optional[int] = None, width: Optional[int] = None) -> Model[List[Floats3d], List[Floats2d]]:
    """One biLM layer of each Doc as it is, in place of a mix: the paper's probes (Sec. 5.3), a
    task model fed only the token layer (0) or only biLSTM layer j.

    layer (int): 0 .. L; negative counts from the top (-1: the top layer).
    n_output_layers (Optional[int]): L + 1; None: set by the listener it belongs to.
    width (Optional[int]): 2P; None: likewise.
    """
    return Model("layer_select", _select_forward, init=_select_init, dims={"nL": n_output_layers, "nO": width}, attrs={"layer": layer})


def _select_init(model: Model, X=None, Y=None) -> Model:  # type: ignore[no-untyped-def]
    n_output_layers, layer = model.get_dim("nL"), model.attrs["layer"]
    if not -n_output_layers <= layer < n_output_layers:
        raise ValueError(
            f"LayerSelect: layer {layer} does not exist in a biLM with {n_output_layers} output layers (0 .. {n_output_layers - 1})"
        )
    return model


def _select_forward(
    model: Model[List[Floats3d], List[Floats2d]], docs_layers: List[Floats3d], is_train: bool
) -> Tuple[List[Floats2d], Callable]:
    layer = model.attrs["layer"]
    outputs = [model.ops.xp.ascontiguousarray(x[layer], dtype="float32") for x in docs_layers]

    def backprop(d_outputs: List[Floats2d]) -> List[Floats3d]:
        grads = []
        for x, d in zip(docs_layers, d_outputs):
            dx = model.ops.alloc3f(*x.shape)
            dx[layer] = d
            grads.append(dx)
        return grads

    return outputs, backprop


def set_mix_dims(model: Model, n_output_layers: int, width: int) -> Model:
    """Set the layer count and width of a ScalarMix (or check them, where its config sets them).

    RETURNS (Model): `model`.
    """
    mix = model.get_ref("scalar_mix") if model.has_ref("scalar_mix") else model
    for dim, value, setting in (("nL", n_output_layers, "n_output_layers"), ("nO", width, "width")):
        if mix.has_dim(dim) is True and mix.get_dim(dim) != value:
            raise ValueError(
                f"The mix block sets {setting} = {mix.get_dim(dim)}, but the biLM gives {value}: "
                f"leave {setting} out of the block (the listener sets it)."
            )
        mix.set_dim(dim, value, force=True)
    if model is not mix and model.has_dim("nO") is not False:
        model.set_dim("nO", width, force=True)
    return model


def _init(model: Model, X=None, Y=None) -> Model:  # type: ignore[no-untyped-def]
    if model.has_dim("nL") is not True or model.has_dim("nO") is not True:
        raise ValueError("ScalarMix needs n_output_layers and width: set them, or use it inside an ElmoListener.v2")
    if X:
        n_output_layers, width = int(X[0].shape[0]), int(X[0].shape[2])
        if n_output_layers != model.get_dim("nL") or width != model.get_dim("nO"):
            raise ValueError(
                f"ScalarMix is configured for {model.get_dim('nL')} layers of width {model.get_dim('nO')}, "
                f"but the biLM gives {n_output_layers} layers of width {width}. Set n_output_layers = L + 1 and "
                "width = 2 * projection_dim of the elmo component's model."
            )
    model.set_param("w", model.ops.alloc1f(model.get_dim("nL")))
    gamma = model.ops.alloc1f(1)
    gamma[0] = 1.0 / _lr_scale(model)
    model.set_param("gamma", gamma)
    return model


def _lr_scale(model: Model) -> float:
    return float(model.attrs["lr_scale"])


def mix_weights(model: Model) -> Tuple[Floats1d, float]:
    """RETURNS (Tuple[Floats1d, float]): softmax(w) and gamma of a ScalarMix layer."""
    scale = _lr_scale(model)
    w = scale * model.get_param("w")
    e = model.ops.xp.exp(w - w.max())
    return e / e.sum(), scale * float(model.get_param("gamma")[0])


def _forward(model: Model[List[Floats3d], List[Floats2d]], docs_layers: List[Floats3d], is_train: bool) -> Tuple[List[Floats2d], Callable]:
    xp = model.ops.xp
    layer_norm = model.attrs["layer_norm"]
    lengths = [int(x.shape[1]) for x in docs_layers]
    n_output_layers, width = model.get_dim("nL"), model.get_dim("nO")
    for x in docs_layers:
        if x.shape[0] != n_output_layers or x.shape[2] != width:
            raise ValueError(f"ScalarMix expects ({n_output_layers}, n_tokens, {width}) per Doc, got {tuple(x.shape)}")
    X = xp.concatenate(docs_layers, axis=1).astype("float32") if docs_layers else xp.zeros((n_output_layers, 0, width), dtype="float32")
    weights, gamma = mix_weights(model)
    weights = cast(Floats1d, weights.astype("float32"))
    if layer_norm and X.shape[1] > 0:
        mean = X.mean(axis=(1, 2), keepdims=True)
        inv_std = 1.0 / xp.sqrt(X.var(axis=(1, 2), keepdims=True) + LAYER_NORM_EPS)
        Y = (X - mean) * inv_std
    else:
        Y = X
    mixed_unscaled = xp.tensordot(weights, Y, axes=(0, 0))  # (N, width)
    out = gamma * mixed_unscaled
    splits = xp.cumsum(xp.asarray(lengths[:-1], dtype="int64")).tolist() if len(lengths) > 1 else []
    outputs = list(xp.split(out, splits, axis=0)) if lengths else []

    def backprop(d_outputs: List[Floats2d]) -> List[Floats3d]:
        dout = xp.concatenate(d_outputs, axis=0) if d_outputs else xp.zeros((0, width), dtype="float32")
        d_gamma = float((dout * mixed_unscaled).sum())
        d_weights = gamma * xp.tensordot(Y, dout, axes=((1, 2), (0, 1)))  # (nL,)
        scale = _lr_scale(model)
        w = scale * model.get_param("w")
        d_w = weights * (d_weights - (weights * d_weights).sum()) + 2.0 * model.attrs["l2"] * w
        model.inc_grad("w", (scale * d_w).astype("float32"))
        model.inc_grad("gamma", xp.asarray([scale * d_gamma], dtype="float32"))
        dY = (gamma * weights)[:, None, None] * dout[None]
        if layer_norm and X.shape[1] > 0:
            dX = inv_std * (dY - dY.mean(axis=(1, 2), keepdims=True) - Y * (dY * Y).mean(axis=(1, 2), keepdims=True))
        else:
            dX = dY
        dX = dX.astype("float32")
        return list(xp.split(dX, splits, axis=1)) if lengths else []

    return outputs, backprop
