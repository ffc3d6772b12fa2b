"""Core ATen indexing -> core ops: advanced indexing and writes through it, the scatter
family, sort, repeat, diagonal, as_strided and the shape queries; and the Core ATen ops the
IR cannot hold, each refused with its reason.

Indexing moves the indexed axes first (a ``transpose``), addresses them as one flattened
axis (`rlxir.importers.builder.linear_index`), and moves the result's axes back where
PyTorch puts them: where the indexed axes were when they are adjacent, in front otherwise.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import flatten_leading_axes, gather_leading_axes, linear_index
from rlxir.importers.torch_ops import filled, op, operand, read_results, refuse, reshape, result_dtype, shape_of, \
    slice_axis, static_dim
from rlxir.importers.torch_registry import CONVERTERS, Static, converter, op_key, register
from rlxir.ops import broadcast_shapes, normalize_axis
from rlxir.symbolic import mul
from rlxir.types import TensorType


# --- advanced indexing -------------------------------------------------------------------
def _transpose(ctx, value: str, perm, hint: str) -> str:
    perm = tuple(perm)
    return value if perm == tuple(range(len(perm))) else op(ctx, "transpose", [value], {"perm": perm}, hint=hint)


def _inverse(perm) -> list[int]:
    inverse = [0] * len(perm)
    for position, axis in enumerate(perm):
        inverse[axis] = position
    return inverse


class Indexing:
    """x[indices] for a list with an index tensor or None per leading axis: which axes are
    indexed, the order that puts them first, and where the broadcast index dims land."""

    def __init__(self, ctx, node, x: str, indices: list):
        shape = shape_of(ctx, x)
        if len(indices) > len(shape):
            refuse(f"{len(indices)} indices into a rank-{len(shape)} tensor", "at most one index per axis")
        self.axes = [axis for axis, index in enumerate(indices) if index is not None]
        for axis in self.axes:
            if ctx.type(indices[axis]).dtype is DType.bool:
                refuse("indexing with a boolean mask: the result's shape depends on how many elements are set",
                       "integer index tensors")
        self.order = self.axes + [axis for axis in range(len(shape)) if axis not in self.axes]
        self.parts = [operand(ctx, indices[axis], DType.i64, f"{node.name}.i{axis}") for axis in self.axes]
        self.index_shape = broadcast_shapes(*(shape_of(ctx, part) for part in self.parts))
        adjacent = self.axes == list(range(self.axes[0], self.axes[-1] + 1))
        self.front = 0 if not adjacent else self.axes[0]
        self.rest = [shape[axis] for axis in self.order[len(self.axes):]]

    def result_perm(self) -> list[int]:
        """The perm from [index dims, rest] to PyTorch's order of the result."""
        count, front = len(self.index_shape), self.front
        rest = len(self.rest)
        return [count + i for i in range(front)] + list(range(count)) + [count + i for i in range(front, rest)]


@converter("aten.index", "aten._unsafe_index")
def handle_index(ctx, node, args, kwargs):
    """x[i0, None, i2, ...]: index tensors (or None, an axis taken whole) for the leading axes."""
    x = ctx.value(args[0])
    indexing = Indexing(ctx, node, x, list(args[1]))
    if not indexing.axes:
        return x
    moved = _transpose(ctx, x, indexing.order, f"{node.name}.moved")
    gathered = gather_leading_axes(ctx.builder, moved, indexing.parts, f"{node.name}.gathered")
    return _transpose(ctx, gathered, indexing.result_perm(), node.name)


