import numpy
import torch

from spacy_elmo.bilm import CharBatch, sentences_to_char_ids, word_char_ids
from spacy_elmo.bilm.char_ids import cut_char_axis, char_length_groups


def test_word_char_ids_by_hand():
    ids = word_char_ids("ab", 10)
    # BOW 258, 'a' 97, 'b' 98, EOW 259, then PAD 260; all shifted by +1
    assert ids.tolist() == [259, 98, 99, 260, 261, 261, 261, 261, 261, 261]


def test_sentence_markers():
    assert word_char_ids("<S>", 6).tolist() == [259, 257, 260, 261, 261, 261]
    assert word_char_ids("</S>", 6).tolist() == [259, 258, 260, 261, 261, 261]


def test_truncates_bytes_not_characters():
    word = "é" * 30  # 60 UTF-8 bytes
    ids = word_char_ids(word, 50)
    expected = list(word.encode("utf-8")[:48])
    assert ids[1:49].tolist() == [b + 1 for b in expected]
    assert ids[49] == 260
    emoji = word_char_ids("🙂", 50)
    assert emoji[1:5].tolist() == [b + 1 for b in "🙂".encode("utf-8")]
    assert emoji[5] == 260


def test_sentences_to_char_ids_pads_with_zero():
    ids = sentences_to_char_ids([["a"], ["a", "b", "c"]], 8)
    assert ids.shape == (2, 5, 8)
    assert ids[0, 0].tolist() == word_char_ids("<S>", 8).tolist()
    assert ids[0, 2].tolist() == word_char_ids("</S>", 8).tolist()
    assert (ids[0, 3:] == 0).all()
    assert ids[1, 4].tolist() == word_char_ids("</S>", 8).tolist()


def test_char_batch_distinct_types_round_trip():
    sentences = [["the", "cat", "the"], [], ["cat"]]
    batch = CharBatch.from_sentences(sentences, 12)
    assert batch.lengths.tolist() == [5, 2, 3]
    assert len(batch.words) == len(set(batch.words)) == 4  # <S>, </S>, the, cat
    dense = sentences_to_char_ids(sentences, 12)
    rebuilt = torch.zeros_like(dense)
    mask = batch.index >= 0
    rebuilt[mask] = batch.type_chars[batch.index[mask]]
    assert torch.equal(rebuilt, dense)
    from_dense = CharBatch.from_char_ids(dense)
    assert from_dense.lengths.tolist() == [5, 2, 3]
    rebuilt2 = torch.zeros_like(dense)
    rebuilt2[mask] = from_dense.type_chars[from_dense.index[mask]]
    assert torch.equal(rebuilt2, dense)


def test_cut_char_axis_keeps_a_padding_window():
    chars = torch.from_numpy(numpy.stack([word_char_ids(w, 50) for w in ["a", "abcd"]]))
    cut = cut_char_axis(chars, max_width=3)
    # longest real length is 6 (BOW a b c d EOW), plus the widest filter
    assert cut.shape == (2, 9)
    long_word = torch.from_numpy(word_char_ids("x" * 47, 50))[None]
    assert cut_char_axis(long_word, 7).shape == (1, 50)


def _chars(words, width=50):
    return torch.from_numpy(numpy.stack([word_char_ids(w, width) for w in words]))


def test_length_groups_split_off_a_long_type():
    # 100 types of 4 ids (BOW a b EOW) and one of 42. One group: 101 rows x min(50, 42 + 7)
    # positions + 512 = 5,461; two: 100 x (4 + 7) + 512 + 1 x 49 + 512 = 2,173.
    words = ["x" * 40] + ["ab"] * 50 + ["cd"] * 50
    order, sizes = char_length_groups(_chars(words), max_width=7)
    assert sizes == [100, 1]
    assert order.tolist() == list(range(1, 101)) + [0]  # sorted by length, stable


def test_length_groups_keep_few_types_together():
    # One group: 4 x 49 + 512 = 708; two: 3 x 11 + 512 + 49 + 512 = 1,106.
    order, sizes = char_length_groups(_chars(["ab", "cd", "x" * 40, "ef"]), max_width=7)
    assert sizes == [4]
    assert sorted(order.tolist()) == [0, 1, 2, 3]
