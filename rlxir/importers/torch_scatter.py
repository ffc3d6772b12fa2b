"""Core ATen writes through indices -> core ops: ``index_put``, ``masked_scatter``, the
scatter family (``scatter``, ``scatter_add``, ``scatter_reduce``, ``index_reduce``), writes
into a diagonal or an as_strided view, ``put``, ``nonzero_static`` and embedding bags.

Each is a ``scatter_elements`` (or a ``where``) into x, its positions static tables or
computed at run time; the indexing helpers are `rlxir.importers.torch_index`'s.
"""

from __future__ import annotations

import numpy as np
import torch

from rlxir.dtypes import DType
from rlxir.importers.builder import flatten_leading_axes, linear_index
from rlxir.importers.torch_index import (Indexing, diagonal_positions, element_count, inverse_perm,
                                         strided_positions, transpose_to)
from rlxir.importers.torch_ops import (op, operand, read_results, refuse, reshape, result_dtype, shape_of,
                                       slice_axis, static_dim)
from rlxir.importers.torch_registry import Static, converter, op_key
from rlxir.ops import normalize_axis
from rlxir.symbolic import mul
from rlxir.types import TensorType


@converter("aten.index_put", "aten._unsafe_index_put")
def handle_index_put(ctx, node, args, kwargs):
    """index_put(x, indices, values, accumulate=False): x with x[indices] = values (summed
    into it when accumulating), a ``scatter_elements`` along the flattened indexed axes."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    accumulate = kwargs.get("accumulate", args[3] if len(args) > 3 else False)
    indices = _static_masks_as_positions(node, list(args[1]))
    masked = _masked_fill(ctx, node, x, indices, args[2], accumulate)
    if masked is not None:
        return masked
    indexing = Indexing(ctx, node, x, indices)
    if not indexing.axes:
        refuse("index_put without an index tensor", "at least one index tensor")
    moved = transpose_to(ctx, x, indexing.order, f"{node.name}.moved")
    moved_shape = shape_of(ctx, moved)
    linear = linear_index(ctx.builder, moved_shape, indexing.parts, f"{node.name}.linear")
    count = 1
    for size in indexing.index_shape:
        count = mul(count, size)
    if count == 0:
        return x
    rest = tuple(indexing.rest)
    result_order = indexing.result_perm()
    written_shape = tuple((tuple(indexing.index_shape) + rest)[axis] for axis in result_order)
    values = operand(ctx, args[2], dtype, f"{node.name}.values")
    if shape_of(ctx, values) != written_shape:
        values = op(ctx, "expand", [values], {"shape": written_shape}, hint=f"{node.name}.spread")
    values = transpose_to(ctx, values, inverse_perm(result_order), f"{node.name}.values_moved")
    values = reshape(ctx, values, (count,) + rest, f"{node.name}.rows")
    rows = reshape(ctx, linear, (count,) + (1,) * len(rest), f"{node.name}.row_index")
    if rest:
        rows = op(ctx, "expand", [rows], {"shape": (count,) + rest}, hint=f"{node.name}.row_index_spread")
    flat = flatten_leading_axes(ctx.builder, moved, len(indexing.axes), f"{node.name}.flat")
    written = op(ctx, "scatter_elements", [flat, rows, values],
                 {"axis": 0, "reduction": "add" if accumulate else "none"}, hint=f"{node.name}.written")
    return transpose_to(ctx, reshape(ctx, written, moved_shape, f"{node.name}.unflat"), inverse_perm(indexing.order),
                      node.name)


def _static_masks_as_positions(node, indices: list) -> list:
    """Each boolean mask known while importing replaced by the positions of its set elements,
    one integer index per axis it covers (PyTorch's own reading of a mask): the write then
    has a static shape whatever the mask holds."""
    expanded = []
    for position, index in enumerate(indices):
        if not isinstance(index, Static) or index.fake or index.tensor.dtype != torch.bool:
            expanded.append(index)
            continue
        set_positions = index.tensor.nonzero()
        expanded += [Static(f"{node.name}.mask{position}_{axis}", set_positions[:, axis].contiguous(), False)
                     for axis in range(index.tensor.dim())]
    return expanded


def _masked_fill(ctx, node, x: str, indices: list, values, accumulate: bool) -> str | None:
    """x[mask] = v (or += v) for one boolean mask over x's leading dims and a single value:
    a ``where`` (None when the write is not of that form)."""
    if len(indices) != 1 or indices[0] is None or ctx.type(indices[0]).dtype is not DType.bool:
        return None
    mask = ctx.value(indices[0])
    shape, mask_shape = shape_of(ctx, x), shape_of(ctx, mask)
    count = 1
    for size in shape_of(ctx, values):
        count = mul(count, size)
    if count != 1 or shape[:len(mask_shape)] != mask_shape:
        refuse("index_put through a boolean mask of several values: which value goes where depends on the mask",
               "a single value written through a mask")
    dtype = ctx.builder.type(x).dtype
    value = reshape(ctx, operand(ctx, values, dtype, f"{node.name}.value"), (), f"{node.name}.scalar")
    if accumulate:
        value = op(ctx, "add", [x, value], hint=f"{node.name}.added")
    spread_mask = reshape(ctx, mask, mask_shape + (1,) * (len(shape) - len(mask_shape)), f"{node.name}.mask")
    return op(ctx, "where", [spread_mask, value, x], hint=node.name)


@converter("aten.masked_scatter")
def handle_masked_scatter(ctx, node, args, kwargs):
    """masked_scatter(x, mask, source): where the mask (broadcast to x) is set, source's
    elements in order: element i of x takes source's element number (set elements before
    i), an exclusive ``cumsum`` of the mask over x flattened, read by a ``gather``."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    shape = shape_of(ctx, x)
    mask = operand(ctx, args[1], DType.bool, f"{node.name}.mask")
    if shape_of(ctx, mask) != shape:
        mask = op(ctx, "expand", [mask], {"shape": shape}, hint=f"{node.name}.mask_spread")
    total = element_count(shape)
    source = operand(ctx, args[2], dtype, f"{node.name}.source")
    available = element_count(shape_of(ctx, source))
    if total == 0 or available == 0:
        return x
    flat_mask = reshape(ctx, mask, (total,), f"{node.name}.flat_mask")
    counts = op(ctx, "cast", [flat_mask], {"to": DType.i64}, hint=f"{node.name}.counts")
    order = op(ctx, "cumsum", [counts], {"axis": 0, "exclusive": True}, hint=f"{node.name}.order")
    order = op(ctx, "minimum", [order, ctx.builder.scalar(available - 1, DType.i64)], hint=f"{node.name}.order_kept")
    picked = op(ctx, "gather", [reshape(ctx, source, (available,), f"{node.name}.flat_source"), order], {"axis": 0},
                hint=f"{node.name}.picked")
    return op(ctx, "where", [mask, reshape(ctx, picked, shape, f"{node.name}.picked_shape"), x], hint=node.name)


