"""The biLM as a Thinc model over Docs: `spacy-elmo.BiLM.v3` (learned token input, e.g.
ELMoForManyLangs) and `spacy-elmo.BiLM.v2` (UTF-8 input, every original ELMo file; v1, which still
loads: legacy.py)."""

import inspect
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, cast

import numpy
import srsly
import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import ArgsKwargs, Model, PyTorchWrapper_v3
from thinc.types import Floats3d, Floats4d

from ..bilm import BiLM, ElmoOptions, read_weights
from ..bilm.char_ids import CharBatch
from ..bilm.folders import BilmFolder
from ..token_ids import LearnedVocab
from ..bilm.threads import between_batches
from .segments import Segment, SequenceGetter, batches_by_length, configure_sentences

ElmoModelT = Model[List[Doc], List[Floats3d]]


class ListenedTo(Protocol):
    frozen: bool


# Sequences per biLM batch, where the component does not set it.
DEFAULT_BATCH_SIZE = 32


def build_bilm_model_v3(sequences: SequenceGetter, **hyperparameters: Any) -> ElmoModelT:
    """The ELMo biLM over Docs. Output: one (L + 1, n_tokens, 2P) array per Doc.

    sequences (Callable[[Sequence[Doc]], List[Segment]]): how Docs become biLM sequences, e.g.
        `spacy-elmo.sentences.v1` (an `@elmo_sequences` block).
    hyperparameters: the fields of `ElmoOptions`, with its defaults (the released "small" ELMo).
        Weights (and a learned vocabulary) come from `initialize` or from the saved pipeline.
    """
    return wrap_bilm(BiLM(ElmoOptions.from_config(hyperparameters)), sequences)


def build_bilm_model_v2(sequences: SequenceGetter, **hyperparameters: Any) -> ElmoModelT:
    """`spacy-elmo.BiLM.v2`: v3 for UTF-8 input (it has none of char_vocab, word_dim, n_words)."""
    return build_bilm_model_v3(sequences, **hyperparameters)


def with_hyperparameters(func: Callable, names: Optional[List[str]] = None) -> Callable:
    """Give `func` (which takes **hyperparameters) the explicit signature that spaCy's config
    system validates against: its own arguments plus the fields `names` of ElmoOptions (default:
    those of a UTF-8 biLM), typed, with the defaults of ElmoOptions."""
    names = ElmoOptions.utf8_names() if names is None else names
    own = [p for p in inspect.signature(func).parameters.values() if p.kind != p.VAR_KEYWORD]
    defaults = ElmoOptions.defaults()
    types = {f.name: f.type for f in ElmoOptions.__dataclass_fields__.values()}
    types["filters"] = Sequence[Sequence[int]]  # a config gives lists, ElmoOptions makes tuples
    options = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name], annotation=types[name]) for name in names]
    own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
    params = [p for p in own if p.default is p.empty] + options + [p for p in own if p.default is not p.empty]
    func.__signature__ = inspect.Signature(params, return_annotation=inspect.signature(func).return_annotation)  # type: ignore[attr-defined]
    return func


registry.architectures("spacy-elmo.BiLM.v3")(with_hyperparameters(build_bilm_model_v3, ElmoOptions.names()))
registry.architectures("spacy-elmo.BiLM.v2")(with_hyperparameters(build_bilm_model_v2))


def bilm_config(options: ElmoOptions, window_size: int = 128, punct_sentences: bool = False) -> Dict[str, Any]:
    """The config block for a biLM with these options: `spacy-elmo.BiLM.v2` for UTF-8 input (every
    original ELMo file; the same block as before v3 existed), `spacy-elmo.BiLM.v3` for a learned one.

    options (ElmoOptions): e.g. `ElmoOptions.from_file("options.json")`.
    window_size, punct_sentences: the `spacy-elmo.sentences.v1` settings.
    RETURNS (Dict[str, Any]): the block, for `nlp.add_pipe("elmo", config={"model": ...})`.
    """
    sequences = {"@elmo_sequences": "spacy-elmo.sentences.v1", "window_size": window_size, "punct_sentences": punct_sentences}
    architecture = "spacy-elmo.BiLM.v2" if options.char_vocab == "utf8" else "spacy-elmo.BiLM.v3"
    return {"@architectures": architecture, **options.to_config(), "sequences": sequences}


