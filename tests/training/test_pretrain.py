"""Pretraining: objective, vocabulary, corpus positions, checkpoints and resume, model folders."""

import json
import math

import numpy
import pytest
import spacy
import torch
from thinc.api import Config

from spacy_elmo.bilm import CharBatch
from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets
from spacy_elmo.configs import CONFIG_DIR as CONFIGS
from spacy_elmo.training.checkpoint import load_checkpoint, load_model_dir
from spacy_elmo.training.batches import CorpusPosition, batch_plan
from spacy_elmo.training.corpus import Corpus
from spacy_elmo.training.evaluate import evaluate
from spacy_elmo.training.prepared import prepare_corpus
from spacy_elmo.training.pretrain import pretrain
from spacy_elmo.training.vocab import Vocabulary

from ..helpers import pool_batches, tiny_bilm, vocab_of, tiny_overrides

TEXT = """The cat sat on the mat. The dog sat on the log.
A cat and a dog met. They sat together on the mat.

The market rose today. Shares of the bank rose two percent.
Analysts said the market would rise again.

It rained. The cat stayed home. The dog went out.
"""

TINY = {
    **tiny_overrides("bilm"),
    "vocab.max_size": 40,
    "vocab.min_count": 1,
    "softmax.kind": "full",
    "training.batch_tokens": 64,
    "training.mixed_precision": "no",  # exact float32 arithmetic; bf16 has its own tests
    "training.log_every": 2,
    "training.eval_every": 5,
    "training.checkpoint_every": 3,
    "training.warmup_steps": 0,
    "training.learn_rate": 0.01,
    "training.max_minutes": 0,
    "corpus.pool_size": 8,
    "corpus.dev_every_nth_doc": 0,
}


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT * 3, encoding="utf8")
    return path


def _config(corpus_file, **overrides):
    settings = {**TINY, "paths.train": str(corpus_file), "paths.dev": str(corpus_file), **overrides}
    return Config().from_disk(CONFIGS / "pretrain_cpu.cfg", overrides=settings)


def test_targets_follow_the_paper_objective():
    """Forward position t is scored on word t + 1, backward position t on word t - 1."""
    torch.manual_seed(0)
    bilm = tiny_bilm()
    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "a", "b"])
    lm = BiLanguageModel(bilm, SharedSoftmax(8, len(vocab)), dropout=0.0).eval()
    sentences = [["a", "b"], ["b"]]
    targets = batch_targets(sentences, vocab.ids, vocab.unk_id, vocab.bos_id, vocab.eos_id)
    assert targets.tolist() == [[0, 3, 4, 1], [0, 4, 1, -1]]
    batch = CharBatch.from_sentences(sentences)
    out = lm(batch, targets)
    assert int(out["n_tokens"]) == 3 + 2  # each direction predicts n + 1 tokens per sentence
    # Independent computation of both NLLs with the same softmax, position by position.
    with torch.no_grad():
        top = bilm(batch)[-1]
    P = 8
    with torch.no_grad():
        fl = torch.log_softmax(lm.softmax.linear(top[..., :P]), dim=-1)
        bl = torch.log_softmax(lm.softmax.linear(top[..., P:]), dim=-1)
    forward = -(fl[0, 0, 3] + fl[0, 1, 4] + fl[0, 2, 1] + fl[1, 0, 4] + fl[1, 1, 1])
    backward = -(bl[0, 1, 0] + bl[0, 2, 3] + bl[0, 3, 4] + bl[1, 1, 0] + bl[1, 2, 4])
    assert out["forward"].item() == pytest.approx(float(forward), rel=1e-5)
    assert out["backward"].item() == pytest.approx(float(backward), rel=1e-5)


@pytest.mark.parametrize("kind", ["full", "adaptive"])
def test_softmax_is_normalised(kind):
    softmax = SharedSoftmax(8, 50, kind, cutoffs=[10, 30])
    logp = softmax.log_prob(torch.randn(4, 8))
    numpy.testing.assert_allclose(logp.exp().sum(-1).detach().numpy(), 1.0, atol=1e-5)
    targets = torch.tensor([0, 11, 35, 49])
    hidden = torch.randn(4, 8)
    expected = -softmax.log_prob(hidden)[torch.arange(4), targets].sum()
    assert float(softmax.nll(hidden, targets)) == pytest.approx(float(expected), rel=1e-5)


