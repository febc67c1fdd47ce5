"""What the biLM's two language models predict at a position from its context alone: the forward LM's
log p(word | the tokens before it) and the backward LM's log p(word | the tokens after it), over the
softmax's vocabulary. Neither direction reads the token at the position, so these are the position's
lexical substitutes (Amrami & Goldberg 2018 induce word senses from them; Arefyev & Zhikov 2020 detect
semantic change with them).
"""

from typing import Sequence, Tuple

import torch

from .language_model import SharedSoftmax
from .model import BiLM


@torch.no_grad()
def context_log_probs(
    bilm: BiLM, softmax: SharedSoftmax, sentences: Sequence[Sequence[str]], positions: Sequence[int], batch_size: int = 32
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The two directions' predictions of the token at `positions[i]` of `sentences[i]`.

    bilm (BiLM): the biLM the softmax was trained with.
    softmax (SharedSoftmax): its softmax (`spacy_elmo.training.checkpoint.load_model_dir` loads both).
    sentences (Sequence[Sequence[str]]): token texts, without markers.
    positions (Sequence[int]): the token index predicted in each sentence.
    batch_size (int): sentences per biLM call.
    RETURNS (Tuple[torch.Tensor, torch.Tensor]): forward and backward float32 log-probabilities,
        each (len(sentences), vocabulary size), exactly normalised.
    """
    if len(sentences) != len(positions):
        raise ValueError(f"{len(sentences)} sentences but {len(positions)} positions: give one position a sentence")
    for i, (tokens, at) in enumerate(zip(sentences, positions)):
        if not 0 <= at < len(tokens):
            raise ValueError(f"position {at} is outside sentence {i} ({len(tokens)} tokens)")
    P = bilm.options.projection_dim
    was_training = bilm.training, softmax.training
    bilm.eval()
    softmax.eval()
    forward, backward = [], []
    try:
        for start in range(0, len(sentences), batch_size):
            chunk = range(start, min(start + batch_size, len(sentences)))
            top = bilm(bilm.batch([sentences[i] for i in chunk]))[-1]  # (B, T, 2P), T with <S> and </S>
            rows = torch.arange(len(chunk), device=top.device)
            # the token at p sits at step p + 1: the forward state at step p predicts it, the backward at p + 2
            steps = torch.tensor([positions[i] for i in chunk], device=top.device)
            forward.append(softmax.log_prob(top[rows, steps, :P].float()))
            backward.append(softmax.log_prob(top[rows, steps + 2, P:].float()))
    finally:
        bilm.train(was_training[0])
        softmax.train(was_training[1])
    if not forward:
        empty = torch.zeros(0, softmax.n_words)
        return empty, empty.clone()
    return torch.cat(forward).cpu(), torch.cat(backward).cpu()


__all__ = ["context_log_probs"]