@converter("aten.index_put", "aten._unsafe_index_put")
def handle_index_put(ctx, node, args, kwargs):
    """index_put(x, indices, values, accumulate=False): x with x[indices] = values (summed
    into it when accumulating), a ``scatter_elements`` along the flattened indexed axes."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    accumulate = kwargs.get("accumulate", args[3] if len(args) > 3 else False)
    masked = _masked_fill(ctx, node, x, list(args[1]), args[2], accumulate)
    if masked is not None:
        return masked
    indexing = Indexing(ctx, node, x, list(args[1]))
    if not indexing.axes:
        refuse("index_put without an index tensor", "at least one index tensor")
    moved = _transpose(ctx, x, indexing.order, f"{node.name}.moved")
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
    values = _transpose(ctx, values, _inverse(result_order), f"{node.name}.values_moved")
    values = reshape(ctx, values, (count,) + rest, f"{node.name}.rows")
    rows = reshape(ctx, linear, (count,) + (1,) * len(rest), f"{node.name}.row_index")
    if rest:
        rows = op(ctx, "expand", [rows], {"shape": (count,) + rest}, hint=f"{node.name}.row_index_spread")
    flat = flatten_leading_axes(ctx.builder, moved, len(indexing.axes), f"{node.name}.flat")
    written = op(ctx, "scatter_elements", [flat, rows, values],
                 {"axis": 0, "reduction": "add" if accumulate else "none"}, hint=f"{node.name}.written")
    return _transpose(ctx, reshape(ctx, written, moved_shape, f"{node.name}.unflat"), _inverse(indexing.order),
                      node.name)


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
    total = _count_all(shape)
    source = operand(ctx, args[2], dtype, f"{node.name}.source")
    available = _count_all(shape_of(ctx, source))
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


# --- sort, repeat, diagonal, as_strided --------------------------------------------------
@converter("aten.sort")
def handle_sort(ctx, node, args, kwargs):
    """sort(x, dim=-1, descending=False) -> (values, indices): ``topk`` with k the dim's
    size (ties keep their order: the lower index first, a stable sort)."""
    given = {"dim": -1, "descending": False}
    if node.target._overloadname == "stable":
        given.update(kwargs)
    else:
        given.update(dict(zip(("dim", "descending"), args[1:])), **kwargs)
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    if not shape:
        return [x, ctx.builder.splat(f"{node.name}.index", 0, TensorType(DType.i64, ()))]
    axis = normalize_axis(given["dim"], len(shape))
    count = static_dim(shape[axis], "a sort")
    if count == 0:
        return [x, ctx.builder.splat(f"{node.name}.index", 0, TensorType(DType.i64, shape))]
    indices = op(ctx, "topk", [x], {"k": count, "axis": axis, "largest": bool(given["descending"])},
                 hint=f"{node.name}.indices")
    return [op(ctx, "gather_elements", [x, indices], {"axis": axis}, hint=node.name), indices]


@converter("aten.repeat")
def handle_repeat(ctx, node, args, kwargs):
    """repeat(x, repeats): x padded to len(repeats) dims, each dim d made (r, d) by an
    ``expand`` and merged to r * d."""
    x = ctx.value(args[0])
    repeats = list(args[1])
    shape = [1] * (len(repeats) - len(shape_of(ctx, x))) + list(shape_of(ctx, x))
    split = [size for dim in shape for size in (1, dim)]
    spread = [size for count, dim in zip(repeats, shape) for size in (count, dim)]
    x = reshape(ctx, x, split, f"{node.name}.split")
    if spread != split:
        x = op(ctx, "expand", [x], {"shape": tuple(spread)}, hint=f"{node.name}.spread")
    return reshape(ctx, x, [mul(count, dim) for count, dim in zip(repeats, shape)], node.name)


@converter("aten.diagonal")
def handle_diagonal(ctx, node, args, kwargs):
    """diagonal(x, offset=0, dim1=0, dim2=1): the two dims moved last and flattened, the
    diagonal's positions gathered from them (a static index list), as the last dim."""
    given = {"offset": 0, "dim1": 0, "dim2": 1, **dict(zip(("offset", "dim1", "dim2"), args[1:])), **kwargs}
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    first, second = (normalize_axis(given[name], len(shape)) for name in ("dim1", "dim2"))
    offset = given["offset"]
    others = [axis for axis in range(len(shape)) if axis not in (first, second)]
    moved = _transpose(ctx, x, others + [first, second], f"{node.name}.moved")
    rows, columns = (static_dim(shape[axis], "a diagonal") for axis in (first, second))
    positions = _diagonal_positions(rows, columns, offset)
    kept = [shape[axis] for axis in others]
    flat = reshape(ctx, moved, kept + [rows * columns], f"{node.name}.flat")
    if positions.size == 0:
        return slice_axis(ctx, flat, len(kept), 0, 0, node.name)
    index = ctx.builder.tensor(f"{node.name}.positions", positions)
    return op(ctx, "gather", [flat, index], {"axis": len(kept)}, hint=node.name)