def test_unigram_perplexity_by_hand():
    from spacy_elmo.training.vocab import unigram_perplexity

    vocab = Vocabulary(["<S>", "</S>", "<UNK>", "a"], [1, 1, 0, 2])  # +1: counts 2, 2, 1, 3
    # predictions of [["a", "zzz"]]: a (3/6), <UNK> (1/6), </S> (2/6); total = 2 + 1 + 3 = 6
    expected = math.exp(-(math.log(3 / 6) + math.log(1 / 6) + math.log(2 / 6)) / 3)
    assert unigram_perplexity(vocab, [["a", "zzz"]]) == pytest.approx(expected)


def test_vocabulary_order_and_file_round_trip(tmp_path):
    vocab = vocab_of([["b", "a", "b"], ["c", "b", "a"], ["d"]], max_size=5)
    assert vocab.words == ["<S>", "</S>", "<UNK>", "b", "a"]
    assert vocab.counts[2] == 2  # c and d are unknown
    vocab.to_file(tmp_path / "vocab.txt")
    again = Vocabulary.from_file(tmp_path / "vocab.txt")
    assert again.words == vocab.words and again.counts == vocab.counts


@pytest.mark.slow
def test_corpus_formats_sentences_and_held_out_documents(tmp_path):
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf8")
    (tmp_path / "b.jsonl").write_text(json.dumps({"text": "One more. And another!"}) + "\n", encoding="utf8")
    sentences = list(Corpus(tmp_path))
    assert ["The", "cat", "sat", "on", "the", "mat", "."] in sentences
    assert ["And", "another", "!"] == sentences[-1]
    dev = list(Corpus(tmp_path / "a.txt", hold_out=2, only_held_out=True))
    train = list(Corpus(tmp_path / "a.txt", hold_out=2))
    assert ["It", "rained", "."] in dev and ["The", "market", "rose", "today", "."] in train
    assert not set(map(tuple, dev)) & set(map(tuple, train))
    split = [list(Corpus(tmp_path / "a.txt", rank=r, world_size=2)) for r in range(2)]
    assert sorted(map(tuple, split[0] + split[1])) == sorted(map(tuple, list(Corpus(tmp_path / "a.txt"))))
    long = list(Corpus(tmp_path / "a.txt", max_length=3))
    assert max(len(s) for s in long) == 3


def test_batches_resume_at_the_same_position(corpus_file, tmp_path):
    prepared = prepare_corpus(corpus_file, tmp_path / "prepared", n_process=1, progress=False, log=lambda s: None)
    every = prepared.select()
    stream = batch_plan(every, prepared.lengths[every], 40, 5, seed=1, start=CorpusPosition())
    first = [next(stream) for _ in range(12)]
    resumed = batch_plan(every, prepared.lengths[every], 40, 5, seed=1, start=first[6][1])
    assert [next(resumed)[0].tolist() for _ in range(5)] == [b.tolist() for b, _ in first[7:12]]
    assert all(max(prepared.lengths[b] + 2) * len(b) <= 40 or len(b) == 1 for b, _ in first)
    batches = pool_batches([["a"] * n for n in range(1, 9)], 20, seed=0)
    assert sorted(len(s) for b in batches for s in b) == list(range(1, 9))


@pytest.mark.slow
def test_loss_falls_and_the_model_loads_in_the_elmo_component(corpus_file, tmp_path):
    out = tmp_path / "run"
    result = pretrain(_config(corpus_file, **{"training.max_steps": 30}), out, log=lambda s: None)
    assert result["step"] == 30
    log = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    dev = [row["dev_ppl"] for row in log if "dev_ppl" in row]
    assert dev[-1] < dev[0] * 0.7
    assert (out / "perplexity.png").read_bytes()[:4] == b"\x89PNG"
    bilm, vocab, softmax = load_model_dir(out / "model-last")
    # The trainer's own forward pass (its model state in the checkpoint) gives the same vectors
    # as the elmo component built from the written files.
    state = load_checkpoint(out)["model"]
    trainer_bilm = tiny_bilm()
    trainer_bilm.load_state_dict({k[len("bilm.") :]: v for k, v in state.items() if k.startswith("bilm.")})
    from spacy_elmo import add_elmo

    nlp = spacy.blank("en")
    add_elmo(nlp, out / "model-last" / "options.json", out / "model-last" / "weights.hdf5")
    doc = nlp("The cat sat on the log.")
    expected = trainer_bilm.eval().embed([[t.text for t in doc]])[0]
    numpy.testing.assert_allclose(doc._.elmo.layers, expected, atol=1e-5)
    # `perplexity` agrees with the trainer's last evaluation on the same text.
    sentences = list(Corpus(corpus_file))
    again = evaluate(BiLanguageModel(bilm, softmax), vocab, sentences, 64)
    assert again["average"] == pytest.approx(dev[-1], rel=1e-4)  # the last evaluation is at step 30


