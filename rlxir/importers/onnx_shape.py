"""ONNX op -> core ops: shape and tensor ops (Reshape, Flatten, Squeeze/Unsqueeze, Transpose,
Concat, Slice, Split, Gather, GatherND, Compress, Expand, Tile) and the static ones (Shape,
Size, Constant, ConstantOfShape, Range; NonZero and Unique of constants) that shape
arithmetic is made of.

Each converter evaluates its op while importing when its inputs are static (`foldable`),
over symbolic dims where a dim is a symbol, and builds core ops otherwise.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, dtype_of_array, gather_leading_axes
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_context import concrete, normalize_static
from rlxir.importers.onnx_ops import (FOLD_LIMIT, INT64_MAX, axes_argument, counter, dims_tensor, first_dtype, foldable,
                                      hint, operand, optional_input, present, product, static_input, static_ints,
                                      wrapped_index)
from rlxir.ops import broadcast_shapes, normalize_axis
from rlxir.ops.reference import check_gather_indices
from rlxir.importers.strided import slice_any
from rlxir.symbolic import Expr, is_static, mul
from rlxir.types import TensorType


def convert_shape(ctx, node, attrs):
    shape = list(ctx.shape(node.input[0]))
    start, end = attrs.get("start", 0), attrs.get("end")
    picked = shape[start:end] if end is not None else shape[start:]
    return [_static_or_counted(ctx, node, np.array(picked, dtype=object)) if picked else np.zeros((0,), np.int64)]


def convert_size(ctx, node, attrs):
    return [_static_or_counted(ctx, node, np.array(product(ctx.shape(node.input[0])), dtype=object))]


def _static_or_counted(ctx, node, dims: np.ndarray):
    """Shape and Size stay static (shape arithmetic reads them while importing), except
    that a graph output holding symbolic dims is counted at run time (`dims_tensor`)."""
    dims = normalize_static(dims)
    if dims.dtype == object and node.output[0] in ctx.graph_outputs:
        return dims_tensor(ctx.builder, dims, hint(node))
    return dims


def convert_constant(ctx, node, attrs):
    from onnx import numpy_helper

    floats, ints = (lambda v: np.array(v, np.float32)), (lambda v: np.array(v, np.int64))
    for key, convert in (("value", numpy_helper.to_array), ("value_float", floats), ("value_floats", floats),
                         ("value_int", ints), ("value_ints", ints)):
        if key in attrs:
            return [convert(attrs[key])]
    raise UnsupportedModel(f"Constant with attribute {', '.join(attrs) or 'none'}",
                           expected="value, value_float(s) or value_int(s)")


def convert_constant_of_shape(ctx, node, attrs):
    from onnx import numpy_helper

    fill = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    dims = static_ints(ctx, node, 0, "shape")
    if all(isinstance(dim, int) for dim in dims):
        # The onnx backend test models store every weight as a ConstantOfShape: a param.
        ctx.weights.add(node.output[0])
        return [np.broadcast_to(fill[0], tuple(dims))]
    return [ctx.builder.splat(hint(node), fill[0].item(), TensorType(dtype_of_array(fill), dims))]


def _copy_zero_dims(x_shape, target, allow_zero: bool) -> list:
    """Reshape's target with each 0 replaced by the input dim at its index (unless allowzero)."""
    if not allow_zero:
        for index, dim in enumerate(target):
            if dim == 0 and index >= len(x_shape):
                raise UnsupportedModel(f"Reshape to {list(target)}: the 0 at index {index} copies an input dim, but "
                                       f"the input has rank {len(x_shape)}",
                                       expected="0 only where the input has a dim (or allowzero=1)")
    return [x_shape[index] if dim == 0 and not allow_zero else dim for index, dim in enumerate(target)]


