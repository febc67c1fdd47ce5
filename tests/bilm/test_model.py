"""Invariants of the biLM that hold for any weights."""

import numpy
import pytest
import torch

from spacy_elmo.bilm import CharBatch

from ..helpers import tiny_bilm

SENTENCES = [
    ["The", "quick", "brown", "fox", "jumps", "."],
    ["Hi"],
    ["日本語", "の", "文", "🙂", "\n", " ", "naïve", "x" * 80],
    [],
    ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"],
]


@pytest.fixture(scope="module")
def bilm():
    return tiny_bilm(seed=7)


def test_shapes_and_dtype(bilm):
    out = bilm.embed(SENTENCES)
    for sentence, layers in zip(SENTENCES, out):
        assert layers.shape == (3, len(sentence), 16)
        assert layers.dtype == numpy.float32
        assert numpy.isfinite(layers).all()


def test_stateless_is_batch_invariant(bilm):
    together = bilm.embed(SENTENCES, batch_size=64)
    for sentence, layers in zip(SENTENCES, together):
        alone = bilm.embed([sentence])[0]
        numpy.testing.assert_allclose(layers, alone, atol=1e-5)
    reversed_batch = bilm.embed(SENTENCES[::-1], batch_size=2)[::-1]
    for a, b in zip(together, reversed_batch):
        numpy.testing.assert_allclose(a, b, atol=1e-5)


def test_forward_half_is_causal_backward_half_anticausal(bilm):
    P = bilm.options.projection_dim
    base = ["one", "two", "three", "four", "five"]
    changed_end = base[:-1] + ["other"]
    changed_start = ["other"] + base[1:]
    a, b, c = bilm.embed([base, changed_end, changed_start])
    # Forward LSTM outputs before the change see the same prefix.
    numpy.testing.assert_allclose(a[1:, :-1, :P], b[1:, :-1, :P], atol=1e-6)
    assert numpy.abs(a[1:, -1, :P] - b[1:, -1, :P]).max() > 1e-4
    # Backward LSTM outputs after the change see the same suffix.
    numpy.testing.assert_allclose(a[1:, 1:, P:], c[1:, 1:, P:], atol=1e-6)
    assert numpy.abs(a[1:, 0, P:] - c[1:, 0, P:]).max() > 1e-4
    # ... and the backward half does see the change from earlier positions.
    assert numpy.abs(a[1:, :-1, P:] - b[1:, :-1, P:]).max() > 1e-4


def test_padded_positions_are_zero(bilm):
    batch = CharBatch.from_sentences([["a", "b", "c"], ["a"]])
    with torch.no_grad():
        layers = bilm(batch)
    assert layers.shape == (3, 2, 5, 16)
    assert (layers[:, 1, 3:] == 0).all()
    assert (layers[:, 1, :3] != 0).any(dim=-1).all()


def test_stateful_carries_state_by_row(bilm):
    bilm.reset_states()
    first = bilm.embed([["a", "b"], ["c"]], stateful=True)
    second = bilm.embed([["d", "e"]], stateful=True)  # row 0 continues from ["a", "b"]
    third = bilm.embed([["x"], ["c"]], stateful=True)  # row 1 continues from ["c"], untouched in between
    bilm.reset_states()
    reference = bilm.embed([["a", "b"], ["c"]], stateful=True)
    for a, b in zip(first, reference):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    fresh = bilm.embed([["d", "e"]])[0]
    assert numpy.abs(second[0][1:] - fresh[1:]).max() > 1e-4
    bilm.reset_states()
    bilm.embed([["a", "b"], ["c"]], stateful=True)
    bilm.embed([["d", "e"]], stateful=True)
    again = bilm.embed([["x"], ["c"]], stateful=True)
    bilm.reset_states()
    for a, b in zip(third, again):
        numpy.testing.assert_allclose(a, b, atol=1e-6)
    assert numpy.abs(third[1][1:] - bilm.embed([["c"]])[0][1:]).max() > 1e-4


