"""bfloat16 and int8 products at inference: close to float32 at the released sizes, validated,
and a clear fall-back where the CPU or the PyTorch build lacks them."""

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, ElmoOptions
from spacy_elmo.bilm.packed_matmul import int8_available, onednn_bf16_available

from ..helpers import tiny_bilm, wikipedia_sentences

SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], ["Zürich", "'s", "stocks", "rose", "5", "%"], ["Hi"]]
SIZES = {"small": (1024, 128, 1), "medium": (2048, 256, 1), "original": (4096, 512, 2)}
needs_bf16 = pytest.mark.skipif(not onednn_bf16_available(), reason="this CPU has no bfloat16 matrix units (or PyTorch no oneDNN)")
needs_int8 = pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no quantized CPU kernels")


# (largest difference, smallest cosine) allowed against float32, on layers of about 0.25 in size;
# measured: bf16 about 0.012 / 0.99999, int8 0.015-0.027 / 0.9999
TOLERANCE = {"bf16": (0.05, 0.9995), "int8": (0.1, 0.999)}


@pytest.mark.slow
@pytest.mark.parametrize("precision", [pytest.param("bf16", marks=needs_bf16), pytest.param("int8", marks=needs_int8)])
@pytest.mark.parametrize("size", list(SIZES))
def test_low_precision_is_close_to_fp32_at_the_released_sizes(size, precision):
    """Random weights at each released size: every token's vector close to float32's (table
    above), float32 arrays out; the precision given to one call or set on the model gives the
    same layers, and back at fp32 the layers are exactly float32's again."""
    cell, proj, highway = SIZES[size]
    torch.manual_seed(0)
    bilm = BiLM(ElmoOptions(cell_dim=cell, projection_dim=proj, n_highway=highway), cache_size=0).eval()
    fp32 = bilm.embed(SENTENCES)
    low = bilm.embed(SENTENCES, precision=precision)
    assert bilm.precision == "fp32"  # for the call only
    largest, cosine = TOLERANCE[precision]
    for a, b in zip(fp32, low):
        assert b.dtype == numpy.float32 and b.shape == a.shape
        assert 0 < numpy.abs(a - b).max() < largest  # the low-precision products did run
        cos = (a * b).sum(-1) / (numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1))
        assert cos.min() > cosine
    bilm.precision = precision
    numpy.testing.assert_array_equal(bilm.embed(SENTENCES)[0], low[0])
    bilm.precision = "fp32"
    numpy.testing.assert_array_equal(bilm.embed(SENTENCES)[0], fp32[0])  # fp32 as it was


@pytest.mark.slow
@needs_int8
@pytest.mark.parametrize("name", ["elmo-small-wiki-reuters", "elmo-small-wiki-reuters-cont"])
def test_int8_of_a_pretrained_biLM_is_close_on_every_layer(name, shared_bilm, shared_data):
    """A trained biLM's token layer spans a wide range (the CNN and highway outputs): quantized per
    call it fell to a least cosine of 0.991-0.995 here, so the token layer stays float32 at int8 and
    every layer of 200 Wikipedia sentences keeps a least cosine >= 0.999 with 8-bit weights (VNNI). A CPU
    without VNNI (AVX2) multiplies 7-bit weights (its kernels saturate at 8), which the cont biLM's top
    layer takes to 0.9968 (2026-11-28, AMD EPYC AVX2): >= 0.995 there, as docs/speed.md says."""
    from spacy_elmo.bilm import load_original
    from spacy_elmo.bilm.packed_matmul import int8_weight_range

    folder = shared_bilm.parent / name
    if not (folder / "weights.hdf5").is_file():
        pytest.skip(f"needs the shared biLM at {folder}")
    bilm = load_original(folder / "options.json", folder / "weights.hdf5")
    sentences = wikipedia_sentences(shared_data, 200)
    least = 0.999 if int8_weight_range() == 127 else 0.995
    for a, b in zip(bilm.embed(sentences), bilm.embed(sentences, precision="int8")):
        cosine = (a * b).sum(-1) / (numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1))
        assert cosine.min() >= least


def _alone_and_in_batches(bilm, sentences, precision):
    """Each sentence's layers alone, and in two batches of other sentences of mixed lengths."""
    alone = [bilm.embed([s], precision=precision)[0] for s in sentences]
    together = bilm.embed(sentences, precision=precision, batch_size=len(sentences))
    reversed_ = bilm.embed(sentences[::-1], precision=precision, batch_size=5)[::-1]
    return alone, together, reversed_


