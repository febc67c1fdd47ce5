"""The biLM's training objective: forward and backward LMs over the same tokens, separate LSTM
stacks, one token layer and one softmax shared by both directions; the loss is the mean of the
two negative log-likelihoods (Peters et al. 2018, eq. in section 3.1).

Both softmax options give exactly normalised distributions, so perplexity is always exact:
"full" is a plain linear layer over the whole vocabulary; "adaptive" (Grave et al. 2017,
PyTorch's AdaptiveLogSoftmaxWithLoss) is fast for large vocabularies.
"""

from typing import Dict, List, Sequence, Tuple, cast

import torch
from torch import nn

from . import shape_buckets
from .char_ids import CharBatch
from .dropout import dropout
from .model import BiLM
from .target_log_prob import target_log_prob


class SharedSoftmax(nn.Module):
    """log p(word | h) over a fixed vocabulary, for hidden states of width P.

    kind (str): "full" or "adaptive".
    cutoffs (Sequence[int]): the adaptive softmax's cluster boundaries (ids sorted by frequency).
    """

    def __init__(self, dim: int, n_words: int, kind: str = "full", cutoffs: Sequence[int] = (), div_value: float = 4.0) -> None:
        super().__init__()
        if kind not in ("full", "adaptive"):
            raise ValueError(f"softmax kind must be 'full' or 'adaptive', got {kind!r}")
        self.kind = kind
        self.n_words = n_words
        if kind == "full":
            self.linear = nn.Linear(dim, n_words)
            nn.init.normal_(self.linear.weight, 0.0, dim**-0.5)
            nn.init.zeros_(self.linear.bias)
        else:
            valid = [c for c in cutoffs if 0 < c < n_words]
            if not valid:
                raise ValueError(f"adaptive softmax needs cutoffs between 0 and the vocabulary size {n_words}")
            self.adaptive = nn.AdaptiveLogSoftmaxWithLoss(dim, n_words, cutoffs=valid, div_value=div_value)

    def nll(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """RETURNS (torch.Tensor): the summed negative log-likelihood of targets (N,) given
        hidden (N, P). Under autocast the logits' matrix products run in its dtype, and the
        log-softmax and the loss in float32 (bfloat16 log-probabilities lose too much); the
        (N, V) logits are never held whole (`target_log_prob`)."""
        if hidden.shape[0] == 0:
            return hidden.float().sum() * 0
        if self.kind == "full":
            return -target_log_prob(hidden, self.linear.weight, targets, self.linear.bias).sum()
        return -_adaptive_log_likelihood(self.adaptive, hidden, targets).sum()

    def log_prob(self, hidden: torch.Tensor) -> torch.Tensor:
        """RETURNS (torch.Tensor): (N, V) log-probabilities, exactly normalised."""
        if self.kind == "full":
            return torch.log_softmax(self.linear(hidden), dim=-1)
        return self.adaptive.log_prob(hidden)


def _adaptive_log_likelihood(module: nn.AdaptiveLogSoftmaxWithLoss, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target | hidden) of each row, as `AdaptiveLogSoftmaxWithLoss(hidden, targets).output`
    computes it (same parameters and sums), with float32 log-softmaxes also under autocast (where
    PyTorch's own forward fails on mixed dtypes)."""
    out = torch.zeros(hidden.shape[0], dtype=torch.float32, device=hidden.device)
    gather = targets.clone()
    bounds = [0, *module.cutoffs]
    for i in range(1, len(bounds) - 1):
        low, high = bounds[i], bounds[i + 1]
        rows = ((targets >= low) & (targets < high)).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        gather.index_fill_(0, rows, module.shortlist_size + i - 1)
        # each tail cluster: (Linear to the cluster's width, Linear to its words)
        projection, output = cast(Tuple[nn.Linear, nn.Linear], tuple(cast(nn.Sequential, module.tail[i - 1])))
        inputs, local_targets = hidden.index_select(0, rows), targets.index_select(0, rows) - low
        if shape_buckets.active(hidden.device):  # the cluster's projection at a bucket's rows too
            inputs, local_targets = shape_buckets.padded_rows(inputs), shape_buckets.padded_rows(local_targets)
        local = target_log_prob(projection(inputs), output.weight, local_targets)[: rows.numel()]
        out = out.index_copy(0, rows, local)
    return out + target_log_prob(hidden, module.head.weight, gather, module.head.bias)


class BiLanguageModel(nn.Module):
    """A BiLM plus the shared softmax, for training and perplexity.

    bilm (BiLM): the model (its `dropout` applies to each LSTM layer's input).
    softmax (SharedSoftmax): over the target vocabulary, ids from `Vocabulary`.
    dropout (float): on the top LSTM outputs before the softmax.
    """

    def __init__(self, bilm: BiLM, softmax: SharedSoftmax, dropout: float = 0.1) -> None:
        super().__init__()
        self.bilm = bilm
        self.softmax = softmax
        self.dropout = dropout
        bilm.dropout = dropout
        self.freeze_bilm = False  # run the biLM without gradients (only the softmax learns)

    def forward(self, batch: CharBatch, target_ids: torch.Tensor) -> Dict[str, torch.Tensor]:
        """Summed NLLs of a batch.

        batch (CharBatch): sentences wrapped in `<S>` ... `</S>`.
        target_ids (torch.Tensor): (B, T) vocabulary ids of the same positions (markers included).
        RETURNS (Dict[str, torch.Tensor]): "forward" and "backward" summed NLLs and "n_tokens",
            the number of predictions per direction.
        """
        P = self.bilm.options.projection_dim
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.freeze_bilm):
            top = self.bilm(batch)[-1]  # (B, T, 2P)
        if self.training and self.dropout > 0:
            top = dropout(top, self.dropout)
        targets = target_ids.to(top.device)
        lengths = batch.lengths.to(top.device)
        steps = torch.arange(top.shape[1], device=top.device)
        # Forward: position t predicts t + 1, for t < length - 1. Backward: t predicts t - 1, t >= 1.
        fwd_mask = steps.unsqueeze(0) < (lengths - 1).unsqueeze(1)
        bwd_mask = (steps.unsqueeze(0) >= 1) & (steps.unsqueeze(0) < lengths.unsqueeze(1))
        fwd_h = top[:, :-1, :P][fwd_mask[:, :-1]]
        fwd_t = targets[:, 1:][fwd_mask[:, :-1]]
        bwd_h = top[:, 1:, P:][bwd_mask[:, 1:]]
        bwd_t = targets[:, :-1][bwd_mask[:, 1:]]
        return {
            "forward": self.softmax.nll(fwd_h, fwd_t),
            "backward": self.softmax.nll(bwd_h, bwd_t),
            "n_tokens": fwd_mask.sum(),
        }


def batch_targets(sentences: Sequence[Sequence[str]], word_ids: Dict[str, int], unk_id: int, bos_id: int, eos_id: int) -> torch.Tensor:
    """(B, T) target ids for `<S> sentence </S>`, padded with -1 (never read)."""
    n_steps = max((len(s) for s in sentences), default=0) + 2
    out = torch.full((len(sentences), n_steps), -1, dtype=torch.long)
    for row, sentence in enumerate(sentences):
        ids: List[int] = [bos_id] + [word_ids.get(w, unk_id) for w in sentence] + [eos_id]
        out[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return out


def perplexities(nll: Dict[str, float], n_tokens: int) -> Tuple[float, float, float]:
    """RETURNS (Tuple[float, float, float]): forward, backward and average perplexity, the
    average being exp of the mean of the two per-token NLLs (as the paper reports)."""
    import math

    if n_tokens == 0:
        return float("nan"), float("nan"), float("nan")
    f, b = nll["forward"] / n_tokens, nll["backward"] / n_tokens
    return math.exp(f), math.exp(b), math.exp((f + b) / 2)


__all__ = ["BiLanguageModel", "SharedSoftmax", "batch_targets", "perplexities"]
