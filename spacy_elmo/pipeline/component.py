"""The `elmo` pipeline component."""

import os
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Union, cast

import srsly
import torch
from spacy.language import Language
from spacy.pipeline import TrainablePipe
from spacy.tokens import Doc
from spacy.training import Example
from spacy.vocab import Vocab
from thinc.api import Model, Optimizer
from thinc.types import Floats3d

from ..bilm import BiLM, ElmoFormatError, ElmoOptions
from ..errors import InputError
from ..user_warnings import warn_at_user
from ..bilm.folders import BilmFolder
from ..layers.bilm_model import bilm_config, get_bilm, load_folder_into, load_weights_into
from ..layers.replace_listener import set_replace_listener_hooks
from ..layers.listener import ElmoListener, no_gradient
from .component_settings import ElmoSettings
from .config_errors import InitializeError
from .elmo_data import ElmoData, register_extensions
from .layer_cache import LayerCache
from .onnx_runtime import OnnxRunner
from .vectors import keep_hooks_across_processes, layer_weights, set_vector_hooks

# The released small size, windows of 128 tokens where a Doc has no sentences.
DEFAULT_MODEL = bilm_config(ElmoOptions())


_fork_hook_registered = False


def _one_thread_in_forked_children() -> None:
    """A process forked after its parent ran multi-threaded (OpenMP) torch ops hangs on its
    first parallel op; this is what `nlp.pipe(n_process=...)` does on Linux. Registered once per
    process, when it builds an elmo component (not at import: importing the package must not change
    the children of programs that only read its registry); worker processes share the cores
    anyway, so each gets one intra-op thread. spaCy gives no hook where it forks. Where processes
    are spawned, not forked (Windows, macOS), nothing is inherited and there is nothing to do."""
    global _fork_hook_registered
    if not _fork_hook_registered and hasattr(os, "register_at_fork"):
        _fork_hook_registered = True
        os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))


@Language.factory("elmo", assigns=["doc._.elmo"], default_config={"model": DEFAULT_MODEL, **ElmoSettings().to_config(), "bilm": None})
def make_elmo(
    nlp: Language,
    name: str,
    model: Model[List[Doc], List[Floats3d]],
    dtype: str,
    frozen: bool,
    lr_scale: float,
    batch_size: int,
    token_cache_size: int,
    cache_mb: float,
    cache_dtype: str,
    vectors: Optional[Union[str, List[float]]],
    precision: str,
    input: str = "text",
    runtime: str = "torch",
    bilm: Optional[str] = None,
) -> "Elmo":
    """Create an `elmo` component: runs the biLM and sets `doc._.elmo`.

    model (Model[List[Doc], List[Floats3d]]): a `spacy-elmo.BiLM.v2` model.
    bilm (Optional[str]): not a setting (always null): the spacy-transformers habit of naming the
        model here gets an error that says where a biLM is named instead.
    The other settings: see `ElmoSettings`.
    """
    if bilm is not None:
        raise InputError(
            f"[{name}] bilm = {bilm!r}: the elmo component takes its biLM from add_elmo(nlp, {bilm!r}) in Python, or from "
            f"[initialize.components.{name}] bilm = {bilm!r} in a config (spacy-elmo init-config --bilm {bilm} writes it), "
            "so that a saved pipeline carries the weights and needs no download to load"
        )
    settings = ElmoSettings(
        dtype=dtype,
        frozen=frozen,
        lr_scale=lr_scale,
        batch_size=batch_size,
        token_cache_size=token_cache_size,
        cache_mb=cache_mb,
        cache_dtype=cache_dtype,
        vectors=vectors,
        precision=precision,
        input=input,
        runtime=runtime,
    )
    elmo = Elmo(nlp.vocab, model, name, settings=settings)
    if elmo.vector_weights is not None:
        keep_hooks_across_processes(nlp)
    return elmo