@pytest.mark.slow
@pytest.mark.parametrize("precision", [pytest.param("int8", marks=needs_int8), pytest.param("bf16", marks=needs_bf16)])
@pytest.mark.parametrize("source", ["original", "elmo-small-wiki-reuters", "elmo-small-wiki-reuters-cont"])
def test_a_sentences_layers_are_the_same_alone_and_in_any_batch(source, precision, shared_data, shared_bilm):
    """int8 quantizes each token's row over its own range, never over the batch's; bf16 multiplies in fixed blocks of
    32 rows, whatever kernel the library would pick for the batch's shape; and the float32 parts around them give each
    row what it gets alone: bit for bit the same layers alone, in one batch of 43 (more rows than a block at every
    LSTM step) and in batches of five (before: one 8-bit scale per call, 0.033 apart on a shared biLM; bf16 on an
    AMX Xeon, 0.031). Random original-size weights and both shared biLMs; the token cache off."""
    from spacy_elmo.bilm import load_original

    if source == "original":
        torch.manual_seed(4)
        cell, proj, highway = SIZES["original"]
        bilm = BiLM(ElmoOptions(cell_dim=cell, projection_dim=proj, n_highway=highway), cache_size=0)
    else:
        folder = shared_bilm.parent / source
        if not (folder / "weights.hdf5").is_file():
            pytest.skip(f"needs the shared biLM at {folder}")
        bilm = load_original(folder / "options.json", folder / "weights.hdf5", cache_size=0)
    sentences = wikipedia_sentences(shared_data, 40) + SENTENCES
    alone, together, reversed_ = _alone_and_in_batches(bilm, sentences, precision)
    fp32 = bilm.embed(sentences)
    for a, b, c, f in zip(alone, together, reversed_, fp32):
        assert numpy.abs(a - f).max() > 0  # the precision did run
        numpy.testing.assert_array_equal(a, b)
        numpy.testing.assert_array_equal(a, c)


@needs_int8
def test_int8_rows_are_quantized_each_over_its_own_range():
    """A row's product does not change when rows of a thousand times its size are put beside it, on either kernel, and
    equals the product of the row quantized by hand in steps of max |x| / 127 with the int8 weights."""
    from spacy_elmo.bilm.packed_matmul import PackedWeights, int8_weight_range

    torch.manual_seed(5)
    x, w = torch.randn(3, 512), torch.randn(512, 1024)
    loud = torch.cat([x, torch.randn(40, 512) * 1000])
    qmax = int8_weight_range()
    scale = w.abs().amax(dim=0) / qmax
    w_int8 = (w / scale).round().clamp(-qmax, qmax) * scale
    step = x.abs().amax(dim=1, keepdim=True) / 127  # uint8 with its zero at 127, the row's largest at +-127 steps
    x_uint8 = (x / step).round() * step
    by_hand = x_uint8 @ w_int8
    for many_rows in (False, True):
        packs = PackedWeights()
        packs.set_dtype(torch.qint8)
        with torch.no_grad():
            quiet_rows = packs.matmul(x, w, "w", many_rows=many_rows)
            loud_rows = packs.matmul(loud, w, "w", many_rows=many_rows)[:3]
        assert torch.equal(quiet_rows, loud_rows)
        assert float((quiet_rows - by_hand).abs().max()) < 1e-5 * float(by_hand.abs().max())


@needs_int8
def test_int8_product_matches_the_quantized_arithmetic():
    """One product by hand: weights rounded to int8 per output column (scale = max |w| / 127, or / 63 where the CPU's
    kernels need 7-bit weights), so a weight equal to its column's maximum is exact and the result within the rounding."""
    from spacy_elmo.bilm.packed_matmul import PackedWeights, int8_weight_range

    torch.manual_seed(1)
    x, w = torch.randn(8, 512), torch.randn(512, 1024)
    packs = PackedWeights()
    packs.set_dtype(torch.qint8)
    with torch.no_grad():
        out = packs.matmul(x, w, "w")
    qmax = int8_weight_range()
    scale = w.abs().amax(dim=0) / qmax
    w_int8 = (w / scale).round().clamp(-qmax, qmax) * scale  # the weights as the kernel sees them
    exact = x @ w_int8
    # each input row is quantized over its own range (8 bits): a relative error of a few 1e-3
    assert float((out - exact).abs().max()) < 0.02 * float(exact.abs().max())
    assert float((out - x @ w).abs().max()) < 0.05 * float((x @ w).abs().max())


