"""ATen ops that move elements or overwrite some of them -> core ops: pad, roll,
slice_scatter / select_scatter, fill, and the ``_as`` reshapes.

The IR has no pad, roll or scatter-into-a-slice op: each is built from ``slice``,
``concat`` and ``gather`` along one axis, so every piece keeps the operand's other dims
(symbolic ones too). The axis that is padded, rolled or written must be static, except
where the op covers it whole.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.torch_ops import (filled, op, operand, refuse, reshape, result_dtype, shape_of, slice_axis,
                                       slice_bounds, static_dim)
from rlxir.importers.torch_registry import Static, converter, op_key
from rlxir.ops import normalize_axis
from rlxir.symbolic import mul
from rlxir.types import TensorType

PAD_MODES = ("constant", "reflect", "replicate", "circular")


# --- pad -------------------------------------------------------------------------------
@converter("aten.pad", "aten.constant_pad_nd")
def handle_pad(ctx, node, args, kwargs):
    """pad(x, pad, mode="constant", value=None) and constant_pad_nd(x, pad, value=0):
    `pad` holds (before, after) pairs from the last dim backwards; a negative amount crops
    (constant mode)."""
    if op_key(node.target) == "aten.constant_pad_nd":
        mode, value = "constant", args[2] if len(args) > 2 else kwargs.get("value", 0)
    else:
        mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
        value = args[3] if len(args) > 3 else kwargs.get("value")
    if mode not in PAD_MODES:
        refuse(f"pad mode {mode!r}", "one of " + ", ".join(PAD_MODES))
    x = operand(ctx, args[0], result_dtype(node), node.name)
    amounts = list(args[1])
    rank = len(shape_of(ctx, x))
    for pair in range(len(amounts) // 2):
        axis = rank - 1 - pair
        before, after = amounts[2 * pair], amounts[2 * pair + 1]
        if before == after == 0:
            continue
        hint = f"{node.name}.d{axis}"
        if mode == "constant":
            x = _pad_constant(ctx, x, axis, before, after, 0 if value is None else value, hint)
        else:
            x = _pad_from_edges(ctx, x, axis, before, after, mode, hint)
    return x


def _pad_constant(ctx, x: str, axis: int, before: int, after: int, fill, hint: str) -> str:
    if before < 0 or after < 0:
        dim = static_dim(shape_of(ctx, x)[axis], "a negative pad (a crop)")
        start, stop = max(-before, 0), dim - max(-after, 0)
        x = slice_axis(ctx, x, axis, start, max(stop - start, 0), f"{hint}.crop")
    shape = shape_of(ctx, x)
    dtype = ctx.builder.type(x).dtype
    pieces = [x]
    for amount, side in ((before, 0), (after, 1)):
        if amount > 0:
            fill_type = TensorType(dtype, shape[:axis] + (amount,) + shape[axis + 1:])
            pieces.insert(side * len(pieces), ctx.builder.splat(f"{hint}.fill", fill, fill_type))
    return pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": axis}, hint=hint)


def _pad_from_edges(ctx, x: str, axis: int, before: int, after: int, mode: str, hint: str) -> str:
    """reflect / replicate / circular: the borders are rows of x itself, gathered by
    static index lists (reflect mirrors without repeating the edge, as PyTorch)."""
    if (before < 0 or after < 0) and mode == "replicate":  # the kept edge rows are x's own: one static list
        dim = static_dim(shape_of(ctx, x)[axis], "a replicate pad")
        rows = np.clip(np.arange(dim + before + after, dtype=np.int64) - before, 0, dim - 1)
        return op(ctx, "gather", [x, ctx.builder.tensor(f"{hint}.rows", rows)], {"axis": axis}, hint=hint)
    if before < 0 or after < 0:  # reflect / circular: the negative side crops first, the rest pads the crop
        dim = static_dim(shape_of(ctx, x)[axis], f"a negative {mode} pad (a crop)")
        start, stop = max(-before, 0), dim - max(-after, 0)
        x = slice_axis(ctx, x, axis, start, max(stop - start, 0), f"{hint}.crop")
        before, after = max(before, 0), max(after, 0)
        if before == after == 0:
            return x
    dim = static_dim(shape_of(ctx, x)[axis], f"a {mode} pad")
    if mode == "reflect" and max(before, after) >= dim:
        refuse(f"a reflect pad of {max(before, after)} over a dim of {dim}", "a pad smaller than the dim")
    borders = {
        "reflect": (np.arange(before, 0, -1), np.arange(dim - 2, dim - 2 - after, -1)),
        "replicate": (np.zeros(before, np.int64), np.full(after, dim - 1)),
        "circular": (np.arange(dim - before, dim), np.arange(after)),
    }[mode]
    pieces = []
    for index, border in zip(("before", "after"), borders):
        if border.size:
            rows = ctx.builder.tensor(f"{hint}.{index}.rows", border.astype(np.int64))
            pieces.append(op(ctx, "gather", [x, rows], {"axis": axis}, hint=f"{hint}.{index}"))
    pieces.insert(1 if before else 0, x)
    return op(ctx, "concat", pieces, {"axis": axis}, hint=hint)


# --- roll ------------------------------------------------------------------------------
@converter("aten.roll")
def handle_roll(ctx, node, args, kwargs):
    """roll(x, shifts, dims=[]): per dim, the last `shift` rows moved to the front (a
    `concat` of two slices); without dims, over x flattened."""
    x = ctx.value(args[0])
    shifts = args[1] if len(args) > 1 else kwargs["shifts"]
    dims = args[2] if len(args) > 2 else kwargs.get("dims", [])
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    shape = shape_of(ctx, x)
    if not dims:
        total = 1
        for size in shape:
            total = mul(total, size)
        total = static_dim(total, "a roll without dims")
        flat = _roll_axis(ctx, reshape(ctx, x, (total,), f"{node.name}.flat"), 0, shifts[0], f"{node.name}.rolled")
        return reshape(ctx, flat, shape, node.name)
    for index, (shift, dim) in enumerate(zip(shifts, dims)):
        last = index == len(dims) - 1
        x = _roll_axis(ctx, x, normalize_axis(dim, len(shape)), shift, node.name if last else f"{node.name}.d{dim}")
    return x


def _roll_axis(ctx, x: str, axis: int, shift: int, hint: str) -> str:
    dim = static_dim(shape_of(ctx, x)[axis], "a roll")
    shift = shift % dim if dim else 0
    if not shift:
        return x
    tail = slice_axis(ctx, x, axis, dim - shift, shift, f"{hint}.tail")
    head = slice_axis(ctx, x, axis, 0, dim - shift, f"{hint}.head")
    return op(ctx, "concat", [tail, head], {"axis": axis}, hint=hint)


# --- writing into slices ---------------------------------------------------------------
@converter("aten.slice_scatter")
def handle_slice_scatter(ctx, node, args, kwargs):
    """slice_scatter(x, src, dim=0, start=None, end=None, step=1): x with x[start:end:step]
    along dim replaced by src. Step 1 is a `concat` of x's rows before, src, and x's rows
    after; a larger step a `gather` from x and src joined (a static index list)."""
    names = ("dim", "start", "end", "step")
    given = {**dict(zip(names, args[2:])), **kwargs}
    dtype = result_dtype(node)
    x, source = (operand(ctx, item, dtype, node.name) for item in args[:2])
    shape = shape_of(ctx, x)
    axis = normalize_axis(given.get("dim", 0), len(shape))
    step = given.get("step", 1)
    bounds = slice_bounds(shape[axis], given.get("start"), given.get("end"), "a slice_scatter")
    if bounds is None and step == 1:
        return source
    return _scatter_rows(ctx, x, source, axis, bounds, step, node.name)


@converter("aten.select_scatter")
def handle_select_scatter(ctx, node, args, kwargs):
    """select_scatter(x, src, dim, index): x with row `index` along dim replaced by src."""
    dtype = result_dtype(node)
    x, source = (operand(ctx, item, dtype, node.name) for item in args[:2])
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[2], len(shape))
    dim = static_dim(shape[axis], "a select_scatter")
    index = args[3] + dim if args[3] < 0 else args[3]
    row = reshape(ctx, source, shape[:axis] + (1,) + shape[axis + 1:], f"{node.name}.row")
    return _scatter_rows(ctx, x, row, axis, (index, index + 1), 1, node.name)


def _scatter_rows(ctx, x: str, source: str, axis: int, bounds, step: int, hint: str) -> str:
    dim = static_dim(shape_of(ctx, x)[axis], "a slice_scatter")
    start, stop = bounds or (0, dim)
    if step == 1:
        pieces = [slice_axis(ctx, x, axis, 0, start, f"{hint}.before")] if start > 0 else []
        pieces.append(source)
        if stop < dim:
            pieces.append(slice_axis(ctx, x, axis, stop, dim - stop, f"{hint}.after"))
        return pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": axis}, hint=hint)
    rows = np.arange(dim)
    written = np.arange(start, stop, step)
    rows[written] = dim + np.arange(written.size)  # row i of source sits at dim + i in the joined tensor
    joined = op(ctx, "concat", [x, source], {"axis": axis}, hint=f"{hint}.joined")
    return op(ctx, "gather", [joined, ctx.builder.tensor(f"{hint}.rows", rows)], {"axis": axis}, hint=hint)


# --- fill and the _as reshapes ---------------------------------------------------------
@converter("aten.fill")
def handle_fill(ctx, node, args, kwargs):
    """fill(x, value): x's shape, every element `value` (a number, or a 0-d tensor that
    may be computed at run time)."""
    shape = shape_of(ctx, args[0])
    value = args[1]
    if isinstance(value, Static) and not value.fake:
        value = value.tensor.item()
    if not isinstance(value, (Static, str)):
        return filled(ctx, node, list(shape), value)
    scalar = operand(ctx, value, result_dtype(node), node.name)
    single = reshape(ctx, scalar, (1,) * len(shape), f"{node.name}.one")
    return op(ctx, "expand", [single], {"shape": shape}, hint=node.name) if shape else single


@converter("aten.copy")
def handle_copy(ctx, node, args, kwargs):
    """copy(x, src): src in x's dtype, broadcast to x's shape (what ``x[...] = src`` writes
    once functionalized)."""
    shape = shape_of(ctx, args[0])
    source = operand(ctx, args[1], result_dtype(node), node.name)
    if shape_of(ctx, source) == shape:
        return source
    return op(ctx, "expand", [source], {"shape": shape}, hint=node.name)


@converter("aten.reshape_as", "aten.view_as")
def handle_reshape_as(ctx, node, args, kwargs):
    """reshape_as / view_as(x, other): x in other's shape."""
    return reshape(ctx, ctx.value(args[0]), shape_of(ctx, args[1]), node.name)


@converter("aten.expand_as")
def handle_expand_as(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    target = shape_of(ctx, args[1])
    return x if shape_of(ctx, x) == target else op(ctx, "expand", [x], {"shape": target}, hint=node.name)