class Elmo(TrainablePipe):
    """Runs an ELMo biLM over each Doc, stores its layers as `doc._.elmo` (ElmoData) and feeds
    them to listening components (spaCy's listener protocol, as for Tok2Vec)."""

    def __init__(
        self,
        vocab: Vocab,
        model: Model[List[Doc], List[Floats3d]],
        name: str = "elmo",
        *,
        settings: Optional[ElmoSettings] = None,
        **setting_values: Any,
    ) -> None:
        """vocab (Vocab): the pipeline's vocab.
        model (Model[List[Doc], List[Floats3d]]): a `spacy-elmo.BiLM.v2` model.
        settings (Optional[ElmoSettings]): the component's settings; or give them one by one
            as keyword arguments (dtype=..., frozen=..., ...), the rest keeping their defaults.
        """
        if settings is None:
            settings = ElmoSettings(**setting_values)
        elif setting_values:
            raise TypeError("give settings or the settings one by one, not both")
        register_extensions()
        _one_thread_in_forked_children()
        self.vocab = vocab
        self.model = model
        self.name = name
        # Only what training changes is saved in cfg: whether the biLM holds trained weights
        # (loaded, or fine-tuned here) rather than random ones. The settings come from the config.
        self.cfg: Dict[str, Any] = {"has_weights": False}
        self._warned_random = False
        # The cache serves training and the evaluations during it: it switches on at the first
        # update, so a pipeline that only predicts never holds on to its Docs' layers.
        self._cache_active = False
        self.listener_map: Dict[str, List[ElmoListener]] = {}
        # told (docs, tokens) each time the biLM itself runs (not the cache): training's progress lines
        self.on_biLM_run: Optional[Callable[[int, int], None]] = None
        self._apply_settings(settings)

    def _apply_settings(self, settings: ElmoSettings) -> None:
        """Check the settings and derive what depends on them (also after loading, which
        restores the model's saved attrs). A model with `attrs["own_batching"]` (the v1 biLM
        block, which holds them) keeps its own batch size and token cache."""
        settings.check(self.name)
        self.settings = settings
        self.vector_weights = layer_weights(settings.vectors, self.options.n_output_layers)
        self.cache = LayerCache(settings.cache_mb if settings.frozen else 0, settings.cache_dtype)
        set_replace_listener_hooks(self.model, settings.frozen)
        if not self.model.attrs.get("own_batching"):
            self.model.attrs["batch_size"] = settings.batch_size
            self.bilm.cache_size = settings.token_cache_size
        self.onnx = OnnxRunner(settings.precision) if settings.runtime == "onnx" else None
        # with ONNX Runtime the torch biLM runs only to fine-tune, at float32
        self.bilm.precision = settings.precision if self.onnx is None else "fp32"
        self.model.attrs["input"] = settings.input

    @property
    def frozen(self) -> bool:
        return self.settings.frozen

    @property
    def bilm(self) -> BiLM:
        """RETURNS (BiLM): the torch biLM inside the component."""
        return get_bilm(self.model)

    @property
    def options(self) -> ElmoOptions:
        return self.bilm.options

    @property
    def precision(self) -> str:
        """RETURNS (str): the precision the layers are computed at when the component predicts: ONNX Runtime's
        ("fp32", "int8") with runtime = "onnx", where the torch biLM (`bilm.precision`) only fine-tunes in fp32."""
        return self.onnx.precision if self.onnx is not None else self.bilm.precision

    def describe_runtime(self) -> str:
        """RETURNS (str): what computes the layers when the component predicts, in words."""
        setting = f"precision = {self.settings.precision!r}"
        if self.onnx is not None:
            return f"ONNX Runtime at {self.precision} (runtime = 'onnx', {setting}; fine-tuning runs the PyTorch biLM in fp32)"
        return f"PyTorch at {self.precision} ({setting}) on {self.bilm.device.type}"

    @property
    def listeners(self) -> List[ElmoListener]:
        """RETURNS (List[ElmoListener]): the listener layers of the downstream components."""
        return [m for c in self.listening_components for m in self.listener_map[c]]

    @property
    def listening_components(self) -> List[str]:
        return list(self.listener_map.keys())

    def add_listener(self, listener: ElmoListener, component_name: str) -> None:
        self.listener_map.setdefault(component_name, [])
        if listener not in self.listener_map[component_name]:
            self.listener_map[component_name].append(listener)

    def remove_listener(self, listener: ElmoListener, component_name: str) -> bool:
        if listener in self.listener_map.get(component_name, []):
            # a new list: spaCy's replace_listeners iterates over the old one while it calls this
            self.listener_map[component_name] = [m for m in self.listener_map[component_name] if m is not listener]
            if not self.listener_map[component_name]:
                del self.listener_map[component_name]
            return True
        return False

    def find_listeners(self, component: Any) -> None:
        """Register every ElmoListener in `component`'s model whose upstream is this component
        or "*" (called by spaCy when the pipeline changes)."""
        names = ("*", self.name)
        if isinstance(getattr(component, "model", None), Model):
            for node in component.model.walk():
                if isinstance(node, ElmoListener) and node.upstream_name in names:
                    self.add_listener(node, component.name)

    def predict(self, docs: Iterable[Doc]) -> List[Floats3d]:
        """Run the biLM without gradients (from the cache where it can).

        RETURNS (List[Floats3d]): one (L + 1, n_tokens, 2P) float32 array per Doc.
        """
        docs = list(docs)
        if not docs:
            return []
        if not self._cache_active or self.cache.max_bytes <= 0:
            return self._predict(docs)
        ops = self.model.ops
        keys = [LayerCache.key(doc) for doc in docs]
        found = [self.cache.get(key) for key in keys]
        missing = [i for i, layers in enumerate(found) if layers is None]
        outputs: List[Optional[Floats3d]] = [None if x is None else ops.asarray3f(cast(Floats3d, x)) for x in found]
        if missing:
            for i, layers in zip(missing, self._predict([docs[i] for i in missing])):
                outputs[i] = layers
                self.cache.put(keys[i], ops.to_numpy(layers))
        return outputs  # type: ignore[return-value]

    def _predict(self, docs: List[Doc]) -> List[Floats3d]:
        """The layers of `docs` from the biLM: the torch one, or its ONNX graph (runtime "onnx")."""
        layers = self.model.predict(docs) if self.onnx is None else self.onnx.predict(self.model, docs)
        self._tell_run(docs)
        return layers

    def _tell_run(self, docs: List[Doc]) -> None:
        """Tell `on_biLM_run` (training's progress lines) that the biLM itself ran on `docs`."""
        if self.on_biLM_run is not None:
            self.on_biLM_run(len(docs), sum(len(doc) for doc in docs))

    @property
    def has_weights(self) -> bool:
        """RETURNS (bool): whether the biLM holds trained weights rather than random ones."""
        return bool(self.cfg["has_weights"])

    def set_annotations(self, docs: Iterable[Doc], layers: List[Floats3d]) -> None:
        if not self.has_weights and not self._warned_random:
            self._warned_random = True
            warn_at_user(_random_weights_message(self.name))
        dtype = self.settings.dtype
        for doc, doc_layers in zip(docs, layers):
            doc._.elmo = ElmoData(self.model.ops.to_numpy(doc_layers).astype(dtype, copy=False), self.vector_weights)
            if self.vector_weights is not None:
                set_vector_hooks(doc, self.vector_weights)

    def update(
        self,
        examples: Iterable[Example],
        *,
        drop: float = 0.0,
        sgd: Optional[Optimizer] = None,
        losses: Optional[Dict[str, float]] = None,
    ) -> Dict[str, float]:
        """Compute the layers of a training batch, set them on the predicted Docs and hand them
        to the listeners. Frozen: no gradient flows back. Fine-tuned: the listeners' gradients
        are summed and backpropagated into the biLM once the last listener is done."""
        if losses is None:
            losses = {}
        losses.setdefault(self.name, 0.0)
        docs = [eg.predicted for eg in examples]
        if self.frozen:
            self._cache_active = True
            outputs = self.predict(docs)
            backprop_all: Callable[[List[Floats3d]], List[Doc]] = no_gradient
            accumulate: Callable[[List[Floats3d]], List[Doc]] = no_gradient
        else:
            self.cfg["has_weights"] = True  # trained here from now on
            self.bilm.dropout = drop
            outputs, backprop_layers = self.model.begin_update(docs)
            self._tell_run(docs)
            d_outputs = [self.model.ops.alloc3f(*layers.shape) for layers in outputs]

            def accumulate(one_d_outputs: List[Floats3d]) -> List[Doc]:
                for total, d in zip(d_outputs, one_d_outputs):
                    total += d
                    losses[self.name] += float(self.model.ops.xp.vdot(d, d))
                return []

            def backprop_all(one_d_outputs: List[Floats3d]) -> List[Doc]:
                accumulate(one_d_outputs)
                backprop_layers(d_outputs)
                if sgd is not None:
                    self.finish_update(sgd)
                return []

        self.set_annotations(docs, outputs)
        batch_id = ElmoListener.get_batch_id(docs)
        for listener in self.listeners[:-1]:
            listener.receive(batch_id, outputs, accumulate)
        if self.listeners:
            self.listeners[-1].receive(batch_id, outputs, backprop_all)
        return losses

    @property
    def is_trainable(self) -> bool:
        """False while the biLM is frozen: spaCy then shows no loss column for it (there is no loss)
        and skips its `finish_update` (nothing to update). Its `update` still runs, since spaCy
        calls every component's, and feeds the listeners."""
        return not self.frozen

    def finish_update(self, sgd: Optimizer) -> None:
        """Update the biLM, unless it is frozen; its steps are `lr_scale` times the optimizer's."""
        if not self.frozen:
            # Thinc's optimizers scale a step (and its weight decay) by their `lr_scale` argument;
            # the moment estimates do not depend on it.
            scale = self.settings.lr_scale
            self.model.finish_update(sgd if scale == 1.0 else cast(Optimizer, partial(sgd, lr_scale=scale)))

    def initialize(
        self,
        get_examples: Callable[[], Iterable[Example]],
        *,
        nlp: Optional[Language] = None,
        options_file: Optional[Union[str, Path]] = None,
        weights_file: Optional[Union[str, Path]] = None,
        bilm: Optional[Union[str, Path]] = None,
        allow_random: bool = True,
    ) -> None:
        """Load biLM weights, if given; otherwise keep the current weights.

        options_file (Optional[Union[str, Path]]): options.json, checked against the model config.
        weights_file (Optional[Union[str, Path]]): weights.hdf5 in the original format.
        bilm (Optional[Union[str, Path]]): instead of the two files: a biLM folder (AllenNLP or
            ELMoForManyLangs format) or a released model's name, downloaded on first use.
        allow_random (bool): without weights to load, go on with random ones (with a warning);
            False (what init-config's task configs set) makes that an error, so that `spacy train`
            does not train to the end on a biLM that carries no information.
        """
        given = f"[initialize.components.{self.name}]"
        where = (
            f"{given} bilm"
            if bilm is not None
            else f"{given} options_file and weights_file (spacy train --paths.elmo_options, --paths.elmo_weights)"
        )
        fix = (
            "With spacy train: --paths.elmo_options options.json --paths.elmo_weights weights.hdf5 (or set "
            f"{given} bilm to a biLM folder or a released name)."
        )
        try:
            if bilm is not None:
                if options_file is not None or weights_file is not None:
                    raise InputError(f"[{self.name}] initialize got both bilm and options_file/weights_file: keep one in {given}.")
                self.load_bilm(bilm)
            elif weights_file is not None:
                self.load_original(options_file, weights_file)
            elif options_file is not None:
                raise InputError(f"[{self.name}] initialize got an options_file but no weights_file. Add 'weights_file' to {given}.")
            elif not self.has_weights:
                if not allow_random:
                    raise InputError(_random_weights_message(self.name, "No biLM weights were given") + " " + fix)
                self._warned_random = True
                warn_at_user(_random_weights_message(self.name))
        except InitializeError:
            raise
        except InputError as err:
            said = str(err) if str(err).startswith(f"[{self.name}]") else f"[{self.name}] {err}"
            raise InitializeError(title=said if fix in said else f"{said.rstrip('.')} (the biLM named by {where}).") from None
        if nlp is not None:
            _warn_if_no_listener(self, nlp)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "Elmo":
        self.cache.clear()
        with _explain_mismatch(self, "its bytes"):
            super().from_bytes(bytes_data, exclude=exclude)
        self._after_loading("its bytes")
        return self

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "Elmo":
        self.cache.clear()
        cfg_path = Path(path) / "cfg"
        if cfg_path.is_file() and "cfg" not in exclude:
            try:
                srsly.read_json(cfg_path)
            except ValueError as err:
                raise ElmoFormatError(
                    f"[{self.name}] {cfg_path} is damaged (not valid JSON: {err}): save or copy the pipeline again"
                ) from None
        with _explain_mismatch(self, str(Path(path) / "model")):
            super().from_disk(path, exclude=exclude)
        self._after_loading(str(Path(path) / "model"))
        return self

    def _after_loading(self, source: str) -> None:
        """Keep the config's settings (a cfg saved by earlier versions also held copies of some;
        an override at load must take effect) and check that the loaded weights are numbers.
        A cfg saved before `has_weights` was recorded counts as trained weights."""
        self.cfg = {"has_weights": bool(self.cfg.get("has_weights", True))}
        self._apply_settings(self.settings)
        bad = [name for name, param in self.bilm.named_parameters() if not bool(torch.isfinite(param).all())]
        if bad:
            raise ElmoFormatError(
                f"[{self.name}] The saved biLM in {source} holds NaN or infinite values ({', '.join(bad[:3])}"
                f"{', ...' if len(bad) > 3 else ''}): the file is damaged, or a fine-tuned biLM diverged. Save or copy the "
                "pipeline again, or rebuild the component from the original files (spacy_elmo.add_elmo)."
            )

    def load_bilm(self, source: Union[str, Path, BilmFolder]) -> "Elmo":
        """Copy a biLM into the component: a biLM folder (options.json + weights.hdf5, or an
        ELMoForManyLangs folder) or a released model's name (downloaded on first use); its options
        must match the component's model config."""
        from ..released import resolve_bilm

        folder = source if isinstance(source, BilmFolder) else resolve_bilm(source)
        load_folder_into(self.model, folder)
        self.cfg["has_weights"] = True
        self.cache.clear()
        return self

    def load_original(self, options_file: Optional[Union[str, Path]], weights_file: Union[str, Path]) -> "Elmo":
        """Copy the weights of an original ELMo weights.hdf5 into the component; the
        options.json, if given (not None), must match the component's model config."""
        load_weights_into(self.model, options_file, weights_file)
        self.cfg["has_weights"] = True
        self.cache.clear()
        return self


