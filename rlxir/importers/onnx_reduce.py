"""ONNX op -> core ops: reductions, arg-reductions and scans.

- **Reductions.** ReduceSum/Mean/Max/Min are the core ``reduce_*`` ops; ReduceL1, ReduceL2,
  ReduceSumSquare, ReduceLogSum and ReduceLogSumExp put an elementwise step before or after
  ``reduce_sum`` (LogSumExp shifted by the max, so it never overflows); ReduceProd
  multiplies halves of the reduced axes together (exact, integers too) where they are
  static, and is sign * exp(sum(log |x|)) over a symbolic dim (floats only). ``axes`` is an
  attribute before the opset that made it an input (13 for ReduceSum, 18 for the others);
  no axes reduce every axis, unless ``noop_with_empty_axes`` asks for the input back (with
  the op's elementwise step applied, as ONNX's reference does). A reduction of a constant is
  evaluated while importing.
- **ArgMax/ArgMin** are ``topk {k=1}`` on integers (a tie goes to the first position);
  on floats, and with select_last_index, the first (last) position that holds the max
  (min), or a NaN when the axis has one.
- **CumSum** is the core ``cumsum``; **CumProd** a log-step (Hillis-Steele) scan of
  products over a static axis: ceil(log2 n) multiplications by the sequence shifted by
  1, 2, 4, ... and padded with ones.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import concrete
from rlxir.importers.onnx_ops import FOLD_LIMIT, Arith, along, axes_argument, counter, hint, static_ints
from rlxir.importers.onnx_registry import register
from rlxir.ops import normalize_axis
from rlxir.symbolic import format_dim
from rlxir.types import TensorType

AXES_INPUT_SINCE = {"ReduceSum": 13}
"""The opset from which ``axes`` is an input (18 for every other reduction)."""

CORE = {"ReduceMean": "reduce_mean", "ReduceSum": "reduce_sum", "ReduceMax": "reduce_max", "ReduceMin": "reduce_min"}


def reduced_axes(ctx, node, attrs, rank: int) -> list[int] | None:
    """The normalized, sorted axes a reduction node reduces, or None when
    ``noop_with_empty_axes`` leaves the input unreduced."""
    axes = axes_argument(ctx, node, attrs, 1, AXES_INPUT_SINCE.get(node.op_type, 18))
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return None
        return list(range(rank))
    outside = [axis for axis in axes if not -rank <= axis < rank]
    if outside:
        raise UnsupportedModel(f"{node.op_type} over axis {outside[0]} of a rank-{rank} input",
                               expected=f"axes in [{-rank}, {rank})")
    return sorted({normalize_axis(axis, rank) for axis in axes})


def convert_reduce(ctx, node, attrs):
    """Every ReduceX: the elementwise step before, the core reduction, the step after."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    axes = reduced_axes(ctx, node, attrs, type_.rank)
    keepdims = bool(attrs.get("keepdims", 1))
    name = hint(node)
    if axes is not None and any(type_.shape[axis] == 0 for axis in axes):
        return [_empty_reduction(ctx, node.op_type, type_, axes, keepdims, name)]
    if ctx.is_static(node.input[0]) and ctx.static(node.input[0]).size <= FOLD_LIMIT:
        return [_fold(node.op_type, concrete(ctx.static(node.input[0]), f"{node.op_type}'s input"), axes, keepdims)]
    if node.op_type in CORE:
        if axes is None:
            return [x]
        return [ctx.builder.op(CORE[node.op_type], [x], {"axes": tuple(axes), "keepdims": keepdims}, hint=name)]
    if node.op_type == "ReduceProd":
        return [reduce_prod(ctx, x, axes, keepdims, name)]
    if node.op_type == "ReduceLogSumExp":
        return [reduce_log_sum_exp(ctx, x, axes, keepdims, name)]
    return [_sum_between(ctx, node.op_type, x, axes, keepdims, name)]


def _empty_reduction(ctx, op_type: str, type_, axes, keepdims: bool, name: str) -> str:
    """A reduction over no elements is its identity everywhere: 0 for sums, 1 for the
    product, the lowest (highest) value for Max (Min), -inf for the log-sums, NaN for the
    mean, as ONNX's reference gives."""
    dtype = type_.dtype
    if op_type in ("ReduceMax", "ReduceMin"):
        low = op_type == "ReduceMax"
        if dtype is DType.bool:
            value = not low
        elif dtype.is_integer:
            limits = np.iinfo(dtype.numpy)
            value = int(limits.min if low else limits.max)
        else:
            value = -math.inf if low else math.inf
    else:
        value = {"ReduceProd": 1, "ReduceMean": math.nan, "ReduceLogSum": -math.inf,
                 "ReduceLogSumExp": -math.inf}.get(op_type, 0)
    if not dtype.is_float and isinstance(value, float):
        raise UnsupportedModel(f"{op_type} of an empty {dtype} tensor", expected="a float tensor (the result is "
                               f"{value})")
    shape = [1 if axis in axes else dim for axis, dim in enumerate(type_.shape) if keepdims or axis not in axes]
    return ctx.builder.splat(name, value, TensorType(dtype, tuple(shape)))


