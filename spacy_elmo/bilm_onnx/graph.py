"""Writing a `BiLM` as one ONNX graph, node by node from its weights (no tracing): char ids in,
every layer out, for any batch size and sentence length, sentences of different lengths in one
batch computed as each alone.

ONNX's LSTM operator has neither a projection nor ELMo's clipping of the cell state, so each
biLSTM layer is a `Scan` over time whose body is one step of both directions: `z = xW + hU` (the
input half `xW + b` made for every step at once, before the loop), the gates, the clipped cell,
the projection and its clip, exactly as bilm/lstm.py computes them. The backward direction runs
over each row reversed within its own length (`ReverseSequence`), as the PyTorch biLM does, so
padding never reaches a real position. The token layer runs once per distinct token of the batch
(`Unique`), over the char axis cut to the longest token plus the widest filter (exact: windows of
padding alone all give the same value).

With `int8`, the LSTM's products (both halves of each gate, the recurrent one included, and its
projection) are ONNX Runtime's `DynamicQuantizeMatMul`: int8 weights (7 bits: INT8_WEIGHT_RANGE) with
one scale per output column, each input row (token) quantized to uint8 over its own range on the fly,
so a sentence's layers are bit for bit what it gets alone (`_Products._int8_rows`). The token layer stays float32, as the
PyTorch biLM's int8 keeps it (see `_token_layer`).
"""

import json
from typing import Any, List, Optional, Tuple

import numpy
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from ..about import __version__
from ..errors import InputError
from ..bilm.char_encoder import conv_bias
from ..bilm.fingerprint import bilm_fingerprint
from ..bilm.lstm import BiLstmLayer, lstm_cell
from ..bilm.packed_matmul import ANCHOR, ANCHOR_COLUMNS
from ..bilm.model import BiLM
from ..token_ids import LearnedVocab
from .runtime import FORMAT

OPSET = 17
_END = numpy.iinfo(
    numpy.int64
).max  # a Slice end past the axis  # ONNX Runtime 1.14 and later (Python, Node.js, Java, C#, the browser's WebAssembly build)
MS_DOMAIN = "com.microsoft"  # DynamicQuantizeMatMul (int8)


class _Graph:
    """The nodes, initializers and names of one ONNX graph under construction."""

    def __init__(self, prefix: str = "") -> None:
        self.nodes: List[onnx.NodeProto] = []
        self.initializers: List[onnx.TensorProto] = []
        self.prefix = prefix
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{self.prefix}{hint}_{self._count}"

    def op(self, op_type: str, inputs: List[str], hint: str = "", n_out: int = 1, domain: str = "", **attrs: Any) -> Any:
        """Add a node. RETURNS (str | List[str]): its output name (a list where `n_out` > 1)."""
        outputs = [self.name(hint or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=self.name("n_" + op_type), domain=domain or None, **attrs))
        return outputs[0] if n_out == 1 else outputs

    def const(self, value: Any, hint: str = "c", dtype: Any = None) -> str:
        """RETURNS (str): the name of an initializer holding `value`."""
        array = numpy.asarray(value, dtype=dtype)
        name = self.name(hint)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name


def _array(tensor: torch.Tensor) -> numpy.ndarray:
    return tensor.detach().float().cpu().contiguous().numpy()


# ONNX Runtime's uint8 x int8 products on CPUs without VNNI (AVX2) add pairs of products in int16 and saturate
# with 8-bit weights (a probe's least cosine to float32 0.944 on AVX2); 7-bit weights never saturate there, as
# onnxruntime's own quantizer does with reduce_range (0.99995 on the same probe). A file runs on any CPU, so
# every export uses them.
INT8_WEIGHT_RANGE = 63


def _quantized(weight: numpy.ndarray) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """RETURNS: (K, N) int8 weights in [-INT8_WEIGHT_RANGE, INT8_WEIGHT_RANGE] and one float32 scale per column
    (symmetric)."""
    scale = numpy.abs(weight).max(axis=0) / float(INT8_WEIGHT_RANGE)
    scale = numpy.where(scale > 0, scale, 1.0).astype(numpy.float32)
    return numpy.clip(numpy.rint(weight / scale), -INT8_WEIGHT_RANGE, INT8_WEIGHT_RANGE).astype(numpy.int8), scale


