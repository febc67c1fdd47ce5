"""bfloat16 and int8 products at inference: close to float32 at the released sizes, validated,
and a clear fall-back where the CPU or the PyTorch build lacks them."""

import numpy
import pytest
import torch

from spacy_elmo.bilm import BiLM, ElmoOptions
from spacy_elmo.bilm.packed_matmul import int8_available, onednn_bf16_available

from ..helpers import tiny_bilm

SENTENCES = [["The", "cat", "sat", "on", "the", "mat", "."], ["Zürich", "'s", "stocks", "rose", "5", "%"], ["Hi"]]
SIZES = {"small": (1024, 128, 1), "medium": (2048, 256, 1), "original": (4096, 512, 2)}
needs_bf16 = pytest.mark.skipif(not onednn_bf16_available(), reason="this CPU has no bfloat16 matrix units (or PyTorch no oneDNN)")
needs_int8 = pytest.mark.skipif(not int8_available(), reason="this PyTorch build has no quantized CPU kernels")


# (largest difference, smallest cosine) allowed against float32, on layers of about 0.25 in size;
# measured: bf16 about 0.012 / 0.99999, int8 0.015-0.027 / 0.9999
TOLERANCE = {"bf16": (0.05, 0.9995), "int8": (0.1, 0.999)}


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


@needs_int8
def test_int8_product_matches_the_quantized_arithmetic():
    """One product by hand: weights rounded to int8 per output column (scale = max |w| / 127),
    so a weight equal to its column's maximum is exact and the result within the rounding."""
    from spacy_elmo.bilm.packed_matmul import PackedWeights

    torch.manual_seed(1)
    x, w = torch.randn(8, 512), torch.randn(512, 1024)
    packs = PackedWeights()
    packs.set_dtype(torch.qint8)
    with torch.no_grad():
        out = packs.matmul(x, w, "w")
    scale = w.abs().amax(dim=0) / 127
    w_int8 = (w / scale).round().clamp(-127, 127) * scale  # the weights as the kernel sees them
    exact = x @ w_int8
    # the input is quantized per call (8 bits over its range): a relative error of a few 1e-3
    assert float((out - exact).abs().max()) < 0.02 * float(exact.abs().max())
    assert float((out - x @ w).abs().max()) < 0.05 * float((x @ w).abs().max())


def test_precision_is_validated():
    bilm = tiny_bilm()
    with pytest.raises(ValueError, match="fp32, bf16, int8"):
        bilm.precision = "fp16"


@pytest.mark.parametrize("precision,check", [("bf16", "onednn_bf16_available"), ("int8", "int8_available")])
def test_missing_units_or_kernels_fall_back_to_fp32_with_a_message(precision, check, monkeypatch):
    import spacy_elmo.bilm.model as model

    monkeypatch.setattr(model, check, lambda: False)
    bilm = tiny_bilm()
    with pytest.warns(UserWarning, match="runs in float32"):
        bilm.precision = precision
    assert bilm.precision == "fp32"


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