def reshape_target(ctx, x_shape, target, allow_zero: bool) -> tuple:
    """ONNX Reshape's target as a `reshape` shape attribute (0 copies the input dim)."""
    target = _copy_zero_dims(x_shape, target, allow_zero)
    batch = Expr.symbol(ctx.batch_dim)
    if ctx.static_batch is not None and target and x_shape and x_shape[0] == batch and target[0] == ctx.static_batch:
        target[0] = batch
    return tuple(target)


def convert_reshape(ctx, node, attrs):
    target = static_ints(ctx, node, 1, "shape") if ctx.opset >= 5 else [int(dim) for dim in attrs["shape"]]
    allow_zero = bool(attrs.get("allowzero", 0))
    x = node.input[0]
    if foldable(ctx, node) or ctx.is_static(x) and ctx.static(x).size <= FOLD_LIMIT and ctx.opset < 5:
        values = ctx.static(x)
        return [values.reshape(_copy_zero_dims(values.shape, target, allow_zero))]
    value = ctx.value(x)
    shape = reshape_target(ctx, ctx.builder.type(value).shape, target, allow_zero)
    return [_reshape(ctx, value, shape, hint(node))]


def _reshape(ctx, value: str, shape, name: str) -> str:
    if tuple(shape) == tuple(ctx.builder.type(value).shape):
        return value
    return ctx.builder.op("reshape", [value], {"shape": tuple(shape)}, hint=name)