class _Products:
    """`x @ W + b` for the weight matrices: float32 `MatMul`, or int8 `DynamicQuantizeMatMul`."""

    def __init__(self, int8: bool) -> None:
        self.int8 = int8

    def __call__(self, g: _Graph, x: str, weight: numpy.ndarray, bias: Optional[numpy.ndarray], hint: str, float32: bool = False) -> str:
        """`float32` keeps this product float32 with `int8` too."""
        if self.int8 and not float32:
            out = self._int8_rows(g, x, weight, hint)
        else:
            out = g.op("MatMul", [x, g.const(weight.astype(numpy.float32), hint + "_w")], hint)
        return out if bias is None else g.op("Add", [out, g.const(bias.astype(numpy.float32), hint + "_b")], hint)

    @staticmethod
    def _int8_rows(g: _Graph, x: str, weight: numpy.ndarray, hint: str) -> str:
        """x (..., K) @ W by `DynamicQuantizeMatMul`, each row quantized over its own range, as the PyTorch biLM's
        int8 does (bilm/packed_matmul.py: `_rows_over_their_range`): the operator quantizes its whole input over one
        range, so the rows go in divided by their largest magnitudes, beside anchor columns that fix that range and
        meet zero rows of the weight."""
        K, N = weight.shape
        q, scale = _quantized(numpy.concatenate([weight, numpy.zeros((ANCHOR_COLUMNS, N), weight.dtype)]))
        rows = g.op("Reshape", [x, g.const([-1, K], "shape", numpy.int64)], hint + "_rows")
        tiny = g.const(numpy.finfo(numpy.float32).tiny, "tiny", numpy.float32)
        magnitudes = g.op("Max", [g.op("ReduceMax", [g.op("Abs", [rows])], axes=[1], keepdims=1), tiny], hint + "_magnitudes")
        n_rows = g.op("Slice", [g.op("Shape", [rows]), g.const([0], "s", numpy.int64), g.const([1], "e", numpy.int64)], hint + "_m")
        anchor_shape = g.op("Concat", [n_rows, g.const([ANCHOR_COLUMNS], "a", numpy.int64)], axis=0)
        anchor = g.op("Expand", [g.const(numpy.asarray([ANCHOR], numpy.float32), "anchor"), anchor_shape], hint + "_anchor")
        scaled = g.op("Concat", [g.op("Div", [rows, magnitudes]), anchor], hint + "_scaled", axis=1)
        product = g.op("DynamicQuantizeMatMul", [scaled, g.const(q, hint + "_q"), g.const(scale, hint + "_scale")], hint, domain=MS_DOMAIN)
        product = g.op("Mul", [product, magnitudes], hint + "_scaled_back")
        leading = g.op("Slice", [g.op("Shape", [x]), g.const([0], "s", numpy.int64), g.const([-1], "e", numpy.int64)], hint + "_lead")
        return g.op("Reshape", [product, g.op("Concat", [leading, g.const([N], "n", numpy.int64)], axis=0)], hint)


def unsupported_reason(bilm: BiLM) -> Optional[str]:
    """RETURNS (Optional[str]): why `bilm` cannot be written as this graph, or None."""
    if not bilm.char_encoder.has_vocab:
        return "its learned character vocabulary is not loaded (load the biLM from its folder, with char.dic)"
    swapped = [i for i, layer in enumerate(bilm.lstm_layers) if layer.cell is not lstm_cell]
    if swapped:
        return (
            f"the elementwise LSTM step of layer(s) {swapped} is not the package's own (compile_cells or a replaced `cell`): "
            "the graph writes the standard step, so load the biLM afresh"
        )
    if any(not torch.isfinite(p).all() for p in bilm.parameters()):
        return "its weights hold NaN or infinite values"
    return None