def wrap_bilm(bilm: BiLM, sequences: Optional[SequenceGetter] = None, batch_size: int = DEFAULT_BATCH_SIZE) -> ElmoModelT:
    """Wrap a torch BiLM as a Thinc model over Docs.

    sequences (Optional[SequenceGetter]): how Docs become sequences; default: sentences, else
        windows of 128 tokens (`spacy-elmo.sentences.v1`).
    batch_size (int): sequences per biLM batch (the `elmo` component sets its own).
    """
    torch_layer = PyTorchWrapper_v3(
        bilm,
        convert_inputs=_convert_inputs,
        serialize_model=serialize_bilm,
        deserialize_model=deserialize_bilm,
    )
    model: ElmoModelT = Model(
        "elmo_bilm",
        _forward,
        layers=[torch_layer],
        attrs={"batch_size": batch_size, "sequences": sequences or configure_sentences()},
        dims={"nO": bilm.options.output_dim},
    )
    return model


def frozen_layer(model: ElmoModelT) -> ElmoModelT:
    """`model` run in prediction mode (no dropout, no gradient) even while training."""
    return Model("elmo_frozen", _frozen_forward, layers=[model], dims={"nO": model.get_dim("nO")})


def _frozen_forward(model: ElmoModelT, docs: List[Doc], is_train: bool) -> Tuple[List[Floats3d], Callable]:
    return model.layers[0].predict(docs), lambda d_outputs: []


def get_bilm(model: Model) -> BiLM:
    """RETURNS (BiLM): the torch module inside a `spacy-elmo.BiLM` model."""
    for node in model.walk():
        if node.shims:
            return node.shims[0]._model
    raise ValueError(f"No biLM inside model '{model.name}'")


def doc_sequences(model: Model, docs: List[Doc]) -> List[List[Tuple[int, int]]]:
    """RETURNS (List[List[Tuple[int, int]]]): per Doc, [start, end) of each sequence the biLM of `model` (a
    `spacy-elmo.BiLM` model, or one holding it) runs over: the sentences or windows its `sequences` cut."""
    getter = next(node.attrs["sequences"] for node in model.walk() if "sequences" in node.attrs)
    out: List[List[Tuple[int, int]]] = [[] for _ in docs]
    for segment in getter(docs):
        out[segment.doc].append((segment.start, segment.end))
    return [sorted(spans) for spans in out]


def _convert_inputs(model: Model, batch: CharBatch, is_train: bool) -> Tuple[ArgsKwargs, Callable]:
    return ArgsKwargs(args=(batch,), kwargs={}), lambda d_inputs: []


def _forward(model: ElmoModelT, docs: List[Doc], is_train: bool) -> Tuple[List[Floats3d], Callable]:
    bilm = get_bilm(model)
    torch_layer = model.layers[0]
    xp = model.ops.xp
    outputs, callbacks = _by_batches(model, docs, lambda texts: torch_layer(bilm.batch(texts), is_train))

    def backprop(d_outputs: List[Floats3d]) -> List[Doc]:
        for group, backprop_batch, shape in callbacks:
            d_layers: Floats4d = xp.zeros(shape, dtype="float32")
            for row, seg in enumerate(group):
                d_layers[:, row, 1 : seg.length + 1] = d_outputs[seg.doc][:, seg.start : seg.end]
            backprop_batch(d_layers)
        return []

    return outputs, backprop


def predict_with(model: ElmoModelT, docs: List[Doc], run: Callable[[List[List[str]]], numpy.ndarray]) -> List[Floats3d]:
    """`model.predict(docs)` with each batch's layers computed by `run` instead of the torch biLM
    (an exported graph: pipeline/onnx_runtime.py).

    run (Callable[[List[List[str]]], numpy.ndarray]): the token texts of a batch's sequences ->
        (L + 1, B, T, 2P) float32 layers, markers included.
    """
    outputs, _ = _by_batches(model, docs, lambda texts: (model.ops.asarray4f(cast(Floats4d, run(texts))), None))
    return outputs


