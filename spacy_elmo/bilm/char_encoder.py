"""The context-free token layer: char embedding, char CNN, highway layers, (word embedding,)
projection."""

from collections import OrderedDict
from typing import Dict, List, Optional, Tuple, cast

import torch
from torch import nn

from ..errors import ElmoFormatError
from . import shape_buckets
from .char_ids import UTF8, CharBatch, TokenInput, char_length_groups, cut_char_axis
from .options import ElmoOptions
from .packed_matmul import PackedWeights, product, training_products_by_blas

# bf16 training: the char axis a multiple of this many positions (a bounded set of convolution shapes: shape_buckets)
_WIDTH_STEP = 8

# Word vectors the token layer keeps at inference, unless told otherwise.
DEFAULT_CACHE_SIZE = 50_000


def conv_bias(conv: nn.Conv1d) -> torch.Tensor:
    """RETURNS (torch.Tensor): a char CNN filter's bias (every filter has one)."""
    assert conv.bias is not None
    return conv.bias


class Highway(nn.Module):
    """`g = sigmoid(x W_carry + b_carry)`; `x = g * relu(x W_transform + b_transform) + (1 - g) * x`.
    Both matrices are kept side by side in one (F, 2F) weight so a layer is one matmul.
    """

    def __init__(self, width: int, packs: PackedWeights) -> None:
        super().__init__()
        self.width = width
        self.weight = nn.Parameter(torch.empty(width, 2 * width))
        self.bias = nn.Parameter(torch.empty(2 * width))
        self.packs = packs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # float32 even at int8, as the projection below (least layer-2 cosine 0.9968 on a pretrained small biLM quantized)
        mixed = self.packs.matmul(x, self.weight, ("highway", id(self)), bias=self.bias, many_rows=True, quantize=False)
        carry, transform = mixed.split(self.width, dim=-1)
        gate = torch.sigmoid(carry)
        return gate * torch.relu(transform) + (1.0 - gate) * x