@converter("aten.as_strided")
def handle_as_strided(ctx, node, args, kwargs):
    """as_strided(x, size, stride, storage_offset=0) over x's row-major elements (x as a
    contiguous tensor, what it is once functionalized): a ``gather`` of the static positions."""
    x = ctx.value(args[0])
    size, stride = list(args[1]), list(args[2])
    offset = kwargs.get("storage_offset", args[3] if len(args) > 3 else None) or 0
    total = 1
    for dim in shape_of(ctx, x):
        total *= static_dim(dim, "as_strided")
    positions = _strided_positions(size, stride, offset)
    if positions.size and (positions.max() >= total or positions.min() < 0):
        refuse(f"as_strided reading position {int(positions.max())} of a tensor of {total} elements",
               "positions inside the tensor")
    flat = reshape(ctx, x, (total,), f"{node.name}.flat")
    if positions.size == 0:
        return ctx.builder.splat(node.name, 0, TensorType(ctx.builder.type(x).dtype, tuple(size)))
    return op(ctx, "gather", [flat, ctx.builder.tensor(f"{node.name}.positions", positions)], {"axis": 0},
              hint=node.name)


@converter("aten.unfold")
def handle_unfold(ctx, node, args, kwargs):
    """x.unfold(dim, size, step): the windows along dim as a new last dim of `size` (a
    ``gather`` of a static [windows, size] index table, then a ``transpose``)."""
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    size, step = args[2], args[3]
    if not shape:
        return reshape(ctx, x, (1,), node.name)
    axis = normalize_axis(args[1], len(shape))
    length = static_dim(shape[axis], "an unfold")
    windows = (length - size) // step + 1
    table = np.arange(windows, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)[None, :]
    picked = op(ctx, "gather", [x, ctx.builder.tensor(f"{node.name}.windows", table)], {"axis": axis},
                hint=f"{node.name}.picked")
    rank = len(shape) + 1
    perm = [position for position in range(rank) if position != axis + 1] + [axis + 1]
    return _transpose(ctx, picked, perm, node.name)


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
    moved = _transpose(ctx, x, order, f"{node.name}.moved")
    rows, columns = (static_dim(shape[axis], "a diagonal_scatter") for axis in (first, second))
    positions = _diagonal_positions(rows, columns, given["offset"])
    if positions.size == 0:
        return x
    kept = [shape[axis] for axis in others]
    flat = reshape(ctx, moved, kept + [rows * columns], f"{node.name}.flat")
    index = op(ctx, "expand", [ctx.builder.tensor(f"{node.name}.positions", positions)],
               {"shape": shape_of(ctx, source)}, hint=f"{node.name}.positions_spread")
    written = op(ctx, "scatter_elements", [flat, index, source], {"axis": len(kept), "reduction": "none"},
                 hint=f"{node.name}.written")
    back = reshape(ctx, written, [shape[axis] for axis in order], f"{node.name}.unflat")
    return _transpose(ctx, back, _inverse(order), node.name)


def _diagonal_positions(rows: int, columns: int, offset: int) -> np.ndarray:
    """The flat positions of a [rows, columns] plane's diagonal at `offset`."""
    length = max(0, min(rows, columns - offset) if offset >= 0 else min(rows + offset, columns))
    return ((np.arange(length) + max(-offset, 0)) * columns + np.arange(length) + max(offset, 0)).astype(np.int64)