def test_token_cache_gives_identical_results_and_is_cleared_on_training(bilm):
    bilm.char_encoder.clear_cache()
    cold = bilm.embed(SENTENCES)
    assert len(bilm.char_encoder._cache) > 0
    warm = bilm.embed(SENTENCES)
    for a, b in zip(cold, warm):
        numpy.testing.assert_array_equal(a, b)
    batch = CharBatch.from_sentences(SENTENCES[:1])
    bilm.train()
    bilm(batch).sum().backward()  # a forward with gradients precedes any update
    bilm.eval()
    bilm.zero_grad()
    assert len(bilm.char_encoder._cache) == 0


def test_cache_is_cleared_when_weights_are_loaded():
    source, target = tiny_bilm(seed=1), tiny_bilm(seed=2)
    before = target.embed([["cached", "words"]])[0]
    target.load_state_dict(source.state_dict())
    after = target.embed([["cached", "words"]])[0]
    numpy.testing.assert_array_equal(after, source.embed([["cached", "words"]])[0])
    assert numpy.abs(before - after).max() > 1e-4


def test_gradients_reach_every_parameter_and_both_directions():
    bilm = tiny_bilm(seed=3).train()
    batch = CharBatch.from_sentences([["some", "words", "here"], ["more"]])
    layers = bilm(batch)
    layers[-1].pow(2).sum().backward()
    for name, param in bilm.named_parameters():
        assert param.grad is not None, name
        if name != "char_encoder.char_embed":
            assert param.grad.abs().sum() > 0, name
    for layer in bilm.layers:
        assert (layer.hidden_weight.grad[0].abs().sum() > 0) and (layer.hidden_weight.grad[1].abs().sum() > 0)


def test_empty_inputs(bilm):
    assert bilm.embed([]) == []
    out = bilm.embed([[], []])
    assert [o.shape for o in out] == [(3, 0, 16), (3, 0, 16)]
    assert bilm.embed_words([]).shape == (0, 8)


# LSTM weights of 128 x 2048 elements: large enough for the prepacked path.
PACKED_SIZES = {"cell_dim": 512, "projection_dim": 128}


def test_prepacked_inference_path_agrees_with_plain_matmul():
    from spacy_elmo.bilm.packed_matmul import PackedWeights, onednn_available

    if not onednn_available():
        pytest.skip("this PyTorch build has no oneDNN linear operators")
    bilm = tiny_bilm(seed=8, **PACKED_SIZES)
    tiny = tiny_bilm(seed=8)
    tiny.embed(SENTENCES)
    assert len(tiny.layers[0].packs) == 0  # too small to pay off
    packed = bilm.embed(SENTENCES)
    assert len(bilm.layers[0].packs) > 0
    PackedWeights.enabled = False
    try:
        bilm.clear_caches()
        plain = bilm.embed(SENTENCES)
        assert len(bilm.layers[0].packs) == 0
    finally:
        PackedWeights.enabled = True
    for a, b in zip(packed, plain):
        numpy.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.slow
def test_prepacked_weights_follow_weight_changes():
    source, target = tiny_bilm(seed=1, **PACKED_SIZES), tiny_bilm(seed=2, **PACKED_SIZES)
    target.embed(SENTENCES)  # fills the caches from target's own weights
    target.load_state_dict(source.state_dict())
    for a, b in zip(target.embed(SENTENCES), source.embed(SENTENCES)):
        numpy.testing.assert_array_equal(a, b)
    with torch.no_grad():
        target.layers[0].hidden_weight.mul_(0.5)
    target.clear_caches()  # documented: after editing weights by hand
    changed = target.embed(SENTENCES)
    assert max(numpy.abs(a - b).max() for a, b in zip(changed, source.embed(SENTENCES)) if a.size) > 1e-4


