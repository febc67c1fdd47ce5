"""Reading ELMoForManyLangs model folders (HIT-SCIR's ELMo for the 44 languages of the CoNLL 2018
shared task) into a `BiLM`, exactly: the outputs equal its `Embedder.sents2elmo(..., output_layer=-2)`.

A folder holds `config.json` (whose `config_path` names the network config: found in the folder
as given, then by its file name in the folder, then among the two configs its package ships, which
`elmoformanylangs_configs/` carries), `char.dic` and `word.dic` (token_ids.py), and the state
dicts `token_embedder.pkl` and `encoder.pkl` written by `torch.save`, read here with
`weights_only=True` only: a file that needs more than tensors is refused.

Its network, as ours: char CNN (max-pool, then the activation), highway layers, the word embedding
joined in front of the CNN's output, a projection to P; per direction an LSTM stack with cell and
projection clipping, residual connections from the second layer on; layer 0 = the token layer twice.
What differs is only how it is stored: its highway layers gate the carried input (ours gate the
transform: the gate's weights change sign), its gates are ordered [i, f, g, o] with the forget bias
inside the stored bias (ours [i, f, o, j], the +1 added at run time). Its encoder keeps the LSTM
state from batch to batch; a `BiLM` starts every batch from zeros (stateless), which is what its
first batch after loading computes.
"""

from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import torch

from ..errors import ElmoFormatError
from ..output_folders import is_plain_file
from ..types import PathLike
from .char_encoder import conv_bias
from ..token_ids import LearnedVocab, read_lexicon
from .model import BiLM
from .options import ElmoOptions, read_json_object

PACKAGED_CONFIGS = Path(__file__).parent / "elmoformanylangs_configs"
# What marks a folder as an ELMoForManyLangs model.
MARKER_FILES = ("config.json", "token_embedder.pkl", "encoder.pkl")
# Its gate blocks [i, f, g, o] -> ours [i, f, o, j].
_TO_INTERNAL = [0, 1, 3, 2]


def is_elmoformanylangs_folder(folder: PathLike) -> bool:
    """RETURNS (bool): whether `folder` holds an ELMoForManyLangs model (config.json and both state dicts)."""
    return all((Path(folder) / name).is_file() for name in MARKER_FILES)


def network_config(folder: PathLike) -> Tuple[Dict[str, Any], Path]:
    """Find and read the network config that the folder's config.json names, where
    ELMoForManyLangs looks for it.

    RETURNS (Tuple[Dict[str, Any], Path]): the config and where it was found.
    """
    folder = Path(folder)
    config = _read_json(folder / "config.json")
    name = config.get("config_path")
    if not isinstance(name, str) or not name:
        raise ElmoFormatError(f"{folder / 'config.json'} has no 'config_path': it is not an ELMoForManyLangs config.json")
    # Only inside the folder or among the packaged configs, by file name: a path that is absolute
    # or climbs out would make the model depend on (and read) any file on the machine.
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    candidates = [folder / base, PACKAGED_CONFIGS / base] if base not in ("", ".", "..") else []
    found = next((path for path in candidates if is_plain_file(path)), None)
    linked = next((path for path in candidates if path.is_symlink()), None)
    if found is None and linked is not None:
        raise ElmoFormatError(
            f"{linked} is a symbolic link: spacy-elmo reads a model's files through no link (it could point anywhere). "
            "Copy the network config into the model folder instead"
        )
    if found is None:
        raise ElmoFormatError(
            f"{folder / 'config.json'} names the network config {name!r}, which is neither in {folder} nor one of the "
            f"configs ELMoForManyLangs ships ({', '.join(p.name for p in sorted(PACKAGED_CONFIGS.glob('*.json')))}): "
            "put that file in the model folder."
        )
    return _read_json(found), found


