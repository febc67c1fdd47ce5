"""UsageIndex: the usages of words in a corpus, each with its ELMo vector, searchable by cosine.

A usage index folder (kind "usage-index", see output_folders.py) holds
- `vectors.bin`: float16 (n_usages, D), each usage's vector: a biLM layer or a mix of layers
  (`layer_weights`), memory-mapped when read; `norms.npy` their float32 norms;
- `layers.bin` (built with `--all-layers`, meta "layers" = L + 1): float16 (n_usages, L + 1, D), every
  layer of each usage, so that a query picks the layer or a mix (`with_layer`) without embedding again;
- `context.bin` (with `--all-layers`, meta "context"): float16 (n_usages, L + 1, D), each usage's context-only
  vectors at every layer: the forward half at the token before it beside the backward half at the token after it,
  what the biLM predicts the word from, blind to its spelling (`with_layer("context:top")`);
- `usage_sentence.npy`, `usage_token.npy`, `usage_start.npy`, `usage_end.npy`, `usage_key.npy`: per
  usage its sentence, its token's index and character offsets in that sentence, and its key (the
  word's lowercase form, or its lemma);
- `sentences.jsonl`: per sentence its text, corpus file and document number (and, for a WUG dataset's
  usages, the usage's identifier "id" and its "grouping");
- `keys.json`: the key strings; `types.json` + `type_vectors.bin`: every word type of the indexed
  sentences, its count and its context-free token-layer vector (float16, P wide);
- `meta.json`, written last: the pipeline it was built with, the fingerprint of its biLM, the layer
  weights, how keys were matched, and the sizes the other files must have;
- optionally `ann.faiss` + `ann.json`: an approximate search (ann.py), used by queries where present.
"""

import json
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy
import torch

from ..bilm.fingerprint import bilm_fingerprint  # noqa: F401  (where the index's users find it)
from ..errors import InputError
from ..output_folders import read_array_file, read_json_file

if TYPE_CHECKING:  # pragma: no cover
    from spacy.language import Language
    from spacy.tokens import Doc, Token

    from .ann import AnnSearch

from ..types import PathLike
from .capitals import as_read
from .layout import ARRAYS, CONTEXT, FORMAT_VERSION, LAYERS, META, USAGE_INDEX
from .storage import IndexWriter

# what meta.json must hold besides the sizes
_META_KEYS = ("kind", "format", "n_usages", "dim", "n_sentences", "n_types", "type_dim", "fingerprint", "layer_weights", "match", "model")

_AGAIN = "build the index again (spacy-elmo index-usages MODEL CORPUS OUTPUT)"
_CHUNK_ROWS = 1 << 16  # usages scored at a time (float16 -> float32 conversion in pieces)
# a query among fewer usages (one word's) is searched exactly, also where an approximate search is built
ANN_MIN_ROWS = 100_000


class Usage(NamedTuple):
    """One usage of a word in the indexed corpus, and its cosine to the query."""

    text: str
    sentence: str
    start: int  # character offsets of the word in `sentence`
    end: int
    token: int  # the word's token index in the sentence
    doc: int  # the document's number in its corpus file (0-based)
    file: str
    score: float


MAX_LAYER_WEIGHT = 1e6  # a layer's values reach about 20: a mix stays far inside float32's range (3.4e38)


def parse_layer(layer: Union[str, int, Sequence[float]], n_output_layers: int) -> numpy.ndarray:
    """The weights of the layers in a usage's vector: "top", "average", a layer number (0 = the
    token layer) or one weight per layer ("0.2,0.3,0.5").

    RETURNS (numpy.ndarray): float32 (n_output_layers,).
    """
    weights = numpy.zeros(n_output_layers, dtype="float32")
    text = layer.strip() if isinstance(layer, str) else layer
    if text == "top":
        weights[-1] = 1.0
    elif text == "average":
        weights[:] = 1.0 / n_output_layers
    elif isinstance(text, int) or (isinstance(text, str) and text.isdigit()):
        j = int(text)
        if not 0 <= j < n_output_layers:
            raise InputError(f"layer {j} does not exist: the biLM has layers 0 (token layer) to {n_output_layers - 1}")
        weights[j] = 1.0
    else:
        try:
            values = [float(x) for x in text.split(",")] if isinstance(text, str) else [float(x) for x in text]
        except ValueError:
            values = []
        if len(values) != n_output_layers or not all(numpy.isfinite(values)):
            raise InputError(
                f"layer {layer!r}: give 'top', 'average', a layer number (0 to {n_output_layers - 1}) "
                f"or {n_output_layers} comma-separated weights"
            )
        if max(abs(v) for v in values) > MAX_LAYER_WEIGHT:
            raise InputError(
                f"layer {layer!r}: a weight beyond +-{MAX_LAYER_WEIGHT:g} would overflow the float32 vectors it mixes: "
                "give weights such as 0.2,0.3,0.5 (only their ratios matter for cosines)"
            )
        weights[:] = values
    if not numpy.abs(weights).sum() > 0:
        raise InputError(f"layer {layer!r}: the weights are all zero, which makes every vector zero: give at least one non-zero weight")
    return weights


