"""Listeners: how downstream components (ner, textcat, tagger, parser) get the ELMo layers.

`spacy-elmo.ElmoListener.v2` gives the task's mixed ELMo vector (its widths interpolated from
the biLM block, its `spacy-elmo.ScalarMix.v2` as a sub-block); `spacy-elmo.ElmoTok2Vec.v2` joins
it to the task's own token embedding, [x_k; ELMo_k] as in the paper, before an encoder, or to the
encoder's output, or both. All know their output width from the config alone.
"""

from typing import Callable, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, with_array
from thinc.types import Floats2d, Floats3d

from .bilm_model import get_bilm
from .doc_digest import doc_digest
from .scalar_mix import set_mix_dims

BackpropT = Callable[[List[Floats3d]], List[Doc]]


class ElmoListener(Model):
    """Stands in for the `elmo` component inside a downstream model. During `update`, the
    component hands it the batch's layers and a callback for their gradient; at prediction it
    reads `doc._.elmo`, which the component has set.
    """

    name = "elmo-listener"

    def __init__(self, upstream_name: str, n_output_layers: int, width: int) -> None:
        Model.__init__(self, name=self.name, forward=_listener_forward, init=_listener_init, dims={"nO": width, "nL": n_output_layers})
        self.upstream_name = upstream_name
        self._init_batch_id: Optional[str] = None
        self._batch_id: Optional[str] = None
        self._outputs: Optional[List[Floats3d]] = None
        self._backprop: Optional[BackpropT] = None

    @staticmethod
    def get_batch_id(docs: Sequence[Doc]) -> str:
        """A digest of every token of every Doc, in order."""
        return doc_digest(docs).hex()

    def receive(self, batch_id: str, outputs: List[Floats3d], backprop: BackpropT) -> None:
        """Store a training batch's layers and their backprop callback (called by `elmo`)."""
        self._init_batch_id = None  # initialization is over: no batch gets stand-in zeros any more
        self._batch_id = batch_id
        self._outputs = outputs
        self._backprop = backprop

    def backprop_and_clear(self, d_outputs: List[Floats3d]) -> List[Doc]:
        """Pass the gradient on and drop the batch (its layers are not needed any more)."""
        assert self._backprop is not None
        backprop = self._backprop
        self._batch_id = self._outputs = self._backprop = None
        return backprop(d_outputs)


def _listener_init(model: ElmoListener, X: Optional[List[Doc]] = None, Y=None) -> ElmoListener:  # type: ignore[no-untyped-def]
    # Thinc initializes a chain by predicting on the sample, before any Doc has ELMo layers:
    # that one batch (and only it) gets zeros, which serve to infer shapes.
    model._init_batch_id = model.get_batch_id(X) if X else None
    return model


def no_gradient(d_outputs: List[Floats3d]) -> List[Doc]:
    """The backprop callback of ELMo layers that take no gradient (a frozen biLM)."""
    return []


def _listener_forward(model: ElmoListener, docs: List[Doc], is_train: bool) -> Tuple[List[Floats3d], BackpropT]:
    if is_train and model._batch_id is not None:
        batch_id = model.get_batch_id(docs)
        if batch_id != model._batch_id:
            raise ValueError(
                f"[{model.name}] got a batch of Docs that the '{model.upstream_name}' elmo component did not "
                "just process. The elmo component must come before this component in the pipeline and "
                "update on the same batches."
            )
        assert model._outputs is not None
        return model._outputs, model.backprop_and_clear
    if model._init_batch_id is not None and model.get_batch_id(docs) == model._init_batch_id:
        return [model.ops.alloc3f(model.get_dim("nL"), len(doc), model.get_dim("nO")) for doc in docs], no_gradient
    outputs = []
    for doc in docs:
        data = doc._.elmo if Doc.has_extension("elmo") else None
        if data is None:
            raise ValueError(
                f"[{model.name}] a Doc has no ELMo layers (doc._.elmo is None). Put an 'elmo' component "
                "before this one in the pipeline (nlp.add_pipe('elmo', before=...)), and when training do "
                "not list it in [training] frozen_components unless it is also in annotating_components "
                "(the elmo component's own frozen = true setting is the simpler way to freeze it)."
            )
        if data.n_output_layers != model.get_dim("nL") or data.width != model.get_dim("nO"):
            raise ValueError(
                f"[{model.name}] expects {model.get_dim('nL')} ELMo layers of width {model.get_dim('nO')}, "
                f"but doc._.elmo has {data.n_output_layers} of width {data.width}: the listener's "
                "projection_dim and n_layers must be those of the elmo component's model (interpolate them: "
                "${components.elmo.model.projection_dim}, ${components.elmo.model.n_layers})."
            )
        outputs.append(model.ops.asarray3f(data.layers, dtype="float32"))
    return outputs, no_gradient


