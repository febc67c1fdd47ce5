"""One biLSTM layer of ELMo: an LSTM with cell projection and clipping per direction.

Both directions have their own weights; they are stored stacked on a leading axis of size 2
(0 = forward, 1 = backward) so that one batched matmul serves both in the same step loop. The
backward input arrives already reversed by each row's own length, so both directions run over
left-aligned rows sorted by decreasing length, and step t only touches the rows still running.

Gate columns are kept in the order [i, f, o, j] (the original files use [i, j, f, o]) so the three
sigmoid gates are one contiguous block. `bias` holds the file's values; the constant forget bias
of +1 that TF adds at run time lives in a buffer, so saving gives back the file bit for bit.
"""

from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
from torch import nn

from . import shape_buckets
from .lstm_training import LstmState, layer_recurrence
from .packed_matmul import PackedWeights, product_usable

# Rows per input product at inference: oneDNN's fastest here, and an output (16 MB at the
# original size) that the allocator reuses rather than maps afresh.
_BLOCK_ROWS = 256


class BiLstmLayer(nn.Module):
    """Forward and backward LSTM cells of one layer.

    input_dim (int): width of the layer input.
    cell_dim (int): C.
    hidden_dim (int): P, the width of h (the projection size, or C without projection).
    cell_clip (Optional[float]): clip of c.
    proj_clip (Optional[float]): clip of the projected h; only applied with a projection.
    """

    forget_bias: torch.Tensor  # a buffer
    # Training runs the step loop as one autograd node (`lstm_training`) where it can: the
    # package's own cell, no autocast. A switch for benchmarks and tests.
    one_node_training = True

    def __init__(
        self,
        input_dim: int,
        cell_dim: int,
        hidden_dim: int,
        cell_clip: Optional[float],
        proj_clip: Optional[float],
    ) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.cell_dim = cell_dim
        self.hidden_dim = hidden_dim
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.input_weight = nn.Parameter(torch.empty(2, input_dim, 4 * cell_dim))
        self.hidden_weight = nn.Parameter(torch.empty(2, hidden_dim, 4 * cell_dim))
        self.bias = nn.Parameter(torch.empty(2, 4 * cell_dim))
        self.proj_weight: Optional[nn.Parameter] = nn.Parameter(torch.empty(2, cell_dim, hidden_dim)) if hidden_dim != cell_dim else None
        forget_bias = torch.zeros(4 * cell_dim)
        forget_bias[cell_dim : 2 * cell_dim] = 1.0
        self.register_buffer("forget_bias", forget_bias, persistent=False)
        self.packs = PackedWeights()
        self.cell: Callable[..., LstmState] = lstm_cell
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            fan_in = self.input_dim + self.hidden_dim
            bound = (6.0 / (fan_in + 4 * self.cell_dim)) ** 0.5
            nn.init.uniform_(self.input_weight, -bound, bound)
            nn.init.uniform_(self.hidden_weight, -bound, bound)
            nn.init.zeros_(self.bias)
            if self.proj_weight is not None:
                bound = (6.0 / (self.cell_dim + self.hidden_dim)) ** 0.5
                nn.init.uniform_(self.proj_weight, -bound, bound)

    def zero_state(self, batch_size: int, like: torch.Tensor) -> LstmState:
        return (
            like.new_zeros((2, batch_size, self.cell_dim)),
            like.new_zeros((2, batch_size, self.hidden_dim)),
        )

    def forward(self, x: torch.Tensor, batch_sizes: List[int], state: LstmState) -> Tuple[torch.Tensor, LstmState]:
        """Run both directions over time.

        x (torch.Tensor): (2, T, B, input_dim), time-major, rows sorted by decreasing length.
        batch_sizes (List[int]): the number of rows still running at each step (non-increasing).
        state (LstmState): initial (c, h), rows in the same order as x.
        RETURNS (Tuple[torch.Tensor, LstmState]): (2, T, B, P) outputs, 0 where padded, and the
            state of each row at its last real step (unchanged for rows of length 0).
        """
        if not self.packs.usable(x, self.hidden_weight[0]):
            return self._run(slice(0, 2), x, batch_sizes, state)
        # With prepacked weights each direction is its own 2d product: run them one at a time.
        runs = [self._run(slice(d, d + 1), x[d : d + 1], batch_sizes, (state[0][d : d + 1], state[1][d : d + 1])) for d in range(2)]
        out = torch.cat([r[0] for r in runs])
        return out, (torch.cat([r[1][0] for r in runs]), torch.cat([r[1][1] for r in runs]))

    def _weights(self, dirs: slice, cast: bool = True) -> Dict[str, torch.Tensor]:
        """The weights of the directions `dirs`, taken once per run: sliced (and, under autocast with `cast`,
        cast to its dtype) once rather than at every step, where autograd would allocate a
        full-size zero gradient for each slice and autocast would cast a view again each time."""
        names = ["input_weight", "hidden_weight"] + (["proj_weight"] if self.proj_weight is not None else [])
        weights = {name: getattr(self, name) if dirs == slice(0, 2) else getattr(self, name)[dirs] for name in names}
        device = self.input_weight.device.type
        if cast and torch.is_autocast_enabled(device) and torch.is_grad_enabled():
            dtype = torch.get_autocast_dtype(device)
            weights = {name: w.to(dtype) for name, w in weights.items()}
        return weights

    def _matmul(
        self,
        dirs: slice,
        x: torch.Tensor,
        name: str,
        weights: Dict[str, torch.Tensor],
        add: Optional[torch.Tensor] = None,
        bias: Optional[torch.Tensor] = None,
        many_rows: bool = False,
    ) -> torch.Tensor:
        """`add + x @ weight + bias` for the directions `dirs`; x (D, M, K), add (D, M, N), bias (D, 1, N);
        `many_rows` as in `PackedWeights.matmul`."""
        weight = weights[name]
        if x.shape[0] == 1 and self.packs.usable(x, weight[0]):
            key = (name, dirs.start)
            bias_row = None if bias is None else bias[0, 0]
            return self.packs.matmul(
                x[0], weight[0], key, bias=bias_row, many_rows=many_rows, add=None if add is None else add[0]
            ).unsqueeze(0)
        if x.shape[0] == 1 and not torch.is_grad_enabled() and product_usable(x[0], weight[0]):
            # a weight below the size int8 quantizes (the small size's projection): float32, packed for
            # oneDNN too, whose rows do not depend on the other rows (a batched matmul's do, in the last
            # bits), so a sentence's states are bit for bit what it gets alone, which int8's rounding
            # would otherwise amplify
            out = self.packs.float32(x[0], weight[0], (name, dirs.start)).unsqueeze(0)
            if bias is not None:
                out.add_(bias)
            return out if add is None else out.add_(add)
        if bias is not None:
            add = bias if add is None else add + bias
        return torch.bmm(x, weight) if add is None else torch.baddbmm(add, x, weight)

    def _run(self, dirs: slice, x: torch.Tensor, batch_sizes: List[int], state: LstmState) -> Tuple[torch.Tensor, LstmState]:
        n_dirs, n_steps, batch = x.shape[0], x.shape[1], x.shape[2]
        C = self.cell_dim
        one_node = self._one_node(x)
        weights = self._weights(dirs, cast=not one_node)
        bias = (self.bias[dirs] + self.forget_bias).unsqueeze(1)
        if one_node:
            xw = self._all_input_gates(dirs, x, weights, bias)
            clips = (self.cell_clip, self.proj_clip)
            return layer_recurrence(xw, state, weights["hidden_weight"], weights.get("proj_weight"), batch_sizes, *clips)
        xw_steps = self._input_gates(dirs, x, batch_sizes, weights, bias)
        cell = self.cell
        if cell is lstm_cell and torch.is_grad_enabled():
            cell = lstm_cell_training
        elif cell is lstm_cell and x.device.type == "cpu":
            cell = _lstm_cell_overwriting  # z is this step's own tensor
        c, h = state
        # Rows are sorted by decreasing length, so finished rows are a suffix: their final
        # state is set aside once, rather than carried along at every step.
        finished: List[LstmState] = []
        active = batch
        outputs: List[torch.Tensor] = []
        for t in range(n_steps):
            b = batch_sizes[t]
            if b < active:
                finished.append((c[:, b:active], h[:, b:active]))
                c, h, active = c[:, :b], h[:, :b], b
            if b == 0:
                break
            xw = next(xw_steps)
            # (a slice of all rows would still cost autograd a full-size zero gradient)
            z = self._matmul(dirs, h, "hidden_weight", weights, add=xw if xw.shape[1] == b else xw[:, :b])
            del xw  # the last view of a block must go before the next block is made, to reuse its memory
            c, h = cell(z, c, C, self.cell_clip)
            if self.proj_weight is not None:
                h = self._matmul(dirs, h, "proj_weight", weights)
                if self.proj_clip is not None:
                    h = h.clamp(-self.proj_clip, self.proj_clip)
            outputs.append(h if b == batch else nn.functional.pad(h, (0, 0, 0, batch - b)))
        finished.append((c, h))
        final_c = torch.cat([f[0] for f in reversed(finished)], dim=1)
        final_h = torch.cat([f[1] for f in reversed(finished)], dim=1)
        out = torch.stack(outputs, dim=1) if outputs else x.new_zeros((n_dirs, 0, batch, self.hidden_dim))
        if out.shape[1] < n_steps:
            out = nn.functional.pad(out, (0, 0, 0, 0, 0, n_steps - out.shape[1]))
        return out, (final_c, final_h)

    def _all_input_gates(self, dirs: slice, x: torch.Tensor, weights: Dict[str, torch.Tensor], bias: torch.Tensor) -> torch.Tensor:
        """The input half of every gate (plus the bias) at every position, as one product: (D, T, B, 4C)."""
        n_dirs, n_steps, batch = x.shape[0], x.shape[1], x.shape[2]
        rows = x.reshape(n_dirs, n_steps * batch, self.input_dim)
        if shape_buckets.active(x.device):
            rows = shape_buckets.padded_rows(rows, dim=1)
        xw = self._matmul(dirs, rows, "input_weight", weights, bias=bias)
        return xw[:, : n_steps * batch].view(n_dirs, n_steps, batch, 4 * self.cell_dim)

    def _one_node(self, x: torch.Tensor) -> bool:
        """Whether training runs the step loop as one node: the package's own cell, with gradients, in float32 (or
        float64), or under bfloat16 autocast on the CPU, where the input gates' product runs in bfloat16 and the
        recurrence in float32 (`layer_recurrence`)."""
        device = x.device.type
        if torch.is_autocast_enabled(device):
            precision_ok = (
                device == "cpu" and torch.get_autocast_dtype(device) == torch.bfloat16 and self.input_weight.dtype == torch.float32
            )
        else:
            precision_ok = x.dtype in (torch.float32, torch.float64)
        return self.one_node_training and self.cell is lstm_cell and torch.is_grad_enabled() and precision_ok

    def _input_gates(
        self, dirs: slice, x: torch.Tensor, batch_sizes: List[int], weights: Dict[str, torch.Tensor], bias: torch.Tensor
    ) -> Iterator[torch.Tensor]:
        """The input half of every gate (plus the bias), one (D, rows, 4C) tensor per step in order.

        With gradients: one product over all T x B positions, split into steps (indexing the
        whole (D, T, B, 4C) tensor at each step would make autograd write a full-size zero gradient
        per step, quadratic in T). At inference: only the rows still running at each step (a batch
        of sentences of mixed lengths is half padding), in blocks of at most _BLOCK_ROWS rows made
        when first needed: a product over the whole batch at once allocates its output afresh
        (86 MiB for 43 steps of 32 rows at the original size, page faults included) and ran 2.3x
        slower per row (benchmarks/inference_kernels.py).
        """
        if torch.is_grad_enabled():
            yield from self._all_input_gates(dirs, x, weights, bias).unbind(1)
            return
        n_steps, t = x.shape[1], 0
        while t < n_steps and batch_sizes[t] > 0:
            end, rows = t + 1, batch_sizes[t]
            while end < n_steps and batch_sizes[end] > 0 and rows + batch_sizes[end] <= _BLOCK_ROWS:
                rows += batch_sizes[end]
                end += 1
            block = torch.cat([x[:, u, : batch_sizes[u]] for u in range(t, end)], dim=1)
            gates = self._matmul(dirs, block, "input_weight", weights, bias=bias, many_rows=True)
            yield from gates.split(batch_sizes[t:end], dim=1)
            t = end


