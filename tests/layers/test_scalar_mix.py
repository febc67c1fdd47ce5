import numpy
import pytest

from spacy_elmo.layers import ScalarMix, mix_weights


def _docs(seed=0, lengths=(3, 0, 5)):
    rng = numpy.random.default_rng(seed)
    return [rng.normal(size=(3, n, 4)).astype("float32") for n in lengths]


def _mix(layer_norm=False, l2=0.0, w=None, gamma=None):
    model = ScalarMix(3, 4, layer_norm=layer_norm, l2=l2)
    model.initialize()
    if w is not None:
        model.set_param("w", numpy.asarray(w, dtype="float32"))
    if gamma is not None:
        model.set_param("gamma", numpy.asarray([gamma], dtype="float32"))
    return model


def test_starts_as_the_plain_average():
    docs = _docs()
    model = _mix()
    out = model.predict(docs)
    assert [o.shape for o in out] == [(3, 4), (0, 4), (5, 4)]
    for o, x in zip(out, docs):
        numpy.testing.assert_allclose(o, x.mean(axis=0), atol=1e-6)
    weights, gamma = mix_weights(model)
    numpy.testing.assert_allclose(weights, [1 / 3] * 3)
    assert gamma == 1.0


def test_hand_computed_mix():
    docs = _docs()
    model = _mix(w=[0.0, numpy.log(2.0), numpy.log(5.0)], gamma=2.0)
    s = numpy.array([1.0, 2.0, 5.0]) / 8.0
    for o, x in zip(model.predict(docs), docs):
        numpy.testing.assert_allclose(o, 2.0 * (s[0] * x[0] + s[1] * x[1] + s[2] * x[2]), atol=1e-5)


def test_layer_norm_uses_one_mean_and_variance_per_layer_over_the_batch():
    docs = _docs(lengths=(2, 4))
    model = _mix(layer_norm=True)
    joined = numpy.concatenate(docs, axis=1)
    normed = [(layer - layer.mean()) / numpy.sqrt(layer.var() + 1e-12) for layer in joined]
    expected = numpy.mean(normed, axis=0)
    got = numpy.concatenate(model.predict(docs), axis=0)
    numpy.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_gradients_match_finite_differences(layer_norm):
    docs = [d.astype("float64") for d in _docs(seed=3, lengths=(2, 3))]
    target = [numpy.random.default_rng(9).normal(size=(d.shape[1], 4)) for d in docs]
    l2 = 0.1
    w0, g0 = numpy.array([0.3, -0.2, 0.5]), 1.5

    def loss(w, gamma, xs):
        model = _mix(layer_norm=layer_norm, w=w, gamma=gamma, l2=l2)
        out = model.predict([x.astype("float32") for x in xs])
        return sum(float((o.astype("float64") * t).sum()) for o, t in zip(out, target)) + l2 * float((w**2).sum())

    model = _mix(layer_norm=layer_norm, w=w0, gamma=g0, l2=l2)
    out, backprop = model.begin_update([d.astype("float32") for d in docs])
    d_docs = backprop([t.astype("float32") for t in target])
    eps = 1e-3
    for i in range(3):
        w_plus, w_minus = w0.copy(), w0.copy()
        w_plus[i] += eps
        w_minus[i] -= eps
        numeric = (loss(w_plus, g0, docs) - loss(w_minus, g0, docs)) / (2 * eps)
        assert model.get_grad("w")[i] == pytest.approx(numeric, rel=2e-2, abs=2e-3)
    numeric_gamma = (loss(w0, g0 + eps, docs) - loss(w0, g0 - eps, docs)) / (2 * eps)
    assert model.get_grad("gamma")[0] == pytest.approx(numeric_gamma, rel=2e-2, abs=2e-3)
    for doc_index, j, k, c in [(0, 0, 1, 2), (1, 2, 0, 3), (1, 1, 2, 0)]:
        plus = [d.copy() for d in docs]
        minus = [d.copy() for d in docs]
        plus[doc_index][j, k, c] += eps
        minus[doc_index][j, k, c] -= eps
        numeric = (loss(w0, g0, plus) - loss(w0, g0, minus)) / (2 * eps)
        assert d_docs[doc_index][j, k, c] == pytest.approx(numeric, rel=2e-2, abs=2e-3)


