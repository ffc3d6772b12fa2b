"""Fractional max pooling (``fractional_max_pool2d`` / ``3d``) -> ``gather_elements`` over
static windows.

Each (batch, channel) plane's windows start at pseudo-random offsets fixed by its samples in
[0, 1): along a dim of `size` inputs, `out` outputs and kernel `k`, output i starts at
``trunc((i + u) a) - trunc(u a)`` with ``a = (size - k) / (out - 1)`` (in the input's
float type, as PyTorch), the last at ``size - k``. With the samples known while importing
(a buffer, or ``_random_samples`` passed to the functional) the windows are constants: every
window's positions are gathered, the maximum taken, and its first position (row-major in the
window, as PyTorch's scan) becomes the index in the flattened plane. Samples drawn at run
time (``rand``, what the functional does without ``_random_samples``) are refused.
"""

from __future__ import annotations

import itertools

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, reshape, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import Static, converter


@converter("aten.fractional_max_pool2d", "aten.fractional_max_pool3d")
def handle_fractional_max_pool(ctx, node, args, kwargs):
    """(x [N, C, *S] or [C, *S], kernel, output_size, samples [N, C, dims]) -> (values, indices)."""
    kernel, outs, samples = list(args[1]), list(args[2]), args[3]
    if not isinstance(samples, Static) or samples.fake:
        refuse("fractional max pooling with samples computed at run time: its windows would depend on them",
               "samples known while importing (a buffer passed as _random_samples)")
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, f"{node.name}.x")
    shape = shape_of(ctx, x)
    spatial = len(kernel)
    sizes = [static_dim(size, "a fractional max pool") for size in shape[-spatial:]]
    planes = 1
    for size in shape[:-spatial]:
        planes *= static_dim(size, "a fractional max pool")
    float_type = np.float64 if dtype is DType.f64 else np.float32
    plane_samples = samples.tensor.double().numpy().astype(float_type).reshape(planes, spatial)
    if spatial == 2:  # the 2-D kernel reads a plane's samples as (width, height)
        plane_samples = plane_samples[:, ::-1]
    table = np.stack([_plane_windows(sizes, outs, kernel, row) for row in plane_samples])
    windows, taps = table.shape[1], table.shape[2]
    flat = reshape(ctx, x, (planes, int(np.prod(sizes))), f"{node.name}.flat")
    positions = ctx.builder.tensor(f"{node.name}.positions", table.reshape(planes, windows * taps))
    picked = reshape(ctx, op(ctx, "gather_elements", [flat, positions], {"axis": 1}, hint=f"{node.name}.picked"),
                     (planes, windows, taps), f"{node.name}.windows")
    largest = op(ctx, "reduce_max", [picked], {"axes": (2,), "keepdims": True}, hint=f"{node.name}.largest")
    first = _first_position(ctx, node, picked, largest, taps)
    index = op(ctx, "gather_elements", [ctx.builder.tensor(f"{node.name}.table", table), first], {"axis": 2},
               hint=f"{node.name}.index")
    result_shape = tuple(shape[:-spatial]) + tuple(outs)
    return [reshape(ctx, largest, result_shape, node.name), reshape(ctx, index, result_shape, f"{node.name}.indices")]


def _first_position(ctx, node, picked: str, largest: str, taps: int) -> str:
    """The first tap of each window holding its maximum, as [planes, windows, 1]."""
    holds = op(ctx, "eq", [picked, largest], hint=f"{node.name}.holds")
    tap_numbers = ctx.builder.tensor(f"{node.name}.taps", np.arange(taps, dtype=np.int64))
    candidates = op(ctx, "where", [holds, tap_numbers, ctx.builder.scalar(taps - 1, DType.i64)],
                    hint=f"{node.name}.candidates")
    return op(ctx, "reduce_min", [candidates], {"axes": (2,), "keepdims": True}, hint=f"{node.name}.first")


def _intervals(sample, size: int, out: int, kernel: int) -> list[int]:
    """PyTorch's window starts along one dim for one sample."""
    starts = [size - kernel] * out
    if out > 1:
        alpha = sample.dtype.type(size - kernel) / sample.dtype.type(out - 1)
        starts[:-1] = [int((sample.dtype.type(index) + sample) * alpha) - int(sample * alpha)
                       for index in range(out - 1)]
    return starts


def _plane_windows(sizes, outs, kernel, samples) -> np.ndarray:
    """[windows, taps] flat positions (row-major in the plane) of one plane's windows."""
    starts = [_intervals(sample, size, out, size_k) for sample, size, out, size_k in zip(samples, sizes, outs, kernel)]
    strides = [int(np.prod(sizes[axis + 1:])) for axis in range(len(sizes))]
    rows = []
    for corner in itertools.product(*starts):
        taps = itertools.product(*(range(start, start + size_k) for start, size_k in zip(corner, kernel)))
        rows.append([sum(position * stride for position, stride in zip(tap, strides)) for tap in taps])
    return np.asarray(rows, dtype=np.int64)
