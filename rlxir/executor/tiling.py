"""Streaming a kernel over tiles of its result, as a device kernel streams through memory.

An elementwise kernel's temporaries (a fused region's intermediate steps, gelu's cubic
term) are as large as the tile it works on, not as the tensor: the plan gives them no
memory, so the executor bounds them by running such kernels one tile of at most `TILE`
result elements at a time. Row-wise kernels (softmax, the norms) keep the axes they reduce
over whole and tile the rows.
"""

from __future__ import annotations

import math

import numpy as np

TILE = 1 << 16

ELEMENTWISE = frozenset({
    "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "silu", "sin", "cos", "erf", "gelu",
    "floor", "ceil", "cast", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "mod", "fmod",
    "eq", "ne", "lt", "le", "gt", "ge", "where", "fused_elementwise",
})


def whole_from(op: str, attrs, rank: int) -> int | None | bool:
    """The first axis a tile must keep whole (None: any axis may be split; False: the op
    is not tiled)."""
    if op in ELEMENTWISE:
        return None
    if op in ("softmax", "layernorm", "rmsnorm"):
        return attrs["axis"] % rank
    if op in ("fused_residual_layernorm", "fused_residual_rmsnorm"):
        return rank - 1
    return False


def tiles(shape: tuple, keep: int | None = None):
    """Index tuples covering `shape` in tiles of at most TILE elements where possible:
    integers on the leading axes, a slice on the first axis whose trailing block fits (never
    an axis from `keep` on)."""
    limit = len(shape) if keep is None else keep
    fitting = [a for a in range(len(shape)) if math.prod(shape[a + 1:]) <= TILE]
    axis = min(fitting[0] if fitting else len(shape) - 1, limit - 1)
    rows = max(1, TILE // max(1, math.prod(shape[axis + 1:])))
    for leading in np.ndindex(*shape[:axis]):
        for start in range(0, shape[axis], rows):
            yield leading + (slice(start, start + rows),)


def operand_tile(arg, index: tuple, rank: int):
    """The part of a broadcast operand that the tile `index` of a rank-`rank` result reads."""
    offset = rank - arg.ndim
    picked = []
    for axis, item in enumerate(index):
        own = axis - offset
        if own < 0:
            continue
        if arg.shape[own] == 1:
            picked.append(0 if isinstance(item, int) else slice(None))
        else:
            picked.append(item)
    return arg[tuple(picked)]


def in_place_by_tiles(xp, out, apply) -> None:
    """`apply(tile)` on every tile of `out` (an activation applied where the result lies)."""
    if out.size <= TILE:
        apply(out)
        return
    for index in tiles(out.shape):
        apply(out[index])
