"""The training path of one biLSTM layer: its whole step loop as one autograd node.

Under autograd, a step loop of T steps is about 25 nodes a step, each with its own allocations,
and each step's weight gradients are small products (46 rows deep) summed into a full-size
gradient at every step. Here the forward writes every step's gates, cells and outputs into
buffers laid out like the layer's output (directions, steps, rows), and the backward runs the
recurrence back with hand-written derivatives, keeping on the step loop only what depends on the
previous step (the hidden state's and the cell's gradients); the weights' gradients are then one
product each over all steps. Padded positions hold zeros in every buffer the big products read.

The values are `lstm_cell`'s and `BiLstmLayer._run`'s (tanh as 2 sigmoid(2x) - 1, as at
inference); gradients equal the step loop's up to the order of summation.
"""

from typing import Any, List, Optional, Tuple

import torch

from . import shape_buckets

LstmState = Tuple[torch.Tensor, torch.Tensor]  # (c: (D, B, C), h: (D, B, P))


def layer_recurrence(
    xw: torch.Tensor,
    state: LstmState,
    hidden_weight: torch.Tensor,
    proj_weight: Optional[torch.Tensor],
    batch_sizes: List[int],
    cell_clip: Optional[float],
    proj_clip: Optional[float],
) -> Tuple[torch.Tensor, LstmState]:
    """Run both directions' recurrence over the input gates, with gradients.

    xw (torch.Tensor): (D, T, B, 4C) input gates with the bias, gate order [i, f, o, j]: float32, or bfloat16 where
        they came from bfloat16 autocast (mixed precision). The recurrence itself (its small step products, gates,
        cells and states) is float32 either way; with bfloat16 input gates the large product over all steps, the
        hidden weight's gradient, runs in bfloat16 too (float32 sums), and xw's gradient comes back in bfloat16.
    state (LstmState): initial (c (D, B, C), h (D, B, P)).
    hidden_weight (torch.Tensor): (D, P, 4C).
    proj_weight (Optional[torch.Tensor]): (D, C, P), or None without projection (P = C).
    batch_sizes (List[int]): rows still running at each step, non-increasing.
    RETURNS (Tuple[torch.Tensor, LstmState]): as `BiLstmLayer.forward`.
    """
    c0, h0 = (s.to(hidden_weight.dtype) for s in state)
    with torch.autocast(xw.device.type, enabled=False):  # the step's products and elementwise work in float32
        out, final_c, final_h = _LayerRecurrence.apply(xw, c0, h0, hidden_weight, proj_weight, batch_sizes, cell_clip, proj_clip)
    return out, (final_c, final_h)


def _n_steps(batch_sizes: List[int], n_steps: int) -> int:
    n = 0
    while n < n_steps and batch_sizes[n] > 0:
        n += 1
    return n


def _ends(batch_sizes: List[int], n: int, t: int) -> Tuple[int, int]:
    """The rows whose last step is t: [b_{t+1}, b_t)."""
    return (batch_sizes[t + 1] if t + 1 < n else 0), batch_sizes[t]


