"""ELMo as `token.vector`, `span.vector`, `doc.vector` and `.similarity`, through spaCy's user
hooks: a token's vector is a fixed weighting of its biLM layers (the top one, their average, or
given weights); a span's or Doc's is the mean of its tokens' vectors; similarity is the cosine."""

import functools
from typing import Any, Iterator, List, Optional, Sequence, Union

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span, Token

VectorSetting = Union[None, str, Sequence[float]]
CHOICES = ("top", "average")
MAX_WEIGHT = 1e6  # of a layer weight; larger ones overflow float32 vectors


def layer_weights(setting: VectorSetting, n_output_layers: int) -> Optional[numpy.ndarray]:
    """The weight of each of the L + 1 layers in a token's vector.

    setting (VectorSetting): None (no ELMo vectors), "top", "average", or one weight per layer.
    n_output_layers (int): L + 1.
    RETURNS (Optional[numpy.ndarray]): (L + 1,) float32 weights, or None.
    """
    if setting is None:
        return None
    if isinstance(setting, str):
        if setting not in CHOICES:
            raise ValueError(f"[elmo] vectors must be null, 'top', 'average' or one weight per layer, got {setting!r}")
        weights = numpy.zeros(n_output_layers, dtype="float32")
        if setting == "top":
            weights[-1] = 1.0
        else:
            weights[:] = 1.0 / n_output_layers
        return weights
    given = numpy.asarray(list(setting), dtype="float64")
    if given.shape != (n_output_layers,):
        raise ValueError(
            f"[elmo] vectors: {len(given)} weights given for a biLM with {n_output_layers} layers (L + 1, the token layer included)"
        )
    if not numpy.isfinite(given).all() or numpy.abs(given).max() > MAX_WEIGHT or not given.any():
        raise ValueError(
            f"[elmo] vectors: the layer weights {list(setting)} must be finite, at most {MAX_WEIGHT:g} in size and not all 0 "
            "(larger ones overflow float32 vectors): e.g. [0.2, 0.3, 0.5]"
        )
    return given.astype("float32")


def keep_hooks_across_processes(nlp: Language) -> None:
    """Set the vector hooks again on the Docs that `nlp.pipe(..., n_process=N)` brings back from
    its worker processes: they are rebuilt from bytes, which carry `doc._.elmo` (with its
    vector weights) but not a Doc's user hooks, and spaCy offers no hook of its own there. The
    workers drop these hooks before sending a Doc, so spaCy does not warn (W109) that they are lost."""
    if "_multiprocessing_pipe" in vars(nlp) or not hasattr(nlp, "_multiprocessing_pipe"):
        return
    nlp._multiprocessing_pipe = functools.partial(_with_vector_hooks, nlp._multiprocessing_pipe)  # type: ignore[method-assign]


def _with_vector_hooks(pipe: Any, texts: Any, pipes: Any, *args: Any, **kwargs: Any) -> Iterator[Doc]:
    for doc in pipe(texts, [*pipes, _without_vector_hooks], *args, **kwargs):
        data = doc._.elmo if Doc.has_extension("elmo") else None
        if data is not None and data.vector_weights is not None and "vector" not in doc.user_hooks:
            set_vector_hooks(doc, data.vector_weights)
        yield doc


def _without_vector_hooks(docs: Iterator[Doc]) -> Iterator[Doc]:
    """In a worker process: remove the hooks this module set (a user's own stay, and spaCy warns about those)."""
    for doc in docs:
        for hooks in (doc.user_hooks, doc.user_span_hooks, doc.user_token_hooks):
            for key in [key for key, hook in hooks.items() if getattr(hook, "__module__", None) == __name__]:
                del hooks[key]
        yield doc


def set_vector_hooks(doc: Doc, weights: numpy.ndarray) -> None:
    """Make the vectors and similarities of `doc`, its spans and tokens come from `doc._.elmo`."""
    doc.user_hooks.update(
        {
            "vector": lambda d: _mean(d, 0, len(d), weights),
            "has_vector": _has_vector,
            "vector_norm": lambda d: _norm(d.vector),
            "similarity": _cosine,
        }
    )
    doc.user_span_hooks.update(
        {
            # spaCy reads a span's vector_norm through its "vector_norm" key but calls the "vector"
            # hook, so only these are set and the norm comes from the vector.
            "vector": lambda span: _mean(span.doc, span.start, span.end, weights),
            "has_vector": _has_vector,
            "similarity": _cosine,
        }
    )
    doc.user_token_hooks.update(
        {
            "vector": lambda token: _mean(token.doc, token.i, token.i + 1, weights),
            "has_vector": _has_vector,
            "vector_norm": lambda token: _norm(token.vector),
            "similarity": _cosine,
        }
    )


def _mean(doc: Doc, start: int, end: int, weights: numpy.ndarray) -> numpy.ndarray:
    layers = doc._.elmo.layers
    if end <= start:
        return numpy.zeros(layers.shape[2], dtype="float32")
    rows = layers[:, start:end].astype("float32", copy=False)
    return numpy.tensordot(weights, rows, axes=1).mean(axis=0)


def _has_vector(obj: Union[Doc, Span, Token]) -> bool:
    doc = obj if isinstance(obj, Doc) else obj.doc
    return doc._.elmo is not None and (isinstance(obj, Token) or len(obj) > 0)


def _norm(vector: numpy.ndarray) -> float:
    return float(numpy.sqrt((vector * vector).sum()))


def _cosine(a: Union[Doc, Span, Token], b: Union[Doc, Span, Token, List]) -> float:
    va, vb = a.vector, getattr(b, "vector", None)
    if vb is None:
        raise ValueError(f"ELMo similarity compares Docs, Spans and Tokens, got {type(b).__name__}")
    if va.shape != vb.shape:
        raise ValueError(
            f"Cannot compare a {va.shape[0]}-wide ELMo vector with a {vb.shape[0]}-wide vector: both must come from the same biLM"
        )
    x, y = numpy.asarray(va), numpy.asarray(vb)
    nx, ny = _norm(x), _norm(y)
    return 0.0 if nx == 0.0 or ny == 0.0 else float(numpy.dot(x, y) / (nx * ny))