def read_folder(folder: PathLike) -> Tuple[ElmoOptions, LearnedVocab]:
    """Read the hyperparameters and vocabularies of an ELMoForManyLangs folder (not the weights).

    RETURNS (Tuple[ElmoOptions, LearnedVocab]): the options (char_vocab "learned") and the vocabulary.
    """
    folder = Path(folder)
    config, path = network_config(folder)
    try:
        encoder, embedder = config["encoder"], config["token_embedder"]
        if str(encoder["name"]).lower() != "elmo" or str(embedder["name"]).lower() != "cnn":
            raise ElmoFormatError(
                f"{path}: encoder {encoder['name']!r} with token_embedder {embedder['name']!r} is not supported; "
                "spacy-elmo loads the 'elmo' encoder with the 'cnn' token embedder (every released ELMoForManyLangs model)."
            )
        if not embedder["char_dim"]:
            raise ElmoFormatError(f"{path}: a model without characters (char_dim 0) is not supported.")
        if encoder["dim"] == encoder["projection_dim"]:
            raise ElmoFormatError(f"{path}: an LSTM without a projection (dim == projection_dim) is not supported.")
        chars = read_lexicon(folder / "char.dic")
        words = read_lexicon(folder / "word.dic") if embedder.get("word_dim", 0) > 0 else None
        vocab = LearnedVocab(chars, words)
        options = ElmoOptions(
            cell_dim=encoder["dim"],
            projection_dim=encoder["projection_dim"],
            n_layers=encoder["n_layers"],
            # it clips where the value is truthy
            cell_clip=encoder.get("cell_clip") or None,
            proj_clip=encoder.get("proj_clip") or None,
            use_skip_connections=True,
            char_embed_dim=embedder["char_dim"],
            filters=embedder["filters"],
            n_highway=embedder["n_highway"],
            activation=embedder["activation"],
            n_characters=vocab.n_chars,
            max_characters_per_token=embedder["max_characters_per_token"],
            char_vocab="learned",
            word_dim=embedder.get("word_dim", 0) if words is not None else 0,
            n_words=vocab.n_words,
        )
    except ElmoFormatError as err:
        if str(folder) in str(err):
            raise
        raise ElmoFormatError(f"{folder}: {err}") from None
    except (KeyError, TypeError, ValueError) as err:
        raise ElmoFormatError(f"{path} is not an ELMoForManyLangs network config: missing or malformed {err!s}.") from None
    return options, vocab


def read_state_dict(path: PathLike) -> Dict[str, torch.Tensor]:
    """Read a state dict written by `torch.save`, allowing nothing but tensors in it.

    RETURNS (Dict[str, torch.Tensor]): name -> float32 tensor.
    """
    path = Path(path)
    if not path.is_file():
        raise ElmoFormatError(f"{path} not found: an ELMoForManyLangs model folder needs it")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many kinds for a damaged file
        if "weights_only" in str(err) or "Unsupported" in str(err):
            raise ElmoFormatError(
                f"{path} holds more than a plain state dict of tensors: refused, since loading it would run code from "
                "the file. Only state dicts (torch.save(module.state_dict())) are read."
            ) from None
        raise ElmoFormatError(f"Cannot read {path} ({type(err).__name__}): the file is truncated or damaged; download it again.") from None
    if not isinstance(state, Mapping) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ElmoFormatError(f"{path} is not a state dict (names -> tensors): refused.")
    return {name: tensor.float() for name, tensor in state.items()}


def read_weights(bilm: BiLM, folder: PathLike) -> None:
    """Copy an ELMoForManyLangs model's weights and vocabulary into `bilm`, after checking that its
    options match and that every tensor is there, with its shape, and finite."""
    folder = Path(folder)
    options, vocab = read_folder(folder)
    options.check_matches(
        bilm.options,
        f"The ELMoForManyLangs model in {folder} differs from the biLM's config (folder vs config)",
        "Build the config from that folder (spacy-elmo init-config --bilm FOLDER, or spacy_elmo.add_elmo(nlp, FOLDER)).",
    )
    for file_name, expected in (("token_embedder.pkl", _token_embedder_tensors(bilm)), ("encoder.pkl", _encoder_tensors(bilm))):
        path = folder / file_name
        state = read_state_dict(path)
        missing = [name for name in expected if name not in state]
        unexpected = [name for name in state if name not in expected]
        if missing or unexpected:
            raise ElmoFormatError(
                f"{path} does not fit its config: missing {', '.join(missing[:3]) or 'nothing'}, unexpected "
                f"{', '.join(unexpected[:3]) or 'nothing'}. The config.json or network config does not belong to these weights."
            )
        for name, (shape, copy) in expected.items():
            if tuple(state[name].shape) != shape:
                raise ElmoFormatError(
                    f"{path}: '{name}' has shape {tuple(state[name].shape)}, but the config and vocabularies ask for {shape}. "
                    "The config, char.dic or word.dic does not belong to these weights."
                )
            if not bool(torch.isfinite(state[name]).all()):
                raise ElmoFormatError(f"{path}: '{name}' holds NaN or infinite values: the file is damaged.")
        with torch.no_grad():
            for name, (_, copy) in expected.items():
                copy(state[name])
    bilm.char_encoder.set_vocab(vocab)
    bilm.clear_caches()