# --- scatter ---------------------------------------------------------------------------
SCATTER_REDUCTIONS = {None: "none", "add": "add", "multiply": "mul", "sum": "add", "prod": "mul", "amax": "max",
                      "amin": "min", "mean": "add"}


def _source(ctx, node, item, index: str, dtype: DType) -> str:
    """scatter's src cut to the index's shape (PyTorch reads only that corner), or a number
    spread to it."""
    shape = shape_of(ctx, index)
    if not isinstance(item, (str, Static)):
        return ctx.builder.splat(f"{node.name}.src", item, TensorType(dtype, shape))
    source = operand(ctx, item, dtype, f"{node.name}.src")
    for axis, size in enumerate(shape):
        source = slice_axis(ctx, source, axis, 0, size, f"{node.name}.src{axis}")
    return source


def _identity(reduction: str, dtype: DType) -> object:
    if reduction in ("sum", "mean"):
        return 0
    if reduction == "prod":
        return 1
    if dtype.is_float:
        return -np.inf if reduction == "amax" else np.inf
    info = np.iinfo(dtype.numpy())
    return int(info.min if reduction == "amax" else info.max)


@converter("aten.scatter", "aten.scatter_add", "aten.scatter_reduce")
def handle_scatter(ctx, node, args, kwargs):
    """scatter(x, dim, index, src|value, reduce=None), scatter_add, and
    scatter_reduce(x, dim, index, src, reduce, include_self=True): ``scatter_elements``;
    without self, the written positions start from the reduction's identity; a mean is the
    sum over the count."""
    key = op_key(node.target)
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    axis = normalize_axis(args[1], max(ctx.builder.type(x).rank, 1))
    index = operand(ctx, args[2], DType.i64, f"{node.name}.index")
    if key == "aten.scatter_reduce":
        reduce = args[4]
        include_self = kwargs.get("include_self", args[5] if len(args) > 5 else True)
    else:
        reduce = "add" if key == "aten.scatter_add" else kwargs.get("reduce", args[4] if len(args) > 4 else None)
        include_self = True
    if reduce not in SCATTER_REDUCTIONS:
        refuse(f"scatter with reduce={reduce!r}", ", ".join(str(name) for name in SCATTER_REDUCTIONS))
    if 0 in shape_of(ctx, index):
        return x
    if ctx.builder.type(x).rank == 0:
        refuse("a scatter into a 0-d tensor", "a tensor of rank at least 1")
    source = _source(ctx, node, args[3], index, dtype)
    return scatter_reduced(ctx, node, x, axis, index, source, reduce, include_self)