_FOLD = {
    "ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min, "ReduceProd": np.prod,
    "ReduceL1": lambda x, **kw: np.sum(np.abs(x), **kw), "ReduceL2": lambda x, **kw: np.sqrt(np.sum(x * x, **kw)),
    "ReduceSumSquare": lambda x, **kw: np.sum(x * x, **kw), "ReduceLogSum": lambda x, **kw: np.log(np.sum(x, **kw)),
    "ReduceLogSumExp": lambda x, **kw: np.log(np.sum(np.exp(x), **kw)),
}


def _fold(op_type: str, values: np.ndarray, axes, keepdims: bool) -> np.ndarray:
    """A reduction of a constant, evaluated while importing (no axes: the elementwise step
    alone, as ``axis=()`` gives), in the input's type."""
    with np.errstate(all="ignore"):
        result = _FOLD[op_type](values, axis=() if axes is None else tuple(axes), keepdims=keepdims)
    return np.asarray(result).astype(values.dtype)


def _sum_between(ctx, op_type: str, x: str, axes, keepdims: bool, name: str) -> str:
    """ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum: a step, ``reduce_sum``, a step."""
    dtype = ctx.builder.type(x).dtype
    f = Arith(ctx, dtype, name)
    before = {"ReduceL1": lambda: f("abs", x), "ReduceL2": lambda: f("mul", x, x, tag="square"),
              "ReduceSumSquare": lambda: f("mul", x, x, tag="square"), "ReduceLogSum": lambda: x}[op_type]()
    last = op_type in ("ReduceL1", "ReduceSumSquare")
    total = before if axes is None else f("reduce_sum", before, attrs={"axes": tuple(axes), "keepdims": keepdims},
                                          tag="sum", final=last)
    if last:
        return total
    if op_type == "ReduceLogSum":
        return _float_step(f, "log", total)
    return _float_step(f, "sqrt", total)


def _float_step(f: Arith, op: str, value: str) -> str:
    """`op` (sqrt, log) of `value`, named as the result; an integer value goes through f64
    and back (truncated, as ONNX's reference casts)."""
    if f.dtype.is_float:
        return f(op, value, final=True)
    wide = f.builder.op("cast", [value], {"to": DType.f64}, hint=f"{f.name}.f64")
    stepped = f.builder.op(op, [wide], hint=f"{f.name}.{op}")
    return f.builder.op("cast", [stepped], {"to": f.dtype}, hint=f.name)


def reduce_log_sum_exp(ctx, x: str, axes, keepdims: bool, name: str) -> str:
    """log(sum(exp(x))) as m + log(sum(exp(x - m))) with m the max over the axes, or 0
    where that max is not finite (all -inf: the result is -inf; +inf: +inf)."""
    dtype = ctx.builder.type(x).dtype
    if not dtype.is_float:
        raise UnsupportedModel(f"ReduceLogSumExp of a {dtype} tensor", expected="a float tensor")
    if axes is None:
        return x
    f = Arith(ctx, dtype, name)
    spec = {"axes": tuple(axes), "keepdims": True}
    peak = f("reduce_max", x, attrs=spec, tag="max")
    finite = f("le", f("abs", peak), float(_largest(dtype)), tag="finite")
    shift = f("where", finite, peak, 0.0, tag="shift")
    total = f("reduce_sum", f("exp", f("sub", x, shift)), attrs=spec, tag="sum")
    kept = f("add", f("log", total), shift, tag="kept", final=keepdims)
    if keepdims:
        return kept
    shape = [dim for axis, dim in enumerate(ctx.builder.type(x).shape) if axis not in axes]
    return ctx.builder.op("reshape", [kept], {"shape": tuple(shape)}, hint=name)


def _largest(dtype: DType) -> float:
    from rlxir.importers.onnx_math import BF16_MAX

    return BF16_MAX if dtype is DType.bf16 else float(np.finfo(dtype.numpy).max)


# --- ReduceProd ------------------------------------------------------------------------
def reduce_prod(ctx, x: str, axes, keepdims: bool, name: str) -> str:
    if axes is None:
        return x
    shape = ctx.builder.type(x).shape
    if all(isinstance(shape[axis], int) for axis in axes):
        return _tree_product(ctx, x, axes, keepdims, name)
    return _log_product(ctx, x, axes, keepdims, name)