def build_graph(bilm: BiLM, int8: bool = False, source: str = "") -> onnx.ModelProto:
    """Write `bilm` as an ONNX model (see the module's docstring).

    bilm (BiLM): the biLM, with its weights (and vocabulary).
    int8 (bool): int8 products (ONNX Runtime's dynamic quantization).
    source (str): what the biLM was loaded from, kept in the metadata.
    RETURNS (onnx.ModelProto): the checked model.
    """
    why = unsupported_reason(bilm)
    if why is not None:
        raise InputError(f"this biLM cannot be exported to ONNX: {why}")
    options = bilm.options
    W, P = options.max_characters_per_token, options.projection_dim
    has_words = options.word_dim > 0
    g = _Graph()
    product = _Products(int8)
    inputs = [helper.make_tensor_value_info("char_ids", TensorProto.INT64, ["batch", "steps", W])]
    if has_words:
        inputs.append(helper.make_tensor_value_info("word_ids", TensorProto.INT64, ["batch", "steps"]))

    # --- where the sentences are: mask (B, T, 1), lengths (B,) -------------------------------
    first = g.op("Gather", ["char_ids", g.const(0, "zero", numpy.int64)], "first_char", axis=2)  # (B, T)
    mask = g.op("Greater", [first, g.const(0, "zero", numpy.int64)], "mask")
    lengths = g.op("ReduceSum", [g.op("Cast", [mask], to=TensorProto.INT64), g.const([1], "axis", numpy.int64)], "lengths", keepdims=0)
    # ReverseSequence needs >= 1: a row without tokens reverses one padded step, which is masked
    rev_lengths = g.op("Max", [lengths, g.const(1, "one", numpy.int64)], "rev_lengths")
    mask3 = g.op("Unsqueeze", [mask, g.const([2], "axis", numpy.int64)], "mask3")
    batch_steps = g.op("Slice", [g.op("Shape", ["char_ids"]), g.const([0], "s", numpy.int64), g.const([2], "e", numpy.int64)], "bt")

    # --- the token layer, once per distinct token ----------------------------------------------
    flat = g.op("Reshape", ["char_ids", g.const([-1, W], "shape", numpy.int64)], "flat_chars")
    if has_words:
        words = g.op("Reshape", ["word_ids", g.const([-1, 1], "shape", numpy.int64)], "flat_words")
        flat = g.op("Concat", [flat, words], "chars_words", axis=1)
    types, _, inverse, _ = g.op("Unique", [flat], "types", n_out=4, axis=0, sorted=0)
    type_chars = g.op("Slice", [types, g.const([0], "s", numpy.int64), g.const([W], "e", numpy.int64), g.const([1], "a", numpy.int64)])
    tokens = _token_layer(g, bilm, type_chars, types if has_words else None, product)  # (V, P)
    tokens = g.op("Gather", [tokens, inverse], "token_rows", axis=0)  # (B*T, P)
    shape = g.op("Concat", [batch_steps, g.const([P], "p", numpy.int64)], "btp", axis=0)
    zero = g.const(numpy.zeros((), numpy.float32), "fzero")
    tokens = g.op("Where", [mask3, g.op("Reshape", [tokens, shape]), zero], "tokens")  # (B, T, P)
    outputs = [g.op("Concat", [tokens, tokens], "layer0", axis=2)]

    # --- the biLSTM layers ------------------------------------------------------------------------
    x_f = g.op("Transpose", [tokens], "x_f", perm=[1, 0, 2])  # (T, B, P)
    x_b = g.op("ReverseSequence", [x_f, rev_lengths], "x_b", batch_axis=1, time_axis=0)
    batch = g.op("Slice", [batch_steps, g.const([0], "s", numpy.int64), g.const([1], "e", numpy.int64)], "b")
    for depth, layer in enumerate(bilm.lstm_layers):
        h_f, h_b = _lstm_layer(g, layer, depth, x_f, x_b, batch, product)
        if depth > 0 and options.use_skip_connections:
            h_f, h_b = g.op("Add", [h_f, x_f], "skip_f"), g.op("Add", [h_b, x_b], "skip_b")
        x_f, x_b = h_f, h_b
        back = g.op("ReverseSequence", [h_b, rev_lengths], "h_b_in_order", batch_axis=1, time_axis=0)
        both = g.op("Transpose", [g.op("Concat", [h_f, back], axis=2)], perm=[1, 0, 2])  # (B, T, 2P)
        outputs.append(g.op("Where", [mask3, both, zero], f"layer{depth + 1}"))
    unsqueezed = [g.op("Unsqueeze", [o, g.const([0], "axis", numpy.int64)]) for o in outputs]
    g.nodes.append(helper.make_node("Concat", unsqueezed, ["layers"], name="n_layers", axis=0))

    out = helper.make_tensor_value_info("layers", TensorProto.FLOAT, [options.n_output_layers, "batch", "steps", 2 * P])
    graph = helper.make_graph(g.nodes, "elmo_bilm", inputs, [out], initializer=g.initializers)
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid(MS_DOMAIN, 1)] if int8 else [])
    model = helper.make_model(graph, opset_imports=opsets, producer_name="spacy-elmo", producer_version=__version__)
    model.ir_version = 8  # what ONNX Runtime 1.14+ reads
    vocab = bilm.vocab
    metadata = {
        "spacy_elmo.format": FORMAT,
        "spacy_elmo.version": __version__,
        "spacy_elmo.opset": str(OPSET),
        "spacy_elmo.options": json.dumps(options.to_config(all_fields=True), sort_keys=True),
        "spacy_elmo.vocab": json.dumps(vocab.to_dict(), ensure_ascii=False) if isinstance(vocab, LearnedVocab) else "utf8",
        "spacy_elmo.inputs": ",".join(i.name for i in inputs),
        "spacy_elmo.max_characters_per_token": str(W),
        "spacy_elmo.n_output_layers": str(options.n_output_layers),
        "spacy_elmo.output_dim": str(2 * P),
        "spacy_elmo.precision": "int8" if int8 else "fp32",
        "spacy_elmo.weights_sha256": bilm_fingerprint(bilm),
        "spacy_elmo.source": source,
    }
    helper.set_model_props(model, metadata)
    onnx.checker.check_model(model)
    return model


