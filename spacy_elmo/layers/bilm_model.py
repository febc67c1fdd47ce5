"""The biLM as a Thinc model over Docs: `spacy-elmo.BiLM.v1`."""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy
import srsly
import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3
from thinc.types import Floats3d, Floats4d

from ..bilm import BiLM, CharBatch, ElmoFormatError, ElmoOptions, read_weights
from .segments import Segment, batches_by_length, doc_segments

ElmoModelT = Model[List[Doc], List[Floats3d]]


@registry.architectures("spacy-elmo.BiLM.v1")
def build_bilm_model(
    cell_dim: int = 1024,
    projection_dim: int = 128,
    n_layers: int = 2,
    cell_clip: Optional[float] = 3.0,
    proj_clip: Optional[float] = 3.0,
    use_skip_connections: bool = True,
    char_embed_dim: int = 16,
    filters: Sequence[Sequence[int]] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
    n_highway: int = 1,
    activation: str = "relu",
    n_characters: int = 262,
    max_characters_per_token: int = 50,
    batch_size: int = 32,
    window_size: int = 128,
    cache_size: int = 50_000,
    punct_sentences: bool = False,
) -> ElmoModelT:
    """The ELMo biLM over Docs. The defaults are the released "small" model (C 1024, P 128).

    The first twelve arguments are the biLM's hyperparameters (see `ElmoOptions`); weights
    come from `initialize` or from the saved pipeline. Docs with sentence boundaries run sentence
    by sentence, others in windows of `window_size` tokens, or with `punct_sentences` split after
    sentence-final punctuation (the Doc itself is left without boundaries, so e.g. an NER can still
    learn entities that cross them); sequences are batched `batch_size` at a time by length;
    `cache_size` word vectors are kept by the token layer at inference.
    Output: one (L + 1, n_tokens, 2P) array per Doc.
    """
    options = ElmoOptions(
        cell_dim=cell_dim,
        projection_dim=projection_dim,
        n_layers=n_layers,
        cell_clip=cell_clip,
        proj_clip=proj_clip,
        use_skip_connections=use_skip_connections,
        char_embed_dim=char_embed_dim,
        filters=tuple((int(w), int(n)) for w, n in filters),
        n_highway=n_highway,
        activation=activation,
        n_characters=n_characters,
        max_characters_per_token=max_characters_per_token,
    )
    return wrap_bilm(
        BiLM(options, cache_size=cache_size),
        batch_size=batch_size,
        window_size=window_size,
        punct_sentences=punct_sentences,
    )


def bilm_config(options: ElmoOptions, **settings: Any) -> Dict[str, Any]:
    """The `spacy-elmo.BiLM.v1` config block for a biLM with these options.

    options (ElmoOptions): e.g. `ElmoOptions.from_file("options.json")`.
    settings: batch_size, window_size, cache_size, punct_sentences.
    RETURNS (Dict[str, Any]): the block, for `nlp.add_pipe("elmo", config={"model": ...})`.
    """
    return {
        "@architectures": "spacy-elmo.BiLM.v1",
        "cell_dim": options.cell_dim,
        "projection_dim": options.projection_dim,
        "n_layers": options.n_layers,
        "cell_clip": options.cell_clip,
        "proj_clip": options.proj_clip,
        "use_skip_connections": options.use_skip_connections,
        "char_embed_dim": options.char_embed_dim,
        "filters": [list(f) for f in options.filters],
        "n_highway": options.n_highway,
        "activation": options.activation,
        "n_characters": options.n_characters,
        "max_characters_per_token": options.max_characters_per_token,
        **settings,
    }


def wrap_bilm(bilm: BiLM, batch_size: int = 32, window_size: int = 128, punct_sentences: bool = False) -> ElmoModelT:
    """Wrap a torch BiLM as a Thinc model over Docs."""
    torch_layer = PyTorchWrapper_v3(
        bilm,
        convert_inputs=_convert_inputs,
        serialize_model=serialize_bilm,
        deserialize_model=deserialize_bilm,
    )
    return Model(
        "elmo_bilm",
        _forward,
        layers=[torch_layer],
        attrs={"batch_size": batch_size, "window_size": window_size, "punct_sentences": punct_sentences},
        dims={"nO": bilm.options.output_dim},
    )