@pytest.mark.slow
def test_a_run_with_a_data_worker_releases_its_folder_when_it_returns(corpus_file, tmp_path):
    """A DataLoader worker is a fork of the trainer and inherits its folder lock: it must end with
    the run, or resuming in the same process is refused as 'in use' (found on CUDA, where one
    worker is the default)."""
    out = tmp_path / "run"
    settings = {"system.data_workers": 1, "training.checkpoint_every": 3}
    pretrain(_config(corpus_file, **settings, **{"training.max_steps": 3}), out, log=lambda s: None)
    result = pretrain(_config(corpus_file, **settings, **{"training.max_steps": 5}), out, resume=True, log=lambda s: None)
    assert result["step"] == 5


@pytest.mark.slow
def test_kill_and_resume_continues_exactly(corpus_file, tmp_path):
    straight = tmp_path / "straight"
    pretrain(_config(corpus_file, **{"training.max_steps": 9}), straight, log=lambda s: None)
    interrupted = tmp_path / "interrupted"
    pretrain(_config(corpus_file, **{"training.max_steps": 6}), interrupted, log=lambda s: None)
    assert load_checkpoint(interrupted)["step"] == 6
    (interrupted / "checkpoint.pt.tmp").write_bytes(b"half-written")  # a kill during a save
    result = pretrain(_config(corpus_file, **{"training.max_steps": 9}), interrupted, resume=True, log=lambda s: None)
    assert result["step"] == 9
    a, b = load_checkpoint(straight), load_checkpoint(interrupted)
    assert a["position"] == b["position"]
    for name, value in a["model"].items():
        torch.testing.assert_close(b["model"][name], value, rtol=0, atol=1e-6)


@pytest.mark.slow
def test_a_checkpoint_from_before_shuffled_blocks_resumes_in_corpus_order(corpus_file, tmp_path):
    out = tmp_path / "old"
    pretrain(_config(corpus_file, **{"training.max_steps": 6}), out, log=lambda s: None)
    state = load_checkpoint(out)
    assert state["position"]["shuffle_block"] > 0
    del state["position"]["shuffle_block"]  # as checkpoints were written before
    torch.save(state, out / "checkpoint.pt")
    pretrain(_config(corpus_file, **{"training.max_steps": 9}), out, resume=True, log=lambda s: None)
    assert load_checkpoint(out)["position"]["shuffle_block"] == 0


@pytest.mark.slow
def test_fine_tune_from_an_original_format_model(corpus_file, tmp_path):
    from spacy_elmo import save_original

    original = tiny_bilm(seed=3)
    save_original(original, tmp_path / "released" / "options.json", tmp_path / "released" / "weights.hdf5")
    out = tmp_path / "tuned"
    pretrain(_config(corpus_file, **{"training.max_steps": 4, "paths.init_bilm": str(tmp_path / "released")}), out, log=lambda s: None)
    state = load_checkpoint(out)["model"]
    start = original.state_dict()
    moved = [k for k in start if (state["bilm." + k] - start[k]).abs().max() > 0]
    assert moved  # trained on
    before = tiny_bilm(seed=3).state_dict()
    assert all(torch.equal(before[k], start[k]) for k in start)


def test_mismatched_init_model_is_explained(corpus_file, tmp_path):
    from spacy_elmo import save_original

    save_original(tiny_bilm(projection_dim=6), tmp_path / "m" / "options.json", tmp_path / "m" / "weights.hdf5")
    with pytest.raises(ValueError, match="does not match the model"):
        pretrain(
            _config(corpus_file, **{"training.max_steps": 2, "paths.init_bilm": str(tmp_path / "m")}), tmp_path / "o", log=lambda s: None
        )