def _token_layer(g: _Graph, bilm: BiLM, type_chars: str, types: Optional[str], product: _Products) -> str:
    """The char CNN, highway layers, (word embedding,) projection of (V, W) char ids. RETURNS: (V, P)."""
    encoder, options = bilm.char_encoder, bilm.options
    pad = encoder.vocab.pad_id
    # cut the char axis to the longest token plus the widest filter (at most W)
    is_char = g.op("Cast", [g.op("Not", [g.op("Equal", [type_chars, g.const(pad, "pad", numpy.int64)])])], to=TensorProto.INT64)
    real = g.op("ReduceSum", [is_char, g.const([1], "axis", numpy.int64)], "real_chars", keepdims=0)  # (V,)
    longest = g.op("ReduceMax", [real], "longest", keepdims=1)  # (1,)
    keep = g.op(
        "Min",
        [
            g.op("Add", [longest, g.const([options.max_width], "w", numpy.int64)]),
            g.const([options.max_characters_per_token], "W", numpy.int64),
        ],
    )
    chars = g.op("Slice", [type_chars, g.const([0], "s", numpy.int64), keep, g.const([1], "a", numpy.int64)], "cut_chars")
    x = g.op("Gather", [g.const(_array(encoder.char_embed), "char_embed"), chars], "char_vectors")  # (V, W', E)
    pooled = []
    for conv in encoder.conv_layers:
        # each filter width as one product of every char window with the filter matrix, max-pooled
        # over the windows (as bilm/char_encoder.py at inference: ONNX Runtime's Conv took 40% of a
        # pass here); a window is its chars' vectors side by side, (width * E)
        width, F = conv.kernel_size[0], conv.out_channels
        shifted = [
            g.op(
                "Slice",
                [
                    x,
                    g.const([k], "s", numpy.int64),
                    g.const([k - width + 1 if k < width - 1 else _END], "e", numpy.int64),
                    g.const([1], "a", numpy.int64),
                ],
            )
            for k in range(width)
        ]
        windows = g.op("Concat", shifted, "windows", axis=2) if width > 1 else shifted[0]  # (V, W' - width + 1, width * E)
        weight = _array(conv.weight).transpose(2, 1, 0).reshape(width * conv.in_channels, F)
        # the bias after the max: max(x_i) + b is max(x_i + b) exactly (rounding is monotonic)
        best = g.op("ReduceMax", [g.op("MatMul", [windows, g.const(weight, "conv_w")], "conv")], "pool", axes=[1], keepdims=0)
        pooled.append(g.op("Add", [best, g.const(_array(conv_bias(conv)), "conv_b")], "pool_b"))
    h = g.op("Concat", pooled, "cnn", axis=1) if len(pooled) > 1 else pooled[0]
    h = g.op("Relu" if options.activation == "relu" else "Tanh", [h], "cnn_act")
    for hw in encoder.highway_layers:
        mixed = product(g, h, _array(hw.weight), _array(hw.bias), "highway", float32=True)
        carry, transform = g.op("Split", [mixed, g.const([hw.width, hw.width], "split", numpy.int64)], "hw", n_out=2, axis=1)
        gate = g.op("Sigmoid", [carry], "gate")
        kept = g.op("Mul", [g.op("Sub", [g.const(numpy.float32(1.0), "f1"), gate]), h])
        h = g.op("Add", [g.op("Mul", [gate, g.op("Relu", [transform])]), kept], "highway_out")
    if encoder.word_embed is not None:
        assert types is not None
        W = options.max_characters_per_token
        type_words = g.op("Gather", [types, g.const(W, "wcol", numpy.int64)], "type_words", axis=1)
        words = g.op("Gather", [g.const(_array(encoder.word_embed), "word_embed"), type_words], "word_vectors")
        h = g.op("Concat", [words, h], "with_words", axis=1)
    if encoder.projection is not None:
        # float32 even with int8, as the highway layers: their inputs span too wide a range for one
        # uint8 scale per call (min cosine 0.9945 to float32 on layer 0 of a pretrained small biLM, and
        # 0.9968 on layer 2 of another, quantized), and they run once per distinct token
        h = product(g, h, _array(encoder.projection.weight).T.copy(), _array(encoder.projection.bias), "token_projection", float32=True)
    return h