def _tree_product(ctx, x: str, axes, keepdims: bool, name: str) -> str:
    """The product over static `axes`: each axis halved until one element is left, the two
    halves multiplied (an odd last element carried along)."""
    f = Arith(ctx, ctx.builder.type(x).dtype, name)
    value = x
    for axis in axes:
        value = _halve_to_one(f, value, axis)
    if keepdims:
        return value if value != x else f("mul", x, 1, final=True)
    shape = [dim for axis, dim in enumerate(ctx.builder.type(x).shape) if axis not in axes]
    return ctx.builder.op("reshape", [value], {"shape": tuple(shape)}, hint=name)


def _halve_to_one(f: Arith, value: str, axis: int) -> str:
    size = f.builder.type(value).shape[axis]
    while size > 1:
        half = size // 2
        first = f("slice", value, attrs={"axis": axis, "start": 0, "len": half}, tag="first_half")
        second = f("slice", value, attrs={"axis": axis, "start": half, "len": half}, tag="second_half")
        product = f("mul", first, second, tag="halves")
        if size % 2:
            odd = f("slice", value, attrs={"axis": axis, "start": size - 1, "len": 1}, tag="odd")
            product = f.builder.op("concat", [product, odd], {"axis": axis}, hint=f"{f.name}.carried")
        value, size = product, half + size % 2
    return value


def _log_product(ctx, x: str, axes, keepdims: bool, name: str) -> str:
    """The product over axes with a symbolic dim: exp(sum(log |x|)), negative when an odd
    number of elements is (floats only: integers need the exact product)."""
    dtype = ctx.builder.type(x).dtype
    if not dtype.is_float:
        dims = ", ".join(format_dim(ctx.builder.type(x).shape[axis]) for axis in axes)
        raise UnsupportedModel(f"ReduceProd of a {dtype} tensor over the symbolic dims [{dims}]",
                               expected="static reduced dims (the exact product), or a float tensor")
    f = Arith(ctx, dtype, name)
    spec = {"axes": tuple(axes), "keepdims": keepdims}
    magnitude = f("exp", f("reduce_sum", f("log", f("abs", x)), attrs=spec, tag="log_sum"), tag="magnitude")
    negatives = f("reduce_sum", f("cast", f("lt", x, 0.0), attrs={"to": DType.i64}, tag="negative"), attrs=spec,
                  tag="negatives")
    odd = f.builder.op("eq", [f.builder.op("mod", [negatives, f.builder.scalar(2, DType.i64)], hint=f"{name}.parity"),
                              f.builder.scalar(1, DType.i64)], hint=f"{name}.odd")
    return f("where", odd, f("neg", magnitude), magnitude, final=True)


# --- ArgMax / ArgMin -----------------------------------------------------------------------
def convert_arg_reduce(ctx, node, attrs):
    """ArgMax/ArgMin: the first (or with select_last_index the last) position along the axis
    that holds the max (min). Integers and bools take ``topk {k=1}`` for the first (a tie
    goes to the lower position); otherwise the positions (counted along the axis, so a
    symbolic axis works too) where x equals the reduced value are reduced to their min
    (max). A float axis holding NaN answers the position of a NaN, as NumPy (ONNX's
    reference) does."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    axis = normalize_axis(int(attrs.get("axis", 0)), type_.rank)
    keepdims = bool(attrs.get("keepdims", 1))
    last = bool(attrs.get("select_last_index", 0))
    name = hint(node)
    if last or type_.dtype.is_float:
        return [extreme_position(ctx, node.op_type, x, axis, keepdims, last, name)]
    found = ctx.builder.op("topk", [x], {"k": 1, "axis": axis, "largest": node.op_type == "ArgMax"},
                           hint=name if keepdims else f"{name}.position")
    if keepdims:
        return [found]
    shape = type_.shape
    return [ctx.builder.op("reshape", [found], {"shape": tuple(shape[:axis] + shape[axis + 1:])}, hint=name)]


INT32_MAX = (1 << 31) - 1


def extreme_position(ctx, op_type: str, x: str, axis: int, keepdims: bool, last: bool, name: str) -> str:
    """The position along `axis` of the max (ArgMax) or min of `x`, the first (or `last`) on
    ties, a NaN's where the axis holds one: ArgMax / ArgMin of a float tensor."""
    type_ = ctx.builder.type(x)
    shape, spec = type_.shape, {"axes": (axis,), "keepdims": True}
    extreme = ctx.builder.op("reduce_max" if op_type == "ArgMax" else "reduce_min", [x], spec, hint=f"{name}.extreme")
    hit = ctx.builder.op("eq", [x, extreme], hint=f"{name}.hit")
    if type_.dtype.is_float:
        nan = ctx.builder.op("ne", [x, x], hint=f"{name}.nan")
        any_nan = ctx.builder.op("reduce_max", [nan], spec, hint=f"{name}.any_nan")
        hit = ctx.builder.op("where", [any_nan, nan, hit], hint=f"{name}.winner")
    positions = counter(ctx.builder, shape[axis], along(len(shape), axis, shape[axis]), f"{name}.positions")
    # No hit: past every position, and within 32 bits, so a target that stores i64 values
    # in 4 bytes (rocm's f32 sizing) keeps it (an axis of 2^31 - 1 positions or more is not met).
    other = ctx.builder.scalar(-1 if last else INT32_MAX, DType.i64)
    kept = ctx.builder.op("where", [hit, positions, other], hint=f"{name}.kept")
    return ctx.builder.op("reduce_max" if last else "reduce_min", [kept], {"axes": (axis,), "keepdims": keepdims},
                          hint=name)


