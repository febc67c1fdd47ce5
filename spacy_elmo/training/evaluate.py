"""Exact perplexity of a biLM language model on tokenized sentences."""

from typing import Dict, List

import torch

from ..bilm import CharBatch
from ..bilm.language_model import BiLanguageModel, batch_targets, perplexities
from .batches import length_batches
from .vocab import Vocabulary


@torch.no_grad()
def evaluate(lm: BiLanguageModel, vocab: Vocabulary, sentences: List[List[str]], batch_tokens: int) -> Dict[str, float]:
    """Forward, backward and average perplexity of `sentences`, their token count and OOV rate.

    lm (BiLanguageModel): the model, on any device (evaluated in eval mode, then restored).
    vocab (Vocabulary): the softmax vocabulary.
    sentences (List[List[str]]): token texts per sentence.
    batch_tokens (int): padded tokens per batch.
    RETURNS (Dict[str, float]): "forward", "backward", "average", "tokens", "oov_rate".
    """
    was_training = lm.training
    lm.eval()
    totals = {"forward": 0.0, "backward": 0.0}
    n_tokens = n_oov = n_words = 0
    for group in length_batches(sentences, batch_tokens):
        out = lm(CharBatch.from_sentences(group), batch_targets(group, vocab.ids, vocab.unk_id, vocab.bos_id, vocab.eos_id))
        totals["forward"] += float(out["forward"])
        totals["backward"] += float(out["backward"])
        n_tokens += int(out["n_tokens"])
        n_words += sum(len(s) for s in group)
        n_oov += sum(1 for s in group for w in s if w not in vocab.ids)
    lm.train(was_training)
    fwd, bwd, avg = perplexities(totals, n_tokens)
    return {"forward": fwd, "backward": bwd, "average": avg, "tokens": n_tokens, "oov_rate": n_oov / max(1, n_words)}