def _warn_if_no_listener(pipe: "Elmo", nlp: Language) -> None:
    """Warn where the pipeline trains components and none of them listens to `pipe`: the biLM would run on every
    batch for nothing. A pipeline with no other trainable component (an elmo component for doc._.elmo) is as meant."""
    if pipe.listening_components:
        return
    others = [name for name, proc in nlp.pipeline if proc is not pipe and isinstance(proc, TrainablePipe) and proc.is_trainable]
    if not others:
        return
    warn_at_user(
        f"[{pipe.name}] no component listens to the '{pipe.name}' component, so the biLM runs on every batch for "
        f"nothing: {', '.join(others)} could use its layers. Write the config with `spacy-elmo init-config CONFIG "
        f"--pipeline {others[0]} --bilm BILM` (it puts a spacy-elmo.ElmoListener.v2 in the task's tok2vec), or remove "
        f"'{pipe.name}' from [nlp] pipeline."
    )


def _random_weights_message(name: str, what: str = "The biLM has random weights") -> str:
    return (
        f"[{name}] {what}: its layers carry no information. Load a biLM with "
        f"spacy_elmo.add_elmo(nlp, FOLDER_OR_NAME), or in a training config set [initialize.components.{name}] bilm "
        f"(or options_file and weights_file; spacy-elmo init-config --bilm FOLDER_OR_NAME does)."
    )


