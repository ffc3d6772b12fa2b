"""``x[start:end:step]`` along one axis, for both importers: any step (negative too), on
static and symbolic dims.

The IR's ``slice`` is contiguous with integer bounds, so a slice becomes:

- on a static dim: the kept positions computed here (Python's clamping, which is ONNX's and
  PyTorch's): a ``slice`` when they are contiguous and ascending, else a ``gather`` of them;
- on a symbolic dim ``S``: a ``gather`` of positions computed at run time, whose count is a
  dim expression (``x[:, ::2]`` keeps ``(S + 1)//2``, ``x[:, 1:]`` keeps ``S - 1``). The IR
  has no iota, so ``0, 1, ..., n - 1`` is an exclusive ``cumsum`` of a splat of ones
  ``i64[n]``, and a position counted from the end (``S - 3``) is the ``reduce_sum`` of a
  splat of ones ``i64[S - 3]``.

Exactness on a symbolic dim: ONNX and PyTorch clamp the bounds into the dim, which no dim
expression can do. The graph is written for the values of ``S`` that need no clamping, and
every other value is refused when ``S`` is bound (a splat of ones, or a ``slice``, whose dim
then is negative or out of bounds), never computed wrong: ``x[:, -4:]`` needs ``S >= 4``,
``x[:, :8]`` needs ``S >= 8``, ``x[:, 1:]``, ``x[:, ::2]`` and ``x[:, ::-1]`` hold for
every ``S``. Bounds that make the count shrink as ``S`` grows (a start counted from the end
with an end counted from the start, for a positive step) are refused while importing. A
bound that is another expression of the dim's symbols (``B`` on a dim ``4*B``, where a
model split batch and frames) is taken for a positive step when it can never pass the dim's
end, and its position is computed at run time like one counted from the end.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import GraphBuilder, UnsupportedModel
from rlxir.symbolic import Dim, Expr, floordiv, format_dim, is_static, never_negative
from rlxir.types import TensorType

HUGE = 2**62
"""A bound at least this large is "the end" (ONNX writes INT64_MAX, PyTorch 2**63 - 1)."""


def slice_any(builder: GraphBuilder, value: str, axis: int, start: Dim, end: Dim, step: int, hint: str) -> str:
    """`value` sliced ``[start:end:step]`` along `axis` (bounds as ONNX and PyTorch give them:
    negative counts from the end, beyond the dim clamps)."""
    if step == 0:
        raise UnsupportedModel("a slice with step 0", expected="a non-zero step")
    dim = builder.type(value).shape[axis]
    bounds = (start, end)
    if is_static(dim) and all(is_static(bound) for bound in bounds):
        return _static_slice(builder, value, axis, range(*slice(start, end, step).indices(dim)), hint)
    if is_static(dim):
        raise UnsupportedModel(f"a slice of the static dim {dim} from {format_dim(start)} to {format_dim(end)}",
                               expected="integer bounds (a bound computed from a symbolic dim slices only that dim)")
    first, stop = _position(dim, start, step, True), _position(dim, end, step, False)
    if step == 1 and first == 0 and stop == dim:
        return value
    return _symbolic_slice(builder, value, axis, first, stop, step, hint)


def _position(dim: Dim, bound: Dim, step: int, is_start: bool) -> Dim:
    """A bound as a position of the symbolic `dim`, before clamping. For a positive step the
    positions run over ``[0, dim]``; for a negative one the start over ``[0, dim - 1]`` and
    the end over ``[-1, dim - 1]`` (-1: past the first element). A bound given as a dim
    expression must be `dim` plus an integer; past the far end it is clamped there (it is
    for every value of `dim`)."""
    far_end = dim if step > 0 else dim - 1
    if isinstance(bound, Expr):
        offset = _from_end(bound, dim)
        if offset is None:
            if step > 0 and never_negative(dim - bound):  # B of a dim 4*B: inside for every B
                return bound
            raise UnsupportedModel(f"a slice bound {format_dim(bound)} of the symbolic dim {dim}",
                                   expected=f"integers, {dim} plus an integer, or (for a positive step) an "
                                            f"expression never past {dim}")
        return bound if bound - far_end <= 0 else far_end
    if bound >= HUGE:
        return far_end
    if bound <= -HUGE:
        return 0 if step > 0 or is_start else -1
    return dim + bound if bound < 0 else bound


def _static_slice(builder: GraphBuilder, value: str, axis: int, kept: range, hint: str) -> str:
    dim = builder.type(value).shape[axis]
    if kept.step == 1 or len(kept) <= 1:
        if len(kept) == dim:
            return value
        start = kept.start if kept else 0
        return builder.op("slice", [value], {"axis": axis, "start": start, "len": len(kept)}, hint=hint)
    index = builder.tensor(f"{hint}.kept", np.array(kept, dtype=np.int64))
    return builder.op("gather", [value, index], {"axis": axis}, hint=hint)


def _count(first: Dim, stop: Dim, step: int) -> Dim:
    """How many of ``first, first + step, ...`` lie before `stop` (negative when `stop` is
    further behind than one step: the binding refuses such a dim)."""
    if step > 0:
        return floordiv(stop - first + step - 1, step)
    return floordiv(first - stop - step - 1, -step)


def _from_end(position: Dim, dim: Dim) -> int | None:
    """k when `position` is ``dim + k``, else None."""
    offset = position - dim
    return offset if is_static(offset) else None


def _symbolic_slice(builder: GraphBuilder, value: str, axis: int, first: Dim, stop: Dim, step: int,
                    hint: str) -> str:
    """Each bound is an integer or the dim plus an integer (at most 0 past the far end)."""
    dim = builder.type(value).shape[axis]
    count = _count(first, stop, step)
    if is_static(count) and count <= 0:
        return builder.op("slice", [value], {"axis": axis, "start": 0, "len": 0}, hint=hint)
    if is_static(first) and is_static(stop):
        return _static_positions(builder, value, axis, first, count, step, hint)
    if is_static(count):  # both bounds counted from the end
        index = _end_relative_positions(builder, dim, first, count, step, hint)
    elif step > 0 and is_static(first):
        index = _counted(builder, count, step, hint)
        if first:
            index = builder.op("add", [index, builder.scalar(first, DType.i64)], hint=f"{hint}.kept")
    elif step > 0 and _from_end(first, dim) is None and never_negative(count):
        # a start that is an expression of the dim's symbols (B of a dim 4*B): its position
        # at run time, plus the counted steps
        index = _counted(builder, count, step, hint)
        start = _run_time_position(builder, dim, first, hint)
        index = builder.op("add", [index, start], hint=f"{hint}.kept")
    elif step < 0 and is_static(stop):
        base = _run_time_position(builder, dim, first, hint)
        index = builder.op("sub", [base, _counted(builder, count, -step, hint)], hint=f"{hint}.kept")
    else:
        raise UnsupportedModel(
            f"a slice of the symbolic dim {dim} from {format_dim(first)} to {format_dim(stop)} with step {step} "
            f"keeps {format_dim(count)} elements, fewer as {dim} grows: no dim expression clamps that count at 0",
            expected="for a positive step a start at a fixed position, for a negative step an end at a fixed "
                     "position, or both bounds counted from the end")
    return builder.op("gather", [value, index], {"axis": axis}, hint=hint)


def _static_positions(builder: GraphBuilder, value: str, axis: int, first: int, count: int, step: int,
                      hint: str) -> str:
    """Fixed positions on a symbolic dim: a contiguous ``slice`` over them (its bounds are
    checked when the dim is bound), then the strided pick inside it."""
    last = first + (count - 1) * step
    low = min(first, last)
    span = abs(last - first) + 1
    window = builder.op("slice", [value], {"axis": axis, "start": low, "len": span}, hint=f"{hint}.window")
    if step == 1:
        return window
    picks = np.arange(first - low, last - low + (1 if step > 0 else -1), step, dtype=np.int64)
    return builder.op("gather", [window, builder.tensor(f"{hint}.kept", picks)], {"axis": axis}, hint=hint)


def _end_relative_positions(builder: GraphBuilder, dim: Dim, first: Dim, count: int, step: int, hint: str) -> str:
    """`count` positions counted from the end: the lowest one computed at run time (which
    checks that it is not negative), plus fixed offsets."""
    last = first + (count - 1) * step
    low = first if step > 0 else last
    offsets = np.arange(count, dtype=np.int64) * step - (0 if step > 0 else (count - 1) * step)
    base = _run_time_position(builder, dim, low, hint)
    return builder.op("add", [base, builder.tensor(f"{hint}.offsets", offsets)], hint=f"{hint}.kept")


def _run_time_position(builder: GraphBuilder, dim: Dim, position: Dim, hint: str) -> str:
    """The i64 scalar `position` (a dim expression), as the sum of a splat of ones of that
    length: binding a dim value that makes it negative is refused. The last position
    ``dim - 1`` is ``dim`` ones minus one, so an empty dim still binds (and keeps nothing)."""
    is_last = position == dim - 1
    ones = builder.splat(f"{hint}.ones", 1, TensorType(DType.i64, (dim if is_last else position,)))
    total = builder.op("reduce_sum", [ones], {"axes": (0,), "keepdims": False}, hint=f"{hint}.position")
    if is_last:
        return builder.op("sub", [total, builder.scalar(1, DType.i64)], hint=f"{hint}.last")
    return total


def _counted(builder: GraphBuilder, count: Dim, step: int, hint: str) -> str:
    """``0, step, 2*step, ...``: `count` of them (i64), an exclusive cumsum of a splat."""
    steps = builder.splat(f"{hint}.steps", step, TensorType(DType.i64, (count,)))
    return builder.op("cumsum", [steps], {"axis": 0, "exclusive": True}, hint=f"{hint}.count")