@converter("aten.median", "aten.kthvalue")
def handle_order_statistic(ctx, node, args, kwargs):
    """median(x[, dim, keepdim]) and kthvalue(x, k, dim=-1, keepdim): the element at rank
    (n - 1) // 2 (or k - 1) of x sorted ascending along dim (a ``topk`` with k = n), and its
    index; median without a dim is over x flattened, a value alone."""
    x = ctx.value(args[0])
    kth = str(node.target).startswith("aten.kthvalue")
    rest = args[2:] if kth else args[1:]
    dim = kwargs.get("dim", rest[0] if rest else (-1 if kth else None))
    keepdim = bool(kwargs.get("keepdim", rest[1] if len(rest) > 1 else False))
    shape = shape_of(ctx, x)
    whole = dim is None
    if whole or not shape:
        x = reshape(ctx, x, (_count_all(shape),), f"{node.name}.flat")
        dim = 0
    axis = normalize_axis(dim, len(shape_of(ctx, x)))
    count = static_dim(shape_of(ctx, x)[axis], "a median")
    rank = args[1] - 1 if kth else (count - 1) // 2
    order = op(ctx, "topk", [x], {"k": count, "axis": axis, "largest": False}, hint=f"{node.name}.order")
    index = slice_axis(ctx, order, axis, rank, 1, f"{node.name}.index_kept")
    value = op(ctx, "gather_elements", [x, index], {"axis": axis}, hint=f"{node.name}.value_kept")
    if whole:
        return reshape(ctx, value, (), node.name)
    target = list(shape)
    if not shape:
        target = []
    elif keepdim:
        target[axis] = 1
    else:
        del target[axis]
    return [reshape(ctx, value, target, node.name), reshape(ctx, index, target, f"{node.name}.index")]


def _count_all(shape) -> int:
    total = 1
    for size in shape:
        total = mul(total, size)
    return total


@converter("aten.searchsorted", "aten.bucketize")
def handle_searchsorted(ctx, node, args, kwargs):
    """searchsorted(sorted, values, right=False) and bucketize(values, boundaries, right=False):
    how many of the sorted entries lie below each value (at or below it with right), a
    comparison of every pair summed over the sorted axis."""
    bucketize = str(node.target).startswith("aten.bucketize")
    values, ordered = (args[0], args[1]) if bucketize else (args[1], args[0])
    if kwargs.get("sorter") is not None:
        refuse("searchsorted with a sorter", "a sorted sequence")
    right = bool(kwargs.get("right", False)) or kwargs.get("side") == "right"
    dtype = ctx.type(ordered).dtype
    values = operand(ctx, values, dtype, f"{node.name}.values")
    ordered = operand(ctx, ordered, dtype, f"{node.name}.sorted")
    sorted_shape, value_shape = shape_of(ctx, ordered), shape_of(ctx, values)
    if len(sorted_shape) == 1:
        ordered = reshape(ctx, ordered, (1,) * len(value_shape) + sorted_shape, f"{node.name}.sorted_row")
    else:
        ordered = reshape(ctx, ordered, sorted_shape[:-1] + (1, sorted_shape[-1]), f"{node.name}.sorted_rows")
    column = reshape(ctx, values, value_shape + (1,), f"{node.name}.column")
    below = op(ctx, "le" if right else "lt", [ordered, column], hint=f"{node.name}.below")
    counted = op(ctx, "cast", [below], {"to": DType.i64}, hint=f"{node.name}.counted")
    total = op(ctx, "reduce_sum", [counted], {"axes": (len(value_shape),), "keepdims": False},
               hint=f"{node.name}.count")
    wanted = result_dtype(node)
    return total if wanted is DType.i64 else op(ctx, "cast", [total], {"to": wanted}, hint=node.name)


@converter("aten.as_strided_scatter")
def handle_as_strided_scatter(ctx, node, args, kwargs):
    """as_strided_scatter(x, src, size, stride, storage_offset=0): x's row-major elements at
    the as_strided positions replaced by src's (a ``scatter_elements`` over x flattened)."""
    dtype = result_dtype(node)
    x, source = (operand(ctx, item, dtype, node.name) for item in args[:2])
    size, stride = list(args[2]), list(args[3])
    offset = kwargs.get("storage_offset", args[4] if len(args) > 4 else None) or 0
    shape = shape_of(ctx, x)
    total = _count_all(shape)
    positions = _strided_positions(size, stride, offset).reshape(-1)
    if positions.size == 0:
        return x
    flat = reshape(ctx, x, (static_dim(total, "as_strided_scatter"),), f"{node.name}.flat")
    written = op(ctx, "scatter_elements", [flat, ctx.builder.tensor(f"{node.name}.positions", positions),
                                           reshape(ctx, source, (positions.size,), f"{node.name}.flat_source")],
                 {"axis": 0, "reduction": "none"}, hint=f"{node.name}.written")
    return reshape(ctx, written, shape, node.name)