def scatter_reduced(ctx, node, x: str, axis: int, index: str, source: str, reduce, include_self: bool) -> str:
    """x with source's values combined into it at `index` along `axis` (`SCATTER_REDUCTIONS`)."""
    dtype = ctx.builder.type(x).dtype
    touched = None
    if not include_self or reduce == "mean":
        marks = op(ctx, "scatter_elements", [_zeros(ctx, x, node), index, _ones(ctx, index, node)],
                   {"axis": axis, "reduction": "add"}, hint=f"{node.name}.count")
        touched = op(ctx, "gt", [marks, ctx.builder.scalar(0, dtype)], hint=f"{node.name}.touched")
    base = x
    if not include_self:
        base = op(ctx, "where", [touched, ctx.builder.scalar(_identity(reduce, dtype), dtype), x],
                  hint=f"{node.name}.base")
    result = op(ctx, "scatter_elements", [base, index, source],
                {"axis": axis, "reduction": SCATTER_REDUCTIONS[reduce]},
                hint=node.name if reduce != "mean" else f"{node.name}.total")
    if reduce != "mean":
        return result
    count = marks if not include_self else op(ctx, "add", [marks, ctx.builder.scalar(1, dtype)],
                                              hint=f"{node.name}.with_self")
    count = op(ctx, "maximum", [count, ctx.builder.scalar(1, dtype)], hint=f"{node.name}.divisor")
    quotient = op(ctx, "div", [result, count], hint=f"{node.name}.mean")
    if dtype.is_integer:
        quotient = op(ctx, "div", [op(ctx, "sub", [result, op(ctx, "mod", [result, count], hint=f"{node.name}.rem")],
                                      hint=f"{node.name}.exact"), count], hint=f"{node.name}.mean")
    return quotient


def _zeros(ctx, like: str, node) -> str:
    return ctx.builder.splat(f"{node.name}.zeros", 0, TensorType(result_dtype(node), shape_of(ctx, like)))


def _ones(ctx, like: str, node) -> str:
    return ctx.builder.splat(f"{node.name}.ones", 1, TensorType(result_dtype(node), shape_of(ctx, like)))