def lstm_cell(z: torch.Tensor, c: torch.Tensor, cell_dim: int, cell_clip: Optional[float]) -> LstmState:
    """The elementwise part of one LSTM step.

    z (torch.Tensor): (..., 4C) gate pre-activations in the order [i, f, o, j].
    c (torch.Tensor): (..., C) the previous cell state.
    RETURNS (LstmState): the new cell state and the unprojected output.
    """
    C = cell_dim
    gates = torch.sigmoid(z[..., : 3 * C])
    c = gates[..., C : 2 * C] * c + gates[..., :C] * torch.tanh(z[..., 3 * C :])
    if cell_clip is not None:
        c = c.clamp(-cell_clip, cell_clip)
    return c, gates[..., 2 * C :] * torch.tanh(c)


class _TrainingCell(torch.autograd.Function):
    """`lstm_cell` with gradients, as one autograd node with a hand-written backward.

    Autograd's own graph of the cell is about thirty nodes per step, and each of the four gate
    slices of z gets a full-size zero gradient filled, copied into and summed
    (aten::slice_backward); here the backward writes each gate's part of dz once. tanh is
    2 sigmoid(2x) - 1 as at inference (PyTorch's CPU tanh is several times slower than its
    sigmoid). Dtypes follow `lstm_cell`: gates in z's dtype, the cell state promoted with c's.
    """

    @staticmethod
    def forward(ctx: Any, z: torch.Tensor, c_prev: torch.Tensor, cell_dim: int, cell_clip: Optional[float]) -> LstmState:
        C = cell_dim
        gates = torch.empty_like(z)  # i, f, o, then j = tanh(z_j)
        torch.sigmoid(z[..., : 3 * C], out=gates[..., : 3 * C])
        j = torch.mul(z[..., 3 * C :], 2.0, out=gates[..., 3 * C :]).sigmoid_().mul_(2.0).sub_(1.0)
        c = torch.addcmul(gates[..., C : 2 * C] * c_prev, gates[..., :C], j)
        inside = None
        if cell_clip is not None:
            inside = c.abs() <= cell_clip  # where clamp passes the gradient
            c = c.clamp_(-cell_clip, cell_clip)
        tanh_c = torch.sigmoid(c * 2.0).mul_(2.0).sub_(1.0)
        h = gates[..., 2 * C : 3 * C] * tanh_c
        ctx.save_for_backward(gates, c_prev, tanh_c, inside)
        ctx.cell_dim = C
        ctx.set_materialize_grads(False)
        return c, h

    @staticmethod
    def backward(ctx: Any, grad_c: Optional[torch.Tensor], grad_h: Optional[torch.Tensor]) -> Tuple[Optional[torch.Tensor], ...]:
        gates, c_prev, tanh_c, inside = ctx.saved_tensors
        C = ctx.cell_dim
        i, f, o, j = gates[..., :C], gates[..., C : 2 * C], gates[..., 2 * C : 3 * C], gates[..., 3 * C :]
        grad_z = torch.empty_like(gates)
        if grad_h is None:
            grad_z[..., 2 * C : 3 * C].zero_()
            dc = grad_c.clone() if grad_c is not None else torch.zeros_like(tanh_c)
        else:
            torch.mul(grad_h, tanh_c, out=grad_z[..., 2 * C : 3 * C])  # d o
            dc = (grad_h * o).mul_(1.0 - tanh_c * tanh_c)
            if grad_c is not None:
                dc.add_(grad_c)
        if inside is not None:
            dc.mul_(inside)
        torch.mul(dc, j, out=grad_z[..., :C])  # d i
        torch.mul(dc, c_prev, out=grad_z[..., C : 2 * C])  # d f
        torch.mul(dc, i, out=grad_z[..., 3 * C :]).mul_(1.0 - j * j)  # d z_j
        sigmoids = gates[..., : 3 * C]
        grad_z[..., : 3 * C].mul_(sigmoids - sigmoids * sigmoids)
        grad_c_prev = (dc * f).to(c_prev.dtype) if ctx.needs_input_grad[1] else None
        return grad_z, grad_c_prev, None, None