def convert_flatten(ctx, node, attrs):
    x = node.input[0]
    shape = ctx.shape(x)
    axis = attrs.get("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    target = (product(shape[:axis]), product(shape[axis:]))
    if foldable(ctx, node):
        return [ctx.static(x).reshape(target)]
    return [_reshape(ctx, ctx.value(x), target, hint(node))]


def convert_squeeze(ctx, node, attrs):
    x = node.input[0]
    shape = ctx.shape(x)
    axes = axes_argument(ctx, node, attrs, 1, 13)
    outside = [axis for axis in axes or () if not -len(shape) <= axis < len(shape)]
    if outside:
        raise UnsupportedModel(f"Squeeze of axis {outside[0]} of a rank-{len(shape)} input",
                               expected=f"axes in [{-len(shape)}, {len(shape)})")
    axes = [index for index, dim in enumerate(shape) if dim == 1] if axes is None else [a % len(shape) for a in axes]
    target = tuple(dim for index, dim in enumerate(shape) if index not in axes)
    if foldable(ctx, node):
        return [ctx.static(x).reshape(target)]
    return [_reshape(ctx, ctx.value(x), target, hint(node))]


def convert_unsqueeze(ctx, node, attrs):
    x = node.input[0]
    shape = list(ctx.shape(x))
    axes = axes_argument(ctx, node, attrs, 1, 13) or []
    rank = len(shape) + len(axes)
    for axis in sorted(axis % rank for axis in axes):
        shape.insert(axis, 1)
    if foldable(ctx, node):
        return [ctx.static(x).reshape(shape)]
    return [_reshape(ctx, ctx.value(x), shape, hint(node))]


def convert_transpose(ctx, node, attrs):
    x = node.input[0]
    rank = len(ctx.shape(x))
    perm = tuple(attrs.get("perm", range(rank - 1, -1, -1)))
    if foldable(ctx, node):
        return [np.transpose(ctx.static(x), perm)]
    if perm == tuple(range(rank)):
        return [ctx.value(x)]
    return [ctx.builder.op("transpose", [ctx.value(x)], {"perm": perm}, hint=hint(node))]


def convert_concat(ctx, node, attrs):
    names = present(node)
    axis = normalize_axis(attrs["axis"], len(ctx.shape(names[0])))
    if foldable(ctx, node):
        return [np.concatenate([ctx.static(name) for name in names], axis=axis)]
    dtype = first_dtype(ctx, names)
    names = [name for name in names if 0 not in ctx.shape(name)]  # ONNX allows empty pieces
    operands = [operand(ctx, name, dtype) for name in names]
    if len(operands) == 1:
        return operands
    return [ctx.builder.op("concat", operands, {"axis": axis}, hint=hint(node))]


def slice_arguments(ctx, node, attrs) -> tuple[list, list, list, list]:
    if ctx.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        return starts, ends, axes, [1] * len(starts)
    starts = static_ints(ctx, node, 1, "starts")
    ends = static_ints(ctx, node, 2, "ends")
    axes = static_ints(ctx, node, 3, "axes") if optional_input(node, 3) else list(range(len(starts)))
    steps = static_ints(ctx, node, 4, "steps") if optional_input(node, 4) else [1] * len(starts)
    return starts, ends, axes, steps


def convert_slice(ctx, node, attrs):
    starts, ends, axes, steps = slice_arguments(ctx, node, attrs)
    x = node.input[0]
    if ctx.is_static(x) and ctx.static(x).size <= FOLD_LIMIT and all(map(is_static, starts + ends)):
        values = ctx.static(x)
        index = [slice(None)] * values.ndim
        for start, end, axis, step in zip(starts, ends, axes, steps):
            index[axis % values.ndim] = slice(int(start), int(min(end, INT64_MAX)), int(step))
        return [values[tuple(index)]]
    result = ctx.value(x)
    rank = ctx.builder.type(result).rank
    for start, end, axis, step in zip(starts, ends, axes, steps):
        result = slice_any(ctx.builder, result, normalize_axis(axis, rank), start, end, step, hint(node))
    return [result]


def convert_gather_nd(ctx, node, attrs):
    """GatherND: the last axis of `indices` addresses k axes of `data` after its first
    `batch_dims` (which `indices` shares). Those k axes are flattened into one and indexed
    by the row-major linear index (negative indices wrap on static dims); batch axes are
    flattened into one more leading axis, addressed by each row's batch number."""
    batch = int(attrs.get("batch_dims", 0))
    data, indices = node.input[0], node.input[1]
    shape, index_shape = ctx.shape(data), ctx.shape(indices)
    if not 0 <= batch < min(len(shape), len(index_shape)):
        raise UnsupportedModel(f"GatherND with batch_dims={batch} for data of rank {len(shape)} and indices of rank "
                               f"{len(index_shape)}", expected="0 <= batch_dims < both ranks")
    if any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(shape[:batch], index_shape)):
        raise UnsupportedModel(f"GatherND batch dims {list(shape[:batch])} of data and {list(index_shape[:batch])} "
                               "of indices differ", expected="the same leading batch_dims dims")
    depth = index_shape[-1]
    if not isinstance(depth, int) or not 1 <= depth <= len(shape) - batch:
        raise UnsupportedModel(f"GatherND indices of shape {list(index_shape)}",
                               expected=f"a static last axis of 1..{len(shape) - batch} (data's rank after the batch)")
    if foldable(ctx, node):
        values, index = ctx.static(data), np.asarray(concrete(ctx.static(indices), "GatherND's indices"))
        return [_fold_gather_nd(values, index, batch)]
    index, name = ctx.value(indices), hint(node)
    if batch == 0:
        return [_gather_nd_leading(ctx, ctx.value(data), index, depth, index_shape[:-1], [], name)]
    rows = product(shape[:batch])
    flat_data = _reshape(ctx, ctx.value(data), (rows, *shape[batch:]), f"{name}.data")
    # a batch dim that is the batch symbol in data may be its static size in constant indices
    rows = product(index_shape[:batch])
    flat_index = _reshape(ctx, index, (rows, *index_shape[batch:]), f"{name}.rows")
    middle = tuple(index_shape[batch:-1])
    dtype = ctx.builder.type(index).dtype
    row = counter(ctx.builder, rows, (rows, *(1,) * (len(middle) + 1)), f"{name}.row", dtype)
    gathered = _gather_nd_leading(ctx, flat_data, flat_index, depth, (rows, *middle), [row], f"{name}.flat")
    return [_reshape(ctx, gathered, (*index_shape[:batch], *middle, *shape[batch + depth:]), name)]


