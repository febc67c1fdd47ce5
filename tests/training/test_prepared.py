"""The prepared corpus and the batches built from it: the same sentences, vocabulary, batches and
tensors as the streamed corpus, made once (in parallel) and reused."""

import json

import numpy
import pytest
import torch

from spacy_elmo.bilm import CharBatch
from spacy_elmo.bilm.language_model import BiLanguageModel, SharedSoftmax, batch_targets
from spacy_elmo.training.batches import BatchEncoder, BatchStream, CorpusPosition, batch_loader, batch_plan, epoch_order
from spacy_elmo.training.corpus import Corpus
from spacy_elmo.training.prepared import PreparedCorpus, prepare_corpus, prepared_for_training
from spacy_elmo.training.vocab import Vocabulary

from ..helpers import pool_batches, tiny_bilm, vocab_of
from .test_pretrain import TEXT

ODD = "Ünïcödé façade — naïve café.\tTabs  and\u00a0spaces!  \u200bZero width.\n\n" + "x" * 300 + " end.\n"


def _quiet(s: str) -> None:
    pass


@pytest.fixture
def text_dir(tmp_path):
    folder = tmp_path / "text"
    folder.mkdir()
    (folder / "a.txt").write_text(TEXT * 3 + "\n" + ODD, encoding="utf8")
    (folder / "b.jsonl").write_text(
        json.dumps({"text": "One more. And another!"}) + "\n" + json.dumps({"text": "  "}) + "\n", encoding="utf8"
    )
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("n_process", [1, 2])
def test_prepared_sentences_equal_the_streamed_corpus(text_dir, tmp_path, n_process):
    prepared = prepare_corpus(text_dir, tmp_path / "p", max_length=7, n_process=n_process, progress=False, log=_quiet)
    for kwargs in (
        {},
        {"hold_out": 2},
        {"hold_out": 2, "only_held_out": True},
        {"rank": 1, "world_size": 2},
        {"hold_out": 3, "rank": 0, "world_size": 2},
    ):
        streamed = list(Corpus(text_dir, max_length=7, **kwargs))
        selection = {k: kwargs[k] for k in ("hold_out", "only_held_out", "rank", "world_size") if k in kwargs}
        chosen = prepared.select(**selection)
        assert [prepared.sentence(i) for i in chosen] == streamed, kwargs
    assert max(prepared.lengths) == 7


def test_vocabulary_from_prepared_counts_equals_the_streamed_build(text_dir, tmp_path):
    prepared = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=_quiet)
    train = prepared.select(hold_out=2)
    counts = prepared.word_counts(train)
    table = {w: int(c) for w, c in zip(prepared.words, counts) if c > 0}
    vocab = Vocabulary.from_sentence_counts(table, len(train), 30, 1)
    expected = vocab_of(Corpus(text_dir, hold_out=2), 30, 1)
    assert vocab.words == expected.words and vocab.counts == expected.counts


def test_preparation_is_reused_and_redone_when_stale(text_dir, tmp_path):
    lines = []
    first = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=lines.append)
    assert len(lines) == 1 and lines[0].startswith("Prepared")
    again = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=lines.append)
    assert len(lines) == 1 and again.meta == first.meta  # reused, nothing tokenized
    # Other settings, or changed text: prepared again.
    prepare_corpus(text_dir, tmp_path / "p", max_length=5, n_process=1, progress=False, log=lines.append)
    assert "preparing it again" in lines[1] and PreparedCorpus(tmp_path / "p").key["max_length"] == 5
    # A preparation killed before it finished leaves no meta.json and is never used.
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "tokens.bin").write_bytes(b"\0" * 8)
    with pytest.raises(FileNotFoundError, match="not a prepared corpus"):
        PreparedCorpus(tmp_path / "half")
    # Named explicitly with other tokenizer settings: refused, naming them.
    with pytest.raises(ValueError, match="max_length=100"):
        prepared_for_training(tmp_path / "p", tmp_path / "out", "en", 100)


