"""Dilated MaxPool / AveragePool (the IR's pools have no dilation) as separable 1-D passes.

A max (or sum) over a rectangular window is a max (sum) over its rows of the max (sum) over
its columns, so each spatial axis is pooled on its own: the axis is padded (-inf for max,
zeros for average), and each of the k taps ``o * stride + i * dilation`` is one contiguous
``slice`` of length ``out * stride`` read every stride-th element (a ``reshape`` to
``[out, stride]`` and a ``slice`` of the first column), combined with ``maximum`` / ``add``.
An average divides by the taps each window has inside the input (count_include_pad = 0)
or inside the declared padding (= 1): a ``[OH, OW]`` constant when it varies. ceil_mode
gives the extra last window ONNX does (dropped when it would start in the end padding).
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.importers.builder import UnsupportedModel, pad_axis


def pooled_size(size: int, kernel: int, stride: int, dilation: int, begin: int, end: int, ceil_mode: bool) -> int:
    span = dilation * (kernel - 1) + 1
    room = size + begin + end - span
    if room < 0:
        raise UnsupportedModel(f"a pooling window of {span} over {size + begin + end} padded cells",
                               expected="a window no larger than the padded input")
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + begin:  # the last window would start in the end padding
        out -= 1
    return out


def convert_dilated_pool(ctx, name: str, x: str, kind: str, kernel, strides, dilations, pads, ceil_mode: bool,
                         include_pad: bool) -> str:
    """`kind` ("max", "average" or "sum") over the dilated windows of the [N, C, H, W] `x`;
    `pads` is ``[top, left, bottom, right]``."""
    shape = ctx.builder.type(x).shape
    is_max = kind == "max"
    result, outs = x, []
    for index, axis in enumerate((2, 3)):
        size = shape[axis]
        if not isinstance(size, int):
            raise UnsupportedModel(f"a dilated pool over the symbolic dim {size}", expected="static spatial dims")
        begin, end = pads[index], pads[2 + index]
        out = pooled_size(size, kernel[index], strides[index], dilations[index], begin, end, ceil_mode)
        outs.append(out)
        last = name if kind != "average" else f"{name}.sum"
        result = _pool_axis(ctx, result, axis, kernel[index], strides[index], dilations[index], begin, out,
                            is_max, f"{name}.{'hw'[index]}", last if index == 1 else f"{name}.rows")
    if kind != "average":
        return result
    counts = [_tap_counts(shape[2 + index], kernel[index], strides[index], dilations[index], pads[index],
                          pads[2 + index], outs[index], include_pad) for index in range(2)]
    factor = 1.0 / np.multiply.outer(counts[0], counts[1])
    dtype = ctx.builder.type(result).dtype
    divisor = ctx.builder.literal(f"{name}.inverse_count", factor.astype(np.float32), dtype) \
        if np.ptp(factor) else ctx.builder.scalar(float(factor.flat[0]), dtype)
    return ctx.builder.op("mul", [result, divisor], hint=name)


def _pool_axis(ctx, x: str, axis: int, kernel: int, stride: int, dilation: int, begin: int, out: int,
               is_max: bool, name: str, result_name: str) -> str:
    shape = tuple(ctx.builder.type(x).shape)
    needed = (kernel - 1) * dilation + out * stride  # every tap's slice, with the reshape's slack
    padded = pad_axis(ctx.builder, x, axis, begin, max(needed - begin - shape[axis], 0),
                      -math.inf if is_max else 0.0, f"{name}.padded")
    combined = _strided(ctx, padded, axis, 0, out, stride, f"{name}.tap0" if kernel > 1 else result_name)
    for tap in range(1, kernel):
        taken = _strided(ctx, padded, axis, tap * dilation, out, stride, f"{name}.tap{tap}")
        step_name = result_name if tap == kernel - 1 else f"{name}.pooled"
        combined = ctx.builder.op("maximum" if is_max else "add", [combined, taken], hint=step_name)
    return combined


def _strided(ctx, x: str, axis: int, start: int, out: int, stride: int, name: str) -> str:
    """Elements ``start, start + stride, ...`` (`out` of them) along `axis`."""
    window = ctx.builder.op("slice", [x], {"axis": axis, "start": start, "len": out * stride}, hint=name)
    if stride == 1:
        return window
    shape = tuple(ctx.builder.type(window).shape)
    rows = ctx.builder.op("reshape", [window], {"shape": shape[:axis] + (out, stride) + shape[axis + 1:]},
                          hint=f"{name}.rows")
    first = ctx.builder.op("slice", [rows], {"axis": axis + 1, "start": 0, "len": 1}, hint=f"{name}.first")
    return ctx.builder.op("reshape", [first], {"shape": shape[:axis] + (out,) + shape[axis + 1:]}, hint=name)


def _tap_counts(size: int, kernel: int, stride: int, dilation: int, begin: int, end: int, out: int,
                include_pad: bool) -> np.ndarray:
    """How many taps of each window an average divides by."""
    low, high = (-begin, size + end) if include_pad else (0, size)
    taps = np.arange(out)[:, None] * stride - begin + np.arange(kernel)[None, :] * dilation
    return np.maximum(((taps >= low) & (taps < high)).sum(axis=1), 1).astype(np.float64)