def _by_batches(
    model: ElmoModelT, docs: List[Doc], run: Callable[[List[List[str]]], Tuple[Floats4d, Any]]
) -> Tuple[List[Floats3d], List[Tuple[List[Segment], Any, Tuple[int, ...]]]]:
    """Cut `docs` into sequences, run them in batches of similar length (`run`: token texts ->
    (layers, what backprop needs)) and put each sequence's layers back in its Doc's place.
    RETURNS: one (L + 1, n_tokens, 2P) array per Doc, and per batch (sequences, backprop, shape)."""
    options = get_bilm(model).options
    xp = model.ops.xp
    outputs = [xp.zeros((options.n_output_layers, len(doc), options.output_dim), dtype="float32") for doc in docs]
    texts = _token_inputs(docs, model.attrs.get("input", "text"))
    segments = model.attrs["sequences"](docs)
    callbacks: List[Tuple[List[Segment], Any, Tuple[int, ...]]] = []
    for group in batches_by_length(segments, model.attrs["batch_size"]):
        between_batches()  # the threads follow the other work on the machine, unless set (bilm/threads.py)
        layers, backprop_batch = run([texts[seg.doc][seg.start : seg.end] for seg in group])
        for row, seg in enumerate(group):
            outputs[seg.doc][:, seg.start : seg.end] = layers[:, row, 1 : seg.length + 1]
        callbacks.append((group, backprop_batch, layers.shape))
    return outputs, callbacks


def _token_inputs(docs: List[Doc], attr: str) -> List[List[str]]:
    """What the biLM reads of each token: its text, or its lemma (a biLM trained on lemmatized text)."""
    if attr == "text":
        return [[token.text for token in doc] for doc in docs]
    inputs = [[token.lemma_ for token in doc] for doc in docs]
    if any(not lemma for doc in inputs for lemma in doc):
        raise ValueError(
            '[elmo] input = "lemma" (the biLM was trained on lemmatized text), but a token has no lemma: put a '
            'lemmatizer before the elmo component (nlp.add_pipe("lemmatizer", before="elmo"), or a trained pipeline '
            'that has one), or set input = "text"'
        )
    return inputs


def serialize_bilm(bilm: BiLM) -> bytes:
    """The biLM's options, parameters and learned vocabulary (if any) as msgpack (no pickle)."""
    state = {name: t.detach().cpu().numpy() for name, t in bilm.state_dict().items()}
    msg: Dict[str, Any] = {"options": bilm.options.to_json(), "state": state}
    if bilm.options.char_vocab != "utf8" and bilm.char_encoder.has_vocab:
        vocab = bilm.vocab
        assert isinstance(vocab, LearnedVocab)
        msg["vocab"] = vocab.to_dict()
    return srsly.msgpack_dumps(msg)


def deserialize_bilm(bilm: BiLM, data: bytes, device: torch.device) -> BiLM:
    """Load what `serialize_bilm` wrote into `bilm`, checking that the options agree."""
    msg = srsly.msgpack_loads(data)
    saved = ElmoOptions.from_json(msg["options"])
    saved.check_matches(
        bilm.options,
        "The saved biLM does not match the pipeline config (saved vs config)",
        "Edit the elmo component's [model] block to match the saved model (spacy_elmo.bilm_config(options) gives it).",
    )
    state = {name: torch.from_numpy(numpy.array(value)) for name, value in msg["state"].items()}
    bilm.load_state_dict(state)
    if "vocab" in msg:
        bilm.char_encoder.set_vocab(LearnedVocab.from_dict(msg["vocab"]))
    bilm.to(device)
    return bilm


def load_weights_into(model: Model, options_file: Any, weights_file: Any) -> None:
    """Copy original-format weights into a `spacy-elmo.BiLM` model, after checking that
    the options file (if given) agrees with the model's config."""
    bilm = get_bilm(model)
    if options_file is not None:
        ElmoOptions.from_file(options_file).check_matches(
            bilm.options,
            f"The options in {options_file} differ from the component's model config (file vs config)",
            "Build the config from that file (spacy-elmo fill-config, or spacy_elmo.bilm_config) "
            "or pass the options file that belongs to these weights.",
        )
    read_weights(bilm, weights_file)


def load_folder_into(model: Model, folder: BilmFolder) -> None:
    """Copy a biLM folder's weights (any format) into a `spacy-elmo.BiLM` model whose config
    matches the folder's options."""
    folder.read_into(get_bilm(model))