@converter("aten.index_reduce")
def handle_index_reduce(ctx, node, args, kwargs):
    """index_reduce(x, dim, index [n], source, reduce, include_self=True): source's rows
    along dim combined into x's rows `index` (a scatter whose index is spread over source)."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[1], max(len(shape), 1))
    source = operand(ctx, args[3], dtype, f"{node.name}.src")
    if not shape:  # a 0-d x: its one element, as a tensor of one
        single = handle_index_reduce(ctx, node, [reshape(ctx, x, (1,), f"{node.name}.x1"), 0,
                                                 reshape(ctx, ctx.value(args[2]), (1,), f"{node.name}.i1"),
                                                 reshape(ctx, source, (1,), f"{node.name}.s1"), *args[4:]], kwargs)
        return reshape(ctx, single, (), f"{node.name}.scalar")
    reduce = args[4]
    include_self = kwargs.get("include_self", args[5] if len(args) > 5 else True)
    if reduce not in SCATTER_REDUCTIONS:
        refuse(f"index_reduce with reduce={reduce!r}", ", ".join(str(name) for name in SCATTER_REDUCTIONS))
    index = operand(ctx, args[2], DType.i64, f"{node.name}.index")
    source_shape = shape_of(ctx, source)
    if 0 in source_shape:
        return x
    column = reshape(ctx, index, tuple(size if position == axis else 1 for position, size in enumerate(source_shape)),
                     f"{node.name}.index_column")
    spread = op(ctx, "expand", [column], {"shape": source_shape}, hint=f"{node.name}.index_spread")
    return scatter_reduced(ctx, node, x, axis, spread, source, reduce, include_self)


@converter("aten.diagonal_scatter")
def handle_diagonal_scatter(ctx, node, args, kwargs):
    """diagonal_scatter(x, src, offset=0, dim1=0, dim2=1): x with its diagonal replaced by
    src, a ``scatter_elements`` into the two dims flattened (the positions of `diagonal`)."""
    given = {"offset": 0, "dim1": 0, "dim2": 1, **dict(zip(("offset", "dim1", "dim2"), args[2:])), **kwargs}
    dtype = result_dtype(node)
    x, source = (operand(ctx, item, dtype, node.name) for item in args[:2])
    shape = shape_of(ctx, x)
    first, second = (normalize_axis(given[name], len(shape)) for name in ("dim1", "dim2"))
    others = [axis for axis in range(len(shape)) if axis not in (first, second)]
    order = others + [first, second]
    moved = transpose_to(ctx, x, order, f"{node.name}.moved")
    rows, columns = (static_dim(shape[axis], "a diagonal_scatter") for axis in (first, second))
    positions = diagonal_positions(rows, columns, given["offset"])
    if positions.size == 0:
        return x
    kept = [shape[axis] for axis in others]
    flat = reshape(ctx, moved, kept + [rows * columns], f"{node.name}.flat")
    index = op(ctx, "expand", [ctx.builder.tensor(f"{node.name}.positions", positions)],
               {"shape": shape_of(ctx, source)}, hint=f"{node.name}.positions_spread")
    written = op(ctx, "scatter_elements", [flat, index, source], {"axis": len(kept), "reduction": "none"},
                 hint=f"{node.name}.written")
    back = reshape(ctx, written, [shape[axis] for axis in order], f"{node.name}.unflat")
    return transpose_to(ctx, back, inverse_perm(order), node.name)


@converter("aten.as_strided_scatter")
def handle_as_strided_scatter(ctx, node, args, kwargs):
    """as_strided_scatter(x, src, size, stride, storage_offset=0): x's row-major elements at
    the as_strided positions replaced by src's (a ``scatter_elements`` over x flattened)."""
    dtype = result_dtype(node)
    x, source = (operand(ctx, item, dtype, node.name) for item in args[:2])
    size, stride = list(args[2]), list(args[3])
    offset = kwargs.get("storage_offset", args[4] if len(args) > 4 else None) or 0
    shape = shape_of(ctx, x)
    total = element_count(shape)
    positions = strided_positions(size, stride, offset).reshape(-1)
    if positions.size == 0:
        return x
    flat = reshape(ctx, x, (static_dim(total, "as_strided_scatter"),), f"{node.name}.flat")
    written = op(ctx, "scatter_elements", [flat, ctx.builder.tensor(f"{node.name}.positions", positions),
                                           reshape(ctx, source, (positions.size,), f"{node.name}.flat_source")],
                 {"axis": 0, "reduction": "none"}, hint=f"{node.name}.written")
    return reshape(ctx, written, shape, node.name)