def lstm_cell_training(z: torch.Tensor, c: torch.Tensor, cell_dim: int, cell_clip: Optional[float]) -> LstmState:
    """`lstm_cell` for training: the same values, one autograd node (`_TrainingCell`)."""
    return _TrainingCell.apply(z, c, cell_dim, cell_clip)


def _lstm_cell_overwriting(z: torch.Tensor, c: torch.Tensor, cell_dim: int, cell_clip: Optional[float]) -> LstmState:
    """`lstm_cell` for inference on the CPU, overwriting z: tanh(x) as 2 sigmoid(2x) - 1, since
    PyTorch's CPU tanh is about 8x slower than its sigmoid (132 vs 16 us on 32 x 4096 here): the
    step's elementwise part runs 2x faster, within 3e-7 of `lstm_cell` (benchmarks/inference_kernels.py)."""
    C = cell_dim
    z[..., 3 * C :].mul_(2.0)
    gates = z.sigmoid_()
    j = gates[..., 3 * C :].mul_(2.0).sub_(1.0)
    c = torch.addcmul(c * gates[..., C : 2 * C], gates[..., :C], j)
    if cell_clip is not None:
        c.clamp_(-cell_clip, cell_clip)
    tanh_c = torch.sigmoid(c * 2.0).mul_(2.0).sub_(1.0)
    return c, tanh_c.mul_(gates[..., 2 * C : 3 * C])


def compile_cells(model: nn.Module) -> None:
    """Run the elementwise part of every LSTM step of `model` through `torch.compile`: one fused
    kernel each way instead of about ten, which matters where kernel launches dominate (CUDA).
    Same computation; floating point may differ in the last bits."""
    compiled = torch.compile(lstm_cell, dynamic=True)
    for module in model.modules():
        if isinstance(module, BiLstmLayer):
            module.cell = compiled