@contextmanager
def _explain_mismatch(pipe: Elmo, source: str) -> Iterator[None]:
    """Name the file when the saved model cannot be read; name the settings when it does not fit
    the config (Thinc checks layer widths before the biLM's own check can)."""
    try:
        yield
    except ValueError as err:
        if isinstance(err, ElmoFormatError):
            raise
        if "dimension" not in str(err):
            raise ElmoFormatError(
                f"[{pipe.name}] Cannot read the saved biLM from {source} ({type(err).__name__}: {err}): the file is "
                "truncated or damaged. Save or copy the pipeline again, or rebuild the component from the "
                "original files (spacy_elmo.add_elmo)."
            ) from err
        raise ElmoFormatError(
            f"[{pipe.name}] The saved biLM does not fit the model config ({err}). The settings in "
            f"[components.{pipe.name}.model] (projection_dim, cell_dim, n_layers, filters, ...) must be "
            "those of the saved model."
        ) from err


def add_elmo(
    nlp: Language,
    options_file: Union[str, Path],
    weights_file: Optional[Union[str, Path]] = None,
    *,
    name: str = "elmo",
    config: Optional[Dict[str, Any]] = None,
    model_config: Optional[Dict[str, Any]] = None,
    **add_pipe_kwargs: Any,
) -> Elmo:
    """Add an `elmo` component built from a biLM to `nlp`: the original ELMo files, a biLM folder
    (AllenNLP or ELMoForManyLangs format), or a released model's name (`spacy-elmo models`;
    downloaded into the cache on first use).

    >>> nlp = spacy.blank("en")
    >>> add_elmo(nlp, "options.json", "weights.hdf5", config={"dtype": "float16"})
    >>> add_elmo(nlp, "small")                     # a released model, by name
    >>> add_elmo(nlp, "path/to/de.model")          # an ELMoForManyLangs folder

    options_file (Union[str, Path]): options.json; or, without weights_file, a biLM folder or name.
    weights_file (Optional[Union[str, Path]]): the weights.hdf5 belonging to options_file.

    config (Optional[Dict[str, Any]]): component settings (dtype, frozen, lr_scale, batch_size,
        token_cache_size, cache_mb, cache_dtype).
    model_config (Optional[Dict[str, Any]]): how Docs become sequences (window_size,
        punct_sentences); the biLM hyperparameters come from the options file.
    add_pipe_kwargs: passed to `nlp.add_pipe` (before, after, first, last).
    RETURNS (Elmo): the component, with the weights loaded.
    """
    if weights_file is None:
        from ..released import resolve_bilm

        folder = resolve_bilm(options_file)
        options = folder.options()
    else:
        options = ElmoOptions.from_file(options_file)
    model = bilm_config(options, **(model_config or {}))
    from ..released import implied_settings

    implied = implied_settings(options_file) if weights_file is None else {}
    settings = {**implied, **(config or {}), "model": model}
    elmo = cast(Elmo, nlp.add_pipe("elmo", name=name, config=settings, **add_pipe_kwargs))
    if weights_file is None:
        return elmo.load_bilm(folder)
    return elmo.load_original(options_file, weights_file)
