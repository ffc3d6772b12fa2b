"""ONNX op -> core ops: ScatterND, ScatterElements, TopK and Trilu.

ScatterND writes slices of `data` addressed by the leading axes; it becomes the core
``scatter_elements`` over `data` with those axes flattened into one, at the row-major
linear index of each index row (the index that `linear_index` computes for GatherND too),
broadcast over the slice. All four fold to arrays when every input is static (the shifted
window masks of Swin are built this way from constants).
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, flatten_leading_axes, linear_index
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_context import concrete
from rlxir.importers.onnx_ops import (foldable, hint, nd_index_depth, operand, optional_input, product, static_ints,
                                      unused, wrapped_index)
from rlxir.ops import normalize_axis
from rlxir.types import TensorType

REDUCTIONS = ("none", "add", "mul", "max", "min")
_COMBINE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _reduction(attrs) -> str:
    reduction = attrs.get("reduction", "none")
    if reduction not in REDUCTIONS:
        raise UnsupportedModel(f"reduction {reduction!r}", expected="one of " + ", ".join(REDUCTIONS))
    return reduction


# --- ScatterND -------------------------------------------------------------------------
def _fold_scatter_nd(data: np.ndarray, indices: np.ndarray, updates: np.ndarray, reduction: str) -> np.ndarray:
    result = np.array(data, copy=True)
    where = tuple(np.moveaxis(indices, -1, 0))
    if reduction == "none":
        result[where] = updates
    else:  # unbuffered: repeated indices all count
        _COMBINE[reduction].at(result, where, updates)
    return result


def convert_scatter_nd(ctx, node, attrs):
    """ScatterND(data, indices [..., k], updates [..., data.shape[k:]]) as a scatter_elements
    into `data` with its first k axes flattened."""
    reduction = _reduction(attrs)
    data, indices, updates = node.input[0], node.input[1], node.input[2]
    shape, index_shape, depth = nd_index_depth(ctx, node, data, indices)
    if foldable(ctx, node):
        index = np.asarray(concrete(ctx.static(indices), "ScatterND's indices"))
        return [_fold_scatter_nd(ctx.static(data), index, ctx.static(updates), reduction)]
    name = hint(node)
    data_value = ctx.value(data)
    dtype = ctx.builder.type(data_value).dtype
    rows = product(index_shape[:-1])
    slice_shape = tuple(shape[depth:])
    column = (rows,) + (1,) * len(slice_shape)
    static_rows = _static_linear_index(ctx, indices, shape, depth)
    if static_rows is not None:
        linear = ctx.builder.literal(f"{name}.rows", static_rows.reshape(column))
    else:
        linear = ctx.builder.op("reshape", [_run_time_linear_index(ctx, indices, shape, depth, name)],
                                {"shape": column}, hint=f"{name}.rows")
    if slice_shape:
        linear = ctx.builder.op("expand", [linear], {"shape": (rows,) + slice_shape}, hint=f"{name}.spread")
    flat_updates = ctx.builder.op("reshape", [operand(ctx, updates, dtype)], {"shape": (rows,) + slice_shape},
                                  hint=f"{name}.updates")
    flat = flatten_leading_axes(ctx.builder, data_value, depth, name)
    scattered = ctx.builder.op("scatter_elements", [flat, linear, flat_updates],
                               {"axis": 0, "reduction": reduction}, hint=f"{name}.flat_out" if depth > 1 else name)
    if depth == 1:
        return [scattered]
    return [ctx.builder.op("reshape", [scattered], {"shape": tuple(shape)}, hint=name)]


def _static_linear_index(ctx, indices: str, shape, depth: int) -> np.ndarray | None:
    """The row-major positions of constant index rows among the first `depth` axes
    flattened (negative indices wrapped on static dims), or None when the indices are
    computed at run time or an inner dim is symbolic."""
    if not ctx.is_static(indices) or any(not isinstance(dim, int) for dim in shape[1:depth]):
        return None
    index = np.asarray(concrete(ctx.static(indices), "ScatterND's indices")).reshape(-1, depth).astype(np.int64)
    linear = np.zeros(len(index), np.int64)
    for axis in range(depth):
        column = index[:, axis]
        if isinstance(shape[axis], int):
            column = np.where(column < 0, column + shape[axis], column)
        stride = int(np.prod(shape[axis + 1:depth], dtype=np.int64))
        linear += column * stride
    return linear


def _run_time_linear_index(ctx, indices: str, shape, depth: int, name: str) -> str:
    index = ctx.value(indices)
    last = ctx.builder.type(index).rank - 1
    columns = [ctx.builder.op("slice", [index], {"axis": last, "start": axis, "len": 1}, hint=f"{name}.col{axis}")
               for axis in range(depth)]
    return linear_index(ctx.builder, shape, columns, name)


# --- ScatterElements -------------------------------------------------------------------
def convert_scatter_elements(ctx, node, attrs):
    reduction = _reduction(attrs)
    data, indices, updates = node.input[0], node.input[1], node.input[2]
    shape = ctx.shape(data)
    axis = normalize_axis(int(attrs.get("axis", 0)), len(shape))
    if foldable(ctx, node):
        values = np.array(ctx.static(data), copy=True)
        index = np.asarray(concrete(ctx.static(indices), "ScatterElements' indices"))
        index = np.where(index < 0, index + values.shape[axis], index)
        grid = list(np.indices(index.shape, sparse=True))
        grid[axis] = index
        return [_fold_scatter_nd(values, np.stack(np.broadcast_arrays(*grid), -1), ctx.static(updates), reduction)]
    name = hint(node)
    data_value = ctx.value(data)
    dtype = ctx.builder.type(data_value).dtype
    index = wrapped_index(ctx, ctx.value(indices), shape[axis], name)
    operands = [data_value, index, operand(ctx, updates, dtype)]
    return [ctx.builder.op("scatter_elements", operands, {"axis": axis, "reduction": reduction}, hint=name)]


# --- TopK ------------------------------------------------------------------------------
def convert_topk(ctx, node, attrs):
    """TopK's indices are the core ``topk``; its values gather them (best first either way:
    sorted=0 leaves the order free, and sorted is one of the allowed orders)."""
    x = node.input[0]
    shape = ctx.shape(x)
    axis = normalize_axis(int(attrs.get("axis", -1)), len(shape))
    largest = bool(attrs.get("largest", 1))
    if ctx.opset < 10:
        k = int(attrs["k"])
    else:
        (k,) = static_ints(ctx, node, 1, "k")
    if not isinstance(k, int):
        raise UnsupportedModel(f"TopK with the symbolic k {k}", expected="a k known while importing")
    name = hint(node)
    value = ctx.value(x)
    positions = ctx.builder.op("topk", [value], {"k": k, "axis": axis, "largest": largest},
                               hint=hint(node, 1) if len(node.output) > 1 and node.output[1] else f"{name}.idx")
    if unused(ctx, node, 0):
        return [None, positions]
    values = ctx.builder.op("gather_elements", [value, positions], {"axis": axis}, hint=name)
    return [values, positions]


# --- Trilu -----------------------------------------------------------------------------
def convert_trilu(ctx, node, attrs):
    """Trilu keeps the elements on and above (upper) or below (lower) diagonal k of the last
    two axes: a ``where`` over ``column - row`` compared with k, the row and column numbers
    counted by ``cumsum`` (so the mask needs no stored array and works on symbolic dims)."""
    upper = bool(attrs.get("upper", 1))
    k = static_ints(ctx, node, 1, "k")[0] if optional_input(node, 1) else 0
    if not isinstance(k, int):
        raise UnsupportedModel(f"Trilu with the symbolic diagonal {k}", expected="a k known while importing")
    x = node.input[0]
    shape = ctx.shape(x)
    if len(shape) < 2:
        raise UnsupportedModel(f"Trilu of a rank-{len(shape)} input", expected="rank at least 2")
    if foldable(ctx, node):
        values = concrete(ctx.static(x), "Trilu's input")
        return [np.triu(values, k) if upper else np.tril(values, k)]
    name = hint(node)
    rows, columns = shape[-2], shape[-1]
    row = _counter(ctx, f"{name}.row", rows, (rows, 1))
    column = _counter(ctx, f"{name}.column", columns, (1, columns))
    offset = ctx.builder.op("sub", [column, row], hint=f"{name}.offset")
    kept = ctx.builder.op("ge" if upper else "le", [offset, ctx.builder.scalar(k, DType.i64)], hint=f"{name}.kept")
    value = ctx.value(x)
    zero = ctx.builder.scalar(0, ctx.builder.type(value).dtype)
    return [ctx.builder.op("where", [kept, value, zero], hint=name)]


def _counter(ctx, name: str, count, shape: tuple) -> str:
    """``0, 1, ..., count - 1`` as an i64 tensor of `shape`."""
    ones = ctx.builder.splat(f"{name}.ones", 1, TensorType(DType.i64, (count,)))
    counted = ctx.builder.op("cumsum", [ones], {"axis": 0, "exclusive": True}, hint=f"{name}.count")
    return ctx.builder.op("reshape", [counted], {"shape": shape}, hint=name)


register({
    "ScatterND": convert_scatter_nd, "ScatterElements": convert_scatter_elements, "TopK": convert_topk,
    "Trilu": convert_trilu,
})