def _strided_positions(size, stride, offset: int) -> np.ndarray:
    """The storage position of every element of an as_strided view, in its shape."""
    positions = np.full(size, offset, dtype=np.int64)
    for axis, (count, step) in enumerate(zip(size, stride)):
        positions = positions + (np.arange(count, dtype=np.int64) * step).reshape(
            [count if index == axis else 1 for index in range(len(size))])
    return positions


# --- shape queries and empty tensors -----------------------------------------------------
@converter("aten.sym_numel", fold=False)
def handle_sym_numel(ctx, node, args, kwargs):
    total = 1
    for dim in shape_of(ctx, args[0]):
        total = mul(total, dim)
    return total


@converter("aten.sym_stride", fold=False)
def handle_sym_stride(ctx, node, args, kwargs):
    """The strides of a contiguous tensor (every value the importer makes is one)."""
    shape = shape_of(ctx, args[0])
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = mul(strides[axis + 1], shape[axis + 1])
    return strides[args[1]] if len(args) > 1 else strides


@converter("aten.sym_storage_offset", fold=False)
def handle_sym_storage_offset(ctx, node, args, kwargs):
    return 0


@converter("aten.empty_strided", "aten.empty_permuted")
def handle_empty_strided(ctx, node, args, kwargs):
    """Uninitialized memory in PyTorch: zeros here."""
    return filled(ctx, node, list(args[0]), 0)


# --- refused, each with its reason -------------------------------------------------------
REFUSED = {
    "its output's shape depends on the values": ("aten.nonzero", "aten.masked_select",
                                                 "aten.unique", "aten._unique2", "aten.unique_consecutive",
                                                 "aten.unique_dim", "aten.repeat_interleave"),
    "it reads a tensor's value as a Python number (shapes or control flow would depend on data)":
        ("aten._local_scalar_dense", "aten.item"),
    "it draws random numbers (an rlx graph is deterministic)":
        ("aten.rand", "aten.randn", "aten.randperm", "aten.randint", "aten.rand_like", "aten.randn_like",
         "aten.randint_like", "aten.bernoulli", "aten.normal", "aten.uniform", "aten.exponential",
         "aten.multinomial", "aten.poisson"),
    "it computes in complex numbers (the IR's core ops are real)": ("aten._fft_r2c", "aten._fft_c2r",
                                                                     "aten._fft_c2c"),
    "it is a backward op (rlxir derives backward graphs itself, rlxir.autodiff)":
        ("aten._adaptive_avg_pool2d_backward", "aten.avg_pool2d_backward", "aten.convolution_backward",
         "aten.embedding_dense_backward", "aten.max_pool2d_with_indices_backward",
         "aten.native_group_norm_backward", "aten.native_layer_norm_backward"),
}
"""Core ATen ops (and a few others) no composition of the IR's core ops expresses, by reason."""


def _refusal(reason: str):
    def refuse_op(ctx, node, args, kwargs):
        refuse(f"{op_key(node.target)} cannot be imported: {reason}", "an op the IR can express")

    return refuse_op


for _reason, _keys in REFUSED.items():
    for _key in _keys:
        register(_key, _refusal(_reason), fold=False)


VIEW_COPIES = ("view", "_unsafe_view", "reshape", "narrow", "as_strided", "expand", "alias", "diagonal", "permute",
               "transpose", "t", "unsqueeze", "squeeze", "select", "slice", "detach", "unbind", "split",
               "split_with_sizes", "unfold")
"""Ops whose ``_copy`` form (``view_copy``: the same values, in memory of its own) imports as they do."""

for _view in VIEW_COPIES:
    register(f"aten.{_view}_copy", CONVERTERS[f"aten.{_view}"])


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