@registry.architectures("spacy-elmo.ElmoListener.v2")
def build_elmo_listener_v2(
    mix: Model[List[Floats3d], List[Floats2d]], projection_dim: int, n_layers: int, upstream: str = "*"
) -> Model[List[Doc], List[Floats2d]]:
    """The task's own mix of the ELMo layers, one 2P-dimensional vector per token.

    mix (Model): a `spacy-elmo.ScalarMix.v2` block (layer_norm, dropout, l2; its widths follow).
    projection_dim (int): P of the upstream biLM, e.g. `${components.elmo.model.projection_dim}`.
    n_layers (int): L, the upstream biLM's biLSTM layers (the listener gets its L + 1 output layers), e.g.
        `${components.elmo.model.n_layers}`.
    upstream (str): the name of the elmo component, or "*" for any.
    """
    listener = ElmoListener(upstream, n_layers + 1, 2 * projection_dim)
    model = with_mix(listener, mix)
    model.set_ref("listener", listener)
    return model


def with_mix(source: Model[List[Doc], List[Floats3d]], mix: Model[List[Floats3d], List[Floats2d]]) -> Model[List[Doc], List[Floats2d]]:
    """`source` then `mix`, the mix's widths set from the source's (L + 1 layers of width 2P)."""
    if isinstance(source, ElmoListener):
        n_output_layers, width = source.get_dim("nL"), source.get_dim("nO")
    else:
        options = get_bilm(source).options
        n_output_layers, width = options.n_output_layers, options.output_dim
    model: Model[List[Doc], List[Floats2d]] = chain(source, set_mix_dims(mix, n_output_layers, width))
    model.set_dim("nO", width)
    return model


@registry.architectures("spacy-elmo.ElmoTok2Vec.v2")
def build_elmo_tok2vec_v2(
    embed: Model[List[Doc], List[Floats2d]],
    encode: Optional[Model[List[Floats2d], List[Floats2d]]] = None,
    input_elmo: Optional[Model[List[Doc], List[Floats2d]]] = None,
    output_elmo: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """ELMo where the paper puts it, around the task's own embed and encode layers: at the
    input, [x_k; ELMo_k] reduced to the encoder's width by a Maxout layer; at the encoder's
    output, [h_k; ELMo'_k]; or both, each with its own mix (the paper's best setting for
    SNLI and SQuAD). Without an encoder, the "output" is the embedding's.

    embed (Model): the task's token embedding, e.g. spacy.MultiHashEmbed.v2.
    encode (Optional[Model]): an encoder over List[Floats2d] with a known nO, e.g.
        spacy.MaxoutWindowEncoder.v2; without input_elmo its width must equal embed's.
    input_elmo (Optional[Model]): a `spacy-elmo.ElmoListener.v2` joined to the embedding.
    output_elmo (Optional[Model]): a second `spacy-elmo.ElmoListener.v2` (with its own mix)
        joined to the encoder's output.
    """
    if input_elmo is None and output_elmo is None:
        raise ValueError("ElmoTok2Vec.v2: give input_elmo, output_elmo or both (without either, use spacy.Tok2Vec.v2)")
    embed_width = _output_width(embed)
    if embed_width is None:
        raise ValueError(f"ElmoTok2Vec: cannot tell the output width of the embed layer '{embed.name}' from its config")
    model: Model[List[Doc], List[Floats2d]] = embed
    width = embed_width
    if input_elmo is not None:
        model = concatenate(input_elmo, embed)
        width += input_elmo.get_dim("nO")
    if encode is not None:
        encode_width = encode.get_dim("nO")
        if input_elmo is not None:
            # one chain of three (pipelines saved with ElmoTok2Vec.v1 have this layout too)
            model = chain(model, with_array(Maxout(encode_width, width, nP=3, dropout=0.0, normalize=True)), encode)
        elif encode_width != width:
            raise ValueError(
                f"ElmoTok2Vec.v2: the encoder's width ({encode_width}) must equal the embedding's ({width}) when no ELMo joins the input"
            )
        else:
            model = chain(model, encode)
        width = encode_width
    if output_elmo is not None:
        model = concatenate(model, output_elmo)
        width += output_elmo.get_dim("nO")
    model.set_dim("nO", width)
    for name, elmo in (("listener", input_elmo), ("output_listener", output_elmo)):
        if elmo is not None and elmo.has_ref("listener"):
            model.set_ref(name, elmo.get_ref("listener"))
    return model


def _output_width(model: Model) -> Optional[int]:
    """The width of a model's output before initialization: its own nO, or that of the last
    sublayer that has one (spaCy's MultiHashEmbed sets nO only on its final Maxout)."""
    if model.has_dim("nO") is True:
        return model.get_dim("nO")
    for layer in reversed(model.layers):
        width = _output_width(layer)
        if width is not None:
            return width
    return None