@converter("aten._embedding_bag", "aten._embedding_bag_forward_only")
def handle_embedding_bag(ctx, node, args, kwargs):
    """_embedding_bag(weight, indices, offsets, scale_grad, mode, sparse, per_sample_weights,
    include_last_offset, padding_idx) -> (out, ...): each index's row gathered (times its
    weight), then summed, averaged or maximized into its bag by ``scatter_elements``; an
    index's bag is how many bag offsets lie at or before its position, minus one. Only out
    is built (the other results describe the bags for the backward pass)."""
    names = ("scale_grad_by_freq", "mode", "sparse", "per_sample_weights", "include_last_offset", "padding_idx")
    given = {"mode": 0, "per_sample_weights": None, "include_last_offset": False, "padding_idx": -1,
             **dict(zip(names, args[3:])), **kwargs}
    if read_results(node) - {0}:
        refuse("embedding_bag's bag bookkeeping results", "only the bags' values")
    weight = ctx.value(args[0])
    dtype = ctx.builder.type(weight).dtype
    indices = operand(ctx, args[1], DType.i64, f"{node.name}.indices")
    offsets = operand(ctx, args[2], DType.i64, f"{node.name}.offsets")
    length = static_dim(shape_of(ctx, indices)[0], "embedding_bag")
    bags = static_dim(shape_of(ctx, offsets)[0], "embedding_bag") - (1 if given["include_last_offset"] else 0)
    width = shape_of(ctx, weight)[1]
    if length == 0 or bags <= 0:
        return [ctx.builder.splat(node.name, 0, TensorType(dtype, (max(bags, 0), width))), None, None, None]
    starts = slice_axis(ctx, offsets, 0, 0, bags, f"{node.name}.starts")
    positions = ctx.builder.tensor(f"{node.name}.positions", np.arange(length, dtype=np.int64).reshape(length, 1))
    started = op(ctx, "cast", [op(ctx, "le", [reshape(ctx, starts, (1, bags), f"{node.name}.starts_row"), positions],
                                  hint=f"{node.name}.started")], {"to": DType.i64}, hint=f"{node.name}.started_count")
    bag = op(ctx, "sub", [op(ctx, "reduce_sum", [started], {"axes": (1,), "keepdims": True},
                             hint=f"{node.name}.count"), ctx.builder.scalar(1, DType.i64)], hint=f"{node.name}.bag")
    rows = op(ctx, "gather", [weight, indices], {"axis": 0}, hint=f"{node.name}.rows")
    if given["per_sample_weights"] is not None:
        scale = reshape(ctx, operand(ctx, given["per_sample_weights"], dtype, node.name), (length, 1),
                        f"{node.name}.sample_weights")
        rows = op(ctx, "mul", [rows, scale], hint=f"{node.name}.weighted")
    kept = ctx.builder.splat(f"{node.name}.kept", True, TensorType(DType.bool, (length, 1)))
    if given["padding_idx"] is not None and given["padding_idx"] >= 0:
        kept = reshape(ctx, op(ctx, "ne", [indices, ctx.builder.scalar(given["padding_idx"], DType.i64)],
                               hint=f"{node.name}.not_padding"), (length, 1), f"{node.name}.kept")
    return [_bag_reduce(ctx, node, rows, bag, kept, bags, given["mode"]), None, None, None]


def _bag_reduce(ctx, node, rows: str, bag: str, kept: str, bags: int, mode: int) -> str:
    """rows [L, D] combined into `bags` bags by their bag [L, 1]: 0 sum, 1 mean, 2 max (an
    empty bag is zeros; rows not `kept` count for nothing)."""
    length, width = shape_of(ctx, rows)
    dtype = ctx.builder.type(rows).dtype
    spread = op(ctx, "expand", [bag], {"shape": (length, width)}, hint=f"{node.name}.bag_spread")
    counts = op(ctx, "scatter_elements", [ctx.builder.splat(f"{node.name}.zero_counts", 0, TensorType(dtype, (bags, 1))),
                                          bag, op(ctx, "cast", [kept], {"to": dtype}, hint=f"{node.name}.ones")],
                {"axis": 0, "reduction": "add"}, hint=f"{node.name}.counts")
    if mode == 2:
        rows = op(ctx, "where", [kept, rows, ctx.builder.scalar(-np.inf, dtype)], hint=f"{node.name}.candidates")
        start = ctx.builder.splat(f"{node.name}.lowest", -np.inf, TensorType(dtype, (bags, width)))
        most = op(ctx, "scatter_elements", [start, spread, rows], {"axis": 0, "reduction": "max"},
                  hint=f"{node.name}.max")
        filled = op(ctx, "gt", [counts, ctx.builder.scalar(0, dtype)], hint=f"{node.name}.filled")
        return op(ctx, "where", [filled, most, ctx.builder.scalar(0, dtype)], hint=node.name)
    rows = op(ctx, "where", [kept, rows, ctx.builder.scalar(0, dtype)], hint=f"{node.name}.counted_rows")
    zeros = ctx.builder.splat(f"{node.name}.zeros", 0, TensorType(dtype, (bags, width)))
    total = op(ctx, "scatter_elements", [zeros, spread, rows], {"axis": 0, "reduction": "add"},
               hint=node.name if mode == 0 else f"{node.name}.sum")
    if mode == 0:
        return total
    divisor = op(ctx, "maximum", [counts, ctx.builder.scalar(1, dtype)], hint=f"{node.name}.divisor")
    return op(ctx, "div", [total, divisor], hint=node.name)


