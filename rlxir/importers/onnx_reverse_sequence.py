"""ONNX ReverseSequence -> core ops: each batch entry's first ``sequence_lens[b]`` steps
along the time axis reversed, the rest kept.

The reversal is one ``gather_elements`` along the time axis by the positions ``p[t, b] =
lens[b] - 1 - t`` where ``t < lens[b]`` and ``t`` elsewhere (laid out ``[T, B]`` or ``[B, T]``
as the axes are, then expanded over the other dims). Lengths known while importing give the
positions as a literal; lengths computed at run time give them from a running count of the
time axis, compared and subtracted at run time. A length past the time axis is ONNX's
undefined case: a static one is refused, a run-time one reads out of range and is refused
by the gather's bounds check when the graph runs.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import hint
from rlxir.importers.onnx_registry import register
from rlxir.symbolic import is_static
from rlxir.types import TensorType


def convert_reverse_sequence(ctx, node, attrs):
    batch_axis, time_axis = int(attrs.get("batch_axis", 1)), int(attrs.get("time_axis", 0))
    if sorted((batch_axis, time_axis)) != [0, 1]:
        raise UnsupportedModel(f"ReverseSequence with batch_axis {batch_axis} and time_axis {time_axis}",
                               expected="one of them 0 and the other 1")
    x = ctx.value(node.input[0])
    shape = tuple(ctx.builder.type(x).shape)
    if len(shape) < 2:
        raise UnsupportedModel(f"ReverseSequence of a rank-{len(shape)} input", expected="rank 2 or more")
    name = hint(node)
    if ctx.is_static(node.input[1]):
        positions = _static_positions(ctx, node, shape, time_axis)
    else:
        positions = _run_time_positions(ctx, node, shape, time_axis, name)
    if len(shape) > 2:
        widened = shape[:2] + (1,) * (len(shape) - 2)
        positions = ctx.builder.op("reshape", [positions], {"shape": widened}, hint=f"{name}.widened")
        positions = ctx.builder.op("expand", [positions], {"shape": shape}, hint=f"{name}.positions")
    return [ctx.builder.op("gather_elements", [x, positions], {"axis": time_axis}, hint=name)]


def _static_positions(ctx, node, shape: tuple, time_axis: int) -> str:
    lengths = np.asarray(ctx.static(node.input[1])).astype(np.int64).reshape(-1)
    steps = shape[time_axis]
    if not is_static(steps):
        raise UnsupportedModel(f"ReverseSequence over the symbolic time axis {steps} with lengths known while "
                               "importing", expected="a static time axis, or lengths computed at run time")
    if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
        raise UnsupportedModel(f"ReverseSequence lengths {lengths.tolist()} for a time axis of {steps}",
                               expected=f"lengths in [0, {steps}]")
    time = np.arange(steps)[:, None]
    positions = np.where(time < lengths[None, :], lengths[None, :] - 1 - time, time)
    if time_axis == 1:
        positions = positions.T
    return ctx.builder.tensor(f"{hint(node)}.positions", np.ascontiguousarray(positions))


def _run_time_positions(ctx, node, shape: tuple, time_axis: int, name: str) -> str:
    builder = ctx.builder
    steps, batch = shape[time_axis], shape[1 - time_axis]
    lengths = builder.op("cast", [ctx.value(node.input[1])], {"to": DType.i64}, hint=f"{name}.lengths") \
        if builder.type(ctx.value(node.input[1])).dtype is not DType.i64 else ctx.value(node.input[1])
    ones = builder.splat(f"{name}.ones", 1, TensorType(DType.i64, (steps,)))
    count = builder.op("cumsum", [ones], {"axis": 0, "exclusive": True}, hint=f"{name}.time")
    grid = (steps, 1) if time_axis == 0 else (1, steps)
    row = (1, batch) if time_axis == 0 else (batch, 1)
    time = builder.op("reshape", [count], {"shape": grid}, hint=f"{name}.time_grid")
    length = builder.op("reshape", [lengths], {"shape": row}, hint=f"{name}.length_grid")
    inside = builder.op("lt", [time, length], hint=f"{name}.inside")
    last = builder.op("sub", [length, builder.scalar(1, DType.i64)], hint=f"{name}.last")
    mirrored = builder.op("sub", [last, time], hint=f"{name}.mirrored")
    return builder.op("where", [inside, mirrored, time], hint=f"{name}.positions")


register({"ReverseSequence": convert_reverse_sequence})