def _gather_nd_leading(ctx, data: str, index: str, depth: int, index_shape, leading: list, name: str) -> str:
    """`data` at the rows of `index`'s last axis (`depth` columns), after the `leading`
    index parts (which address data's first axes)."""
    last = ctx.builder.type(index).rank - 1
    parts = [ctx.builder.op("slice", [index], {"axis": last, "start": axis, "len": 1}, hint=f"{name}.col{axis}")
             for axis in range(depth)]
    return gather_leading_axes(ctx.builder, data, leading + parts, name, index_shape=tuple(index_shape))


def _fold_gather_nd(values: np.ndarray, index: np.ndarray, batch: int) -> np.ndarray:
    if batch == 0:
        return values[tuple(np.moveaxis(index, -1, 0))]
    leading = values.shape[:batch]
    flat_values = values.reshape(-1, *values.shape[batch:])
    flat_index = index.reshape(-1, *index.shape[batch:])
    rows = [flat_values[row][tuple(np.moveaxis(flat_index[row], -1, 0))] for row in range(flat_values.shape[0])]
    return np.stack(rows).reshape(*leading, *rows[0].shape)


def convert_split(ctx, node, attrs):
    x = node.input[0]
    shape = ctx.shape(x)
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    dim = shape[axis]
    outputs = len(node.output)
    if ctx.opset >= 13 and optional_input(node, 1):
        sizes = static_ints(ctx, node, 1, "split")
    elif ctx.opset < 13 and "split" in attrs:
        sizes = [int(size) for size in attrs["split"]]
    else:
        if not isinstance(dim, int):
            raise UnsupportedModel(f"a Split of the symbolic dim {dim}", expected="splits of static dims")
        count = attrs.get("num_outputs", outputs)
        chunk = -(-dim // count)
        sizes = [min(chunk, dim - index * chunk) for index in range(count)]
    value = ctx.static(x) if ctx.is_static(x) else ctx.value(x)
    results, start = [], 0
    for index, size in enumerate(sizes):
        if isinstance(value, np.ndarray):
            results.append(np.take(value, range(start, start + size), axis=axis))
        else:
            results.append(ctx.builder.op("slice", [value], {"axis": axis, "start": start, "len": size},
                                          hint=hint(node, index)))
        start += size
    return results


def convert_gather(ctx, node, attrs):
    table, indices = node.input[0], node.input[1]
    shape = ctx.shape(table)
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    if ctx.is_static(indices):
        index = np.asarray(concrete(ctx.static(indices), "Gather's indices"))
        dim = shape[axis]
        if isinstance(dim, int):
            index = np.where(index < 0, index + dim, index)
            check_gather_indices(index, dim, "Gather")
        elif np.any(index < 0):
            raise UnsupportedModel(f"Gather with negative indices into the symbolic dim {dim}")
        if ctx.is_static(table) and ctx.static(table).size <= FOLD_LIMIT:
            return [np.take(ctx.static(table), index, axis=axis)]
        index_value = ctx.builder.tensor(f"{hint(node)}.idx", index.astype(np.int64))
    else:
        index_value = wrapped_index(ctx, ctx.value(indices), shape[axis], hint(node))  # ONNX allows negatives
    return [ctx.builder.op("gather", [ctx.value(table), index_value], {"axis": axis}, hint=hint(node))]


def convert_compress(ctx, node, attrs):
    """Compress with a condition known while importing: a ``gather`` of the kept positions
    along the axis (of the flattened input without one). A run-time condition would make
    the output's size data-dependent, which a static-shaped graph cannot hold."""
    condition = np.asarray(concrete(static_input(ctx, node, 1, "condition"), "Compress's condition"))
    keep = condition.reshape(-1).astype(bool)
    x = node.input[0]
    shape = ctx.shape(x)
    flat = attrs.get("axis") is None
    axis = 0 if flat else normalize_axis(int(attrs["axis"]), len(shape))
    dim = product(shape) if flat else shape[axis]
    if isinstance(dim, int) and keep.size > dim:
        raise UnsupportedModel(f"Compress with a condition of {keep.size} entries for a dim of {dim}",
                               expected="at most one entry per position")
    if not keep.any():
        raise UnsupportedModel("Compress that keeps nothing (an empty result)", expected="a condition with a true entry")
    if ctx.is_static(x) and ctx.static(x).size <= FOLD_LIMIT:
        return [np.compress(keep, concrete(ctx.static(x), "Compress's input"), axis=None if flat else axis)]
    value = ctx.value(x)
    if flat:
        value = _reshape(ctx, value, (dim,), f"{hint(node)}.flat")
    positions = ctx.builder.literal(f"{hint(node)}.kept", np.flatnonzero(keep).astype(np.int64))
    return [ctx.builder.op("gather", [value, positions], {"axis": axis}, hint=hint(node))]


def _data_dependent(ctx, node) -> np.ndarray:
    """The input of an op whose output's size depends on its values: it must be static."""
    x = node.input[0]
    if not (ctx.is_static(x) and ctx.static(x).size <= FOLD_LIMIT):
        raise UnsupportedModel(f"{node.op_type} of a tensor computed at run time (its output's size depends on the "
                               "values)", expected=f"a {node.op_type} of constants, evaluated while importing")
    return concrete(ctx.static(x), f"{node.op_type}'s input")


def convert_nonzero(ctx, node, attrs):
    """NonZero of constants: the [rank, count] positions, evaluated while importing."""
    values = _data_dependent(ctx, node)
    return [np.array(np.nonzero(values), dtype=np.int64).reshape(values.ndim, -1)]


def convert_unique(ctx, node, attrs):
    """Unique of constants (sorted, or in order of first occurrence; over the flattened
    input or slices along `axis`): values, first indices, inverse indices, counts."""
    values = _data_dependent(ctx, node)
    axis = attrs.get("axis")
    axis = None if axis is None else normalize_axis(int(axis), values.ndim)
    found, first, inverse, counts = np.unique(values, return_index=True, return_inverse=True, return_counts=True,
                                              axis=axis)
    inverse = inverse.reshape(-1)
    if not attrs.get("sorted", 1):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        found = np.take(found, order, axis=0 if axis is None else axis)
        first, inverse, counts = first[order], rank[inverse], counts[order]
    return [found, first.astype(np.int64), inverse.astype(np.int64), counts.astype(np.int64)]


def convert_expand(ctx, node, attrs):
    x = node.input[0]
    target = static_ints(ctx, node, 1, "shape")
    symbolic_target = any(isinstance(dim, Expr) for dim in target)
    if foldable(ctx, node) and not symbolic_target:  # a symbolic target cannot be a static array
        values = ctx.static(x)
        return [np.broadcast_to(values, np.broadcast_shapes(values.shape, tuple(int(d) for d in target)))]
    value = ctx.value(x)
    shape = tuple(ctx.builder.type(value).shape)
    result = broadcast_shapes(shape, tuple(target))
    if result == shape:
        return [value]
    return [ctx.builder.op("expand", [value], {"shape": result}, hint=hint(node))]


def convert_gather_elements(ctx, node, attrs):
    table, indices = node.input[0], node.input[1]
    shape = ctx.shape(table)
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    dim = shape[axis]
    index = wrapped_index(ctx, ctx.value(indices), dim, hint(node))  # ONNX allows negative indices
    return [ctx.builder.op("gather_elements", [ctx.value(table), index], {"axis": axis}, hint=hint(node))]


def convert_tile(ctx, node, attrs):
    """Tile: unit dims are broadcast by one ``expand`` (so a constant tiled by a count from
    ``Shape(x)``, such as a class token to the batch, stays one op over a symbolic dim);
    other dims repeat by ``concat`` for a static count, and for a symbolic one (ALiBi slopes
    tiled to the batch) by a new unit axis before the dim, expanded to the count and merged
    into the dim: ``[.., d, ..] -> [.., 1, d, ..] -> [.., c, d, ..] -> [.., c*d, ..]``."""
    x = node.input[0]
    repeats = static_ints(ctx, node, 1, "repeats")
    symbolic = any(isinstance(count, Expr) for count in repeats)
    if foldable(ctx, node) and not symbolic:
        return [np.tile(ctx.static(x), repeats)]
    result = ctx.value(x)
    shape = tuple(ctx.builder.type(result).shape)
    if len(repeats) != len(shape):
        raise UnsupportedModel(f"Tile repeats {repeats} for a rank-{len(shape)} input", expected="a count per axis")
    spread = tuple(count if dim == 1 else dim for dim, count in zip(shape, repeats))
    concatenated = any(dim != 1 and count != 1 for dim, count in zip(shape, repeats))
    if spread != shape:
        result = ctx.builder.op("expand", [result], {"shape": spread},
                                hint=f"{hint(node)}.spread" if concatenated else hint(node))
    for axis, (dim, count) in enumerate(zip(shape, repeats)):
        if dim == 1 or count == 1:
            continue
        if not isinstance(count, int):
            result = _tile_symbolic(ctx, node, result, axis, count)
            continue
        result = ctx.builder.op("concat", [result] * count, {"axis": axis}, hint=hint(node))
    return [result]


def _tile_symbolic(ctx, node, value: str, axis: int, count) -> str:
    """`value` repeated `count` times along `axis` (the whole dim, then again)."""
    shape = list(ctx.builder.type(value).shape)
    unit = shape[:axis] + [1] + shape[axis:]
    spread = shape[:axis] + [count] + shape[axis:]
    merged = shape[:axis] + [mul(count, shape[axis])] + shape[axis + 1:]
    name = hint(node)
    lifted = ctx.builder.op("reshape", [value], {"shape": tuple(unit)}, hint=f"{name}.unit")
    copies = ctx.builder.op("expand", [lifted], {"shape": tuple(spread)}, hint=f"{name}.copies")
    return ctx.builder.op("reshape", [copies], {"shape": tuple(merged)}, hint=name)


def convert_range(ctx, node, attrs):
    start, limit, delta = (static_input(ctx, node, index, what).reshape(()).item()
                           for index, what in enumerate(("start", "limit", "delta")))
    if not any(isinstance(value, Expr) for value in (start, limit, delta)):
        dtype = ctx.static(node.input[0]).dtype
        return [np.arange(start, limit, delta, dtype=dtype)]
    if delta != 1 or not isinstance(start, int):
        raise UnsupportedModel(f"Range({start}, {limit}, {delta}) over a symbolic dim", expected="a step of 1")
    # [start, limit) as an exclusive running sum of ones: the IR has no iota op.
    count = limit - start
    steps = counter(ctx.builder, count, (count,), f"{hint(node)}.steps")
    if start == 0:
        return [steps]
    return [ctx.builder.op("add", [steps, ctx.builder.scalar(start, DType.i64)], hint=hint(node))]


register({
    "Shape": convert_shape, "Size": convert_size, "Constant": convert_constant,
    "ConstantOfShape": convert_constant_of_shape, "Reshape": convert_reshape, "Flatten": convert_flatten,
    "Squeeze": convert_squeeze, "Unsqueeze": convert_unsqueeze, "Transpose": convert_transpose,
    "Concat": convert_concat, "Slice": convert_slice, "Split": convert_split, "Gather": convert_gather,
    "Expand": convert_expand, "Tile": convert_tile, "GatherElements": convert_gather_elements, "GatherND": convert_gather_nd, "Range": convert_range,
    "Compress": convert_compress, "NonZero": convert_nonzero, "Unique": convert_unique,
})
