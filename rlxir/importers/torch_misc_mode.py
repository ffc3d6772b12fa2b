"""``mode`` -> core ops: the most frequent value along a dim and where it is.

Each element's frequency is the number of equal elements in its row (a comparison of every
pair, summed). The mode is the smallest of the values of highest frequency, as PyTorch's
(which sorts the row and keeps the first run of the greatest length). Its index is the last
position holding it: PyTorch returns some position of the mode, the last one whenever its
sort keeps equal elements in order (rows up to 16 elements, where ``std::sort`` sorts by
insertion); for values that occur once the position is unambiguous.
"""

from __future__ import annotations

import torch

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, reshape, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import RLX_TO_TORCH, Static, converter
from rlxir.ops import normalize_axis
from rlxir.symbolic import mul

COMPARISON_LIMIT = 1 << 26
"""Most element pairs one mode of static shape may compare (the row length squared times the
rows)."""


@converter("aten.mode")
def handle_mode(ctx, node, args, kwargs):
    """mode(x, dim=-1, keepdim=False) -> (values, indices)."""
    dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
    keepdim = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, f"{node.name}.x")
    shape = shape_of(ctx, x)
    if not shape:
        return [x, ctx.builder.scalar(0, DType.i64)]
    axis = normalize_axis(dim, len(shape))
    length = static_dim(shape[axis], "a mode")
    rows = 1
    for size in shape[:axis] + shape[axis + 1:]:
        rows = mul(rows, size)
    if isinstance(rows, int) and rows * length * length > COMPARISON_LIMIT:
        refuse(f"mode over rows of {length} elements ({rows * length * length} comparisons)",
               f"at most {COMPARISON_LIMIT} element pairs")
    perm = [index for index in range(len(shape)) if index != axis] + [axis]
    last = op(ctx, "transpose", [x], {"perm": tuple(perm)}, hint=f"{node.name}.last") if axis != len(shape) - 1 else x
    rest = tuple(shape[index] for index in perm[:-1])
    row = reshape(ctx, last, (rows, length), f"{node.name}.rows")
    value, index = _row_modes(ctx, node, row, rows, length, dtype)
    kept = rest if not keepdim else tuple(1 if index == axis else size for index, size in enumerate(shape))
    return [reshape(ctx, value, kept, f"{node.name}.values"), reshape(ctx, index, kept, f"{node.name}.indices")]


def _row_modes(ctx, node, row: str, rows: int, length: int, dtype: DType) -> tuple[str, str]:
    """The mode of each row of `row` [rows, length] and its last position, each [rows]."""
    name = node.name
    across = reshape(ctx, row, (rows, 1, length), f"{name}.across")
    down = reshape(ctx, row, (rows, length, 1), f"{name}.down")
    equal = op(ctx, "cast", [op(ctx, "eq", [down, across], hint=f"{name}.equal")], {"to": DType.i64},
               hint=f"{name}.equal_count")
    frequency = op(ctx, "reduce_sum", [equal], {"axes": (2,), "keepdims": False}, hint=f"{name}.frequency")
    highest = op(ctx, "reduce_max", [frequency], {"axes": (1,), "keepdims": True}, hint=f"{name}.highest")
    candidate = op(ctx, "eq", [frequency, highest], hint=f"{name}.candidate")
    largest = torch.finfo(RLX_TO_TORCH[dtype]).max if dtype.is_float else torch.iinfo(RLX_TO_TORCH[dtype]).max
    if dtype is DType.bool:
        largest = True
    masked = op(ctx, "where", [candidate, row, ctx.builder.scalar(largest, dtype)], hint=f"{name}.candidates")
    value = op(ctx, "reduce_min", [masked], {"axes": (1,), "keepdims": True}, hint=f"{name}.mode")
    positions = ctx.value(Static(f"{name}.positions", torch.arange(length, dtype=torch.int64), False))
    holds = op(ctx, "eq", [row, value], hint=f"{name}.holds")
    where = op(ctx, "where", [holds, positions, ctx.builder.scalar(-1, DType.i64)], hint=f"{name}.where")
    index = op(ctx, "reduce_max", [where], {"axes": (1,), "keepdims": False}, hint=f"{name}.index")
    return reshape(ctx, value, (rows,), f"{name}.mode_row"), index