@converter("aten.nanmedian")
def handle_nanmedian(ctx, node, args, kwargs):
    """nanmedian(x[, dim, keepdim]): the median of the values that are not NaN (NaN where all
    are): NaNs sorted last as +inf by a ``topk``, the element at rank (count - 1) // 2 picked
    at run time by a ``gather_elements``."""
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    keepdim = bool(kwargs.get("keepdim", args[2] if len(args) > 2 else False))
    whole = dim is None
    if whole or not shape:
        x = reshape(ctx, x, (_count_all(shape),), f"{node.name}.flat")
        dim = 0
    axis = normalize_axis(dim, len(shape_of(ctx, x)))
    count = static_dim(shape_of(ctx, x)[axis], "a nanmedian")
    dtype = ctx.builder.type(x).dtype
    nan = op(ctx, "ne", [x, x], hint=f"{node.name}.nan")
    ranked = op(ctx, "where", [nan, ctx.builder.scalar(np.inf, dtype), x], hint=f"{node.name}.ranked")
    order = op(ctx, "topk", [ranked], {"k": count, "axis": axis, "largest": False}, hint=f"{node.name}.order")
    numbers = op(ctx, "reduce_sum", [op(ctx, "cast", [op(ctx, "eq", [nan, ctx.builder.scalar(False, DType.bool)],
                                                         hint=f"{node.name}.number")], {"to": DType.i64},
                                        hint=f"{node.name}.numbers")], {"axes": (axis,), "keepdims": True},
                 hint=f"{node.name}.count")
    middle = op(ctx, "div", [op(ctx, "maximum", [op(ctx, "sub", [numbers, ctx.builder.scalar(1, DType.i64)],
                                                    hint=f"{node.name}.last"), ctx.builder.scalar(0, DType.i64)],
                                hint=f"{node.name}.last_kept"), ctx.builder.scalar(2, DType.i64)],
                 hint=f"{node.name}.middle")
    index = op(ctx, "gather_elements", [order, middle], {"axis": axis}, hint=f"{node.name}.index_kept")
    value = op(ctx, "gather_elements", [x, index], {"axis": axis}, hint=f"{node.name}.value_kept")
    if whole:
        return reshape(ctx, value, (), node.name)
    target = [] if not shape else [1 if position == axis else size for position, size in enumerate(shape)
                                   if keepdim or position != axis]
    return [reshape(ctx, value, target, node.name), reshape(ctx, index, target, f"{node.name}.index")]


@converter("aten._trilinear")
def handle_trilinear(ctx, node, args, kwargs):
    """_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim): each input unsqueezed at its
    expand dims, the three multiplied (broadcasting), summed over sumdim."""
    dtype = result_dtype(node)
    product = None
    for item, expand in zip(args[:3], args[3:6]):
        value = operand(ctx, item, dtype, node.name)
        shape = list(shape_of(ctx, value))
        for axis in sorted(expand):
            shape.insert(axis, 1)
        value = reshape(ctx, value, shape, f"{node.name}.expanded")
        product = value if product is None else op(ctx, "mul", [product, value], hint=f"{node.name}.product")
    sumdim = list(args[6])
    if not sumdim:
        return product
    return op(ctx, "reduce_sum", [product], {"axes": tuple(sumdim), "keepdims": False}, hint=node.name)


@converter("aten.new_empty_strided")
def handle_new_empty_strided(ctx, node, args, kwargs):
    """Uninitialized memory in PyTorch: zeros of the given size here."""
    return filled(ctx, node, list(args[1]), 0)


@converter("aten.put")
def handle_put(ctx, node, args, kwargs):
    """put(x, index, source, accumulate=False): x's row-major elements at `index` (negative
    counted from the end) replaced by (or added to) source's, a ``scatter_elements`` over x
    flattened."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, node.name)
    accumulate = kwargs.get("accumulate", args[3] if len(args) > 3 else False)
    shape = shape_of(ctx, x)
    total = static_dim(_count_all(shape), "put")
    index = operand(ctx, args[1], DType.i64, f"{node.name}.index")
    count = _count_all(shape_of(ctx, index))
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