@pytest.mark.slow
def test_perplexity_cli(corpus_file, tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    pretrain(_config(corpus_file, **{"training.max_steps": 3}), tmp_path / "run", log=lambda s: None)
    result = CliRunner().invoke(app, ["perplexity", str(tmp_path / "run" / "model-last"), str(corpus_file)])
    assert result.exit_code == 0, result.output
    values = {line.rsplit(None, 1)[0]: line.rsplit(None, 1)[1] for line in result.output.splitlines()}
    fwd, bwd, avg = (float(values[k]) for k in ("forward perplexity", "backward perplexity", "average perplexity"))
    assert avg == pytest.approx(math.sqrt(fwd * bwd), rel=1e-3)
    assert values["OOV rate"].endswith("%")
    (tmp_path / "empty.txt").write_text("\n\n", encoding="utf8")
    result = CliRunner().invoke(app, ["perplexity", str(tmp_path / "run" / "model-last"), str(tmp_path / "empty.txt")])
    assert result.exit_code != 0
    message = " ".join(result.output.replace("│", " ").split())
    assert "holds no sentences to score" in message and "nan" not in message


@pytest.mark.slow
def test_pretraining_reports_through_a_spacy_logger(corpus_file, tmp_path):
    """[training.logger] takes spaCy's loggers: ConsoleLogger.v3's jsonl gets a row per report."""
    logger = {
        "@loggers": "spacy.ConsoleLogger.v3",
        "progress_bar": None,
        "console_output": False,
        "output_file": str(tmp_path / "spacy_log.jsonl"),
    }
    config = _config(corpus_file, **{"training.max_steps": 6})
    config["training"]["logger"] = logger
    pretrain(config, tmp_path / "run")
    rows = [json.loads(line) for line in (tmp_path / "spacy_log.jsonl").read_text().splitlines()]
    own = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    # an evaluation at steps 0 and 5 and at the end (6); a train report at steps 2, 4, 6
    assert [r["step"] for r in rows] == [0, 2, 4, 5, 6, 6]
    assert all(set(r["losses"]) == {"bilm"} for r in rows)
    dev = [e for e in own if "dev_ppl" in e]
    assert rows[-1]["score"] == pytest.approx(dev[-1]["dev_ppl"])
    train = [e for e in own if "loss" in e]
    assert rows[1]["losses"]["bilm"] == pytest.approx(train[0]["loss"])


@pytest.mark.slow
def test_default_logger_prints_lines_off_a_terminal(corpus_file, tmp_path, capsys):
    pretrain(_config(corpus_file, **{"training.max_steps": 4}), tmp_path / "run")
    out = capsys.readouterr().out
    assert "step       0  dev perplexity" in out
    assert "step       2  00:00:0" in out and "tokens/s" in out


@pytest.mark.slow
def test_resume_after_the_time_budget_says_the_budget_counts_the_whole_run(corpus_file, tmp_path):
    """`pretrain --resume` once max_minutes is spent trains no step, and says why and what to give;
    without --paths.dev the log says which documents became dev."""
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    args = [f"--{k}={json.dumps(v)}" for k, v in TINY.items()] + [f"--paths.train={corpus_file}", "--training.max_steps=0"]
    budget = ["--training.max_minutes=0.002", "--training.checkpoint_every=1", "--corpus.dev_every_nth_doc=5"]
    run = ["pretrain", "cpu", "--output", str(tmp_path / "run"), *args, *budget]
    first = CliRunner().invoke(app, run)
    assert first.exit_code == 0, first.output
    assert "every 5th document of the training text is held out as dev" in first.output
    again = CliRunner().invoke(app, [*run, "--resume"])
    assert again.exit_code == 0, again.output
    assert "max_minutes = 0.002: the budget counts the whole run" in again.output and "--training.max_minutes 0.004" in again.output
    # resumed without naming a budget: the run's own, not the preset's 60 minutes
    args = [a for a in args if not a.startswith("--training.max_minutes=")]
    plain = CliRunner().invoke(app, ["pretrain", "cpu", "--output", str(tmp_path / "run"), *args, "--resume"])
    assert plain.exit_code == 0, plain.output
    assert "Resuming with the run's own budget (max_minutes = 0.002" in plain.output
    assert "max_minutes = 0.002: the budget counts the whole run" in plain.output


@pytest.mark.slow
def test_a_text_of_one_document_holds_out_sentences_and_an_empty_one_is_one_line(tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    one = tmp_path / "one.txt"
    one.write_text(TEXT.replace("\n\n", "\n") * 3, encoding="utf8")  # no blank line: one document
    lines = []
    settings = {"paths.dev": None, "corpus.dev_every_nth_doc": 50, "training.max_steps": 3, "training.eval_every": 2}
    result = pretrain(_config(one, **settings), tmp_path / "out", log=lines.append)
    assert any("every 50th sentence of the training text is held out" in line and "1 document" in line for line in lines)
    assert result["step"] == 3 and math.isfinite(result["best_dev_ppl"])
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf8")
    args = [
        item
        for key, value in {**TINY, "paths.train": str(empty)}.items()
        for item in (f"--{key}", json.dumps(value) if not isinstance(value, str) else value)
    ]
    run = CliRunner().invoke(app, ["pretrain", str(CONFIGS / "pretrain_cpu.cfg"), "--output", str(tmp_path / "e"), *args])
    assert run.exit_code == 1 and "Traceback" not in run.output and run.output.count("\n") <= 3, run.output
    assert "No training text" in run.output or "no sentences" in run.output.lower(), run.output
