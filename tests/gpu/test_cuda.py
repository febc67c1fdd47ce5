"""The CUDA path: the biLM, pretraining, `spacy train --gpu-id 0` and the component on a GPU against
the CPU. Marked `gpu`: collected everywhere (`pytest -m gpu`), skipped without CUDA, never needed by
CI. `benchmarks/gpu_check.sh` runs them with the speed benchmarks on a machine lent a GPU."""

import copy
import json
import subprocess
import sys

import numpy
import pytest
import torch

from spacy_elmo import save_original
from spacy_elmo.bilm import BiLM, ElmoOptions

from ..helpers import tiny_overrides
from ..training.test_pretrain import TEXT, _config

pytestmark = pytest.mark.gpu
SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Shares", "of", "Acme", "rose", "5", "%", "in", "Frankfurt", "."],
    ["A"],
    ["Zürich", ",", "日本語", "and", "naïve", "words", "🙂"],
]


@pytest.fixture(autouse=True)
def exact_float32():
    """TF32 off: float32 products on CUDA as exact as the CPU's."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _small_bilm() -> BiLM:
    torch.manual_seed(0)
    bilm = BiLM(ElmoOptions(cell_dim=1024, projection_dim=128, n_highway=1))
    with torch.no_grad():
        for name, p in bilm.named_parameters():
            if name.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    return bilm.eval()


def _cosines(a: numpy.ndarray, b: numpy.ndarray) -> numpy.ndarray:
    a, b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    return (a * b).sum(-1) / numpy.maximum(numpy.linalg.norm(a, axis=-1) * numpy.linalg.norm(b, axis=-1), 1e-12)


def test_bilm_on_cuda_equals_the_cpu():
    bilm = _small_bilm()
    cpu = bilm.embed(SENTENCES)
    cuda = copy.deepcopy(bilm).cuda()
    for a, b in zip(cpu, cuda.embed(SENTENCES)):
        numpy.testing.assert_allclose(b, a, atol=1e-5)
    for a, b in zip(cpu, cuda.embed(SENTENCES, precision="bf16")):
        assert _cosines(a, b).min() >= 0.999


def test_pretraining_on_cuda_falls_and_resumes_on_the_same_curve(tmp_path):
    from spacy_elmo.training.pretrain import pretrain

    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3, encoding="utf8")
    settings = {"training.mixed_precision": "bf16", "training.log_every": 1, "training.checkpoint_every": 10}

    def losses(folder):
        rows = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
        return {row["step"]: row["loss"] for row in rows if "loss" in row}

    straight = tmp_path / "straight"
    pretrain(_config(corpus, **settings, **{"training.max_steps": 20}), straight, gpu_id=0, log=lambda s: None)
    curve = losses(straight)
    assert len(curve) == 20 and all(numpy.isfinite(list(curve.values())))
    assert numpy.mean([curve[s] for s in range(16, 21)]) < numpy.mean([curve[s] for s in range(1, 6)])
    resumed = tmp_path / "resumed"
    pretrain(_config(corpus, **settings, **{"training.max_steps": 10}), resumed, gpu_id=0, log=lambda s: None)
    pretrain(_config(corpus, **settings, **{"training.max_steps": 20}), resumed, resume=True, gpu_id=0, log=lambda s: None)
    again = losses(resumed)
    for step in range(11, 21):
        assert again[step] == pytest.approx(curve[step], abs=1e-5), step


def _needs_cupy() -> None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        pytest.skip("spaCy runs on a GPU through cupy, which is not installed (pip install cupy-cuda12x)")


def test_spacy_train_on_the_gpu_with_elmo(tmp_path):
    _needs_cupy()
    import spacy
    from spacy.tokens import DocBin

    from spacy_elmo.configs import CONFIG_DIR

    from ..helpers import tiny_bilm

    save_original(tiny_bilm(seed=2), tmp_path / "options.json", tmp_path / "weights.hdf5")
    nlp = spacy.blank("en")
    docs = []
    for i, (name, city) in enumerate([("Anna", "Paris"), ("Peter", "Berlin"), ("Maria", "Rome"), ("John", "Oslo")] * 5):
        doc = nlp(f"{name} flew to {city} on day {i} .")
        doc.ents = [doc.char_span(0, len(name), label="PER"), doc.char_span(len(name) + 9, len(name) + 9 + len(city), label="LOC")]
        docs.append(doc)
    DocBin(docs=docs).to_disk(tmp_path / "train.spacy")
    overrides = {
        "paths.train": str(tmp_path / "train.spacy"),
        "paths.dev": str(tmp_path / "train.spacy"),
        "paths.elmo_options": str(tmp_path / "options.json"),
        "paths.elmo_weights": str(tmp_path / "weights.hdf5"),
        "training.max_steps": 50,
        "training.eval_frequency": 25,
        **tiny_overrides("components.elmo.model"),
    }
    cmd = [sys.executable, "-m", "spacy", "train", str(CONFIG_DIR / "ner_elmo.cfg"), "--output", str(tmp_path / "out"), "--gpu-id", "0"]
    for key, value in overrides.items():
        cmd += [f"--{key}", value if isinstance(value, str) else json.dumps(value)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (tmp_path / "out" / "model-last" / "config.cfg").is_file()


def test_the_component_on_the_gpu_gives_the_cpus_layers(tmp_path):
    """In a fresh process: spacy.require_gpu() changes Thinc's global ops."""
    _needs_cupy()
    bilm = _small_bilm()
    save_original(bilm, tmp_path / "options.json", tmp_path / "weights.hdf5")
    script = f"""
import sys, numpy, spacy, torch
torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
from spacy_elmo import add_elmo
def layers(gpu):
    if gpu:
        spacy.require_gpu(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    add_elmo(nlp, r"{tmp_path / "options.json"}", r"{tmp_path / "weights.hdf5"}")
    assert nlp.get_pipe("elmo").bilm.device.type == ("cuda" if gpu else "cpu")
    return nlp("The cat sat on the mat. Shares of Acme rose 5 % in Frankfurt.")._.elmo.layers
cpu = layers(False)
gpu = layers(True)
numpy.testing.assert_allclose(gpu, cpu, atol=1e-5)
print("ok")
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "ok" in run.stdout, run.stdout[-3000:] + run.stderr[-3000:]