@needs_int8
@pytest.mark.parametrize("many_rows", [False, True])
def test_int8_products_with_a_bias_on_either_kernel(many_rows):
    """FBGEMM's kernel (the LSTM steps' few rows) and oneDNN's (`many_rows`: blocks of hundreds, where it
    is faster) quantize alike: both within the int8 rounding of x @ w + b, and within a hair of each other."""
    from spacy_elmo.bilm.packed_matmul import PackedWeights, onednn_int8_available

    torch.manual_seed(2)
    x, w, b = torch.randn(256, 512), torch.randn(512, 1024) * 0.1, torch.randn(1024)
    packs = PackedWeights()
    packs.set_dtype(torch.qint8)
    with torch.no_grad():
        out = packs.matmul(x, w, "w", bias=b, many_rows=many_rows)
        other = PackedWeights()
        other.set_dtype(torch.qint8)
        fbgemm = other.matmul(x, w, "w", bias=b)
    exact = x @ w + b
    assert float((out - exact).abs().max()) < 0.02 * float(exact.abs().max())
    assert float((out - fbgemm).abs().max()) < 2e-3 * float(exact.abs().max())
    kernels = {kernel for _, kernel, _ in packs._packs}
    assert kernels == ({"onednn"} if many_rows and onednn_int8_available() else {"fbgemm"})  # one packed copy


def test_a_bias_is_added_on_every_path():
    """fp32 (fused into oneDNN's product), bf16 (added in float32 after it) and autograd's path (a plain product)."""
    from spacy_elmo.bilm.packed_matmul import PackedWeights

    torch.manual_seed(3)
    x, w, b = torch.randn(64, 512), torch.randn(512, 1024) * 0.1, torch.randn(1024)
    exact = x @ w + b
    for dtype, tolerance in [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)]:
        if dtype == torch.bfloat16 and not onednn_bf16_available():
            continue
        packs = PackedWeights()
        packs.set_dtype(dtype)
        with torch.no_grad():
            out = packs.matmul(x, w, "w", bias=b, many_rows=True)
        assert float((out - exact).abs().max()) < tolerance * float(exact.abs().max())
    w_grad, b_grad = w.clone().requires_grad_(), b.clone().requires_grad_()
    out = PackedWeights().matmul(x, w_grad, "w", bias=b_grad)
    out.sum().backward()
    assert torch.allclose(out, exact, atol=1e-4) and torch.equal(b_grad.grad, torch.full_like(b, 64.0))


def test_precision_is_validated():
    bilm = tiny_bilm()
    with pytest.raises(ValueError, match="fp32, bf16, int8, auto"):
        bilm.precision = "fp16"


@pytest.mark.parametrize("precision,check", [("bf16", "onednn_bf16_available"), ("int8", "int8_available")])
def test_missing_units_or_kernels_fall_back_to_fp32_with_a_message(precision, check, monkeypatch):
    import spacy_elmo.bilm.precision as precision_module

    monkeypatch.setattr(precision_module, check, lambda: False)
    bilm = tiny_bilm()
    with pytest.warns(UserWarning, match=f"precision '{precision}' needs .* runs in float32 .*'auto'"):
        bilm.precision = precision
    assert bilm.precision == "fp32" and bilm.precision_setting == precision


# The int8 kernels' arithmetic on two CPU classes, written out: inputs quantized to uint8 over
# their range (zero point where 0 falls), weights as packed (int8, one scale per column); VNNI sums
# u8 x s8 products in 32 bits, AVX2 without VNNI first adds each pair of them in 16 bits, saturating.
def _kernel(pair_bits: int):
    def product(rows: torch.Tensor, packed) -> torch.Tensor:
        weight, _ = torch.ops.quantized.linear_unpack(packed)
        w = weight.int_repr().long()  # (N, K)
        low, high = min(float(rows.min()), 0.0), max(float(rows.max()), 0.0)
        scale = (high - low) / 255 or 1.0
        zero = round(-low / scale)
        x = ((rows / scale).round() + zero).clamp(0, 255).long()  # (M, K)
        products = x[:, None, :] * w[None, :, :]
        if pair_bits == 16:
            limit = 2**15
            products = products.view(*products.shape[:2], -1, 2).sum(-1).clamp(-limit, limit - 1)
        sums = products.sum(-1) - zero * w.sum(-1)
        return (sums.double() * scale * weight.q_per_channel_scales()).float()

    return product