CONTEXT_PREFIX = "context:"


def split_representation(spec: Union[str, int, Sequence[float]]) -> Tuple[str, Union[str, int, Sequence[float]]]:
    """RETURNS: ("target", layer) for a layer of the target's own vectors ("top", "1", weights), or ("context",
    layer) for "context:LAYER" (the context-only vectors; "context" alone is "context:top")."""
    if isinstance(spec, str):
        text = spec.strip()
        if text == "context":
            return "context", "top"
        if text.startswith(CONTEXT_PREFIX):
            return "context", text[len(CONTEXT_PREFIX) :]
    return "target", spec


def describe_representation(source: str, weights: List[float]) -> str:
    """RETURNS (str): "layer 2" or "context-only, layer 2" (see `describe_layer`)."""
    return describe_layer(weights) if source == "target" else f"context-only, {describe_layer(weights)}"


def describe_layer(weights: List[float]) -> str:
    """RETURNS (str): "layer 2", "average of layers 0-2" or "mix 0.2/0.3/0.5"."""
    nonzero = [j for j, w in enumerate(weights) if w]
    if len(nonzero) == 1 and weights[nonzero[0]] == 1.0:
        return f"layer {nonzero[0]}" + (" (token layer)" if nonzero[0] == 0 else "")
    if len(set(weights)) == 1:
        return f"average of layers 0-{len(weights) - 1}"
    return "mix " + "/".join(f"{w:g}" for w in weights)


def usage_key(token: "Token", match: str) -> str:
    """RETURNS (str): the key a usage of `token` is filed under: its lemma, lowercased, where
    `match` is "lemma", else its lowercase form."""
    if match == "wug":  # a WUG dataset's usages are filed under their target lemma: a query's lemma, where it has one
        return (token.lemma_ or token.text).lower()
    return token.lemma_.lower() if match == "lemma" else token.lower_


MATCHES = ("lower", "lemma", "wug")


class MixedLayers:
    """The rows of every-layer vectors (n, L + 1, D) as one mix of them, read like a (n, D) float16 matrix:
    what an index keeping every layer answers with for a layer or mix picked at query time."""

    def __init__(self, layers: numpy.ndarray, weights: numpy.ndarray) -> None:
        self.layers, self.weights = layers, numpy.asarray(weights, dtype="float32")
        self.shape = (int(layers.shape[0]), int(layers.shape[2]))
        self.dtype = numpy.dtype("float16")

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any) -> numpy.ndarray:
        block = numpy.asarray(self.layers[rows], dtype="float32")
        with numpy.errstate(over="ignore", invalid="ignore"):
            return numpy.einsum("...ld,l->...d", block, self.weights).astype("float16")


def mixed(layers: numpy.ndarray, weights: numpy.ndarray) -> numpy.ndarray:
    """RETURNS (numpy.ndarray): float32 (n_tokens, D), the weighted sum of (L + 1, n_tokens, D) layers."""
    if layers.shape[0] != len(weights):
        raise InputError(f"the Doc's ELMo has {layers.shape[0]} layers, the index {len(weights)}: query with the index's pipeline")
    return numpy.tensordot(weights, layers.astype("float32", copy=False), axes=1)