@converter("aten.nonzero_static")
def handle_nonzero_static(ctx, node, args, kwargs):
    """nonzero_static(x, size=, fill_value=-1) -> [size, rank]: the coordinates of x's first
    `size` non-zero elements in order (an exclusive ``cumsum`` ranks them), scattered into a
    table of `fill_value` with one spare row that takes every element past `size`."""
    x = ctx.value(args[0])
    size = kwargs.get("size", args[1] if len(args) > 1 else None)
    fill = kwargs.get("fill_value", -1)
    shape = [static_dim(dim, "nonzero_static") for dim in shape_of(ctx, x)]
    rank, total = len(shape), int(np.prod(shape)) if shape else 1
    if total == 0 or size == 0 or rank == 0:  # no coordinates to write (a 0-d x has none)
        return ctx.builder.splat(node.name, fill, TensorType(DType.i64, (size, rank)))
    table = ctx.builder.splat(f"{node.name}.table", fill, TensorType(DType.i64, (size + 1, rank)))
    flat = reshape(ctx, operand(ctx, x, DType.bool, f"{node.name}.set"), (total, 1), f"{node.name}.flat")
    order = op(ctx, "cumsum", [op(ctx, "cast", [flat], {"to": DType.i64}, hint=f"{node.name}.count")],
               {"axis": 0, "exclusive": True}, hint=f"{node.name}.order")
    kept = op(ctx, "minimum", [flat, op(ctx, "lt", [order, ctx.builder.scalar(size, DType.i64)],
                                        hint=f"{node.name}.fits")], hint=f"{node.name}.kept")
    rows = op(ctx, "where", [kept, order, ctx.builder.scalar(size, DType.i64)], hint=f"{node.name}.rows")
    rows = op(ctx, "expand", [rows], {"shape": (total, rank)}, hint=f"{node.name}.rows_spread")
    coordinates = np.stack(np.unravel_index(np.arange(total), shape), axis=1)
    written = op(ctx, "scatter_elements", [table, rows, ctx.builder.tensor(f"{node.name}.coordinates",
                                                                           coordinates.astype(np.int64))],
                 {"axis": 0, "reduction": "none"}, hint=f"{node.name}.written")
    return slice_axis(ctx, written, 0, 0, size, node.name)


@converter("aten.put")
def handle_put(ctx, node, args, kwargs):
    """put(x, index, source, accumulate=False): x's row-major elements at `index` (negative
    counted from the end) replaced by (or added to) source's, a ``scatter_elements`` over x
    flattened."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    accumulate = kwargs.get("accumulate", args[3] if len(args) > 3 else False)
    shape = shape_of(ctx, x)
    total = static_dim(element_count(shape), "put")
    index = operand(ctx, args[1], DType.i64, f"{node.name}.index")
    count = element_count(shape_of(ctx, index))
    if count == 0 or total == 0:
        return x
    flat_index = reshape(ctx, index, (count,), f"{node.name}.flat_index")
    negative = op(ctx, "lt", [flat_index, ctx.builder.scalar(0, DType.i64)], hint=f"{node.name}.negative")
    wrapped = op(ctx, "add", [flat_index, ctx.builder.scalar(total, DType.i64)], hint=f"{node.name}.wrapped")
    flat_index = op(ctx, "where", [negative, wrapped, flat_index], hint=f"{node.name}.positions")
    source = reshape(ctx, operand(ctx, args[2], dtype, f"{node.name}.source"), (count,), f"{node.name}.flat_source")
    written = op(ctx, "scatter_elements", [reshape(ctx, x, (total,), f"{node.name}.flat"), flat_index, source],
                 {"axis": 0, "reduction": "add" if accumulate else "none"}, hint=f"{node.name}.written")
    return reshape(ctx, written, shape, node.name)


SEGMENT_REDUCTIONS = {"sum": ("add", 0.0), "prod": ("mul", 1.0), "max": ("max", -np.inf), "min": ("min", np.inf),
                      "mean": ("add", 0.0)}
"""segment_reduce's reductions: the scatter reduction and the start of an empty segment."""


