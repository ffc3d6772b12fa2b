"""Kernels of the backward ops (`rlxir.autodiff_ops`) for any array module (see `kernels`).

- `conv2d_grad_input` / `conv2d_grad_weight` take the reference's contractions one kernel
  tap at a time, on the run's array module.
- `selective_scan_grad` recomputes the scan's states from its operands as the reference
  does, but keeps them only at the start of every `SEGMENT`-th step: the reversed time loop
  recomputes one segment's states at a time from its checkpoint. The reference keeps the
  whole trajectory, [S + 1, B, H, N] twice (states and decays), which at a training batch
  that fills a card is gigabytes the plan does not size; here it is about 2 sqrt(S) states
  of [B, H, N]. The states are the same values in the same order of operations, so the
  gradients equal the reference's.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.autodiff_ops import _taps, _unpad


def _conv2d_grad_input(xp, args, attrs, out, workspace=None):
    grad, weight = args
    if not np.issubdtype(grad.dtype, np.floating):
        return None
    batch, channels, height, width = attrs["input_shape"]
    padding, stride, dilation, groups = attrs["padding"], attrs["stride"], attrs["dilation"], attrs["groups"]
    out_channels, group_channels, kernel_h, kernel_w = weight.shape
    rows, cols = grad.shape[2:]
    padded = xp.zeros((batch, groups, group_channels, height + padding[0] + padding[2],
                       width + padding[1] + padding[3]), grad.dtype)
    grouped_grad = grad.reshape(batch, groups, out_channels // groups, rows, cols)
    grouped_w = weight.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
    for row in range(kernel_h):
        for col in range(kernel_w):
            padded[_taps(rows, cols, row, col, stride, dilation)] += xp.einsum(
                "bgohw,goc->bgchw", grouped_grad, grouped_w[..., row, col])
    return _unpad(padded.reshape(batch, channels, *padded.shape[3:]), padding, height, width)


def _conv2d_grad_weight(xp, args, attrs, out, workspace=None):
    x, grad = args
    if not np.issubdtype(x.dtype, np.floating):
        return None
    kernel, padding, stride, dilation, groups = (attrs["kernel"], attrs["padding"], attrs["stride"],
                                                 attrs["dilation"], attrs["groups"])
    batch, channels = x.shape[:2]
    out_channels, rows, cols = grad.shape[1:]
    top, left, bottom, right = padding
    padded = xp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    grouped_x = padded.reshape(batch, groups, channels // groups, *padded.shape[2:])
    grouped_grad = grad.reshape(batch, groups, out_channels // groups, rows, cols)
    weight = xp.zeros((groups, out_channels // groups, channels // groups, *kernel), grad.dtype)
    for row in range(kernel[0]):
        for col in range(kernel[1]):
            taps = grouped_x[_taps(rows, cols, row, col, stride, dilation)]
            weight[..., row, col] = xp.einsum("bgchw,bgohw->goc", taps, grouped_grad)
    return weight.reshape(out_channels, channels // groups, *kernel)


def _scan_step(xp, delta, a, x, bm, state, t: int):
    """(decay_t, s_t) from s_{t-1}, as the reference computes them."""
    step_delta = delta[:, t, :, np.newaxis]
    decay = xp.exp(step_delta * a)
    return decay, decay * state + step_delta * x[:, t, :, np.newaxis] * bm[:, t, np.newaxis, :]


def _selective_scan_grad(xp, args, attrs, out, workspace=None):
    x, delta, a, bm, c, grad = args
    if not np.issubdtype(x.dtype, np.floating):
        return None
    batch, steps, hidden = x.shape
    segment = max(1, math.isqrt(max(steps, 1)))
    state = xp.zeros((batch, hidden, a.shape[1]), x.dtype)
    checkpoints = {}
    for t in range(steps):
        if t % segment == 0:
            checkpoints[t] = state
        state = _scan_step(xp, delta, a, x, bm, state, t)[1]
    del state
    grads = [xp.zeros_like(x), xp.zeros_like(delta), xp.zeros_like(a), xp.zeros_like(bm), xp.zeros_like(c)]
    dx, ddelta, da, dbm, dc = grads
    adjoint = xp.zeros((batch, hidden, a.shape[1]), x.dtype)
    for start in reversed(range(0, steps, segment)):
        states, decays = [checkpoints.pop(start)], []
        for t in range(start, min(start + segment, steps)):
            decay, next_state = _scan_step(xp, delta, a, x, bm, states[-1], t)
            decays.append(decay)
            states.append(next_state)
        for t in reversed(range(start, min(start + segment, steps))):
            before, after, decay = states[t - start], states[t - start + 1], decays[t - start]
            step_grad, step_delta = grad[:, t, :, np.newaxis], delta[:, t, :, np.newaxis]
            step_x, step_bm = x[:, t, :, np.newaxis], bm[:, t, np.newaxis, :]
            dc[:, t, :] = xp.sum(step_grad * after, axis=1)
            adjoint = adjoint + step_grad * c[:, t, np.newaxis, :]
            through_decay = adjoint * before * decay
            da += xp.sum(through_decay * step_delta, axis=0)
            ddelta[:, t, :] = xp.sum(through_decay * a + adjoint * step_x * step_bm, axis=-1)
            dx[:, t, :] = xp.sum(adjoint * step_delta * step_bm, axis=-1)
            dbm[:, t, :] = xp.sum(adjoint * step_delta * step_x, axis=1)
            adjoint = adjoint * decay
    return grads[attrs["operand"]]


GRAD_KERNELS = {"conv2d_grad_input": _conv2d_grad_input, "conv2d_grad_weight": _conv2d_grad_weight,
                "selective_scan_grad": _selective_scan_grad}
