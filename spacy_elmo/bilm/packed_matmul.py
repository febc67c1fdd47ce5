"""`x @ W` at inference through oneDNN, with each weight reordered ("prepacked") once.

On CPUs where the default BLAS handles the biLM's skinny products poorly (a few dozen rows times
a 512 x 16384 weight, once per LSTM step), oneDNN with a prepacked weight runs 2-4x faster. It
computes the same sums in another order, so results differ only by float32 rounding. It is used
only where it can be and pays off: no autograd, CPU, float32, a weight of at least 2^18 elements,
and a PyTorch build that has the operators; everywhere else this is a plain matmul.

With `dtype = torch.bfloat16` (the biLM's "bf16" precision) the weights are packed in bfloat16
and the products run on the CPU's bfloat16 units (AVX-512 BF16, AMX), about twice the float32
products' speed here; inputs are rounded to bfloat16, sums accumulate in float32 and the result
comes back as float32, so everything around the products stays float32. Every bfloat16 product is
computed in blocks of BF16_BLOCK rows (BF16_MANY_ROWS_BLOCK for `many_rows`), the last padded (`in_fixed_blocks`):
the kernel sees one shape per weight whatever the batch, so a row's result is the same alone and in any batch on
every CPU class.

The float32 products that are not prepacked (under autograd, or weights too small to pack) go
through oneDNN too, unpacked (`product`): on this project's AMD CPU the default BLAS (MKL)
multiplies float32 at 165-230 GFLOP/s on the biLM's shapes where oneDNN reaches 390-490
(`benchmarks/matmul_precision.py`). The weight's gradient, a product reduced over the rows,
stays with the default BLAS, which is faster there on a whole batch's rows. On AVX2 CPUs the
default BLAS is the faster under autograd, and training's products take it there
(`training_products_by_blas`).

With `dtype = torch.qint8` (the "int8" precision) the weights are quantized once to int8, one
scale per output column, and each input row (token) is quantized to uint8 over its own range, so a
row's result never depends on the rows beside it (the batch); results are float32. PyTorch's dynamic
quantization kernels take one scale per call, so each row is divided by its largest magnitude and columns
[128/127, -1, 0, 0] are added (with zero weights): every call's range is then the same, and each result row is
multiplied back (`_rows_over_their_range`; exact in the algebra, bit-for-bit batch-invariant, and closer to
float32 than one scale per call: least cosine 0.9980 against 0.9970 on a pretrained small biLM's top
layer, AVX2). How many bits the weights may use depends on the CPU
(`int8_weight_range`): with VNNI (or AMX) the u8 x s8 products are summed in 32 bits and weights use
the full [-127, 127]; on AVX2 without VNNI the kernels first add pairs of products in 16 bits with
saturation, where 2 x 255 x 127 overflows, so weights use [-63, 63] (2 x 255 x 63 = 32,130 fits).
Products over blocks of many rows (`many_rows`: the LSTM's input half over hundreds of positions, the
highway layers over a batch's words) run through oneDNN's int8 kernel instead where it is exact at the
same range: on wide weights it is 1.1-1.7x FBGEMM's there with VNNI, while FBGEMM is faster on the few
rows of an LSTM step (`benchmarks/inference_kernels.py`).
"""

import functools
import warnings
from typing import Any, Callable, Dict, Hashable, Optional, Tuple

import torch

_ROWS_HINT = 32  # oneDNN picks its blocking for about this many rows; any count works
# Below this many weight elements a oneDNN call costs more than it saves (tiny test models).
_MIN_WEIGHT_ELEMENTS = 1 << 18
_available: Optional[bool] = None
_bf16_available: Optional[bool] = None
_INT8_RANGES = (127, 63)  # tried in this order
_int8_range: Optional[int] = 0  # 0: not yet tested
_int8_reason = ""
_onednn_int8: Optional[bool] = None
# The anchor columns of every int8 product's input (see _rows_over_their_range): 4 keeps K a multiple of 4
ANCHOR = (128.0 / 127.0, -1.0, 0.0, 0.0)
ANCHOR_COLUMNS = len(ANCHOR)
_ANCHOR = torch.tensor(ANCHOR)