@pytest.mark.parametrize("scale", [1.0, 10.0, 0.1])
def test_lr_scale_multiplies_adams_step_on_the_mix(scale):
    from thinc.api import Adam

    docs = _docs(seed=4, lengths=(4, 2))
    target = [numpy.random.default_rng(5).normal(size=(d.shape[1], 4)).astype("float32") for d in docs]
    model = ScalarMix(3, 4, lr_scale=scale)
    model.initialize()
    for o, x in zip(model.predict(docs), docs):  # the same function as an unscaled mix
        numpy.testing.assert_allclose(o, x.mean(axis=0), atol=1e-6)
    _, backprop = model.begin_update(docs)
    backprop(target)
    lr = 0.01
    model.finish_update(Adam(lr, grad_clip=0.0, L2=0.0))
    weights, gamma = mix_weights(model)
    w = numpy.log(weights) - numpy.log(weights).mean()  # softmax is shift-free; w started at 0
    # Adam's first step moves each parameter by lr against its gradient's sign
    d_w = numpy.array([sum(float((t * x[j]).sum()) for t, x in zip(target, docs)) for j in range(3)])
    d_w = d_w - d_w.mean()
    d_gamma = sum(float((t * x.mean(axis=0)).sum()) for t, x in zip(target, docs))
    expected_w = -scale * lr * numpy.sign(d_w)
    numpy.testing.assert_allclose(w, expected_w - expected_w.mean(), rtol=1e-3, atol=1e-6)
    assert gamma == pytest.approx(1.0 - scale * lr * numpy.sign(d_gamma), rel=1e-5)


def test_lr_scale_must_be_positive():
    with pytest.raises(ValueError, match="lr_scale must be positive"):
        ScalarMix(3, 4, lr_scale=0.0)


def test_wrong_shapes_are_explained():
    model = ScalarMix(3, 4)
    with pytest.raises(ValueError, match="n_output_layers = L \\+ 1"):
        model.initialize(X=[numpy.zeros((2, 1, 4), dtype="float32")])
    model = _mix()
    with pytest.raises(ValueError, match="expects \\(3, n_tokens, 4\\)"):
        model.predict([numpy.zeros((3, 2, 5), dtype="float32")])


@pytest.mark.parametrize("layer", [0, 1, 2, -1])
def test_layer_select_passes_one_layer_and_its_gradient(layer):
    from spacy_elmo.layers import LayerSelect
    from spacy_elmo.layers.scalar_mix import set_mix_dims

    rng = numpy.random.default_rng(0)
    docs = [rng.normal(size=(3, n, 4)).astype("float32") for n in (2, 0, 5)]
    model = set_mix_dims(LayerSelect(layer), 3, 4)
    model.initialize()
    out, backprop = model.begin_update(docs)
    for x, y in zip(docs, out):
        numpy.testing.assert_array_equal(y, x[layer])
    d_out = [rng.normal(size=y.shape).astype("float32") for y in out]
    for x, d, dx in zip(docs, d_out, backprop(d_out)):
        expected = numpy.zeros_like(x)
        expected[layer] = d
        numpy.testing.assert_array_equal(dx, expected)


def test_layer_select_refuses_a_missing_layer():
    from spacy_elmo.layers import LayerSelect
    from spacy_elmo.layers.scalar_mix import set_mix_dims

    with pytest.raises(ValueError, match="layer 3 does not exist in a biLM with 3 output layers"):
        set_mix_dims(LayerSelect(3), 3, 4).initialize()
