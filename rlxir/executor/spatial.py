"""Convolution, pooling and scan kernels that write into their slot (see `kernels`).

- `conv2d` on a target that plans an im2col workspace builds the im2col matrix in that
  workspace — one column of C/groups x KH x KW input values per output position, in the
  order of the weight's flattening — and runs one GEMM per group into the output slot.
  Without a workspace it accumulates one contraction per kernel tap into the slot.
- Pooling takes the window's taps one by one into the slot (max, or sum then divide by
  the full kernel area as the reference does).
- `selective_scan` keeps the running state [B, H, N] as its only temporary ("on chip");
  with a planned workspace (rocm's scan kernel) it saves the state of every step there,
  the trajectory that workspace is sized for.
- `cumsum` writes the running sums in place, shifted by one for `exclusive`.
"""

from __future__ import annotations

import numpy as np


def _padded(xp, x, padding, value):
    top, left, bottom, right = padding
    if not (top or left or bottom or right):
        return x
    return xp.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _windows(size: int, kernel: int, stride: int, dilation: int = 1) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _tap(padded, row: int, col: int, rows: int, cols: int, stride, dilation):
    top, left = row * dilation[0], col * dilation[1]
    return padded[..., top:top + stride[0] * (rows - 1) + 1:stride[0], left:left + stride[1] * (cols - 1) + 1:stride[1]]


def conv2d(xp, args, attrs, out, workspace=None):
    x, w = args[0], args[1]
    if out is None or not np.issubdtype(x.dtype, np.floating):
        return None
    stride, dilation, groups = attrs["stride"], attrs["dilation"], attrs["groups"]
    padded = _padded(xp, x, attrs["padding"], 0)
    batch, channels, height, width = padded.shape
    out_channels, group_channels, kernel_h, kernel_w = w.shape
    rows, cols = out.shape[2], out.shape[3]
    grouped_x = padded.reshape(batch, groups, group_channels, height, width)
    grouped_w = w.reshape(groups, out_channels // groups, group_channels * kernel_h * kernel_w)
    grouped_out = out.reshape(batch, groups, out_channels // groups, rows * cols)
    needed = batch * channels * kernel_h * kernel_w * rows * cols * x.dtype.itemsize
    if workspace is not None and workspace.nbytes >= needed:
        columns = workspace[:needed].view(x.dtype).reshape(batch, groups, group_channels, kernel_h, kernel_w,
                                                            rows, cols)
        for row in range(kernel_h):
            for col in range(kernel_w):
                xp.copyto(columns[:, :, :, row, col], _tap(grouped_x, row, col, rows, cols, stride, dilation))
        flat = columns.reshape(batch, groups, group_channels * kernel_h * kernel_w, rows * cols)
        xp.matmul(grouped_w, flat, out=grouped_out)
    else:
        taps_w = w.reshape(groups, out_channels // groups, group_channels, kernel_h, kernel_w)
        out.fill(0)
        for row in range(kernel_h):
            for col in range(kernel_w):
                taps = _tap(grouped_x, row, col, rows, cols, stride, dilation)
                grouped_out += xp.einsum("bgchw,goc->bgohw", taps, taps_w[..., row, col]).reshape(grouped_out.shape)
    if len(args) == 3:
        xp.add(out, args[2].reshape(1, -1, 1, 1), out=out)
    return out


def _pool(xp, x, attrs, out, fill, combine):
    kernel = attrs["kernel"]
    stride = attrs["stride"] or kernel
    padded = _padded(xp, x, attrs["padding"], fill)
    rows, cols = out.shape[2], out.shape[3]
    for row in range(kernel[0]):
        for col in range(kernel[1]):
            taps = _tap(padded, row, col, rows, cols, stride, (1, 1))
            if row == 0 and col == 0:
                xp.copyto(out, taps)
            else:
                combine(out, taps, out=out)
    return out


def max_pool2d(xp, args, attrs, out, workspace=None):
    x = args[0]
    if out is None or not np.issubdtype(x.dtype, np.floating):
        return None
    return _pool(xp, x, attrs, out, -np.inf, xp.maximum)


def avg_pool2d(xp, args, attrs, out, workspace=None):
    x = args[0]
    if out is None or not np.issubdtype(x.dtype, np.floating):
        return None
    out = _pool(xp, x, attrs, out, 0, xp.add)
    kernel = attrs["kernel"]
    return xp.divide(out, x.dtype.type(kernel[0] * kernel[1]), out=out)


def selective_scan(xp, args, attrs, out, workspace=None):
    x, delta, a, bm, c = args
    if out is None:
        return None
    batch, steps, hidden = x.shape
    trajectory = None
    needed = batch * steps * hidden * a.shape[1] * x.dtype.itemsize
    if workspace is not None and workspace.nbytes >= needed:
        trajectory = workspace[:needed].view(x.dtype).reshape(batch, steps, hidden, a.shape[1])
    state = xp.zeros((batch, hidden, a.shape[1]), x.dtype)
    for t in range(steps):
        step_delta = delta[:, t, :, None]
        decay = xp.exp(step_delta * a)
        state = decay * state + step_delta * x[:, t, :, None] * bm[:, t, None, :]
        if trajectory is not None:
            xp.copyto(trajectory[:, t], state)
        xp.sum(state * c[:, t, None, :], axis=-1, out=out[:, t, :])
    return out


def cumsum(xp, args, attrs, out, workspace=None):
    x, axis = args[0], attrs["axis"] % max(args[0].ndim, 1)
    accumulator = np.int64 if x.dtype == np.bool_ else x.dtype
    if out is None or out.dtype != accumulator or x.ndim == 0:
        return None
    if not attrs["exclusive"]:
        return xp.cumsum(x, axis=axis, dtype=accumulator, out=out)
    head = [slice(None)] * x.ndim
    head[axis] = slice(0, 1)
    out[tuple(head)] = 0
    if x.shape[axis] > 1:
        source, target = list(head), list(head)
        source[axis], target[axis] = slice(0, -1), slice(1, None)
        xp.cumsum(x[tuple(source)], axis=axis, dtype=accumulator, out=out[tuple(target)])
    return out


SPATIAL_KERNELS = {"conv2d": conv2d, "max_pool2d": max_pool2d, "avg_pool2d": avg_pool2d,
                   "selective_scan": selective_scan, "cumsum": cumsum}