def _lstm_layer(g: _Graph, layer: BiLstmLayer, depth: int, x_f: str, x_b: str, batch: str, product: _Products) -> Tuple[str, str]:
    """One biLSTM layer over (T, B, D) inputs of each direction (the backward one reversed per row).
    RETURNS: the (T, B, P) outputs of each direction, in the order each ran."""
    C, H = layer.cell_dim, layer.hidden_dim
    bias = _array(layer.bias) + _array(layer.forget_bias)[None]
    gates_in = [product(g, x, _array(layer.input_weight[d]), bias[d], f"l{depth}_d{d}_input") for d, x in enumerate((x_f, x_b))]

    def zeros(width: int, hint: str) -> str:  # (B, width) float32
        shape = g.op("Concat", [batch, g.const([width], "width", numpy.int64)], axis=0)
        return g.op("ConstantOfShape", [shape], hint, value=helper.make_tensor("z", TensorProto.FLOAT, [1], [0.0]))

    zeros_c, zeros_h = zeros(C, "c0"), zeros(H, "h0")

    body = _Graph(prefix=f"l{depth}_step_")

    def clipped(x: str, bound: float) -> str:
        return body.op("Clip", [x, body.const(numpy.float32(-bound), "lo"), body.const(numpy.float32(bound), "hi")], "clipped")

    state_in: List[Tuple[str, int]] = []
    state_out: List[Tuple[str, int]] = []
    step_out: List[Tuple[str, int]] = []
    xw_names: List[str] = []
    for d in range(2):
        c, h = body.name(f"c{d}_in"), body.name(f"h{d}_in")
        xw_names.append(body.name(f"xw{d}"))  # this step's row of gates_in[d]
        state_in += [(c, C), (h, H)]
        z = body.op("Add", [xw_names[d], product(body, h, _array(layer.hidden_weight[d]), None, f"recurrent{d}")], f"z{d}")
        ifo, j = body.op("Split", [z, body.const([3 * C, C], "split", numpy.int64)], "gates", n_out=2, axis=1)
        ifo, j = body.op("Sigmoid", [ifo]), body.op("Tanh", [j])
        i, f, o = body.op("Split", [ifo, body.const([C, C, C], "split", numpy.int64)], "gate", n_out=3, axis=1)
        new_c = body.op("Add", [body.op("Mul", [f, c]), body.op("Mul", [i, j])], f"c{d}")
        if layer.cell_clip is not None:
            new_c = clipped(new_c, layer.cell_clip)
        new_h = body.op("Mul", [o, body.op("Tanh", [new_c])], f"h{d}")
        if layer.proj_weight is not None:
            new_h = product(body, new_h, _array(layer.proj_weight[d]), None, f"projection{d}")
            if layer.proj_clip is not None:
                new_h = clipped(new_h, layer.proj_clip)
        state_out += [(new_c, C), (new_h, H)]
        step_out.append((body.op("Identity", [new_h], f"out{d}"), H))

    def info(name: str, width: int) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", width])

    graph = helper.make_graph(
        body.nodes,
        f"lstm_layer_{depth}_step",
        [info(n, w) for n, w in state_in] + [info(n, 4 * C) for n in xw_names],
        [info(n, w) for n, w in state_out] + [info(n, w) for n, w in step_out],
        initializer=body.initializers,
    )
    results = g.op("Scan", [zeros_c, zeros_h, zeros_c, zeros_h, *gates_in], f"l{depth}_scan", n_out=6, body=graph, num_scan_inputs=2)
    return results[4], results[5]