def test_pickled_copy_gives_identical_outputs():
    import pickle

    bilm = tiny_bilm(seed=4, **PACKED_SIZES)
    bilm.embed(SENTENCES)  # caches filled before pickling
    copy = pickle.loads(pickle.dumps(bilm))
    assert len(copy.layers[0].packs) == 0
    for a, b in zip(copy.embed(SENTENCES), bilm.embed(SENTENCES)):
        numpy.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_char_cnn_grouped_by_length_equals_one_group(monkeypatch):
    """Types of very different lengths run through the char CNN in groups, each cut to its own
    length: the vectors and the gradients equal those of one uncut group."""
    from spacy_elmo.bilm import char_encoder as module
    from spacy_elmo.bilm.char_ids import word_char_ids

    bilm = tiny_bilm(seed=3).train()
    words = [f"w{i}" for i in range(300)] + ["long" * 11, "naïve-ish", "🙂" * 5, "x"]
    chars = torch.from_numpy(numpy.stack([word_char_ids(w, 50) for w in words]))
    encoder = bilm.char_encoder

    def vectors_and_grads():
        encoder.zero_grad()
        out = encoder.encode_chars(chars)
        (out * torch.linspace(-1, 1, out.shape[1])).sum().backward()
        return out.detach(), {n: p.grad.clone() for n, p in encoder.named_parameters() if p.grad is not None}

    assert len(module.char_length_groups(chars, bilm.options.max_width)[1]) > 1
    grouped, grouped_grads = vectors_and_grads()
    monkeypatch.setattr(module, "char_length_groups", lambda chars, width, **kw: (torch.arange(len(chars)), [len(chars)]))
    whole, whole_grads = vectors_and_grads()
    torch.testing.assert_close(grouped, whole, atol=1e-6, rtol=1e-6)
    assert grouped_grads.keys() == whole_grads.keys()
    for name in whole_grads:
        torch.testing.assert_close(grouped_grads[name], whole_grads[name], atol=1e-5, rtol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [{}, PACKED_SIZES], ids=["tiny", "packed"])
def test_inference_path_equals_the_training_path_on_mixed_lengths(sizes):
    """Inference runs the input products over the running rows only, in blocks, and its own cell:
    the same numbers as the path with gradients (one product over every padded position)."""
    from spacy_elmo.bilm import lstm as lstm_module

    bilm = tiny_bilm(seed=9, **sizes)
    rng = numpy.random.default_rng(0)
    # 40 sentences of 1-60 words: about 1,300 running rows at step 0 onwards, several blocks
    sentences = [[f"w{rng.integers(50)}" for _ in range(n)] for n in rng.integers(1, 61, size=40)]
    assert sum(len(s) + 2 for s in sentences) > 4 * lstm_module._BLOCK_ROWS
    batch = CharBatch.from_sentences(sentences)
    with torch.no_grad():
        fast = bilm(batch)
    with torch.enable_grad():
        slow = bilm(batch).detach()
    assert fast.shape == slow.shape
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=0)


def test_inference_cell_equals_the_lstm_cell():
    from spacy_elmo.bilm.lstm import _lstm_cell_overwriting, lstm_cell

    torch.manual_seed(0)
    C = 64
    z = torch.randn(2, 5, 4 * C) * 6  # gates far into both tails
    c = torch.randn(2, 5, C) * 4
    for clip in (None, 3.0):
        expected = lstm_cell(z, c, C, clip)
        c_before = c.clone()
        got = _lstm_cell_overwriting(z.clone(), c, C, clip)
        torch.testing.assert_close(got[0], expected[0], atol=1e-6, rtol=0)
        torch.testing.assert_close(got[1], expected[1], atol=1e-6, rtol=0)
        assert torch.equal(c, c_before)  # the state passed in is never written


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, True])
def test_a_batch_size_below_one_is_refused_in_one_line_not_answered_with_none(batch_size):
    from spacy_elmo.errors import InputError

    bilm = tiny_bilm()
    with pytest.raises(InputError, match="batch_size must be a positive whole number"):
        bilm.embed([["a"], ["b", "c"]], batch_size=batch_size)
    with pytest.raises(InputError, match="batch_size must be a positive whole number"):
        bilm.embed_words(["a"], batch_size=batch_size)
    assert [x.shape[1] for x in bilm.embed([["a"], ["b", "c"]], batch_size=1)] == [1, 2]