class UsageIndex:
    """The usages of words in a corpus with their ELMo vectors (see the module docstring for the
    files). Build one with `spacy-elmo index-usages` or `build_usage_index`; read it with
    `UsageIndex().from_disk(path)`.

    >>> index = UsageIndex().from_disk("play_index")
    >>> doc = index.nlp("Chico Ruiz made a spectacular play on Alusik's grounder")
    >>> index.most_similar(doc[5], n=5)
    """

    def __init__(self) -> None:
        self.path: Optional[Path] = None
        self.meta: Dict[str, Any] = {}
        self.vectors = numpy.zeros((0, 0), dtype="float16")
        self.arrays: Dict[str, numpy.ndarray] = {}
        self.sentences: List[Dict[str, Any]] = []
        self.keys: List[str] = []
        self.types: List[Tuple[str, int]] = []
        self.type_vectors = numpy.zeros((0, 0), dtype="float16")
        self._key_ids: Dict[str, int] = {}
        self._by_key: Optional[Tuple[numpy.ndarray, numpy.ndarray]] = None
        self._nlp: Optional["Language"] = None
        self._elmo = ""  # the component of _nlp that holds the index's biLM
        self._checked: Dict[int, Any] = {}  # id -> vocab of each pipeline found to hold the index's biLM
        self.ann: Optional["AnnSearch"] = None
        self.layers: Optional[numpy.ndarray] = None  # (n, L + 1, D) every layer, where the index keeps them
        self.context: Optional[numpy.ndarray] = None  # (n, L + 1, D) context-only vectors, where the index keeps them
        self._weights: Optional[numpy.ndarray] = None  # the layer picked at query time (with_layer)
        self.representation = "target"  # or "context": which vectors the index answers with (with_layer)
        self._stored: numpy.ndarray = self.vectors  # vectors.bin, whichever layer is picked
        self._stored_norms = numpy.zeros(0, dtype="float32")

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def __repr__(self) -> str:
        if not self.meta:
            return "UsageIndex(empty: read one with .from_disk(path))"
        every = ", every layer kept" if self.layers is not None else ""
        return (
            f"UsageIndex({str(self.path)!r}, bilm={self.meta.get('model') or 'in memory'!r}, "
            f"layer={describe_representation(self.representation, list(map(float, self.layer_weights)))!r}{every}, "
            f"usages={len(self)}, words={len(self.keys)}, "
            f"match={self.match!r})"
        )

    @property
    def layer_weights(self) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): the weight of each layer in the vectors answered with (see `with_layer`)."""
        if self._weights is not None:
            return self._weights
        return numpy.asarray(self.meta["layer_weights"], dtype="float32")

    @property
    def n_layers(self) -> int:
        """RETURNS (int): the biLM's output layers (L + 1)."""
        return len(self.meta["layer_weights"])

    def with_layer(self, layer: Union[str, int, Sequence[float]]) -> "UsageIndex":
        """The index answering with another layer or mix ("top", "average", a layer number, one weight per
        layer): the stored vectors where they are that one, else every layer kept (`index-usages --all-layers`).
        "context:LAYER" ("context:top", "context:average", "context:1") answers with the context-only vectors
        of that layer or mix (see the module docstring), kept with every layer.

        RETURNS (UsageIndex): a view of this index (the same files); this one is unchanged.
        """
        import copy

        source, layer = split_representation(layer)
        weights = parse_layer(layer, self.n_layers)
        stored = source == "target" and numpy.array_equal(weights, numpy.asarray(self.meta["layer_weights"], dtype="float32"))
        if stored and self._weights is None and self.representation == "target":
            return self
        view = copy.copy(self)
        view.arrays = dict(self.arrays)
        view._weights, view.representation = weights, source
        if stored:
            view.vectors, view._weights = self._stored, None
            view.arrays["norms"] = self._stored_norms
            return view
        array = self.layers if source == "target" else self.context
        if array is None:
            kept = describe_layer(list(map(float, self.meta["layer_weights"])))
            wanted = describe_representation(source, list(map(float, weights)))
            raise InputError(
                f"{self.path} keeps only its {kept} vectors: build it with --all-layers (every layer and the context-only "
                f"vectors) to pick {wanted} at query time" + (f", or build it with --layer {layer}" if source == "target" else "")
            )
        single = numpy.flatnonzero(weights)
        vectors: Any = array[:, int(single[0])] if len(single) == 1 and weights[single[0]] == 1.0 else MixedLayers(array, weights)
        norms = numpy.empty(len(self), dtype="float32")
        for start in range(0, len(self), _CHUNK_ROWS):
            block = numpy.asarray(vectors[start : start + _CHUNK_ROWS], dtype="float32")
            norms[start : start + len(block)] = numpy.linalg.norm(block, axis=1)
        if not (numpy.isfinite(norms) & (norms > 0)).all():
            raise InputError(
                f"{self.path}: {LAYERS if source == 'target' else CONTEXT} holds usage vectors that are not finite, or zero, in this mix: "
                f"{_AGAIN}"
            )
        view.vectors, view.ann = vectors, None  # the approximate search was built over the stored vectors
        view.arrays["norms"] = norms
        return view

    @property
    def fingerprint(self) -> str:
        return str(self.meta["fingerprint"])

    @property
    def match(self) -> str:
        """RETURNS (str): "lower" (keys are the words' lowercase forms), "lemma", or "wug" (a WUG dataset's marked
        usages, filed under their target lemma)."""
        return str(self.meta["match"])

    def from_disk(self, path: PathLike, *, exclude: Sequence[str] = ()) -> "UsageIndex":
        """Read the index folder at `path` (vectors memory-mapped); every file is checked
        against meta.json, and a damaged or missing one is an InputError naming it. `exclude`
        ["ann"] leaves out the approximate search."""
        path = Path(path)
        if not (path / META).is_file():
            raise InputError(f"{path} is not a usage index (no {META}): {_AGAIN}")
        meta = read_json_file(path / META, _AGAIN)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION or meta.get("kind") != USAGE_INDEX:
            raise InputError(f"{path / META} is not the meta of a usage index of format {FORMAT_VERSION}: {_AGAIN}")
        missing = [k for k in _META_KEYS if k not in meta]
        if missing:
            raise InputError(f"{path / META} is damaged (it lacks {', '.join(missing)}): {_AGAIN}")
        try:
            n, dim, n_types, p_dim = (int(meta[k]) for k in ("n_usages", "dim", "n_types", "type_dim"))
            n_sentences = int(meta["n_sentences"])
            weights = numpy.asarray(meta["layer_weights"], dtype="float32")
        except (TypeError, ValueError):
            raise InputError(f"{path / META} is damaged (sizes or layer weights are not numbers): {_AGAIN}") from None
        if weights.ndim != 1 or not numpy.isfinite(weights).all() or not numpy.abs(weights).sum() > 0:
            raise InputError(f"{path / META} is damaged (its layer weights are not finite numbers, or all zero): {_AGAIN}")
        if meta["match"] not in MATCHES:
            raise InputError(f"{path / META} is damaged (match {meta['match']!r}): {_AGAIN}")
        self.path, self.meta, self._by_key, self._nlp, self._elmo = path, meta, None, None, ""
        self.vectors = _memmap(path / "vectors.bin", (n, dim))
        self.layers, self.context, self._weights, self.representation = None, None, None, "target"
        if meta.get("layers"):
            if not isinstance(meta["layers"], int) or meta["layers"] != len(weights):
                raise InputError(f"{path / META} is damaged (layers {meta['layers']!r}, layer weights {len(weights)}): {_AGAIN}")
            self.layers = _memmap(path / LAYERS, (n, len(weights) * dim)).reshape(n, len(weights), dim)
            if meta.get("context"):
                self.context = _memmap(path / CONTEXT, (n, len(weights) * dim)).reshape(n, len(weights), dim)
        self.type_vectors = _memmap(path / "type_vectors.bin", (n_types, p_dim))
        self.arrays = {}
        for name in ARRAYS:
            array = read_array_file(path / name, _AGAIN, mmap=True)
            if array.shape != (n,):
                raise InputError(f"{path / name} holds {array.shape[0] if array.ndim else 0} rows, meta.json says {n}: {_AGAIN}")
            self.arrays[name[:-4]] = array
        norms = self.arrays["norms"]
        bad = int(numpy.count_nonzero(~(numpy.isfinite(norms) & (norms > 0)))) if n else 0
        if bad:
            raise InputError(f"{path}: {bad} of its {n} usage vectors are not finite or zero, and would answer wrongly: {_AGAIN}")
        self._stored, self._stored_norms = self.vectors, norms
        self.keys = _read_list(path / "keys.json")
        self.types = [(str(t), int(c)) for t, c in _read_list(path / "types.json")]
        self.sentences = _read_jsonl(path / "sentences.jsonl")
        if len(self.types) != n_types or len(self.sentences) != n_sentences:
            raise InputError(f"{path}: types.json or sentences.jsonl does not hold what meta.json says: {_AGAIN}")
        if n and (int(self.arrays["usage_key"].max()) >= len(self.keys) or int(self.arrays["usage_sentence"].max()) >= n_sentences):
            raise InputError(f"{path}: usage tables point past keys.json or sentences.jsonl: {_AGAIN}")
        self._key_ids = {k: i for i, k in enumerate(self.keys)}
        from .ann import AnnSearch

        self.ann = None if "ann" in exclude else AnnSearch.load(path, n, dim)
        return self

    def to_disk(self, path: PathLike, *, exclude: Sequence[str] = ()) -> None:
        """Write a copy of the index to the folder `path` (new, empty, or a usage index)."""
        if not self.meta:
            raise ValueError("an empty UsageIndex: build one (build_usage_index) or read one (from_disk) first")
        with IndexWriter(path, self.meta) as writer:
            writer.add_sentences(self.sentences)
            for start in range(0, len(self), _CHUNK_ROWS):
                rows = slice(start, start + _CHUNK_ROWS)
                writer.add_usages(
                    numpy.asarray(self._stored[rows]),
                    {name: numpy.asarray(a[rows]) for name, a in self.arrays.items() if name != "norms"},
                    [self.keys[k] for k in self.arrays["usage_key"][rows]],
                    None if self.layers is None else numpy.asarray(self.layers[rows]),
                    None if self.context is None else numpy.asarray(self.context[rows]),
                )
            writer.finish(self.types, numpy.asarray(self.type_vectors))

    # --- the pipeline that embeds queries

    @property
    def nlp(self) -> "Language":
        """RETURNS (Language): the pipeline that embeds queries: the one set with `use_pipeline`,
        else the one the index was built with (loaded on first use)."""
        if self._nlp is None:
            model = str(self.meta["model"])
            if not model or (not Path(model).exists() and "/" in model):
                raise InputError(
                    f"the index {self.path} was built with {model or 'a pipeline in memory'}, which is not there: "
                    "give the pipeline (--model, or UsageIndex.use_pipeline)"
                )
            self.use_model(model)
        return self._nlp  # type: ignore[return-value]

    def use_model(self, model: PathLike) -> "UsageIndex":
        """Embed queries with the pipeline (or original ELMo files) at `model`, loaded as the index's
        was; it must hold the index's biLM."""
        from ..pipeline.loading import load_elmo_pipeline
        from .lemmas import LOOKUP_LEMMATIZER, add_lookup_lemmatizer

        nlp = load_elmo_pipeline(model, **self.meta.get("load", {}))
        lemmatizer = str(self.meta.get("lemmatizer") or "")
        if self.match == "lemma" and lemmatizer.startswith(LOOKUP_LEMMATIZER) and "lemmatizer" not in nlp.pipe_names:
            add_lookup_lemmatizer(nlp)  # as the index was built: its keys are these lemmas
        return self.use_pipeline(nlp)

    def use_pipeline(self, nlp: "Language") -> "UsageIndex":
        """Embed queries with `nlp`, which must hold the index's biLM (checked by fingerprint)."""
        self._embed_with(nlp, self.check_pipeline(nlp))
        return self

    def _embed_with(self, nlp: "Language", elmo: str) -> None:
        """Use `nlp`, whose component `elmo` is known to hold the index's biLM."""
        self._nlp, self._elmo = nlp, elmo
        self._checked[id(nlp.vocab)] = nlp.vocab

    def matching_elmo(self, nlp: "Language") -> Optional[str]:
        """RETURNS (Optional[str]): the first elmo component of `nlp` whose biLM is the index's
        (same fingerprint), None if none is."""
        from ..pipeline.loading import elmo_names, elmo_pipe

        return next((name for name in elmo_names(nlp) if bilm_fingerprint(elmo_pipe(nlp, name).bilm) == self.fingerprint), None)

    def check_pipeline(self, nlp: "Language") -> str:
        """Raise an InputError unless an elmo component of `nlp` holds the biLM the index was built with.

        RETURNS (str): the name of that component.
        """
        from ..pipeline.loading import elmo_names

        if not elmo_names(nlp):
            raise InputError("the pipeline has no elmo component: query with the pipeline the index was built with")
        elmo = self.matching_elmo(nlp)
        if elmo is None:
            raise InputError(
                f"the pipeline's biLM differs from the one the index {self.path} was built with ({self.meta['model']}): "
                "query with that pipeline, or build the index again with this one"
            )
        self._checked[id(nlp.vocab)] = nlp.vocab
        return elmo

    # --- queries

    def vector_of(self, token: "Token") -> numpy.ndarray:
        """RETURNS (numpy.ndarray): float32 (D,), `token`'s vector as the index stores usages
        (its Doc must have been run through the index's pipeline). In an index that lets the biLM
        read sentences set in capitals lowercased (the default, capitals.py), a query sentence set
        in capitals is read so too."""
        data = token.doc._.get("elmo") if token.doc.has_extension("elmo") else None
        if data is None:
            raise InputError("the token's Doc has no ELMo layers (doc._.elmo): make it with the index's pipeline (index.nlp(text))")
        position = token.i
        if self.meta.get("fold_capitals", False):
            sentence = token.sent if token.doc.has_annotation("SENT_START") else token.doc[:]
            as_written = sentence.as_doc()
            read = as_read(as_written, fold=True)
            if read is not as_written:  # set in capitals: read lowercased, as the index read its sentences
                data, position = self._layers_of(read), token.i - sentence.start
        vector = mixed(data.layers[:, position : position + 1], self.layer_weights)[0]
        if vector.shape[0] != self.vectors.shape[1]:
            raise InputError(
                f"the Doc's ELMo vectors are {vector.shape[0]} wide, the index's {self.vectors.shape[1]}: query with the index's pipeline"
            )
        return vector

    def _layers_of(self, doc: "Doc") -> Any:
        """RETURNS (ElmoData): `doc`'s layers from the index's biLM."""
        from ..pipeline.loading import elmo_pipe

        nlp = self.nlp  # (loads the index's pipeline where none is set, which sets self._elmo)
        return next(iter(elmo_pipe(nlp, self._elmo).pipe([doc])))._.elmo

    def key_of(self, token: "Token") -> str:
        """RETURNS (str): the key the index files `token`'s usages under."""
        if self.match == "lemma" and not token.lemma_:
            raise InputError("the index keys usages by lemma, and the query pipeline set none: query with the index's pipeline")
        if self.match == "lemma" and self.meta.get("fold_capitals", False):
            from .capitals import lemma_setters, lemmas_as_read

            sentence = token.sent if token.doc.has_annotation("SENT_START") else token.doc[:]
            lemmas = lemmas_as_read(sentence, self.nlp, lemma_setters(self.nlp))
            if lemmas is not None:  # set in capitals: its lemma as the index read such sentences
                return lemmas[token.i - sentence.start].lower()
        return usage_key(token, self.match)

    def rows_of(self, key: str) -> numpy.ndarray:
        """RETURNS (numpy.ndarray): the rows of the usages filed under `key`."""
        if self._by_key is None:
            order = numpy.argsort(self.arrays["usage_key"], kind="stable")
            starts = numpy.searchsorted(self.arrays["usage_key"][order], numpy.arange(len(self.keys) + 1))
            self._by_key = (order, starts)
        k = self._key_ids.get(key)
        if k is None:
            return numpy.zeros(0, dtype=numpy.int64)
        order, starts = self._by_key
        return order[starts[k] : starts[k + 1]]

    def most_similar(
        self, token: "Token", n: int = 5, same_word: bool = True, exact: bool = False, approximate: bool = False
    ) -> List[Usage]:
        """The `n` usages nearest to `token` in its context, by cosine.

        token (Token): a token of a Doc made by the index's pipeline (`index.nlp`, or one set with
            `use_pipeline`, which checks that its biLM is the index's).
        same_word (bool): only usages of the same word (same key); False searches every usage.
        exact (bool): search every candidate exactly, also where an approximate search is built.
        approximate (bool): use the approximate search (index-ann) also below ANN_MIN_ROWS usages.
        RETURNS (List[Usage]): best first; empty, with a warning, where the index holds no usage
            of the token's word.
        """
        if isinstance(token, str):
            raise TypeError(
                f"most_similar takes a token in its context, not the string {token!r}: ELMo gives a word a vector only "
                f"in a sentence. doc = index.nlp('He wore a new suit .'); index.most_similar(doc[4]). A word's "
                f"context-free neighbours: index.type_neighbours({token!r})"
            )
        if id(token.doc.vocab) not in self._checked and token.doc.vocab is not self.nlp.vocab:
            raise InputError(
                "the token's Doc was not made by the index's pipeline, so its biLM cannot be checked against the index's: "
                "make the Doc with index.nlp, or first give your pipeline to index.use_pipeline(nlp), which checks it"
            )
        rows = self.rows_of(self.key_of(token)) if same_word else None
        if rows is not None and len(rows) == 0:
            warnings.warn(
                f"the usage index holds no usage of {token.text!r} (key {self.key_of(token)!r}): same_word=False searches every usage",
                UserWarning,
                stacklevel=2,
            )
            return []
        return self.nearest(self.vector_of(token), n, rows, exact=exact, approximate=approximate)

    def searches_approximately(self, n_searched: int, exact: bool = False, approximate: bool = False) -> bool:
        """RETURNS (bool): whether a search over `n_searched` usages uses the approximate search: where
        one is built, above ANN_MIN_ROWS usages or when `approximate` asks for it, unless `exact`."""
        if exact and approximate:
            raise ValueError("a search is exact or approximate, not both")
        if approximate and self.ann is None:
            raise InputError(f"{self.path} has no approximate search: build it first (spacy-elmo index-ann INDEX), or search exactly")
        return self.ann is not None and not exact and (approximate or n_searched > ANN_MIN_ROWS)

    def nearest(
        self, vector: numpy.ndarray, n: int = 5, rows: Optional[numpy.ndarray] = None, exact: bool = False, approximate: bool = False
    ) -> List[Usage]:
        """The `n` usages (among `rows`, or all) nearest to `vector` by cosine: exact (brute
        force), or, where the index has an approximate search and more than ANN_MIN_ROWS usages
        are searched (or `approximate`), among the candidates it finds, scored exactly (unless `exact`)."""
        found, scores = self.nearest_rows(vector, n, rows, exact, approximate)
        return [self.usage(int(row), float(score)) for row, score in zip(found, scores)]

    def nearest_rows(
        self, vector: numpy.ndarray, n: int = 5, rows: Optional[numpy.ndarray] = None, exact: bool = False, approximate: bool = False
    ) -> Tuple[numpy.ndarray, numpy.ndarray]:
        """`nearest`'s answer as arrays: RETURNS (Tuple[numpy.ndarray, numpy.ndarray]): the rows and
        their cosines, best first (ties: the earlier row first)."""
        empty = (numpy.zeros(0, dtype=numpy.int64), numpy.zeros(0, dtype=numpy.float32))
        if n <= 0:
            return empty
        query = numpy.asarray(vector, dtype="float32")
        norm = float(numpy.linalg.norm(query))
        if not numpy.isfinite(norm) or norm == 0:
            raise InputError("the query vector is not finite, or zero: it has no nearest usages (is the biLM damaged?)")
        query = query / norm
        if rows is not None:
            rows = numpy.sort(numpy.asarray(rows, dtype=numpy.int64))
        if self.searches_approximately(len(self) if rows is None else len(rows), exact, approximate):
            assert self.ann is not None
            rows = self.ann.candidates(query, n, rows)
        query16 = torch.from_numpy(query).half()
        norms = self.arrays["norms"]
        scores_parts, row_parts = [], []
        total = len(self) if rows is None else len(rows)
        for start in range(0, total, _CHUNK_ROWS):
            if rows is None:
                chunk = numpy.arange(start, min(start + _CHUNK_ROWS, total))
                block = self.vectors[start : start + len(chunk)]
            else:
                chunk = rows[start : start + _CHUNK_ROWS]
                block = self.vectors[chunk]
            # float16 products with the unit query: 30x numpy's float32 conversion here, and
            # within 1e-4 of the float64 cosine (the stored float16 values are the larger error)
            products = (torch.from_numpy(numpy.ascontiguousarray(block)) @ query16).float().numpy()
            scores = products / numpy.maximum(norms[chunk], 1e-12)
            if not numpy.isfinite(scores).all():  # a damaged vectors.bin: never answer without those rows
                raise InputError(f"{self.path}: vectors.bin holds values that are not finite: {_AGAIN}")
            # a cosine is at most 1; float16 rounding can put a vector's product with itself just past it
            numpy.clip(scores, -1.0, 1.0, out=scores)
            keep = min(n, len(scores))
            # every row that ties with the n-th best stays a candidate: float16 products tie often,
            # and the final order (score, then row) must not depend on which of them a partition kept
            kth = numpy.partition(scores, len(scores) - keep)[len(scores) - keep]
            best = numpy.flatnonzero(scores >= kth)
            scores_parts.append(scores[best])
            row_parts.append(chunk[best])
        if not scores_parts:
            return empty
        scores, found = numpy.concatenate(scores_parts), numpy.concatenate(row_parts)
        order = numpy.lexsort((found, -scores))[:n]  # ties: the earlier usage first
        return found[order], scores[order]

    def usage(self, row: int, score: float = float("nan")) -> Usage:
        """RETURNS (Usage): usage `row` of the index."""
        sentence = self.sentences[int(self.arrays["usage_sentence"][row])]
        start, end = int(self.arrays["usage_start"][row]), int(self.arrays["usage_end"][row])
        files = self.meta.get("files", [])
        file_number = int(sentence.get("file", 0))
        return Usage(
            sentence["text"][start:end],
            sentence["text"],
            start,
            end,
            int(self.arrays["usage_token"][row]),
            int(sentence.get("doc", 0)),
            files[file_number] if file_number < len(files) else "",
            score,
        )

    def type_neighbours(self, word: str, n: int = 5, min_count: int = 1) -> List[Tuple[str, float]]:
        """The word types of the indexed sentences nearest to `word` by the biLM's context-free
        token layer (cosine), `word` itself left out: ELMo's answer without context."""
        bilm = self._bilm()
        query = bilm.embed_words([word])[0]
        vectors = numpy.asarray(self.type_vectors, dtype="float32")
        scores = vectors @ (query / max(float(numpy.linalg.norm(query)), 1e-12))
        scores /= numpy.maximum(numpy.linalg.norm(vectors, axis=1), 1e-12)
        out = []
        for i in numpy.lexsort((numpy.arange(len(scores)), -scores)):
            text, count = self.types[int(i)]
            if text != word and count >= min_count:
                out.append((text, float(scores[i])))
                if len(out) == n:
                    break
        return out

    def static_neighbours(self, word: str, n: int = 5) -> Optional[List[Tuple[str, float]]]:
        """The nearest words by the query pipeline's static vectors (cosine), or None where it has none."""
        vectors = self.nlp.vocab.vectors
        if vectors.size == 0 or not self.nlp.vocab.has_vector(word):
            return None
        query = numpy.asarray(self.nlp.vocab.get_vector(word), dtype="float32")[None]
        keys, _, scores = vectors.most_similar(query, n=n + 1)
        strings = self.nlp.vocab.strings
        out = []
        for k, score in zip(keys[0], scores[0]):
            try:
                text = strings[int(k)]
            except KeyError:  # a vector key without its string
                continue
            if text != word:
                out.append((text, float(score)))
        return out[:n]

    def _bilm(self) -> Any:
        from ..pipeline.loading import elmo_pipe

        nlp = self.nlp  # loads the index's pipeline (and finds its elmo component) where none is set
        return elmo_pipe(nlp, self._elmo).bilm


