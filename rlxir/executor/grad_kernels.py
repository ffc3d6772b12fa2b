"""Kernels of the backward ops (`rlxir.autodiff.backward_ops`) for any array module (see `kernels`).

- `conv2d_grad_input` / `conv2d_grad_weight` are the references themselves, run on the
  run's array module.
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

from rlxir.autodiff.backward_ops import conv2d_grad_input, conv2d_grad_weight


def _conv2d_grad_input(xp, args, attrs, out, workspace=None):
    grad, weight = args
    if not np.issubdtype(grad.dtype, np.floating):
        return None
    return conv2d_grad_input(grad, weight, tuple(attrs["input_shape"]), attrs["stride"], attrs["padding"],
                             attrs["dilation"], attrs["groups"], xp)


def _conv2d_grad_weight(xp, args, attrs, out, workspace=None):
    x, grad = args
    if not np.issubdtype(x.dtype, np.floating):
        return None
    return conv2d_grad_weight(x, grad, tuple(attrs["kernel"]), attrs["stride"], attrs["padding"], attrs["dilation"],
                              attrs["groups"], xp)


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