def load_elmoformanylangs(folder: PathLike, cache_size: Optional[int] = None) -> BiLM:
    """Load an ELMoForManyLangs model folder as a `BiLM` (eval mode, on the CPU).

    folder (PathLike): the folder with config.json, char.dic, word.dic, token_embedder.pkl, encoder.pkl.
    cache_size (Optional[int]): see `BiLM`; None for its default.
    RETURNS (BiLM): the biLM; `bilm.embed(sentences)` gives its `sents2elmo(sentences, output_layer=-2)`.
    """
    options, _ = read_folder(folder)
    bilm = BiLM(options) if cache_size is None else BiLM(options, cache_size=cache_size)
    read_weights(bilm, folder)
    return bilm.eval()


_Copy = Callable[[torch.Tensor], object]


def _into(param: torch.Tensor, convert: Callable[[torch.Tensor], torch.Tensor] = lambda t: t) -> _Copy:
    return lambda tensor: param.copy_(convert(tensor))


def _token_embedder_tensors(bilm: BiLM) -> Dict[str, Tuple[Tuple[int, ...], _Copy]]:
    opts, enc = bilm.options, bilm.char_encoder
    F, E = opts.n_filters, opts.char_embed_dim
    out: Dict[str, Tuple[Tuple[int, ...], _Copy]] = {}

    def chars(tensor: torch.Tensor) -> None:
        enc.char_embed[0].zero_()
        enc.char_embed[1:].copy_(tensor)

    out["char_emb_layer.embedding.weight"] = ((opts.n_characters, E), chars)
    if enc.word_embed is not None:
        out["word_emb_layer.embedding.weight"] = ((opts.n_words, opts.word_dim), _into(enc.word_embed))
    for i, ((width, n), conv) in enumerate(zip(opts.filters, enc.conv_layers)):
        out[f"convolutions.{i}.weight"] = ((n, E, width), _into(conv.weight))
        out[f"convolutions.{i}.bias"] = ((n,), _into(conv_bias(conv)))
    for k, highway in enumerate(enc.highway_layers):
        # its rows [transform; gate], the gate on the carried input: ours [carry | transform] columns,
        # the gate on the transform, so the gate's weights change sign
        out[f"highways._layers.{k}.weight"] = ((2 * F, F), _into(highway.weight, lambda t: torch.cat([-t[F:].t(), t[:F].t()], dim=1)))
        out[f"highways._layers.{k}.bias"] = ((2 * F,), _into(highway.bias, lambda t: torch.cat([-t[F:], t[:F]])))
    assert enc.projection is not None  # always there with a learned vocabulary
    out["projection.weight"] = ((opts.projection_dim, opts.token_input_dim), _into(enc.projection.weight))
    out["projection.bias"] = ((opts.projection_dim,), _into(enc.projection.bias))
    return out


def _gates(tensor: torch.Tensor) -> torch.Tensor:
    """Its [i, f, g, o] row blocks in our order [i, f, o, j]."""
    blocks = tensor.chunk(4, dim=0)
    return torch.cat([blocks[k] for k in _TO_INTERNAL], dim=0)


def _encoder_tensors(bilm: BiLM) -> Dict[str, Tuple[Tuple[int, ...], _Copy]]:
    opts = bilm.options
    C, P = opts.cell_dim, opts.projection_dim
    out: Dict[str, Tuple[Tuple[int, ...], _Copy]] = {}
    forget = torch.zeros(4 * C)
    forget[C : 2 * C] = 1.0  # stored in its bias; ours adds it at run time
    for depth, layer in enumerate(bilm.lstm_layers):
        assert layer.proj_weight is not None
        for d, direction in enumerate(("forward", "backward")):
            prefix = f"{direction}_layer_{depth}"
            out[f"{prefix}.input_linearity.weight"] = ((4 * C, layer.input_dim), _into(layer.input_weight[d], lambda t: _gates(t).t()))
            out[f"{prefix}.state_linearity.weight"] = ((4 * C, P), _into(layer.hidden_weight[d], lambda t: _gates(t).t()))
            out[f"{prefix}.state_linearity.bias"] = ((4 * C,), _into(layer.bias[d], lambda t: _gates(t) - forget))
            out[f"{prefix}.state_projection.weight"] = ((P, C), _into(layer.proj_weight[d], lambda t: t.t()))
    return out


def _read_json(path: Path) -> Dict[str, Any]:
    return read_json_object(path, "ELMoForManyLangs file")


__all__: List[str] = ["is_elmoformanylangs_folder", "load_elmoformanylangs", "network_config", "read_folder", "read_weights"]