@converter("aten.segment_reduce")
def handle_segment_reduce(ctx, node, args, kwargs):
    """segment_reduce(data, reduce, lengths= | offsets=, axis=0, initial=) over 1-D lengths
    or offsets along axis 0: each row's segment counted from the segment starts at run time,
    the rows combined into their segment by ``scatter_elements`` starting from `initial`;
    a mean divides the total by the segment's length (an empty one is `initial`, or NaN)."""
    reduce, initial = args[1], kwargs.get("initial")
    if reduce not in SEGMENT_REDUCTIONS or kwargs.get("axis", 0) != 0 or kwargs.get("indices") is not None:
        refuse(f"segment_reduce {reduce!r} along axis {kwargs.get('axis', 0)}",
               "sum, prod, max, min or mean along axis 0, by lengths or offsets")
    dtype = result_dtype(node)
    data = operand(ctx, args[0], dtype, node.name)
    shape = shape_of(ctx, data)
    if kwargs.get("lengths") is not None:
        lengths = operand(ctx, kwargs["lengths"], DType.i64, f"{node.name}.lengths")
        starts = op(ctx, "cumsum", [lengths], {"axis": 0, "exclusive": True}, hint=f"{node.name}.starts")
        segments = static_dim(shape_of(ctx, lengths)[0], "segment_reduce")
    else:
        offsets = operand(ctx, kwargs["offsets"], DType.i64, f"{node.name}.offsets")
        segments = static_dim(shape_of(ctx, offsets)[0], "segment_reduce") - 1
        starts = slice_axis(ctx, offsets, 0, 0, segments, f"{node.name}.starts")
    rows = static_dim(shape[0], "segment_reduce")
    kind, empty = SEGMENT_REDUCTIONS[reduce]
    start_value = empty if initial is None else initial
    base = ctx.builder.splat(f"{node.name}.start", start_value, TensorType(dtype, (segments,) + tuple(shape[1:])))
    if rows == 0 or segments == 0:
        return base
    positions = ctx.builder.tensor(f"{node.name}.positions", np.arange(rows, dtype=np.int64).reshape(rows, 1))
    begun = op(ctx, "cast", [op(ctx, "le", [reshape(ctx, starts, (1, segments), f"{node.name}.starts_row"), positions],
                                hint=f"{node.name}.begun")], {"to": DType.i64}, hint=f"{node.name}.begun_count")
    segment = op(ctx, "sub", [op(ctx, "reduce_sum", [begun], {"axes": (1,), "keepdims": False},
                                 hint=f"{node.name}.count"), ctx.builder.scalar(1, DType.i64)],
                 hint=f"{node.name}.segment")
    index = reshape(ctx, segment, (rows,) + (1,) * (len(shape) - 1), f"{node.name}.segment_column")
    if len(shape) > 1:
        index = op(ctx, "expand", [index], {"shape": shape}, hint=f"{node.name}.segment_spread")
    total = op(ctx, "scatter_elements", [base, index, data], {"axis": 0, "reduction": kind},
               hint=node.name if reduce != "mean" else f"{node.name}.total")
    if reduce != "mean":
        return total
    ones = ctx.builder.splat(f"{node.name}.ones", 1, TensorType(dtype, shape))
    zeros = ctx.builder.splat(f"{node.name}.zeros", 0, TensorType(dtype, shape_of(ctx, base)))
    count = op(ctx, "scatter_elements", [zeros, index, ones], {"axis": 0, "reduction": "add"},
               hint=f"{node.name}.length")
    filled = op(ctx, "gt", [count, ctx.builder.scalar(0, dtype)], hint=f"{node.name}.filled")
    divisor = op(ctx, "maximum", [count, ctx.builder.scalar(1, dtype)], hint=f"{node.name}.divisor")
    empty_mean = base if initial is not None else ctx.builder.scalar(np.nan, dtype)  # PyTorch: NaN
    return op(ctx, "where", [filled, op(ctx, "div", [total, divisor], hint=f"{node.name}.mean"), empty_mean],
              hint=node.name)
