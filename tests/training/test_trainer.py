"""The trainer's settings: defaults and misspelt names, the biLM block read without spaCy's
registry, bfloat16 autocast, devices, and reuse of the prepared corpus."""

import json
import math

import pytest
import torch
from thinc.api import Config

from spacy_elmo.bilm import ElmoFormatError, ElmoOptions
from spacy_elmo.training.settings import fill_pretrain_config
from spacy_elmo.bilm import precision as precision_module
from spacy_elmo.training.pretrain import pretrain
from spacy_elmo.training.trainer import Pretrainer, build_bilm

from ..helpers import tiny_options
from .test_pretrain import _config, corpus_file  # noqa: F401 (fixture)


def test_bilm_block_is_read_without_the_registry():
    block = {"@architectures": "spacy-elmo.BiLM.v2", **tiny_options().to_config()}
    assert build_bilm(block).options == tiny_options()
    with pytest.raises(ElmoFormatError, match="cell_dims"):
        ElmoOptions.from_config({**block, "cell_dims": 3})


def test_partial_config_is_filled_and_misspelt_settings_are_named():
    partial = Config().from_str('[paths]\ntrain = "x.txt"\n\n[bilm]\ncell_dim = 16\nprojection_dim = 8\n\n[training]\nmax_steps = 3\n')
    filled = fill_pretrain_config(partial)
    assert filled["training"]["max_steps"] == 3 and filled["training"]["batch_tokens"] == 2048
    assert filled["corpus"]["lang"] == "en" and filled["bilm"]["cell_dim"] == 16
    with pytest.raises(ValueError, match="training.learning_rate"):
        fill_pretrain_config(Config().from_str("[bilm]\ncell_dim = 16\n\n[training]\nlearning_rate = 0.1\n"))
    with pytest.raises(ValueError, match=r"\[optimiser\]"):
        fill_pretrain_config(Config().from_str("[bilm]\ncell_dim = 16\n\n[optimiser]\nx = 1\n"))


@pytest.mark.slow
@pytest.mark.parametrize("softmax", [{"softmax.kind": "full"}, {"softmax.kind": "adaptive", "softmax.cutoffs": [10, 20]}])
def test_bf16_autocast_trains_close_to_float32(corpus_file, tmp_path, softmax):  # noqa: F811
    losses = {}
    for mode in ("no", "bf16"):
        out = tmp_path / mode
        settings = {"training.max_steps": 4, "training.log_every": 1, "training.mixed_precision": mode, **softmax}
        pretrain(_config(corpus_file, **settings), out, log=lambda s: None)
        rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
        losses[mode] = [row["loss"] for row in rows if "loss" in row]
    assert all(math.isfinite(x) for x in losses["bf16"])
    assert losses["bf16"][0] == pytest.approx(losses["no"][0], rel=0.02)
    with pytest.raises(ValueError, match="mixed_precision"):
        Pretrainer(_config(corpus_file, **{"training.mixed_precision": "fp8"}), tmp_path / "bad", log=lambda s: None)


def test_mixed_precision_is_auto_by_default():
    assert fill_pretrain_config(Config().from_str("[bilm]\ncell_dim = 16\n"))["training"]["mixed_precision"] == "auto"


@pytest.mark.slow
@pytest.mark.parametrize("has_units", [True, False])
def test_bf16_and_auto_follow_the_hardware(corpus_file, tmp_path, monkeypatch, has_units):  # noqa: F811
    monkeypatch.setattr(precision_module, "onednn_bf16_available", lambda: has_units)
    for mode in ("bf16", "auto"):
        lines = []
        trainer = Pretrainer(_config(corpus_file, **{"training.mixed_precision": mode}), tmp_path / mode, log=lines.append)
        trainer.close()
        with trainer.autocast():
            assert torch.is_autocast_enabled("cpu") == has_units
        said = [line for line in lines if "no bfloat16 units" in line]
        assert len(said) == (0 if has_units else 1), lines


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without a GPU")
def test_asking_for_a_gpu_without_one_is_explained(corpus_file, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match="use -1 for the CPU"):
        pretrain(_config(corpus_file, **{"training.max_steps": 1}), tmp_path / "o", log=lambda s: None, gpu_id=0)