def _memmap(path: Path, shape: Tuple[int, int]) -> numpy.ndarray:
    expected = shape[0] * shape[1] * 2
    if not path.is_file() or path.stat().st_size != expected:
        size = path.stat().st_size if path.is_file() else "no file"
        raise InputError(f"{path} should hold {shape[0]} x {shape[1]} float16 values ({expected} bytes), found {size}: {_AGAIN}")
    if expected == 0:
        return numpy.zeros(shape, dtype="float16")
    # copy-on-write: read like "r", but writable in memory (torch.from_numpy needs that); nothing is written back
    return numpy.memmap(path, dtype="float16", mode="c", shape=shape)


def _read_list(path: Path) -> list:
    data = read_json_file(path, _AGAIN) if path.is_file() else None
    if not isinstance(data, list):
        raise InputError(f"{path} is missing or damaged (not a JSON list): {_AGAIN}")
    return data


def _read_jsonl(path: Path) -> List[Dict[str, Any]]:
    if not path.is_file():
        raise InputError(f"{path} is missing: {_AGAIN}")
    try:
        text = path.read_text(encoding="utf8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text: {_AGAIN}") from None
    out: List[Dict[str, Any]] = []
    if not text:  # an index of no sentence: a shard's part may be one
        return out
    # "\n" alone ends a record: a sentence may hold other line breaks (U+2028), which json writes as they are
    for number, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), start=1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise InputError(f"{path}:{number} is damaged: {_AGAIN}")
        out.append(record)
    return out