class CharEncoder(nn.Module):
    """Maps the distinct token types of a batch to P-dimensional token vectors.

    With `word_dim` > 0 (ELMoForManyLangs), a word embedding is joined in front of the highway
    output before the projection.

    At inference (no grad, eval mode), vectors are kept in an LRU cache keyed by the token text
    (one per precision used, each of at most `cache_size` words), since the token layer does not
    depend on context; `BiLM` clears it whenever the weights may change.
    """

    def __init__(self, options: ElmoOptions, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        super().__init__()
        self.options = options
        self.cache_size = cache_size
        # Row 0 (a padded token position) stays zero, as in the original inference graph.
        n_rows = 262 if options.char_vocab == "utf8" else options.n_characters + 1
        self.char_embed = nn.Parameter(torch.empty(n_rows, options.char_embed_dim))
        self.word_embed: Optional[nn.Parameter] = nn.Parameter(torch.empty(options.n_words, options.word_dim)) if options.word_dim else None
        # a learned vocabulary comes with the weights (set_vocab)
        self._vocab: Optional[TokenInput] = UTF8 if options.char_vocab == "utf8" else None
        self.convs = nn.ModuleList(nn.Conv1d(options.char_embed_dim, n, kernel_size=w) for w, n in options.filters)
        self.packs = PackedWeights()
        self.highways = nn.ModuleList(Highway(options.n_filters, self.packs) for _ in range(options.n_highway))
        self.projection: Optional[nn.Linear] = (
            nn.Linear(options.token_input_dim, options.projection_dim) if options.has_char_projection else None
        )
        # one LRU cache per precision of the products (BiLM.precision): a change of precision
        # keeps the vectors computed at the others
        self._caches: "Dict[Tuple[torch.dtype, Optional[torch.dtype]], OrderedDict[str, torch.Tensor]]" = {}
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Random initialisation in the spirit of the original training code."""
        with torch.no_grad():
            nn.init.uniform_(self.char_embed, -1.0, 1.0)
            self.char_embed[0].zero_()
            for conv in self.conv_layers:
                fan_in = conv.in_channels * conv.kernel_size[0]
                nn.init.normal_(conv.weight, 0.0, (1.0 / fan_in) ** 0.5)
                nn.init.zeros_(conv_bias(conv))
            for hw in self.highway_layers:
                nn.init.normal_(hw.weight, 0.0, (1.0 / hw.width) ** 0.5)
                nn.init.zeros_(hw.bias)
                hw.bias[: hw.width].fill_(-2.0)  # carry gate starts mostly closed
            if self.word_embed is not None:
                nn.init.uniform_(self.word_embed, -0.25, 0.25)
            if self.projection is not None:
                nn.init.normal_(self.projection.weight, 0.0, (1.0 / self.options.token_input_dim) ** 0.5)
                nn.init.zeros_(self.projection.bias)
        self.clear_cache()

    @property
    def conv_layers(self) -> List[nn.Conv1d]:
        """RETURNS (List[nn.Conv1d]): the char CNN's filters, one module per width."""
        return cast(List[nn.Conv1d], list(self.convs))

    @property
    def highway_layers(self) -> List[Highway]:
        return cast(List[Highway], list(self.highways))

    @property
    def vocab(self) -> TokenInput:
        """RETURNS (TokenInput): how token texts become this biLM's ids."""
        if self._vocab is None:
            raise ElmoFormatError(
                "This biLM reads a learned character vocabulary that has not been loaded: load the biLM from its "
                "model folder (spacy_elmo.add_elmo(nlp, FOLDER), or [initialize.components.elmo] bilm = FOLDER)."
            )
        return self._vocab

    def set_vocab(self, vocab: TokenInput) -> None:
        """Give a biLM with a learned character vocabulary its vocabulary."""
        if self.options.char_vocab == "utf8":
            raise ValueError("a biLM with UTF-8 input takes no vocabulary")
        self._vocab = vocab
        self.clear_cache()

    @property
    def has_vocab(self) -> bool:
        return self._vocab is not None

    @property
    def _cache(self) -> "OrderedDict[str, torch.Tensor]":
        """The cache of the current precision: the prepacked products' dtype and, on a GPU, autocast's."""
        device = self.char_embed.device.type
        on_gpu = device != "cpu" and hasattr(torch, "get_autocast_dtype")  # torch >= 2.4; before it, no autocast key
        autocast = torch.get_autocast_dtype(device) if on_gpu and torch.is_autocast_enabled(device) else None
        return self._caches.setdefault((self.packs.dtype, autocast), OrderedDict())

    def forget_words(self) -> None:
        """Forget the cached word vectors (the prepacked weights stay)."""
        self._caches.clear()

    def clear_cache(self) -> None:
        """Forget the cached word vectors and prepacked weights (of every precision)."""
        self._caches.clear()
        self.packs.clear()

    def encode_chars(self, type_chars: torch.Tensor, type_words: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Run the token layer over char ids.

        type_chars (torch.Tensor): (V, W) char ids.
        type_words (Optional[torch.Tensor]): (V,) word ids, for a biLM with a word embedding.
        RETURNS (torch.Tensor): (V, P) token vectors.
        """
        if type_chars.shape[0] == 0:
            return self.char_embed.new_zeros((0, self.options.projection_dim))
        order, sizes = char_length_groups(type_chars, self.options.max_width, pad=self.vocab.pad_id)
        if len(sizes) == 1:
            h = self._pool(type_chars)
        else:
            parts = [self._pool(rows) for rows in type_chars[order].split(sizes)]
            h = torch.cat(parts).index_select(0, torch.argsort(order))
        n_types = h.shape[0]
        if shape_buckets.active(h.device):  # the highway and projection products at a bucket's rows
            h = shape_buckets.padded_rows(h)
            type_words = None if type_words is None else shape_buckets.padded_rows(type_words)
        h = torch.relu(h) if self.options.activation == "relu" else torch.tanh(h)
        for highway in self.highway_layers:
            h = highway(h)
        if self.word_embed is not None:
            if type_words is None:
                raise ValueError("this biLM has a word embedding: its batches need word ids (CharBatch.type_words)")
            h = torch.cat([nn.functional.embedding(type_words, self.word_embed), h], dim=-1)
        if self.projection is not None:
            # float32 even at int8: its input (the highway output, word vectors beside it) spans too wide a
            # range for one 8-bit scale per call (least layer-0 cosine 0.9945 on a pretrained small biLM); the
            # token layer runs once per distinct word, so int8 is where the time is: the LSTM's products
            h = self.packs.matmul(h, self.projection.weight.t(), "projection", bias=self.projection.bias, quantize=False)
        return h if h.shape[0] == n_types else h[:n_types]

    def _pool(self, type_chars: torch.Tensor) -> torch.Tensor:
        """(V, W) char ids -> (V, n_filters): the char CNN, max-pooled over the (cut) char axis."""
        chars = cut_char_axis(type_chars, self.options.max_width, pad=self.vocab.pad_id)
        if shape_buckets.active(chars.device):
            # rows of padding up to a bucket, and the char axis too (more all-padding windows: the same maxima)
            n_types, width = chars.shape
            wide = min(type_chars.shape[1], -(-width // _WIDTH_STEP) * _WIDTH_STEP)
            chars = shape_buckets.padded_rows(type_chars[:, :wide], value=self.vocab.pad_id)
            return self._pool_cut(chars)[:n_types]
        return self._pool_cut(chars)

    def _pool_cut(self, chars: torch.Tensor) -> torch.Tensor:
        """`_pool` of a char axis already cut."""
        if chars.device.type == "cpu" and (not torch.is_grad_enabled() or training_products_by_blas()):
            return self._pool_windows(chars)
        # (V, W', E) -> (V, E, W') for Conv1d
        x = nn.functional.embedding(chars, self.char_embed).transpose(1, 2)
        # max(dim) rather than amax: its backward scatters into the argmax positions, where amax's
        # spreads over ties with several full-size passes (a fifth of a training step).
        return torch.cat([conv(x).max(dim=-1).values for conv in self.conv_layers], dim=-1)

    def _pool_windows(self, chars: torch.Tensor) -> torch.Tensor:
        """`_pool` at inference on the CPU: each filter width as one product of every char window
        with the filter matrix (oneDNN), max-pooled over the windows: 1.7x Conv1d + max here (350
        types of 16 chars, the released filters; benchmarks/inference_kernels.py), within 5e-7 of it.
        In training too where `training_products_by_blas` (AVX2): forward and backward 35.9 against 46.9 ms
        for Conv1d's on 1,000 types there."""
        x = nn.functional.embedding(chars, self.char_embed)  # (V, W', E)
        V, W, E = x.shape
        pooled = []
        for conv in self.conv_layers:
            width = conv.kernel_size[0]
            # (V, W' - width + 1, E, width) -> rows of (width, E), the filter's layout below
            windows = x.unfold(1, width, 1).transpose(2, 3).reshape(-1, width * E)
            # (F, E, width) -> (F, width * E): the transposed weight oneDNN takes, made once
            weight_t = conv.weight.transpose(1, 2).reshape(conv.out_channels, width * E)
            out = product(windows, weight_t.t(), weight_t).add_(conv_bias(conv)).view(V, W - width + 1, conv.out_channels)
            # under autograd max: its backward goes to the argmax, amax's spreads over ties (see _pool)
            pooled.append(out.max(dim=1).values if torch.is_grad_enabled() else out.amax(dim=1))
        return torch.cat(pooled, dim=-1)

    def forward(self, batch: CharBatch) -> torch.Tensor:
        """RETURNS (torch.Tensor): (V, P) vectors of the batch's distinct types."""
        use_cache = batch.words is not None and self.cache_size > 0 and not self.training and not torch.is_grad_enabled()
        if not use_cache:
            return self.encode_chars(batch.type_chars, batch.type_words)
        assert batch.words is not None
        return self._encode_cached(batch.words, batch.type_chars, batch.type_words)

    def _encode_cached(self, words: List[str], type_chars: torch.Tensor, type_words: Optional[torch.Tensor]) -> torch.Tensor:
        cache = self._cache
        missing: List[int] = []
        found: Dict[int, torch.Tensor] = {}
        for i, word in enumerate(words):
            vector = cache.get(word)
            if vector is None:
                missing.append(i)
            else:
                cache.move_to_end(word)
                found[i] = vector
        computed = None
        if missing:
            rows = torch.tensor(missing, device=type_chars.device)
            computed = self.encode_chars(type_chars[rows], None if type_words is None else type_words[rows])
        # the dtype the token layer computes in: float32, or bfloat16 under autocast on a GPU
        dtype = computed.dtype if computed is not None else next(iter(found.values()), self.char_embed).dtype
        out = self.char_embed.new_empty((len(words), self.options.projection_dim), dtype=dtype)
        if found:
            out[torch.tensor(list(found), device=out.device)] = torch.stack(list(found.values()))
        if computed is not None:
            out[torch.tensor(missing, device=out.device)] = computed
            for i, vector in zip(missing, computed):
                cache[words[i]] = vector.clone()  # a view would pin the whole batch
            while len(cache) > self.cache_size:
                cache.popitem(last=False)
        return out
