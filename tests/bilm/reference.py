"""A direct NumPy transcription of elmo-format.md, working on the raw arrays of a weights.hdf5.

Deliberately naive (loops, no batching, no reordering) so that it shares nothing with the
package's implementation but the specification.
"""

import h5py
import numpy


def _sigmoid(x):
    return 1.0 / (1.0 + numpy.exp(-x))


def _char_ids(word, max_chars):
    ids = [258]
    if word in ("<S>", "</S>"):
        ids.append(256 if word == "<S>" else 257)
    else:
        ids.extend(word.encode("utf-8", "ignore")[: max_chars - 2])
    ids.append(259)
    ids += [260] * (max_chars - len(ids))
    return [i + 1 for i in ids]


def token_layer(f, options, word):
    cnn = options["char_cnn"]
    embed = numpy.concatenate([numpy.zeros((1, f["char_embed"].shape[1])), f["char_embed"][()]])
    x = embed[_char_ids(word, cnn["max_characters_per_token"])]  # (50, E)
    pooled = []
    for i, (width, n) in enumerate(cnn["filters"]):
        W = f[f"CNN/W_cnn_{i}"][()][0]  # (width, E, n)
        b = f[f"CNN/b_cnn_{i}"][()]
        conv = [numpy.einsum("we,wen->n", x[s : s + width], W) + b for s in range(x.shape[0] - width + 1)]
        pooled.append(numpy.max(conv, axis=0))
    h = numpy.concatenate(pooled)
    h = numpy.maximum(h, 0) if cnn["activation"] == "relu" else numpy.tanh(h)
    for k in range(cnn["n_highway"]):
        g = _sigmoid(h @ f[f"CNN_high_{k}/W_carry"][()] + f[f"CNN_high_{k}/b_carry"][()])
        t = numpy.maximum(h @ f[f"CNN_high_{k}/W_transform"][()] + f[f"CNN_high_{k}/b_transform"][()], 0)
        h = g * t + (1 - g) * h
    if "CNN_proj" in f:
        h = h @ f["CNN_proj/W_proj"][()] + f["CNN_proj/b_proj"][()]
    return h


def _cell(f, direction, layer, n_layers):
    if f"RNN_{direction}/RNN/MultiRNNCell" in f:
        return f[f"RNN_{direction}/RNN/MultiRNNCell/Cell{layer}/LSTMCell"]
    assert n_layers == 1
    return f[f"RNN_{direction}/RNN/LSTMCell"]


def _run_direction(f, options, direction, x):
    lstm = options["lstm"]
    layers = []
    for l in range(lstm["n_layers"]):
        cell = _cell(f, direction, l, lstm["n_layers"])
        W, B = cell["W_0"][()], cell["B"][()]
        C = B.shape[0] // 4
        W_P = cell["W_P_0"][()] if "W_P_0" in cell else None
        c = numpy.zeros(C)
        h = numpy.zeros(W.shape[0] - x.shape[1])
        out = []
        for t in range(x.shape[0]):
            z = numpy.concatenate([x[t], h]) @ W + B
            i, j, fg, o = numpy.split(z, 4)
            c = _sigmoid(fg + 1.0) * c + _sigmoid(i) * numpy.tanh(j)
            if lstm.get("cell_clip") is not None:
                c = numpy.clip(c, -lstm["cell_clip"], lstm["cell_clip"])
            h = _sigmoid(o) * numpy.tanh(c)
            if W_P is not None:
                h = h @ W_P
                if lstm.get("proj_clip") is not None:
                    h = numpy.clip(h, -lstm["proj_clip"], lstm["proj_clip"])
            out.append(h + x[t] if (l > 0 and lstm.get("use_skip_connections")) else h)
        x = numpy.stack(out)
        layers.append(x)
    return layers


def reference_layers(weights_file, options, sentence):
    """RETURNS: (L + 1, len(sentence), 2P) float64, markers removed, zero initial state."""
    words = ["<S>", *sentence, "</S>"]
    with h5py.File(weights_file, "r") as f:
        tokens = numpy.stack([token_layer(f, options, w) for w in words])
        forward = _run_direction(f, options, 0, tokens)
        backward = [layer[::-1] for layer in _run_direction(f, options, 1, tokens[::-1])]
    out = [numpy.concatenate([tokens, tokens], axis=-1)]
    out += [numpy.concatenate([fw, bw], axis=-1) for fw, bw in zip(forward, backward)]
    return numpy.stack(out)[:, 1:-1]