def frozen_layer(model: ElmoModelT) -> ElmoModelT:
    """`model` run in prediction mode (no dropout, no gradient) even while training."""
    return Model("elmo_frozen", _frozen_forward, layers=[model], dims={"nO": model.get_dim("nO")})


def _frozen_forward(model: ElmoModelT, docs: List[Doc], is_train: bool) -> Tuple[List[Floats3d], Callable]:
    return model.layers[0].predict(docs), lambda d_outputs: []


def get_bilm(model: Model) -> BiLM:
    """RETURNS (BiLM): the torch module inside a `spacy-elmo.BiLM.v1` model."""
    for node in model.walk():
        if node.shims:
            return node.shims[0]._model
    raise ValueError(f"No biLM inside model '{model.name}'")


def _convert_inputs(model: Model, batch: CharBatch, is_train: bool) -> Tuple[ArgsKwargs, Callable]:
    return ArgsKwargs(args=(batch,), kwargs={}), lambda d_inputs: []


def _forward(model: ElmoModelT, docs: List[Doc], is_train: bool) -> Tuple[List[Floats3d], Callable]:
    bilm = get_bilm(model)
    options = bilm.options
    torch_layer = model.layers[0]
    xp = model.ops.xp
    outputs = [
        xp.zeros((options.n_output_layers, len(doc), options.output_dim), dtype="float32") for doc in docs
    ]
    texts = [[token.text for token in doc] for doc in docs]
    segments = doc_segments(docs, model.attrs["window_size"], model.attrs["punct_sentences"])
    callbacks: List[Tuple[List[Segment], Callable, Tuple[int, ...]]] = []
    for group in batches_by_length(segments, model.attrs["batch_size"]):
        batch = CharBatch.from_sentences(
            [texts[seg.doc][seg.start : seg.end] for seg in group], options.max_characters_per_token
        )
        layers, backprop_batch = torch_layer(batch, is_train)
        for row, seg in enumerate(group):
            outputs[seg.doc][:, seg.start : seg.end] = layers[:, row, 1 : seg.length + 1]
        callbacks.append((group, backprop_batch, layers.shape))

    def backprop(d_outputs: List[Floats3d]) -> List[Doc]:
        for group, backprop_batch, shape in callbacks:
            d_layers: Floats4d = xp.zeros(shape, dtype="float32")
            for row, seg in enumerate(group):
                d_layers[:, row, 1 : seg.length + 1] = d_outputs[seg.doc][:, seg.start : seg.end]
            backprop_batch(d_layers)
        return []

    return outputs, backprop


def serialize_bilm(bilm: BiLM) -> bytes:
    """The biLM's options and parameters as msgpack (no pickle)."""
    state = {name: t.detach().cpu().numpy() for name, t in bilm.state_dict().items()}
    return srsly.msgpack_dumps({"options": bilm.options.to_json(), "state": state})


def deserialize_bilm(bilm: BiLM, data: bytes, device: torch.device) -> BiLM:
    """Load what `serialize_bilm` wrote into `bilm`, checking that the options agree."""
    msg = srsly.msgpack_loads(data)
    saved = ElmoOptions.from_json(msg["options"])
    if not saved.matches(bilm.options):
        raise ElmoFormatError(
            f"The saved biLM has options {saved} but the pipeline config builds {bilm.options}. "
            "Edit the [components.elmo.model] section to match the saved model."
        )
    state = {name: torch.from_numpy(numpy.array(value)) for name, value in msg["state"].items()}
    bilm.load_state_dict(state)
    bilm.to(device)
    return bilm


def load_weights_into(model: Model, options_file: Any, weights_file: Any) -> None:
    """Copy original-format weights into a `spacy-elmo.BiLM.v1` model, after checking that
    the options file (if given) agrees with the model's config."""
    bilm = get_bilm(model)
    if options_file is not None:
        given = ElmoOptions.from_file(options_file)
        if not given.matches(bilm.options):
            raise ElmoFormatError(
                f"The options in {options_file} ({given}) differ from the component's model config "
                f"({bilm.options}). Build the config from that file (spacy_elmo.bilm_config) "
                "or pass the options file that belongs to these weights."
            )
    read_weights(bilm, weights_file)