@pytest.mark.slow
def test_a_second_run_reuses_the_prepared_corpus(corpus_file, tmp_path):  # noqa: F811
    lines = []
    pretrain(_config(corpus_file, **{"training.max_steps": 2}), tmp_path / "o", log=lines.append)
    assert sum(line.startswith("Prepared") for line in lines) == 1
    pretrain(_config(corpus_file, **{"training.max_steps": 4}), tmp_path / "o", resume=True, log=lines.append)
    assert sum(line.startswith("Prepared") for line in lines) == 1
    # A prepared folder can be given as the training text itself.
    pretrain(
        _config(corpus_file, **{"training.max_steps": 2, "paths.train": str(tmp_path / "o" / "corpus")}), tmp_path / "p", log=lines.append
    )
    assert sum(line.startswith("Prepared") for line in lines) == 1 and not (tmp_path / "p" / "corpus").exists()


@pytest.mark.slow
def test_cli_takes_a_partial_config_and_overrides_of_what_it_leaves_out(corpus_file, tmp_path):  # noqa: F811
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    partial = tmp_path / "my.cfg"
    partial.write_text("[bilm]\ncell_dim = 16\nprojection_dim = 8\nfilters = [[1, 4], [2, 8]]\nchar_embed_dim = 4\n")
    args = [
        "pretrain",
        str(partial),
        "--output",
        str(tmp_path / "out"),
        "--paths.train",
        str(corpus_file),
        "--training.max_steps",
        "2",
        "--training.max_minutes",
        "0",
        "--vocab.min_count",
        "1",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    saved = Config().from_disk(tmp_path / "out" / "config.cfg")
    assert saved["bilm"]["cell_dim"] == 16 and saved["training"]["max_steps"] == 2 and saved["corpus"]["lang"] == "en"
    result = CliRunner().invoke(app, [*args[:3], str(tmp_path / "out2"), *args[4:], "--training.learning_rate", "0.1"])
    assert result.exit_code != 0 and "Unknown pretraining setting(s): training.learning_rate" in " ".join(
        result.output.replace("│", " ").split()
    )
    result = CliRunner().invoke(app, ["pretrain", "huge", "--output", str(tmp_path / "o3")])
    assert result.exit_code != 0 and "cpu, small, original" in " ".join(result.output.replace("│", " ").split())


@pytest.mark.slow
def test_a_missing_matplotlib_is_noted_once_at_info_and_the_run_says_nothing(corpus_file, tmp_path, monkeypatch, caplog):  # noqa: F811
    """perplexity.png needs the plot extra; without it the run's lines stay about the run (README's install
    has no matplotlib), and the logger notes it once for whoever asks."""
    import logging
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    lines = []
    with caplog.at_level(logging.INFO, logger="spacy_elmo"):
        pretrain(_config(corpus_file, **{"training.max_steps": 10, "training.eval_every": 3}), tmp_path / "o", log=lines.append)
    assert not [line for line in lines if "perplexity.png" in line]
    said = [r.getMessage() for r in caplog.records if "perplexity.png" in r.getMessage()]
    assert len(said) == 1 and "spacy-elmo[plot]" in said[0]
    assert not (tmp_path / "o" / "perplexity.png").exists()


@pytest.mark.parametrize("kind", ["full", "adaptive"])
def test_the_softmax_loss_stays_float32_under_bf16_autocast(kind):
    """The logits' products run in bfloat16, the log-softmax and the loss in float32: the loss
    is float32 and within 1% of the float32 loss (it was all float32 before, at bf16's cost)."""
    from spacy_elmo.bilm.language_model import SharedSoftmax

    torch.manual_seed(0)
    softmax = SharedSoftmax(32, 3000, kind, cutoffs=[100, 1000])
    hidden, targets = torch.randn(500, 32), torch.randint(0, 3000, (500,))
    exact = softmax.nll(hidden, targets)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = softmax.nll(hidden, targets)
    assert low.dtype == torch.float32
    assert float(low) == pytest.approx(float(exact), rel=1e-2)
    if kind == "adaptive":  # the same sums as PyTorch's own module in float32
        assert float(exact) == pytest.approx(float(-softmax.adaptive(hidden, targets).output.sum()), rel=1e-6)


@pytest.mark.slow
def test_softmax_warmup_trains_the_softmax_alone_then_everything(corpus_file, tmp_path):  # noqa: F811
    """Fine-tuning a biLM without its softmax: the first steps leave the biLM as it was and
    train the new softmax; the dev perplexity at that point is logged and returned."""
    config = _config(corpus_file, **{"training.max_steps": 6, "training.softmax_warmup_steps": 3, "training.eval_every": 100})
    trainer = Pretrainer(config, tmp_path / "o", log=lambda s: None)
    bilm_before = {k: v.clone() for k, v in trainer.bilm.state_dict().items()}
    softmax_before = {k: v.clone() for k, v in trainer.softmax.state_dict().items()}
    snapshots = {}
    original_step = trainer.train_step

    def step_and_record(batch):
        loss = original_step(batch)
        snapshots[trainer.step + 1] = {k: v.clone() for k, v in trainer.bilm.state_dict().items()}
        return loss

    trainer.train_step = step_and_record
    result = trainer.run()
    trainer.close()
    for name, value in snapshots[3].items():
        assert torch.equal(value, bilm_before[name]), name  # frozen through step 3
    assert any(not torch.equal(v, bilm_before[k]) for k, v in snapshots[4].items())  # trains from step 4
    assert any(not torch.equal(v, softmax_before[k]) for k, v in trainer.softmax.state_dict().items())
    log = [json.loads(line) for line in (tmp_path / "o" / "log.jsonl").read_text().splitlines()]
    marked = [entry for entry in log if entry.get("softmax_warmup_end")]
    assert len(marked) == 1 and marked[0]["step"] == 3
    assert result["warmup_dev_ppl"] == pytest.approx(marked[0]["dev_ppl"]) and math.isfinite(result["warmup_dev_ppl"])


def test_bilm_lr_scale_gives_the_biLM_its_own_rate(corpus_file, tmp_path):  # noqa: F811
    trainer = Pretrainer(
        _config(corpus_file, **{"training.bilm_lr_scale": 0.1, "training.learn_rate": 0.01}), tmp_path / "o", log=lambda s: None
    )
    groups = trainer.optimizer.param_groups
    assert [g["lr"] for g in groups] == pytest.approx([0.001, 0.01])
    assert {id(p) for p in groups[0]["params"]} == {id(p) for p in trainer.bilm.parameters()}
    trainer.close()
    with pytest.raises(ValueError, match="bilm_lr_scale must be positive"):
        Pretrainer(_config(corpus_file, **{"training.bilm_lr_scale": 0.0}), tmp_path / "p", log=lambda s: None)


@pytest.mark.slow
def test_max_epochs_counts_passes_after_the_softmax_warmup(corpus_file, tmp_path):  # noqa: F811
    settings = {"training.max_steps": 0, "training.max_minutes": 0, "training.max_epochs": 1, "training.softmax_warmup_steps": 2}
    trainer = Pretrainer(_config(corpus_file, **settings), tmp_path / "o", log=lambda s: None)
    # hand count: one prediction per word and one for </S>, per direction, over the training text
    sentences = [trainer.corpus.sentence(i) for i in trainer.train_sentences]
    assert trainer.epoch_tokens == sum(len(s) + 1 for s in sentences)
    result = trainer.run()
    trainer.close()
    after_warmup = result["tokens"] - trainer.warmup_tokens
    assert trainer.warmup_tokens > 0 and trainer.epoch_tokens <= after_warmup < trainer.epoch_tokens + 64