def test_batch_plan_equals_pools_of_the_streamed_corpus(text_dir, tmp_path):
    prepared = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=_quiet)
    every = prepared.select()
    streamed = list(Corpus(text_dir))
    pool_size, seed = 5, 3
    expected = []
    for epoch in range(2):
        for pool_index, start in enumerate(range(0, len(streamed), pool_size)):
            expected += pool_batches(streamed[start : start + pool_size], 40, seed * 1_000_003 + epoch * 10_007 + pool_index)
    # shuffle_block 0: pools of consecutive sentences, in corpus order
    plan = batch_plan(every, prepared.lengths[every], 40, pool_size, seed, CorpusPosition(shuffle_block=0))
    got = [[prepared.sentence(i) for i in next(plan)[0]] for _ in range(len(expected))]
    assert got == expected


def test_epochs_read_every_sentence_once_in_shuffled_blocks(text_dir, tmp_path):
    prepared = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=_quiet)
    every = prepared.select()
    assert len(every) >= 12
    plan = batch_plan(every, prepared.lengths[every], 40, 5, 3, CorpusPosition(shuffle_block=2))
    epochs: dict = {}
    while True:
        indices, position = next(plan)
        if position.epoch == 3:
            break
        assert position.shuffle_block == 2
        epochs.setdefault(position.epoch, []).extend(indices.tolist())
    for read in epochs.values():
        assert sorted(read) == sorted(every.tolist())
    assert len({tuple(read) for read in epochs.values()}) == 3  # another order each epoch


def test_epoch_order_is_a_permutation_of_whole_blocks():
    n, block = 103, 8
    orders = [epoch_order(n, block, seed=5, epoch=e) for e in range(3)]
    for order in orders:
        assert sorted(order.tolist()) == list(range(n))
        starts = order[numpy.r_[0, numpy.flatnonzero(numpy.diff(order) != 1) + 1]]
        assert (starts % block == 0).all()  # each block is read whole, in order
    assert not numpy.array_equal(orders[0], orders[1]) and not numpy.array_equal(orders[0], numpy.arange(n))
    assert numpy.array_equal(orders[1], epoch_order(n, block, seed=5, epoch=1))
    assert not numpy.array_equal(orders[1], epoch_order(n, block, seed=6, epoch=1))
    assert epoch_order(n, 0, seed=5, epoch=1).tolist() == list(range(n))


def test_encoded_batch_gives_the_same_loss_as_the_sentences(text_dir, tmp_path):
    prepared = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=_quiet)
    vocab = vocab_of(Corpus(text_dir), 25, 1)
    encoder = BatchEncoder(prepared, vocab, 50)
    chosen = numpy.array([3, 0, len(prepared) - 1, 5])
    batch = encoder(chosen, CorpusPosition(0, 0, 1))
    sentences = [prepared.sentence(i) for i in chosen]
    expected_targets = batch_targets(sentences, vocab.ids, vocab.unk_id, vocab.bos_id, vocab.eos_id)
    assert torch.equal(batch.targets, expected_targets)
    assert batch.n_tokens == sum(len(s) + 1 for s in sentences)
    lm = BiLanguageModel(tiny_bilm(), SharedSoftmax(8, len(vocab)), dropout=0.0).eval()
    with torch.no_grad():
        a = lm(batch.chars, batch.targets)
        b = lm(CharBatch.from_sentences(sentences), expected_targets)
    for key in ("forward", "backward"):
        assert float(a[key]) == pytest.approx(float(b[key]), rel=1e-6)


@pytest.mark.slow
def test_workers_hand_out_batches_in_plan_order(text_dir, tmp_path):
    prepared = prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=False, log=_quiet)
    vocab = vocab_of(Corpus(text_dir), 25, 1)
    encoder = BatchEncoder(prepared, vocab, 50)
    every = prepared.select()
    start = CorpusPosition(0, 1, 2)
    stream = BatchStream(encoder, every, 40, 5, 7, start)
    plan = batch_plan(every, prepared.lengths[every], 40, 5, 7, start)
    loaded = batch_loader(stream, workers=2, device=torch.device("cpu"))
    for _ in range(15):
        indices, position = next(plan)
        batch = next(loaded)
        assert batch.position == position
        assert torch.equal(batch.targets, encoder(indices, position).targets)


def test_progress_bar_only_on_a_terminal(text_dir, tmp_path, capfd):
    """Redirected output gets the summary line, not the bar's "\\r" frames."""
    prepare_corpus(text_dir, tmp_path / "p", n_process=1, progress=True, log=print)
    out, err = capfd.readouterr()
    assert "\r" not in out + err and "Preparing corpus" not in err
    assert "Prepared" in out
