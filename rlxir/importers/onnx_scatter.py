"""ONNX op -> core ops: ScatterND, ScatterElements (and the older Scatter), TensorScatter,
TopK, Trilu, EyeLike, OneHot and ReverseSequence.

ScatterND writes slices of `data` addressed by the leading axes; it becomes the core
``scatter_elements`` over `data` with those axes flattened into one, at the row-major
linear index of each index row (the index that `linear_index` computes for GatherND too),
broadcast over the slice. The scatters, TopK and Trilu fold to arrays when every input is
static (the shifted window masks of Swin are built this way from constants). EyeLike,
OneHot and ReverseSequence compare ``cumsum``-counted positions, so they need no stored
index arrays and work over symbolic dims.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, flatten_leading_axes, linear_index
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_context import concrete, onnx_dtype
from rlxir.importers.onnx_ops import (along, counter, dim_value, foldable, hint, nd_index_depth, operand,
                                      optional_input, product, static_input, static_ints, unused, wrapped_index)
from rlxir.ops import normalize_axis

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


# --- TensorScatter ---------------------------------------------------------------------
TENSOR_SCATTER_MODES = ("linear", "circular")


def convert_tensor_scatter(ctx, node, attrs):
    """TensorScatter (opset 24: a KV cache's update) writes `update` into `past_cache` along
    `axis`, sample b's rows from position ``write_indices[b]`` on (0 without that input),
    wrapped round the cache's length in "circular" mode. It becomes a ``scatter_elements``
    at those positions: ``cumsum``-counted steps plus each sample's start, broadcast over
    the other axes (so symbolic dims work). A "linear" write past the cache's end is an
    error when the graph runs, as any out-of-range scatter index."""
    mode = attrs.get("mode", "linear")
    if mode not in TENSOR_SCATTER_MODES:
        raise UnsupportedModel(f"TensorScatter mode {mode!r}", expected=" or ".join(TENSOR_SCATTER_MODES))
    past, update = node.input[0], node.input[1]
    shape, update_shape = ctx.shape(past), ctx.shape(update)
    rank = len(shape)
    if rank < 2:
        raise UnsupportedModel(f"TensorScatter on a rank-{rank} cache", expected="a batch axis and a sequence axis")
    axis = normalize_axis(int(attrs.get("axis", -2)), rank)
    if axis == 0:
        raise UnsupportedModel("TensorScatter along axis 0", expected="a sequence axis after the batch axis")
    name = hint(node)
    steps = update_shape[axis]
    position = counter(ctx.builder, steps, along(rank, axis, steps), f"{name}.step")
    writes = optional_input(node, 2)
    if writes is not None:
        start = ctx.builder.op("reshape", [operand(ctx, writes, DType.i64)], {"shape": along(rank, 0, shape[0])},
                               hint=f"{name}.start")
        position = ctx.builder.op("add", [position, start], hint=f"{name}.at")
    if mode == "circular":
        length = shape[axis]
        size = ctx.builder.scalar(length, DType.i64) if isinstance(length, int) else \
            dim_value(ctx.builder, length, DType.i64, f"{name}.length")
        position = ctx.builder.op("mod", [position, size], hint=f"{name}.wrapped")
    index = ctx.builder.op("expand", [position], {"shape": tuple(update_shape)}, hint=f"{name}.index")
    cache = ctx.value(past)
    written = operand(ctx, update, ctx.builder.type(cache).dtype)
    return [ctx.builder.op("scatter_elements", [cache, index, written], {"axis": axis, "reduction": "none"},
                           hint=name)]


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
    row = counter(ctx.builder, rows, (rows, 1), f"{name}.row")
    column = counter(ctx.builder, columns, (1, columns), f"{name}.column")
    offset = ctx.builder.op("sub", [column, row], hint=f"{name}.offset")
    kept = ctx.builder.op("ge" if upper else "le", [offset, ctx.builder.scalar(k, DType.i64)], hint=f"{name}.kept")
    value = ctx.value(x)
    zero = ctx.builder.scalar(0, ctx.builder.type(value).dtype)
    return [ctx.builder.op("where", [kept, value, zero], hint=name)]


# --- EyeLike, OneHot, ReverseSequence ---------------------------------------------------
def convert_eye_like(ctx, node, attrs):
    """EyeLike: ones where column - row equals k, over the input's 2-D shape (counted by
    ``cumsum`` as in Trilu, so a symbolic dim works), in `dtype` or the input's type."""
    x = node.input[0]
    shape = ctx.shape(x)
    if len(shape) != 2:
        raise UnsupportedModel(f"EyeLike of a rank-{len(shape)} input", expected="a 2-D input")
    dtype = onnx_dtype(attrs["dtype"], "EyeLike's dtype") if "dtype" in attrs else ctx.type(x).dtype
    k = int(attrs.get("k", 0))
    if all(isinstance(dim, int) for dim in shape):
        return [np.eye(shape[0], shape[1], k, dtype=dtype.numpy)]
    name = hint(node)
    row = counter(ctx.builder, shape[0], (shape[0], 1), f"{name}.row")
    column = counter(ctx.builder, shape[1], (1, shape[1]), f"{name}.column")
    offset = ctx.builder.op("sub", [column, row], hint=f"{name}.offset")
    on = ctx.builder.op("eq", [offset, ctx.builder.scalar(k, DType.i64)], hint=name if dtype is DType.bool
                        else f"{name}.on")
    return [on if dtype is DType.bool else ctx.builder.op("cast", [on], {"to": dtype}, hint=name)]