@pytest.fixture
def fresh_int8_test(monkeypatch):
    """The int8 self-test and the CPU class forgotten, to be decided again under a stubbed kernel."""
    import spacy_elmo.bilm.packed_matmul as packed_matmul
    import spacy_elmo.bilm.precision as precision_module

    monkeypatch.setattr(packed_matmul, "_int8_range", 0)
    monkeypatch.setattr(packed_matmul, "_onednn_int8", None)
    monkeypatch.setattr(precision_module, "_auto", {})
    precision_module.cpu_class.cache_clear()
    yield packed_matmul
    precision_module.cpu_class.cache_clear()


@pytest.mark.parametrize("pair_bits,expected", [(32, 127), (16, 63)])
def test_the_int8_self_test_picks_the_range_the_kernel_computes_exactly(pair_bits, expected, fresh_int8_test, monkeypatch):
    """With VNNI's arithmetic the full range; with AVX2's 16-bit pair sums the full range
    saturates (a column of +1 against inputs of 1 gives 32767 / (255 x 127) = 1.012 per pair, not
    2), and weights in [-63, 63] are exact; the products then stay close to float32."""
    packed_matmul = fresh_int8_test
    monkeypatch.setattr(packed_matmul, "_int8_product", _kernel(pair_bits))
    assert packed_matmul.int8_weight_range() == expected
    assert packed_matmul.int8_available() and packed_matmul.int8_unavailable_reason() == ""
    assert not packed_matmul._int8_exact(127) if pair_bits == 16 else packed_matmul._int8_exact(127)
    torch.manual_seed(0)
    x, w = torch.randn(8, 256), torch.randn(256, 96) * 0.1
    packs = packed_matmul.PackedWeights()
    packs.set_dtype(torch.qint8)
    with torch.no_grad():
        out = packs.matmul(x, w, "w")
    exact = x @ w
    # 8-bit weights: a few 1e-3 of the largest value; 7-bit: about twice that
    assert float((out - exact).abs().max()) < 0.02 * float(exact.abs().max())


@needs_int8
def test_onednns_int8_kernel_is_used_only_where_the_self_test_finds_it_exact(fresh_int8_test, monkeypatch):
    """oneDNN's kernel passes the same saturation test at the range FBGEMM's got; one that fails it
    (here: sums clipped as a 16-bit pair sum would clip them) leaves every product to FBGEMM."""
    packed_matmul = fresh_int8_test
    real = packed_matmul._onednn_int8_product

    def clipped(rows, packed, bias=None):
        return real(rows, packed, bias).clamp(-100.0, 100.0)  # the test's columns sum to +-256

    monkeypatch.setattr(packed_matmul, "_onednn_int8_product", clipped)
    assert packed_matmul.int8_available() and not packed_matmul.onednn_int8_available()
    packs = packed_matmul.PackedWeights()
    packs.set_dtype(torch.qint8)
    with torch.no_grad():
        out = packs.matmul(torch.ones(300, 512), torch.ones(512, 600), "w", many_rows=True)
    # within the self-test's own tolerance: 7-bit weights (AVX2 without VNNI) scale 1 by 1/63, not exactly
    torch.testing.assert_close(out, torch.full((300, 600), 512.0), rtol=0, atol=1e-3 * 512)
    assert {k for _, k, _ in packs._packs} == {"fbgemm"}


def test_a_kernel_wrong_at_every_range_falls_back_to_fp32_saying_why(fresh_int8_test, monkeypatch):
    packed_matmul = fresh_int8_test

    def saturating_bytes(rows, packed):  # sums clipped to 8 bits: wrong at any weight range
        return _kernel(32)(rows, packed).clamp(-1.0, 1.0)

    monkeypatch.setattr(packed_matmul, "_int8_product", saturating_bytes)
    assert packed_matmul.int8_weight_range() is None
    bilm = tiny_bilm()
    with pytest.warns(UserWarning, match="wrong products .* every weight range"):
        bilm.precision = "int8"
    assert bilm.precision == "fp32"
    with pytest.raises(RuntimeError, match="not available"):
        packed_matmul._int8_pack(torch.ones(4, 4))


