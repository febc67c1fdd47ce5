"""The ELMo biLM: token layer, forward and backward LSTM stacks, (L+1)-layer output."""

import contextlib
import logging
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, cast

import numpy
import torch
from torch import nn

from ..errors import InputError
from .char_encoder import DEFAULT_CACHE_SIZE, CharEncoder
from .char_ids import CharBatch, TokenInput, sort_by_length, type_inputs
from .dropout import dropout
from .lstm import BiLstmLayer, LstmState
from .options import ElmoOptions
from .packed_matmul import PackedWeights
from .measured import at_threads, fastest_of, how_measured, machine_key, measured, measuring_on
from .precision import DTYPES, PRECISIONS, resolve, unavailable_reason
from .threads import between_batches
from ..token_ids import check_sentences
from ..user_warnings import warn_at_user

logger = logging.getLogger("spacy_elmo")
_SAID_SLOWER: Set[str] = set()  # explicit precisions already said to be slower than float32 here
AUTO_THREADS = 1  # the thread count precision 'auto' measures at, whatever the threads the biLM then runs at
_SAID_AUTO: Set[Tuple[str, str]] = set()  # (device, choice) that precision 'auto' has said in this process


class BiLM(nn.Module):
    """A character-based bidirectional LSTM language model, as in Peters et al. (2018).

    options (ElmoOptions): the hyperparameters.
    cache_size (int): word vectors kept by the token layer's LRU cache at inference; 0 disables it.
    """

    def __init__(self, options: ElmoOptions, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        super().__init__()
        self.options = options
        self.char_encoder = CharEncoder(options, cache_size=cache_size)
        P = options.projection_dim
        self.layers = nn.ModuleList(
            BiLstmLayer(P, options.cell_dim, P, options.cell_clip, options.proj_clip) for _ in range(options.n_layers)
        )
        self.dropout = 0.0  # on each LSTM layer's input, in train mode only
        self._states: Optional[List[LstmState]] = None
        self._setting = self._precision = "fp32"

    @property
    def precision(self) -> str:
        """The precision the large matrix products run at, at inference: "fp32" (the default:
        exactly the original computation up to float32 rounding), "bf16" (bfloat16 products with
        float32 sums, everything else float32: about twice the products' speed on CPUs with
        bfloat16 units, at about 3e-3 relative error per product; on CUDA, autocast to bfloat16)
        or "int8" (int8 weights, one scale per output column, each token's input quantized over its own range: about
        1e-2 relative error per product, 2-4x the float32 products' speed; CPU only). Set it to
        one of those or to "auto" (the fastest that runs here, see `precision.auto_precision`);
        one that does not run here gives "fp32" and a warning. Reading it gives the precision
        that runs (auto's choice, or "fp32" after a fall-back); `precision_setting` the one asked
        for. Training is not affected ([training] mixed_precision sets it there)."""
        return self._precision

    @precision.setter
    def precision(self, value: str) -> None:
        self._set_precision(value, warn=True)

    @property
    def precision_setting(self) -> str:
        """The precision asked for ("auto" included), resolved again when the biLM changes device."""
        return self._setting

    def _set_precision(self, value: str, warn: bool) -> None:
        """Run at what `value` resolves to on the biLM's device; `warn` False warns only where that
        changes what runs (a device move of a fall-back already warned about stays quiet)."""
        fastest = self.measured_precision() if value == "auto" else None
        actual, message = (fastest, "") if fastest else resolve(value, self.device)
        if actual == value:
            self._say_if_slower(value)
        if message and (warn or actual != self._precision):
            warn_at_user(message)
        # The packed weights and cached word vectors of the former precision stay (see
        # PackedWeights): switching back costs nothing; clear_caches() frees them.
        self._setting, self._precision = value, actual
        for packs in self._packs():
            packs.set_dtype(DTYPES[actual])

    def measured_precision(self, again: bool = False) -> Optional[str]:
        """The precision that runs this biLM fastest here, timed on first use and kept
        (bilm/measured.py) until the user asks for a new measurement.

        again (bool): measure anew and keep that answer in place of the kept one.
        RETURNS (Optional[str]): None where measuring is off or only one runs."""
        entry = self._measurement(again=again)
        if entry is None:
            return None
        rates = ", ".join(f"{p} {1 / s:,.0f}" for p, s in entry["seconds"].items())
        how = how_measured(entry)
        said = (str(self.device), entry["choice"])
        # the first time in a process one line says what was measured and chosen; after that, at INFO
        level = logging.INFO if said in _SAID_AUTO else logging.WARNING
        _SAID_AUTO.add(said)
        logger.log(
            level,
            "precision 'auto' runs the biLM in %s here, at every thread count (tokens/s at %d thread: %s; %s)",
            entry["choice"],
            AUTO_THREADS,
            rates,
            how,
        )
        return str(entry["choice"])

    def _measurement(self, again: bool = False) -> Optional[Dict[str, Any]]:
        candidates = [p for p in PRECISIONS if not unavailable_reason(p, self.device)]
        if len(candidates) < 2 or not measuring_on():
            return None
        # one answer per machine and biLM, measured at one thread: the threads follow the load (bilm/threads.py), and a
        # pipeline's layers must not (at 2 threads under load bf16 once measured fastest, at 1 int8: 0.033 apart)
        key = machine_key("inference", threads=AUTO_THREADS, device=str(self.device), options=self.options.to_config(all_fields=True))

        def measure() -> Dict[str, float]:
            with at_threads(AUTO_THREADS):
                return self._seconds_per_token(candidates)

        return measured(key, measure, choices=candidates, again=again, default="fp32")

    def _say_if_slower(self, precision: str) -> None:
        """An explicit precision that measures slower than float32 here is obeyed, and said once."""
        if precision == "fp32" or precision in _SAID_SLOWER:
            return
        entry = self._measurement()
        if entry is None or precision not in entry["seconds"]:
            return
        seconds = entry["seconds"]
        if seconds[precision] > seconds["fp32"]:
            _SAID_SLOWER.add(precision)
            warn_at_user(
                f"precision {precision!r} runs this biLM at {seconds['fp32'] / seconds[precision]:.2f}x float32's speed on this "
                f"machine (measured); 'fp32' is faster here, 'auto' picks {entry['choice']!r}"
            )

    def _seconds_per_token(self, precisions: Sequence[str]) -> Dict[str, float]:
        """Seconds per token of a forward pass of a probe batch (32 sentences of 3 made-up words: as
        many rows as the step products of an inference batch) at each of `precisions`."""
        rng = numpy.random.default_rng(0)
        letters = numpy.array(list("etaoinshrdlucmfwypvbgk"))
        sentences = [["".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(3)] for _ in range(32)]
        batch = self.batch(sentences).to(self.device)
        was_training, was_precision = self.training, self._precision
        self.eval()

        def run(precision: str) -> Callable[[], None]:
            def forward() -> None:
                self._precision = precision
                for packs in self._packs():
                    packs.set_dtype(DTYPES[precision])
                self.forget_words()
                with torch.no_grad(), self._cuda_autocast():
                    self._forward(batch, stateful=False)

            return forward

        try:
            sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
            seconds = fastest_of({p: run(p) for p in precisions}, sync=sync)
        finally:
            self._precision = was_precision
            for packs in self._packs():
                packs.set_dtype(DTYPES[was_precision])
            self.train(was_training)
        return {p: s / (32 * 3) for p, s in seconds.items()}

    def _packs(self) -> Iterator[PackedWeights]:
        yield self.char_encoder.packs
        for layer in self.lstm_layers:
            yield layer.packs

    @property
    def lstm_layers(self) -> List[BiLstmLayer]:
        """RETURNS (List[BiLstmLayer]): the biLSTM layers, bottom first."""
        return cast(List[BiLstmLayer], list(self.layers))

    @property
    def vocab(self) -> TokenInput:
        """RETURNS (TokenInput): how token texts become this biLM's inputs (UTF-8 bytes, or a
        learned vocabulary that comes with the weights)."""
        return self.char_encoder.vocab

    def batch(self, sentences: Sequence[Sequence[str]]) -> CharBatch:
        """RETURNS (CharBatch): `sentences` (token texts, without markers) as this biLM's input."""
        check_sentences(sentences)
        return CharBatch.from_sentences(sentences, self.options.max_characters_per_token, self.vocab)

    @property
    def device(self) -> torch.device:
        return self.char_encoder.char_embed.device

    @property
    def cache_size(self) -> int:
        """Word vectors kept by the token layer's LRU cache at inference; 0 disables it."""
        return self.char_encoder.cache_size

    @cache_size.setter
    def cache_size(self, value: int) -> None:
        self.char_encoder.cache_size = value
        self.char_encoder.clear_cache()

    def forget_words(self) -> None:
        """Empty the token layer's cache of word vectors (the prepacked weights stay). A vector
        computed in one batch may differ in its last bit from the same word's in another, so
        runs that must agree bit for bit (the shards of a corpus) start each chunk with none."""
        self.char_encoder.forget_words()

    def clear_caches(self) -> None:
        """Forget everything derived from the weights: cached word vectors and prepacked
        matrices, of every precision used (each precision used keeps its own until then: a
        float32 copy of the large weights, half that for bf16, a quarter for int8, plus up to
        `cache_size` word vectors; call this to free those of precisions no longer used). Done
        automatically by any forward pass with gradients enabled (the step before an update), by
        `load_state_dict` and by device or dtype moves; call it after editing weights by hand."""
        self.char_encoder.clear_cache()
        for layer in self.lstm_layers:
            layer.packs.clear()

    def _apply(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.clear_caches()
        out = super()._apply(fn, *args, **kwargs)
        if hasattr(self, "_setting"):  # a device move: what the setting runs at there
            self._set_precision(self._setting, warn=False)
        return out

    def _load_from_state_dict(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        self.clear_caches()
        super()._load_from_state_dict(*args, **kwargs)

    def reset_states(self) -> None:
        """Forget the LSTM state carried across batches in stateful mode."""
        self._states = None

    def forward(self, batch: CharBatch, stateful: bool = False) -> torch.Tensor:
        """Compute every layer for a batch.

        batch (CharBatch): sentences with their `<S>` and `</S>` markers.
        stateful (bool): start each batch row from the state that the same row ended with in the
            previous stateful call (zeros at first), like the original tools, and store the new
            state. False (the default) starts from zeros, so outputs do not depend on other calls.
        RETURNS (torch.Tensor): (L + 1, B, T, 2P); padded positions are 0.
        """
        if torch.is_grad_enabled():
            self.clear_caches()
        batch = batch.to(self.device)
        with self._cuda_autocast():
            return self._forward(batch, stateful)

    def _cuda_autocast(self):  # type: ignore[no-untyped-def]
        """bf16 precision on CUDA (the CPU's bf16 products are the prepacked ones)."""
        if self._precision == "bf16" and self.device.type == "cuda" and not torch.is_grad_enabled():
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _forward(self, batch: CharBatch, stateful: bool) -> torch.Tensor:
        B, T = batch.index.shape
        P = self.options.projection_dim
        type_vectors = self.char_encoder(batch)
        # Row 0 of the table is the zero vector of padded positions (index -1).
        table = torch.cat([type_vectors.new_zeros((1, P)), type_vectors], dim=0)
        tokens = nn.functional.embedding(batch.index + 1, table)  # (B, T, P)
        if B == 0 or T == 0:
            return tokens.new_zeros((self.options.n_output_layers, B, T, 2 * P))

        order, inverse = sort_by_length(batch.lengths)
        sorted_lengths = batch.lengths[order]
        steps = torch.arange(T, device=tokens.device).unsqueeze(1)
        assert batch.host_lengths is not None  # set by `to`
        host = batch.host_lengths.sort(descending=True).values
        batch_sizes = (host.unsqueeze(0) > torch.arange(T).unsqueeze(1)).sum(dim=1).tolist()
        # Per-row reversal of the real positions (padding stays where it is): an involution.
        reverse = torch.where(steps < sorted_lengths, sorted_lengths - 1 - steps, steps)  # (T, B)

        forward_in = tokens.index_select(0, order).transpose(0, 1)  # (T, B, P)
        x = torch.stack([forward_in, _reverse_time(forward_in, reverse)])  # (2, T, B, P)
        states = self._initial_states(B, x, order) if stateful else None
        finals: List[LstmState] = []
        outputs = [torch.cat([tokens, tokens], dim=-1)]
        for depth, layer in enumerate(self.lstm_layers):
            layer_in = x
            if self.training and self.dropout > 0:
                layer_in = dropout(x, self.dropout)
            state = states[depth] if states is not None else layer.zero_state(B, x)
            h, final = layer(layer_in, batch_sizes, state)
            finals.append(final)
            if depth > 0 and self.options.use_skip_connections:
                h = h + x
            x = h
            both = torch.cat([h[0], _reverse_time(h[1], reverse)], dim=-1)  # (T, B, 2P)
            outputs.append(both.transpose(0, 1).index_select(0, inverse))
        if stateful:
            self._store_states(finals, inverse)
        return torch.stack(outputs)

    def _initial_states(self, batch_size: int, like: torch.Tensor, order: torch.Tensor) -> List[LstmState]:
        if self._states is None or self._states[0][0].device != like.device:
            self._states = [layer.zero_state(batch_size, like) for layer in self.lstm_layers]
        stored = self._states[0][0].shape[1]
        if stored < batch_size:
            extra = [layer.zero_state(batch_size - stored, like) for layer in self.lstm_layers]
            self._states = [(torch.cat([c, ec], dim=1), torch.cat([h, eh], dim=1)) for (c, h), (ec, eh) in zip(self._states, extra)]
        return [(c[:, :batch_size].index_select(1, order), h[:, :batch_size].index_select(1, order)) for c, h in self._states]

    def _store_states(self, finals: List[LstmState], inverse: torch.Tensor) -> None:
        assert self._states is not None
        B = inverse.shape[0]
        self._states = [
            (
                torch.cat([c.index_select(1, inverse).detach(), old_c[:, B:]], dim=1),
                torch.cat([h.index_select(1, inverse).detach(), old_h[:, B:]], dim=1),
            )
            for (c, h), (old_c, old_h) in zip(finals, self._states)
        ]

    @torch.no_grad()
    def embed(
        self,
        sentences: Sequence[Sequence[str]],
        stateful: bool = False,
        batch_size: int = 64,
        precision: Optional[str] = None,
    ) -> List[numpy.ndarray]:
        """Embed tokenized sentences.

        sentences (Sequence[Sequence[str]]): token texts per sentence, without markers.
        stateful (bool): see `forward`; the sentences are then run as ONE batch, row by row,
            exactly like the original tools. Stateless (default) runs them in batches of similar
            length, and a sentence's vectors do not depend on the others.
        batch_size (int): sequences (here: sentences) per batch in stateless mode.
        precision (Optional[str]): "fp32", "bf16", "int8" or "auto" for this call (see `precision`);
            None keeps the model's.
        RETURNS (List[numpy.ndarray]): one float32 array (L + 1, n_tokens, 2P) per sentence.
        """
        check_sentences(sentences)
        check_batch_size(batch_size)
        was_training, was_precision = self.training, self.precision_setting
        self.eval()
        if precision is not None:
            self.precision = precision
        try:
            if stateful:
                groups = [list(range(len(sentences)))]
            else:
                by_length = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
                groups = [by_length[i : i + batch_size] for i in range(0, len(by_length), batch_size)]
            results: List[Optional[numpy.ndarray]] = [None] * len(sentences)
            for group in groups:
                between_batches()  # the threads follow the machine's load, as in the component, unless set (bilm/threads.py)
                batch = self.batch([sentences[i] for i in group])
                layers = self.forward(batch, stateful=stateful).float().cpu().numpy()
                for row, i in enumerate(group):
                    n = len(sentences[i])
                    results[i] = numpy.ascontiguousarray(layers[:, row, 1 : n + 1])
            return results  # type: ignore[return-value]
        finally:
            self.train(was_training)
            self.precision = was_precision

    @torch.no_grad()
    def embed_words(self, words: Sequence[str], batch_size: int = 4096) -> numpy.ndarray:
        """The context-free token layer of each word (the vocabulary's markers, `<S>` and `</S>` for
        UTF-8 input, give the sentence markers).

        RETURNS (numpy.ndarray): float32 array (len(words), P).
        """
        check_batch_size(batch_size)
        W = self.options.max_characters_per_token
        chunks = []
        for start in range(0, len(words), batch_size):
            between_batches()  # the threads follow the machine's load, as in `embed`
            chars, word_ids = type_inputs(words[start : start + batch_size], W, self.vocab)
            vectors = self.char_encoder.encode_chars(chars.to(self.device), None if word_ids is None else word_ids.to(self.device))
            chunks.append(vectors.float().cpu().numpy())
        if not chunks:
            return numpy.zeros((0, self.options.projection_dim), dtype=numpy.float32)
        return numpy.concatenate(chunks)


def check_batch_size(batch_size: int) -> None:
    """Refuse a batch size that is not a positive whole number, in one line (0 or -1 would drop every sentence)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"batch_size must be a positive whole number (1 or more): got {batch_size!r}")


def _reverse_time(x: torch.Tensor, reverse: torch.Tensor) -> torch.Tensor:
    """Reverse each row of a time-major (T, B, D) tensor by its own length."""
    return x.gather(0, reverse.unsqueeze(-1).expand_as(x))