def onednn_available() -> bool:
    """RETURNS (bool): whether this PyTorch build can run prepacked oneDNN linear layers."""
    global _available
    if _available is None:
        try:
            w = torch.ops.mkldnn._reorder_linear_weight(torch.ones(3, 2), _ROWS_HINT)
            y = torch.ops.mkldnn._linear_pointwise(torch.ones(1, 2), w, None, "none", [], "")
            _available = bool(torch.backends.mkldnn.is_available()) and float(y.sum()) == 6.0
        except (AttributeError, RuntimeError):
            _available = False
    return _available


def onednn_bf16_available() -> bool:
    """RETURNS (bool): whether prepacked bfloat16 products run on this CPU's bfloat16 units."""
    global _bf16_available
    if _bf16_available is None:
        try:
            supported = onednn_available() and bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
            if supported:
                w = torch.ops.mkldnn._reorder_linear_weight(torch.ones(3, 2, dtype=torch.bfloat16), _ROWS_HINT)
                y = torch.ops.mkldnn._linear_pointwise(torch.ones(1, 2, dtype=torch.bfloat16), w, None, "none", [], "")
                supported = float(y.float().sum()) == 6.0
            _bf16_available = supported
        except (AttributeError, RuntimeError):
            _bf16_available = False
    return _bf16_available


def int8_weight_range() -> Optional[int]:
    """The largest int8 weight magnitude whose products this CPU's quantized kernels compute
    exactly: 127 where u8 x s8 products are summed in 32 bits (VNNI, AMX), 63 where pairs of them
    are first summed in 16 bits with saturation (AVX2 without VNNI), None where no range is exact or
    PyTorch has no quantized CPU kernels. Decided once per process by `_int8_exact`.

    RETURNS (Optional[int]): 127, 63 or None.
    """
    global _int8_range, _int8_reason
    if _int8_range == 0:
        try:
            _int8_range = next((qmax for qmax in _INT8_RANGES if _int8_exact(qmax)), None)
        except (AttributeError, RuntimeError):
            _int8_range, _int8_reason = None, "PyTorch's quantized CPU kernels are missing from this build"
        else:
            wrong = "PyTorch's quantized kernels on this CPU give wrong products (saturated sums) at every weight range tried"
            _int8_reason = "" if _int8_range else wrong
    return _int8_range


def int8_available() -> bool:
    """RETURNS (bool): whether int8 products run exactly (see `int8_weight_range`) on this CPU."""
    return int8_weight_range() is not None


def int8_unavailable_reason() -> str:
    """RETURNS (str): why int8 products do not run here ("" where they do)."""
    int8_weight_range()
    return _int8_reason


def onednn_int8_available() -> bool:
    """RETURNS (bool): whether oneDNN's int8 linear runs exactly here at `int8_weight_range` (then
    `many_rows` int8 products use it). Decided once per process."""
    global _onednn_int8
    if _onednn_int8 is None:
        qmax = int8_weight_range()
        try:
            _onednn_int8 = qmax is not None and _int8_exact(qmax, _onednn_int8_pack, _onednn_int8_product)
        except (AttributeError, RuntimeError):
            _onednn_int8 = False
    return _onednn_int8