def convert_one_hot(ctx, node, attrs):
    """OneHot: on_value where the (wrapped) index equals the position along the new axis,
    off_value elsewhere; an index outside [-depth, depth) matches nothing. Float indices
    are truncated to integers, as ONNX specifies."""
    depth = static_input(ctx, node, 1, "depth").reshape(-1)
    depth = int(concrete(depth, "OneHot's depth")[0])
    indices = ctx.value(node.input[0])
    shape = ctx.builder.type(indices).shape
    rank = len(shape) + 1
    axis = normalize_axis(int(attrs.get("axis", -1)), rank)
    name = hint(node)
    if not ctx.builder.type(indices).dtype.is_integer:
        indices = ctx.builder.op("cast", [indices], {"to": DType.i64}, hint=f"{name}.int")
    index = wrapped_index(ctx, indices, depth, name)
    index = ctx.builder.op("reshape", [index], {"shape": (*shape[:axis], 1, *shape[axis:])}, hint=f"{name}.column")
    positions = counter(ctx.builder, depth, along(rank, axis, depth), f"{name}.position")
    if ctx.builder.type(index).dtype is not DType.i64:
        positions = ctx.builder.op("cast", [positions], {"to": ctx.builder.type(index).dtype}, hint=f"{name}.positions")
    hit = ctx.builder.op("eq", [index, positions], hint=f"{name}.hit")
    off, on = _pair(ctx, node, name)
    return [ctx.builder.op("where", [hit, on, off], hint=name)]


def _pair(ctx, node, name: str) -> tuple[str, str]:
    """OneHot's (off_value, on_value), as scalars when static."""
    values = node.input[2]
    if ctx.is_static(values):
        pair = concrete(ctx.static(values), "OneHot's values").reshape(-1)
        dtype = ctx.type(values).dtype
        return ctx.builder.scalar(pair[0].item(), dtype), ctx.builder.scalar(pair[1].item(), dtype)
    value = ctx.value(values)
    off, on = (ctx.builder.op("reshape", [ctx.builder.op("slice", [value], {"axis": 0, "start": index, "len": 1},
                                                         hint=f"{name}.{what}1")], {"shape": ()}, hint=f"{name}.{what}")
               for index, what in ((0, "off"), (1, "on")))
    return off, on


def convert_reverse_sequence(ctx, node, attrs):
    """ReverseSequence: along the time axis, position t of batch entry b reads position
    len[b] - 1 - t when t < len[b] and stays otherwise; one ``gather_elements`` at that
    index, built from a counter and the lengths broadcast over the input."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank < 2:
        raise UnsupportedModel(f"ReverseSequence of a rank-{type_.rank} input", expected="rank at least 2")
    batch_axis = normalize_axis(int(attrs.get("batch_axis", 1)), type_.rank)
    time_axis = normalize_axis(int(attrs.get("time_axis", 0)), type_.rank)
    if {batch_axis, time_axis} != {0, 1}:
        raise UnsupportedModel(f"ReverseSequence with batch_axis {batch_axis} and time_axis {time_axis}",
                               expected="axes 0 and 1, one each")
    name = hint(node)
    steps = type_.shape[time_axis]
    time = counter(ctx.builder, steps, along(type_.rank, time_axis, steps), f"{name}.time")
    lengths = operand(ctx, node.input[1], DType.i64)
    lengths = ctx.builder.op("reshape", [lengths], {"shape": along(type_.rank, batch_axis, type_.shape[batch_axis])},
                             hint=f"{name}.lens")
    inside = ctx.builder.op("lt", [time, lengths], hint=f"{name}.inside")
    last = ctx.builder.op("sub", [lengths, ctx.builder.scalar(1, DType.i64)], hint=f"{name}.last")
    mirrored = ctx.builder.op("sub", [last, time], hint=f"{name}.mirrored")
    source = ctx.builder.op("where", [inside, mirrored, time], hint=f"{name}.source")
    source = ctx.builder.op("expand", [source], {"shape": tuple(type_.shape)}, hint=f"{name}.index")
    return [ctx.builder.op("gather_elements", [x, source], {"axis": time_axis}, hint=name)]


register({
    "ScatterND": convert_scatter_nd, "ScatterElements": convert_scatter_elements, "Scatter": convert_scatter_elements,
    "TopK": convert_topk, "Trilu": convert_trilu, "EyeLike": convert_eye_like, "OneHot": convert_one_hot,
    "ReverseSequence": convert_reverse_sequence, "TensorScatter": convert_tensor_scatter,
})