@pytest.mark.parametrize(
    "int8_range,bf16_units,amx,expected",
    [
        (127, True, False, "int8"),  # AVX-512 with VNNI and bfloat16 units: int8 products are faster
        (63, False, False, "int8"),  # AVX2 without VNNI
        (127, True, True, "bf16"),  # AMX tiles: bfloat16 is faster
        (None, True, False, "bf16"),
        (None, False, False, "fp32"),
    ],
)
def test_auto_picks_the_fastest_precision_that_runs_and_logs_it(int8_range, bf16_units, amx, expected, monkeypatch, caplog):
    import logging

    import spacy_elmo.bilm.precision as precision_module

    monkeypatch.setattr(precision_module, "_auto", {})
    cpu = precision_module.CpuClass("AVX512", "a test CPU", int8_range, bf16_units, amx)
    monkeypatch.setattr(precision_module, "cpu_class", lambda: cpu)
    monkeypatch.setattr(precision_module, "int8_available", lambda: int8_range is not None)
    monkeypatch.setattr(precision_module, "int8_unavailable_reason", lambda: "" if int8_range else "a test reason")
    monkeypatch.setattr(precision_module, "onednn_bf16_available", lambda: bf16_units)
    bilm = tiny_bilm()
    with caplog.at_level(logging.INFO, logger="spacy_elmo"):
        bilm.precision = "auto"
        tiny_bilm().precision = "auto"  # chosen once: logged once
    assert bilm.precision == expected and bilm.precision_setting == "auto"
    assert [r.getMessage() for r in caplog.records] == [f"precision 'auto' runs the biLM in {expected} on {cpu.describe()}"]
    bilm.precision = "fp32"
    bilm.embed([["a", "b"]], precision="auto")
    assert bilm.precision == "fp32"  # a per-call precision is for the call only


def test_the_cpu_class_says_what_the_kernels_do():
    from spacy_elmo.bilm.precision import CpuClass, cpu_class

    here = cpu_class()
    assert here.capability == torch.backends.cpu.get_cpu_capability() and here.int8_range in (127, 63, None)
    assert CpuClass("AVX2", "X", 63, False, False).describe() == "X: AVX2, int8 with weights in [-63, 63] (no VNNI), no bfloat16 units"
    assert CpuClass("AVX512", "Y", 127, True, True).describe() == "Y: AVX512, int8 with 8-bit weights (VNNI), bfloat16 units, AMX"