def _int8_exact(
    qmax: int,
    pack: Optional[Callable[[torch.Tensor, int], Any]] = None,
    product: Optional[Callable[[torch.Tensor, Any], torch.Tensor]] = None,
) -> bool:
    """Whether weights quantized to [-qmax, qmax] give the exact product on inputs that saturate
    16-bit pair sums at the full range: inputs of 0 and 1 (uint8 0 and 255) against weights of +-1
    (int8 +-qmax), so every product is an integer times the two scales, and whole columns of +1
    (or -1) sum 255 x qmax in every pair. `pack` and `product` are the kernel's (FBGEMM's by default)."""
    rows, depth, cols = 4, 256, 64
    x = torch.ones(rows, depth)
    x[1, ::3] = 0.0
    x[2, depth // 2 :] = 0.0
    w = torch.ones(depth, cols)
    w[:, 1::2] = -1.0  # columns of -1 beside columns of +1
    w[::2, 2::4] *= -1.0  # and columns of alternating signs
    y = (product or _int8_product)(x, (pack or _int8_pack)(w, qmax))
    return bool((y - x @ w).abs().max() <= 1e-3 * depth)


def _int8_columns(weight: torch.Tensor, qmax: Optional[int] = None) -> torch.Tensor:
    """A (K, N) weight as int8 in [-qmax, qmax] (by default `int8_weight_range`), one scale per
    output column: the (N, K) quantized tensor that either kernel packs."""
    if qmax is None:
        qmax = int8_weight_range()
        if qmax is None:
            raise RuntimeError(f"int8 products are not available: {int8_unavailable_reason()}")
    w = weight.t().contiguous().float()
    scales = (w.abs().amax(dim=1).clamp(min=1e-12) / qmax).double()
    with warnings.catch_warnings():  # torch.ao's quantized tensors carry a deprecation notice
        warnings.simplefilter("ignore")
        return torch.quantize_per_channel(w, scales, torch.zeros(len(scales), dtype=torch.long), 0, torch.qint8)


def _int8_pack(weight: torch.Tensor, qmax: Optional[int] = None) -> Any:
    """`_int8_columns` packed for FBGEMM's kernel."""
    return torch.ops.quantized.linear_prepack(_int8_columns(weight, qmax), None)


def _int8_product(rows: torch.Tensor, packed: Any) -> torch.Tensor:
    return torch.ops.quantized.linear_dynamic(rows, packed, False)


def _onednn_int8_pack(weight: torch.Tensor, qmax: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`_int8_columns` packed for oneDNN's kernel: (packed weight, scales, zero points)."""
    quantized = _int8_columns(weight, qmax)
    scales = quantized.q_per_channel_scales().float()
    return torch.ops.onednn.qlinear_prepack(quantized.int_repr(), None), scales, torch.zeros(len(scales), dtype=torch.long)


def _onednn_int8_product(rows: torch.Tensor, packed: Tuple[torch.Tensor, ...], bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    """rows @ W (+ bias) in float32, the rows quantized per call to uint8 over their range (as FBGEMM's kernel does;
    `_int8_rows` makes that range each row's own)."""
    weight, scales, zeros = packed
    with warnings.catch_warnings():  # torch.ao's quantized tensors carry a deprecation notice
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor_dynamic(rows, torch.quint8, False)
    return torch.ops.onednn.qlinear_pointwise(
        q.int_repr(), q.q_scale(), q.q_zero_point(), weight, scales, zeros, bias, 1.0, 0, torch.float32, "none", [], ""
    )


def _rows_over_their_range(rows: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(M, K) rows made for a kernel that quantizes its whole input over one range: each row divided by its largest
    magnitude, and ANCHOR columns added at the end, whose values span [-1, 128/127], so that the range, and with it
    every row's quantization, is the same whatever the other rows: 255 steps of 1/127 with the zero at 127, where each
    row's largest value, + or -, is exact (127 steps). The weight has zero rows for the added columns
    (`_with_anchor_rows`), so they add nothing to the products.

    RETURNS (Tuple[torch.Tensor, torch.Tensor]): the (M, K + ANCHOR_COLUMNS) input and the (M, 1) magnitudes to
        multiply the result rows by.
    """
    magnitudes = rows.abs().amax(dim=1, keepdim=True).clamp_min_(torch.finfo(rows.dtype).tiny)
    # as few operations as can be: each costs a few microseconds, as much as the small size's step products
    return torch.cat([rows.div(magnitudes), _ANCHOR.expand(rows.shape[0], ANCHOR_COLUMNS)], dim=1), magnitudes


def _with_anchor_rows(weight: torch.Tensor) -> torch.Tensor:
    """(K, N) weight -> (K + ANCHOR_COLUMNS, N), the rows that meet the anchor columns zero."""
    return torch.cat([weight, weight.new_zeros((ANCHOR_COLUMNS, weight.shape[1]))])


def _int8_rows(rows: torch.Tensor, packed: Any, kernel: Callable[[torch.Tensor, Any], torch.Tensor]) -> torch.Tensor:
    """rows @ W by an int8 `kernel` whose weight was packed `_with_anchor_rows`, each row quantized over its own
    range (`_rows_over_their_range`)."""
    scaled, magnitudes = _rows_over_their_range(rows)
    return kernel(scaled, packed).mul_(magnitudes)


TRAINING_LIBRARIES = ("blas", "onednn")  # what multiplies under autograd on the CPU: the default BLAS (MKL), or oneDNN
_training_library: Optional[str] = None  # set for a run (training/devices.py: measured, or a resumed run's own)


@functools.lru_cache(maxsize=None)  # the CPU class does not change
def class_rule_library() -> str:
    """RETURNS (str): the library for training's products where nothing measured one: "blas" on AVX2 CPUs (MKL
    measured faster on 7 of the 10 product shapes of a `cpu` preset step there), "onednn" elsewhere (twice MKL on an
    AVX-512 AMD EPYC; on an Intel AVX-512 Xeon MKL is the faster: why a run measures, training/devices.py)."""
    return "blas" if torch.backends.cpu.get_cpu_capability() == "AVX2" else "onednn"


def set_training_library(library: Optional[str]) -> None:
    """Multiply under autograd through `library` ("blas" or "onednn") from now on in this process; None: the class
    rule (`class_rule_library`). A pretraining run sets what it measured, or what it started with when it resumes."""
    global _training_library
    if library is not None and library not in TRAINING_LIBRARIES:
        raise ValueError(f"training's products run through one of {', '.join(TRAINING_LIBRARIES)}: got {library!r}")
    _training_library = library


def training_library() -> str:
    """RETURNS (str): the library training's products run through now ("blas" or "onednn")."""
    return _training_library or class_rule_library()


def training_products_by_blas() -> bool:
    """RETURNS (bool): whether products under autograd (training) run through the default BLAS (MKL) rather than
    oneDNN (`training_library`). Inference keeps oneDNN, whose rows do not depend on the batch."""
    return training_library() == "blas"


def product_usable(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """RETURNS (bool): whether `product(x, weight)` runs through oneDNN: float32 on the CPU,
    no autocast, no empty axis (oneDNN rejects them), a PyTorch build with the operators (and
    `PackedWeights.enabled`)."""
    return (
        PackedWeights.enabled
        and x.numel() > 0
        and weight.numel() > 0
        and x.device.type == "cpu"
        and x.dtype == weight.dtype == torch.float32
        and not torch.is_autocast_enabled("cpu")
        and onednn_available()
    )


def product(x: torch.Tensor, weight: torch.Tensor, weight_t: Optional[torch.Tensor] = None) -> torch.Tensor:
    """`x @ weight`, differentiable, through oneDNN where `product_usable`.

    x (torch.Tensor): (M, K).
    weight (torch.Tensor): (K, N).
    weight_t (Optional[torch.Tensor]): `weight.t().contiguous()`, if the caller keeps one (a
        weight used at every step of a loop); made here otherwise.
    RETURNS (torch.Tensor): (M, N).
    """
    if not product_usable(x, weight) or (torch.is_grad_enabled() and training_products_by_blas()):
        return x @ weight
    if weight_t is None:
        weight_t = weight.detach().t().contiguous()
    return _OneDnnProduct.apply(x, weight, weight_t)


def never_one_row(kernel: Callable[[torch.Tensor], torch.Tensor], rows: torch.Tensor) -> torch.Tensor:
    """`kernel(rows)` with a single row multiplied as two: oneDNN (float32, packed or not) computes one row by a
    matrix-vector kernel whose sums differ in the last bits from the same row's among others (measured on an Intel
    AVX-512 Xeon, not on AMD: so no CPU's choice is trusted), and each row's result must not depend on the batch.
    Every row count from 2 up measured alike there (`tests/bilm/test_product_rows.py` holds every route to it)."""
    if rows.shape[0] == 1:
        return kernel(rows.expand(2, -1).contiguous())[:1]
    return kernel(rows)


BF16_BLOCK = 32  # the one row count every bfloat16 product of a few rows is computed at (`in_fixed_blocks`)
# ... and of the products over blocks of many rows (`many_rows`: the LSTM's input half, the highway layers): a
# weight is always multiplied with the same `many_rows`, so each weight still meets one shape. On an AMX Xeon
# 256 rows at once ran 2.6x 32-row blocks on the original size's input gates (2.2 against 5.8 ms;
# 1.23 ms for 100 rows in one 256-row block, 3.05 in 32-row blocks): each block reads the whole weight again.
BF16_MANY_ROWS_BLOCK = 256


def in_fixed_blocks(
    kernel: Callable[[torch.Tensor], torch.Tensor], rows: torch.Tensor, block: int = BF16_BLOCK, dtype: Optional[torch.dtype] = None
) -> torch.Tensor:
    """`kernel(rows)` computed `block` rows at a time, the last block padded with zero rows: every call the kernel
    sees has the same shape, so the library picks the same kernel (and blocking, and order of sums) for every row,
    whatever the batch; `dtype`: the blocks are made in it (the kernel's input dtype). oneDNN's bfloat16 products on
    an AMX Xeon took another kernel from 33 rows on (a row's sums
    up to 1.6e-2 off the same row's among 32 or fewer), which `never_one_row` cannot mend; a fixed shape makes a row's
    result its own by construction, on every class. On AMX 32 rows and fewer measured alike, hence the block."""
    count = rows.shape[0]
    padded = -count % block
    if padded or (dtype is not None and dtype != rows.dtype):
        # the kernel's input made at once in its `dtype` (one pass: the cast and the padding together)
        blocks = rows.new_empty((count + padded, rows.shape[1]), dtype=dtype or rows.dtype)
        blocks[:count].copy_(rows)
        blocks[count:].zero_()
        rows = blocks
    out = torch.cat([kernel(chunk) for chunk in rows.split(block)]) if rows.shape[0] > block else kernel(rows)
    return out[:count] if padded else out


def _linear(x: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
    """x @ weight_t.T through oneDNN, weight_t (N, K) unpacked (`never_one_row`)."""
    return never_one_row(lambda rows: torch.ops.mkldnn._linear_pointwise(rows, weight_t, None, "none", [], ""), x)


class _OneDnnProduct(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(x, weight)
        return _linear(x, weight_t)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:  # type: ignore[override]
        x, weight = ctx.saved_tensors
        grad_x = _linear(grad, weight.detach()) if ctx.needs_input_grad[0] else None
        grad_weight = x.t() @ grad if ctx.needs_input_grad[1] else None
        return grad_x, grad_weight, None


def _reorder(weight: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A (K, N) weight packed for oneDNN's `dtype` products."""
    return torch.ops.mkldnn._reorder_linear_weight(weight.t().contiguous().to(dtype), _ROWS_HINT)


class PackedWeights:
    """The prepacked copies of a module's weights, keyed by the caller and the precision: copies
    made for one precision stay while another is used, so switching back (a per-call precision)
    packs nothing again. Each precision used holds one copy of the large weights (float32: their
    size, bf16: half, int8: a quarter); `clear` frees them all, and must be called whenever the
    weights may have changed. Never pickled: a copy of the module starts empty."""

    enabled = True  # a switch for benchmarks and tests

    def __init__(self) -> None:
        self._packs: Dict[Tuple[torch.dtype, str, Hashable], Any] = {}
        self.dtype = torch.float32  # of the packed weights and the products

    def set_dtype(self, dtype: torch.dtype) -> None:
        self.dtype = dtype

    def clear(self) -> None:
        self._packs.clear()

    def __len__(self) -> int:
        return len(self._packs)

    def __getstate__(self) -> Dict[str, Any]:
        return {}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self._packs = {}
        self.dtype = torch.float32

    def usable(self, x: torch.Tensor, weight: torch.Tensor) -> bool:
        return (
            self.enabled
            and weight.numel() >= _MIN_WEIGHT_ELEMENTS
            and not torch.is_grad_enabled()
            and x.device.type == "cpu"
            and x.dtype == torch.float32
            and onednn_available()
        )

    def matmul(
        self,
        x: torch.Tensor,
        weight: torch.Tensor,
        key: Hashable,
        bias: Optional[torch.Tensor] = None,
        many_rows: bool = False,
        quantize: bool = True,
        add: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        """`add + x @ weight + bias` for x (..., K), weight (K, N), bias (N,) and add (..., N) (or None).

        many_rows (bool): x is a block of many rows (hundreds): in int8 the product runs through
            oneDNN's kernel where it is exact (see the module's notes). A weight is always multiplied
            with the same `many_rows`, so it holds one packed copy.
        quantize (bool): False keeps this product float32 where the dtype is int8 (an input whose
            range one 8-bit scale per call cannot carry).
        """
        rows = x.reshape(-1, x.shape[-1])
        dtype = torch.float32 if self.dtype == torch.qint8 and not quantize else self.dtype
        if not self.usable(x, weight):
            out = product(rows, weight)
        elif dtype == torch.qint8 and many_rows and onednn_int8_available():
            onednn = self._packed(dtype, key, "onednn", lambda: _onednn_int8_pack(_with_anchor_rows(weight)))
            out = never_one_row(lambda r: _int8_rows(r, onednn, _onednn_int8_product), rows)
        elif dtype == torch.qint8:
            fbgemm = self._packed(dtype, key, "fbgemm", lambda: _int8_pack(_with_anchor_rows(weight)))
            out = never_one_row(lambda r: _int8_rows(r, fbgemm, _int8_product), rows)
        else:
            packed = self._packed(dtype, key, "onednn", lambda: _reorder(weight, dtype))
            fused = bias if dtype == torch.float32 else None  # a bfloat16 bias would lose digits

            def kernel(r: torch.Tensor) -> torch.Tensor:
                return torch.ops.mkldnn._linear_pointwise(r, packed, fused, "none", [], "")

            if dtype == torch.float32:
                out = never_one_row(kernel, rows)
                bias = None
            else:
                # widened to float32 before any addition: PyTorch's mixed-dtype add (bfloat16 + float32) ran slower than
                # the conversion and a float32 add together (original size, AMX: 276 against 196 ms elementwise)
                out = in_fixed_blocks(kernel, rows, BF16_MANY_ROWS_BLOCK if many_rows else BF16_BLOCK, dtype=dtype).to(x.dtype)
        out = out.view(*x.shape[:-1], weight.shape[1])
        if add is not None:
            out = out + add if torch.is_grad_enabled() else out.add_(add)
        if bias is None:
            return out
        return out + bias if torch.is_grad_enabled() else out.add_(bias)

    def float32(self, x: torch.Tensor, weight: torch.Tensor, key: Hashable) -> torch.Tensor:
        """`x @ weight` in float32 through oneDNN, the weight packed once whatever its size and the precision (the
        caller checked `product_usable`, no autograd): each row's result is what it gets alone, at any row count."""
        packed = self._packed(torch.float32, key, "onednn", lambda: _reorder(weight, torch.float32))
        return never_one_row(lambda rows: torch.ops.mkldnn._linear_pointwise(rows, packed, None, "none", [], ""), x)

    def _packed(self, dtype: torch.dtype, key: Hashable, kernel: str, pack: Callable[[], Any]) -> Any:
        packed = self._packs.get((dtype, kernel, key))
        if packed is None:
            packed = self._packs[(dtype, kernel, key)] = pack()
        return packed