# --- scans ---------------------------------------------------------------------------------
def _scan_axis(ctx, node, rank: int) -> int:
    (axis,) = static_ints(ctx, node, 1, "axis")
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise UnsupportedModel(f"{node.op_type} along axis {axis} of a rank-{rank} input",
                               expected=f"an axis in [{-rank}, {rank})")
    return normalize_axis(axis, rank)


def convert_cumsum(ctx, node, attrs):
    """CumSum onto ``cumsum``; reverse=1 is the total minus the forward sum of the other kind
    (reverse inclusive = total - forward exclusive, and the other way round)."""
    x = ctx.value(node.input[0])
    axis = _scan_axis(ctx, node, ctx.builder.type(x).rank)
    exclusive, reverse = bool(attrs.get("exclusive", 0)), bool(attrs.get("reverse", 0))
    if not reverse:
        return [ctx.builder.op("cumsum", [x], {"axis": axis, "exclusive": exclusive}, hint=hint(node))]
    forward = ctx.builder.op("cumsum", [x], {"axis": axis, "exclusive": not exclusive}, hint=f"{hint(node)}.forward")
    total = ctx.builder.op("reduce_sum", [x], {"axes": (axis,), "keepdims": True}, hint=f"{hint(node)}.total")
    return [ctx.builder.op("sub", [total, forward], hint=hint(node))]


def convert_cumprod(ctx, node, attrs):
    """CumProd as a log-step scan: y *= y shifted by 1, 2, 4, ... along the axis (toward the
    end, or the start with reverse), ones shifted in; exclusive first shifts x by one."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    axis = _scan_axis(ctx, node, type_.rank)
    size = type_.shape[axis]
    if not isinstance(size, int):
        raise UnsupportedModel(f"CumProd along the symbolic dim {size}", expected="a static scanned dim")
    exclusive, reverse = bool(attrs.get("exclusive", 0)), bool(attrs.get("reverse", 0))
    f = Arith(ctx, type_.dtype, hint(node))
    value = _shifted(f, x, axis, size, 1, reverse) if exclusive else x
    step = 1
    while step < size:
        last = step * 2 >= size
        value = f("mul", value, _shifted(f, value, axis, size, step, reverse), tag="scan", final=last)
        step *= 2
    if value == x or (exclusive and size == 1):
        value = f("mul", value, 1, final=True)
    return [value]


def _shifted(f: Arith, value: str, axis: int, size: int, step: int, reverse: bool) -> str:
    """`value` moved `step` places along `axis` (toward the end, or the start when
    `reverse`), the vacated places filled with ones."""
    shape = list(f.builder.type(value).shape)
    if step >= size:
        return f.builder.splat(f"{f.name}.ones", 1, TensorType(f.dtype, shape))
    shape[axis] = step
    ones = f.builder.splat(f"{f.name}.ones", 1, TensorType(f.dtype, shape))
    kept = f("slice", value, attrs={"axis": axis, "start": step if reverse else 0, "len": size - step}, tag="kept")
    pieces = [kept, ones] if reverse else [ones, kept]
    return f.builder.op("concat", pieces, {"axis": axis}, hint=f"{f.name}.shifted")


def _converters() -> dict:
    table = {op: convert_reduce for op in (*CORE, "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                           "ReduceLogSum", "ReduceLogSumExp")}
    table.update({"ArgMax": convert_arg_reduce, "ArgMin": convert_arg_reduce, "CumSum": convert_cumsum,
                  "CumProd": convert_cumprod})
    return table


register(_converters())
