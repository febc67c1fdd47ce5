"""What the biLM's two language models predict at a position from its context alone: the forward LM's
log p(word | the tokens before it) and the backward LM's log p(word | the tokens after it), over the
softmax's vocabulary. Neither direction reads the token at the position, so these are the position's
lexical substitutes (Amrami & Goldberg 2018 induce word senses from them; Arefyev & Zhikov 2020 detect
semantic change with them).
"""

from typing import Sequence, Tuple

import numpy
import torch

from .language_model import SharedSoftmax
from .model import BiLM
from .threads import between_batches


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
            between_batches()  # the threads follow the machine's load, as in BiLM.embed (bilm/threads.py)
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


@torch.no_grad()
def boundary_states(bilm: BiLM) -> Tuple[numpy.ndarray, numpy.ndarray]:
    """What each layer's forward half holds at `<S>` and its backward half at `</S>`: the context a sequence's
    first token is predicted from on its left, and its last token on its right. Each depends on the marker
    alone (a sequence starts from zero states), so one pass over any sequence gives them.

    RETURNS (Tuple[numpy.ndarray, numpy.ndarray]): float32 (L + 1, P) each: forward at `<S>`, backward at `</S>`.
    """
    P = bilm.options.projection_dim
    was_training = bilm.training
    bilm.eval()
    try:
        layers = bilm(bilm.batch([["."]]))[:, 0].float().cpu().numpy()  # (L + 1, 3, 2P): <S> . </S>
    finally:
        bilm.train(was_training)
    return numpy.ascontiguousarray(layers[:, 0, :P]), numpy.ascontiguousarray(layers[:, -1, P:])


def context_layers(
    layers: numpy.ndarray, tokens: Sequence[int], segments: Sequence[Tuple[int, int]], bos: numpy.ndarray, eos: numpy.ndarray
) -> numpy.ndarray:
    """The context-only vector of each token at every layer: the forward half at the token before it beside the
    backward half at the token after it, which is what the two language models predict the token from; neither
    read the token's characters. A sequence's first token takes `<S>`'s forward half, its last `</S>`'s backward.
    Layer 0 gives the neighbours' token vectors.

    layers (numpy.ndarray): (L + 1, n_tokens, 2P), a Doc's layers (markers left out).
    tokens (Sequence[int]): the token indices wanted.
    segments (Sequence[Tuple[int, int]]): [start, end) of each sequence the biLM ran over, covering the tokens.
    bos, eos (numpy.ndarray): (L + 1, P) each, from `boundary_states`.
    RETURNS (numpy.ndarray): float32 (len(tokens), L + 1, 2P).
    """
    P = bos.shape[1]
    out = numpy.empty((len(tokens), layers.shape[0], 2 * P), dtype=numpy.float32)
    starts = numpy.array([s for s, _ in segments])
    for k, i in enumerate(tokens):
        j = int(numpy.searchsorted(starts, i, side="right")) - 1
        if j < 0 or not segments[j][0] <= i < segments[j][1]:
            raise ValueError(f"token {i} lies in no sequence")
        start, end = segments[j]
        out[k, :, :P] = layers[:, i - 1, :P] if i > start else bos
        out[k, :, P:] = layers[:, i + 1, P:] if i + 1 < end else eos
    return out


__all__ = ["context_log_probs", "boundary_states", "context_layers"]
