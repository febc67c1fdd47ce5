"""How pretraining's `mixed_precision = "auto"` times a step (training/devices.py)."""

import pytest
import torch

from spacy_elmo.bilm.char_ids import CharBatch
from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets
from spacy_elmo.bilm.packed_matmul import onednn_available, training_library
from spacy_elmo.training import devices

from ..helpers import tiny_bilm


class _Batch:
    def __init__(self) -> None:
        sentences = [["a", "b", "a"], ["b"]]
        self.chars = CharBatch.from_sentences(sentences)
        self.targets = batch_targets(sentences, {"<S>": 0, "</S>": 1, "<UNK>": 2, "a": 3, "b": 4}, 2, 0, 1)
        self.n_tokens = 8


@pytest.mark.skipif(not onednn_available(), reason="this PyTorch build has no oneDNN: training's products have one library")
def test_auto_times_float32_at_its_faster_library_and_puts_the_library_back(monkeypatch):
    """float32 is timed with training's products through each library (a float32 run then takes the faster:
    `products_library`), and the faster counts against bf16: timed with one library alone, float32 lost to bf16 on
    an AMX Xeon where it trained 1.5x faster than bf16 did."""
    lm = BiLanguageModel(tiny_bilm(), SharedSoftmax(8, 5), dropout=0.0)
    seen = {}

    def fake_fastest_of(runs, repeats=2, sync=lambda: None):
        for name, run in runs.items():
            run()
            seen[name] = training_library()
        return {"bf16": 3.0, "fp32 blas": 2.0, "fp32 onednn": 5.0}

    monkeypatch.setattr(devices, "fastest_of", fake_fastest_of)
    before = training_library()
    seconds = devices.time_step(lm, _Batch(), torch.device("cpu"))
    assert seconds == {"fp32": 2.0 / 8, "bf16": 3.0 / 8}
    assert seen["fp32 blas"] == "blas" and seen["fp32 onednn"] == "onednn"
    assert training_library() == before
    assert all(p.grad is not None for p in lm.parameters() if p.requires_grad)  # the steps ran (the caller clears them)