class _LayerRecurrence(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        xw: torch.Tensor,
        c0: torch.Tensor,
        h0: torch.Tensor,
        hidden_weight: torch.Tensor,
        proj_weight: Optional[torch.Tensor],
        batch_sizes: List[int],
        cell_clip: Optional[float],
        proj_clip: Optional[float],
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        D, T, B, G = xw.shape
        C, P = G // 4, h0.shape[-1]
        n = _n_steps(batch_sizes, T)
        gates = hidden_weight.new_empty((D, n, B, G))  # i, f, o, then j = tanh(z_j)
        cells = hidden_weight.new_empty((D, n, B, C))
        tanh_c = hidden_weight.new_empty((D, n, B, C))
        # (zeros where padded, written step by step: the weights' gradient products read them)
        units = hidden_weight.new_empty((D, n, B, C)) if proj_weight is not None else None  # o * tanh(c)
        out = hidden_weight.new_empty((D, T, B, P))
        out[:, n:].zero_()
        # where each clip passes the gradient
        inside = torch.empty((D, n, B, C), dtype=torch.bool, device=xw.device) if cell_clip is not None else None
        clips_h = proj_weight is not None and proj_clip is not None
        proj_inside = torch.empty((D, n, B, P), dtype=torch.bool, device=xw.device) if clips_h else None
        final_c, final_h = c0.clone(), h0.clone()
        c_prev, h_prev = c0, h0
        for t in range(n):
            b = batch_sizes[t]
            z = torch.bmm(h_prev[:, :b], hidden_weight).add_(xw[:, t, :b])
            z[..., 3 * C :].mul_(2.0)
            g = torch.sigmoid(z, out=gates[:, t, :b])
            i, f, o, j = g[..., :C], g[..., C : 2 * C], g[..., 2 * C : 3 * C], g[..., 3 * C :]
            j.mul_(2.0).sub_(1.0)
            c = torch.mul(f, c_prev[:, :b], out=cells[:, t, :b]).addcmul_(i, j)
            if inside is not None and cell_clip is not None:
                torch.le(c.abs(), cell_clip, out=inside[:, t, :b])
                c.clamp_(-cell_clip, cell_clip)
            tc = torch.mul(c, 2.0, out=tanh_c[:, t, :b]).sigmoid_().mul_(2.0).sub_(1.0)
            if proj_weight is None:
                h = torch.mul(o, tc, out=out[:, t, :b])
            else:
                assert units is not None
                u = torch.mul(o, tc, out=units[:, t, :b])
                h = torch.bmm(u, proj_weight)
                if proj_inside is not None and proj_clip is not None:
                    torch.le(h.abs(), proj_clip, out=proj_inside[:, t, :b])
                    h.clamp_(-proj_clip, proj_clip)
                h = out[:, t, :b].copy_(h)
            if b < B:
                out[:, t, b:].zero_()
                if units is not None:
                    units[:, t, b:].zero_()
            start, end = _ends(batch_sizes, n, t)
            if start < end:
                final_c[:, start:end] = c[:, start:end]
                final_h[:, start:end] = h[:, start:end]
            c_prev, h_prev = cells[:, t], out[:, t]
        ctx.save_for_backward(gates, cells, tanh_c, units, out, inside, proj_inside, c0, h0, hidden_weight, proj_weight)
        ctx.products, ctx.device = xw.dtype, xw.device.type  # of the weights' gradient products (and of xw's gradient)
        ctx.batch_sizes = batch_sizes
        ctx.set_materialize_grads(False)
        return out, final_c, final_h

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, grad_out: Optional[torch.Tensor], grad_final_c: Optional[torch.Tensor], grad_final_h: Optional[torch.Tensor]
    ) -> Tuple[Optional[torch.Tensor], ...]:
        with torch.autocast(ctx.device, enabled=False):
            return _LayerRecurrence._backward(ctx, grad_out, grad_final_c, grad_final_h)

    @staticmethod
    def _backward(
        ctx: Any, grad_out: Optional[torch.Tensor], grad_final_c: Optional[torch.Tensor], grad_final_h: Optional[torch.Tensor]
    ) -> Tuple[Optional[torch.Tensor], ...]:
        gates, cells, tanh_c, units, out, inside, proj_inside, c0, h0, hidden_weight, proj_weight = ctx.saved_tensors
        batch_sizes: List[int] = ctx.batch_sizes
        D, n, B, G = gates.shape
        T, C, P = out.shape[1], G // 4, out.shape[-1]
        # (zeros where padded, written step by step: a memset of the whole would cost a pass over memory)
        grad_xw = gates.new_empty((D, T, B, G))
        grad_xw[:, n:].zero_()
        grad_pre = gates.new_empty((D, n, B, P)) if proj_weight is not None else None  # dL/d(projected h before the clip)
        hidden_t = hidden_weight.transpose(1, 2).contiguous()
        proj_t = proj_weight.transpose(1, 2).contiguous() if proj_weight is not None else None
        grad_h = grad_c = None  # from step t + 1, rows [:b_{t+1}]
        for t in range(n - 1, -1, -1):
            b = batch_sizes[t]
            if b < B:
                grad_xw[:, t, b:].zero_()
                if grad_pre is not None:
                    grad_pre[:, t, b:].zero_()
            start, end = _ends(batch_sizes, n, t)
            dh = grad_out[:, t, :b].clone() if grad_out is not None else gates.new_zeros((D, b, P))
            if grad_h is not None:
                dh[:, :start] += grad_h
            if grad_final_h is not None and start < end:
                dh[:, start:end] += grad_final_h[:, start:end]
            g = gates[:, t, :b]
            i, f, o, j = g[..., :C], g[..., C : 2 * C], g[..., 2 * C : 3 * C], g[..., 3 * C :]
            tc = tanh_c[:, t, :b]
            if proj_weight is None:
                du = dh
            else:
                assert grad_pre is not None and proj_t is not None
                if proj_inside is not None:
                    dh.mul_(proj_inside[:, t, :b])
                grad_pre[:, t, :b] = dh
                du = torch.bmm(dh, proj_t)
            dz = grad_xw[:, t, :b]
            torch.mul(du, tc, out=dz[..., 2 * C : 3 * C])  # d o
            dc = du.mul_(o)  # du is this step's own tensor
            dc.addcmul_(dc * tc, tc, value=-1.0)  # d tanh(c) = 1 - tanh(c)^2
            if grad_c is not None:
                dc[:, :start] += grad_c
            if grad_final_c is not None and start < end:
                dc[:, start:end] += grad_final_c[:, start:end]
            if inside is not None:
                dc.mul_(inside[:, t, :b])
            c_prev = cells[:, t - 1, :b] if t > 0 else c0[:, :b]
            torch.mul(dc, j, out=dz[..., :C])  # d i
            torch.mul(dc, c_prev, out=dz[..., C : 2 * C])  # d f
            dj = torch.mul(dc, i, out=dz[..., 3 * C :])
            dj.addcmul_(dj * j, j, value=-1.0)  # d z_j
            s = g[..., : 3 * C]
            dz[..., : 3 * C].mul_(torch.addcmul(s, s, s, value=-1.0))  # sigmoid' = s - s^2
            grad_h = torch.bmm(dz, hidden_t)
            grad_c = dc.mul_(f)
        need_xw, need_c0, need_h0, need_hidden, need_proj = ctx.needs_input_grad[:5]
        running = batch_sizes[0] if n > 0 else 0  # the rows after these have no step: their final state is the initial one
        grad_c0 = _initial_state_grad(c0, grad_c, grad_final_c, running) if need_c0 else None
        grad_h0 = _initial_state_grad(h0, grad_h, grad_final_h, running) if need_h0 else None
        grad_hidden = grad_proj = None
        low = ctx.products  # the large products' dtype: float32, or bfloat16 (then xw's gradient is bfloat16 too)
        if low != grad_xw.dtype:
            grad_xw = grad_xw.to(low)
        if need_hidden:
            # h_{t-1} for every step: h0, then the outputs of steps 0 .. n-2, as one product
            if n == 0:
                grad_hidden = hidden_weight.new_zeros(hidden_weight.shape)
            else:
                previous = torch.cat([h0.unsqueeze(1), out[:, : n - 1]], dim=1) if n > 1 else h0.unsqueeze(1)
                rows = _rows(previous.reshape(D, n * B, P), low)
                grad_hidden = torch.bmm(rows.transpose(1, 2), _rows(grad_xw[:, :n].reshape(D, n * B, G), low)).to(hidden_weight.dtype)
        if need_proj and units is not None and grad_pre is not None and proj_weight is not None:
            grad_proj = torch.bmm(_rows(units.reshape(D, n * B, C), low).transpose(1, 2), _rows(grad_pre.reshape(D, n * B, P), low))
            grad_proj = grad_proj.to(proj_weight.dtype)
        return (grad_xw if need_xw else None), grad_c0, grad_h0, grad_hidden, grad_proj, None, None, None


def _rows(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(D, rows, K) `x` in the weights' gradient products' `dtype`: in bfloat16 its rows padded with zeros to a
    bucket (shape_buckets: oneDNN compiles a bf16 kernel per shape; zero rows add nothing to the sums)."""
    if dtype != torch.bfloat16:
        return x
    return shape_buckets.padded_rows(x.to(dtype), dim=1)


def _initial_state_grad(
    initial: torch.Tensor, through_steps: Optional[torch.Tensor], of_final: Optional[torch.Tensor], running: int
) -> torch.Tensor:
    grad = initial.new_zeros(initial.shape)
    if through_steps is not None:
        grad[:, :running] = through_steps
    if of_final is not None:
        grad[:, running:] = of_final[:, running:]
    return grad