@pytest.mark.slow
@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"), reason="needs an x86 CPU with AVX2")
def test_pytorchs_own_int8_kernel_without_vnni_gets_seven_bit_weights():
    """PyTorch's int8 kernels restricted to AVX2 (FBGEMM_ENABLE_INSTRUCTIONS, ONEDNN_MAX_CPU_ISA, as on a
    CPU without VNNI): the self-test finds the full range wrong and [-63, 63] exact, and the biLM's int8
    products, on either kernel, stay close to float32."""
    import subprocess
    import sys

    script = (
        "import torch; from spacy_elmo.bilm import packed_matmul as p\n"
        "torch.manual_seed(0); x, w = torch.randn(16, 512), torch.randn(512, 1024)\n"
        "packs = p.PackedWeights(); packs.set_dtype(torch.qint8)\n"
        "with torch.no_grad(): out = packs.matmul(x, w, 'w')\n"
        "print(p._int8_exact(127), p.int8_weight_range(), float((out - x @ w).abs().max() / (x @ w).abs().max()))\n"
        "x = torch.randn(256, 512)\n"
        "with torch.no_grad(): out = packs.matmul(x, w, 'w2', many_rows=True)\n"
        "print(p.onednn_int8_available(), float((out - x @ w).abs().max() / (x @ w).abs().max()))\n"
    )
    env = {**__import__("os").environ, "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    full_range_exact, weight_range, error, _, many_rows_error = done.stdout.split()
    if full_range_exact == "True":
        pytest.skip("this PyTorch's FBGEMM ignores FBGEMM_ENABLE_INSTRUCTIONS (or has no 16-bit path)")
    assert weight_range == "63" and float(error) < 0.02 and float(many_rows_error) < 0.03  # 256 rows: a larger largest error


@needs_bf16
def test_the_component_takes_precision_from_its_config(tmp_path):
    import spacy

    from spacy_elmo import add_elmo, save_original

    cell, proj, highway = SIZES["small"]
    torch.manual_seed(0)
    save_original(
        BiLM(ElmoOptions(cell_dim=cell, projection_dim=proj, n_highway=highway)), tmp_path / "options.json", tmp_path / "weights.hdf5"
    )
    nlp = spacy.blank("en")
    add_elmo(nlp, tmp_path / "options.json", tmp_path / "weights.hdf5")
    nlp.to_disk(tmp_path / "p")
    fp32 = nlp("The cat sat on the mat .")._.elmo.layers
    loaded = spacy.load(tmp_path / "p", config={"components": {"elmo": {"precision": "bf16"}}})
    assert loaded.get_pipe("elmo").bilm.precision == "bf16"
    bf16 = loaded("The cat sat on the mat .")._.elmo.layers
    assert bf16.dtype == numpy.float32
    assert 0 < numpy.abs(bf16 - fp32).max() < 0.05
    with pytest.raises(ValueError, match="precision must be one of"):
        spacy.load(tmp_path / "p", config={"components": {"elmo": {"precision": "fp16"}}})


@pytest.mark.slow
@pytest.mark.parametrize("precision", [pytest.param("bf16", marks=needs_bf16), pytest.param("int8", marks=needs_int8)])
def test_a_per_call_precision_packs_once_and_keeps_the_token_cache(precision, monkeypatch):
    """`embed(..., precision=P)` called again packs no weight and runs no char CNN for words it
    has seen at P; the fp32 calls between keep their own packs and cache; the per-call and the
    attribute forms give the same layers."""
    import spacy_elmo.bilm.char_encoder as char_encoder

    cell, proj, highway = SIZES["small"]
    torch.manual_seed(0)
    bilm = BiLM(ElmoOptions(cell_dim=cell, projection_dim=proj, n_highway=highway)).eval()
    sentences = [["The", "cat", "sat", "on", "the", "mat", "."], ["A", "dog", "barked", "loudly", "."]]
    encoded = {"types": 0}
    real_encode = char_encoder.CharEncoder.encode_chars

    def counting_encode(self, type_chars, *rest):
        encoded["types"] += type_chars.shape[0]
        return real_encode(self, type_chars, *rest)

    def packed():
        """Every packed weight, by module, precision and key: the objects themselves."""
        return {(i, k): id(v) for i, packs in enumerate(bilm._packs()) for k, v in packs._packs.items()}

    monkeypatch.setattr(char_encoder.CharEncoder, "encode_chars", counting_encode)
    first = bilm.embed(sentences, precision=precision)
    fp32 = bilm.embed(sentences)
    before = packed()
    assert {key[1][0] for key in before} == {torch.float32, {"bf16": torch.bfloat16, "int8": torch.qint8}[precision]}
    assert encoded["types"] > 0
    encoded["types"] = 0
    again = bilm.embed(sentences, precision=precision)
    fp32_again = bilm.embed(sentences)
    assert packed() == before and encoded["types"] == 0
    bilm.precision = precision
    attribute = bilm.embed(sentences)
    assert packed() == before and encoded["types"] == 0
    for a, b, c, d, e in zip(first, again, attribute, fp32, fp32_again):
        numpy.testing.assert_array_equal(a, b)
        numpy.testing.assert_array_equal(a, c)
        numpy.testing.assert_array_equal(d, e)
    # clear_caches frees every precision's packs and cached vectors
    bilm.clear_caches()
    assert packed() == {}
    bilm.embed(sentences, precision=precision)
    assert encoded["types"] > 0 and len(packed()) > 0


def test_the_component_keeps_auto_and_runs_what_it_picks(tmp_path):
    import spacy

    from spacy_elmo import add_elmo, save_original
    from spacy_elmo.bilm.precision import PRECISIONS

    save_original(tiny_bilm(), tmp_path / "options.json", tmp_path / "weights.hdf5")
    nlp = spacy.blank("en")
    add_elmo(nlp, tmp_path / "options.json", tmp_path / "weights.hdf5", config={"precision": "auto"})
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    bilm = loaded.get_pipe("elmo").bilm
    assert loaded.config["components"]["elmo"]["precision"] == "auto"
    assert bilm.precision_setting == "auto" and bilm.precision in PRECISIONS
