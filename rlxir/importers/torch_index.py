"""Core ATen indexing -> core ops: advanced indexing, sort and order statistics, repeat,
diagonal, as_strided, unfold, searchsorted, the shape queries and empty tensors, the
``_copy`` forms of view ops; and the ops the IR cannot hold, each refused with its reason
(writes through indices: `rlxir.importers.torch_scatter`).

Indexing moves the indexed axes first (a ``transpose``), addresses them as one flattened
axis (`rlxir.importers.builder.linear_index`), and moves the result's axes back where
PyTorch puts them: where the indexed axes were when they are adjacent, in front otherwise.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import gather_leading_axes
from rlxir.importers.torch_ops import filled, op, operand, refuse, reshape, result_dtype, shape_of, \
    slice_axis, static_dim
from rlxir.importers.torch_registry import CONVERTERS, converter, op_key, register
from rlxir.ops import broadcast_shapes, normalize_axis
from rlxir.symbolic import mul
from rlxir.types import TensorType


# --- advanced indexing -------------------------------------------------------------------
def transpose_to(ctx, value: str, perm, hint: str) -> str:
    perm = tuple(perm)
    return value if perm == tuple(range(len(perm))) else op(ctx, "transpose", [value], {"perm": perm}, hint=hint)


def inverse_perm(perm) -> list[int]:
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
    moved = transpose_to(ctx, x, indexing.order, f"{node.name}.moved")
    gathered = gather_leading_axes(ctx.builder, moved, indexing.parts, f"{node.name}.gathered")
    return transpose_to(ctx, gathered, indexing.result_perm(), node.name)


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
    moved = transpose_to(ctx, x, others + [first, second], f"{node.name}.moved")
    rows, columns = (static_dim(shape[axis], "a diagonal") for axis in (first, second))
    positions = diagonal_positions(rows, columns, offset)
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
    positions = strided_positions(size, stride, offset)
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
    return transpose_to(ctx, picked, perm, node.name)


def diagonal_positions(rows: int, columns: int, offset: int) -> np.ndarray:
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
        x = reshape(ctx, x, (element_count(shape),), f"{node.name}.flat")
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


def element_count(shape) -> int:
    total = 1
    for size in shape:
        total = mul(total, size)
    return total


@converter("aten.searchsorted", "aten.bucketize")
def handle_searchsorted(ctx, node, args, kwargs):
    """searchsorted(sorted, values, right=False) and bucketize(values, boundaries, right=False):
    how many of the sorted entries lie below each value (at or below it with right), a
    comparison of every pair summed over the sorted axis. A `sorter` (the positions that sort
    the sequence along its last axis) first puts the sequence in order, a ``gather_elements``."""
    bucketize = str(node.target).startswith("aten.bucketize")
    values, ordered = (args[0], args[1]) if bucketize else (args[1], args[0])
    right = bool(kwargs.get("right", False)) or kwargs.get("side") == "right"
    dtype = ctx.type(ordered).dtype
    values = operand(ctx, values, dtype, f"{node.name}.values")
    ordered = operand(ctx, ordered, dtype, f"{node.name}.sorted")
    if kwargs.get("sorter") is not None:
        sorter = operand(ctx, kwargs["sorter"], DType.i64, f"{node.name}.sorter")
        ordered = op(ctx, "gather_elements", [ordered, sorter], {"axis": len(shape_of(ctx, ordered)) - 1},
                     hint=f"{node.name}.in_order")
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


def strided_positions(size, stride, offset: int) -> np.ndarray:
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
    "it draws random numbers (an rlx graph is deterministic)":
        ("aten.rand", "aten.randn", "aten.randperm", "aten.randint", "aten.rand_like", "aten.randn_like",
         "aten.randint_like", "aten.bernoulli", "aten.normal", "aten.uniform", "aten.exponential",
         "aten.multinomial", "aten.poisson"),
    "it is a backward op (rlxir derives backward graphs itself, rlxir.autodiff.backward)":
        ("aten._adaptive_avg_pool2d_backward", "aten.avg_pool2d_backward", "aten.convolution_backward",
         "aten.embedding_dense_backward", "aten.native_group_norm_backward", "aten.native_layer_norm_backward"),
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
        x = reshape(ctx, x, (element_count(shape),), f"{node.name}.flat")
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
