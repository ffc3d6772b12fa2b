"""Core ATen ops over windows and point sets -> core ops: ``max_pool2d_with_indices`` (any
dilation, the indices too), transposed convolutions, and ``_cdist_forward`` /
``_pdist_forward``.

A max pool with indices reads each kernel position as a strided ``gather`` of the input
padded with -inf, stacks the kernel's positions on a last axis, and takes their
``reduce_max``; the index is the ``topk`` (k = 1: the first largest, PyTorch's choice
among equal values) of that axis, looked up in a static table of input positions.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.torch_math import round_half_even
from rlxir.importers.torch_ops import op, operand, read_results, refuse, reshape, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import converter
from rlxir.symbolic import mul
from rlxir.types import TensorType


def _pair(value, count: int = 2) -> list[int]:
    value = list(value) if isinstance(value, (list, tuple)) else [value]
    return value * count if len(value) == 1 else value


def _pad_axis(ctx, x: str, axis: int, before: int, after: int, fill, hint: str) -> str:
    shape = shape_of(ctx, x)
    dtype = ctx.builder.type(x).dtype
    pieces = [x]
    for amount, side in ((before, 0), (after, 1)):
        if amount > 0:
            fill_shape = shape[:axis] + (amount,) + shape[axis + 1:]
            pieces.insert(side * len(pieces), ctx.builder.splat(f"{hint}.fill", fill, TensorType(dtype, fill_shape)))
    return pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": axis}, hint=hint)


# --- max pool with indices ---------------------------------------------------------------
@converter("aten.max_pool2d_with_indices")
def handle_max_pool_with_indices(ctx, node, args, kwargs):
    """max_pool2d_with_indices(x, kernel, stride=kernel, padding=0, dilation=1, ceil_mode)
    -> (values, indices into each channel's H * W positions); unbatched [C, H, W] too."""
    names = ("kernel_size", "stride", "padding", "dilation", "ceil_mode")
    given = {**dict(zip(names, args[1:])), **kwargs}
    x = ctx.value(args[0])
    unbatched = ctx.builder.type(x).rank == 3
    if unbatched:
        x = reshape(ctx, x, (1,) + shape_of(ctx, x), f"{node.name}.batched")
    kernel = _pair(given["kernel_size"])
    geometry = (kernel, _pair(given.get("stride") or kernel), _pair(given.get("padding", 0)),
                _pair(given.get("dilation", 1)))
    out_size = [int(size) for size in node.meta["val"][0].shape[-2:]]
    windows, table = _windows(ctx, node, x, geometry, out_size)
    values = op(ctx, "reduce_max", [windows], {"axes": (4,), "keepdims": False}, hint=f"{node.name}.values")
    return _values_and_indices(ctx, node, windows, values, table if 1 in read_results(node) else None, unbatched)


def _values_and_indices(ctx, node, windows: str, values: str, table, unbatched: bool) -> list:
    """[the window maxima, the input position of each (first largest; None when `table`, the
    position of every window cell, is None)], without the batch axis for an unbatched input."""
    indices = None
    if table is not None:
        best = op(ctx, "topk", [windows], {"k": 1, "axis": 4, "largest": True}, hint=f"{node.name}.best")
        positions = op(ctx, "expand", [ctx.builder.tensor(f"{node.name}.positions", table)],
                       {"shape": shape_of(ctx, windows)}, hint=f"{node.name}.positions_spread")
        found = op(ctx, "gather_elements", [positions, best], {"axis": 4}, hint=f"{node.name}.found")
        indices = reshape(ctx, found, shape_of(ctx, values), f"{node.name}.indices")
    if unbatched:
        values = reshape(ctx, values, shape_of(ctx, values)[1:], f"{node.name}.unbatched")
        indices = indices and reshape(ctx, indices, shape_of(ctx, indices)[1:], f"{node.name}.indices_unbatched")
    return [values, indices]


def windowed_max_pool(ctx, node, x: str, geometry, out_size) -> str:
    """max_pool2d of a batched x over (kernel, stride, padding, dilation) `geometry` to
    `out_size` (any dilation): the largest of each window."""
    windows, _ = _windows(ctx, node, x, geometry, out_size)
    return op(ctx, "reduce_max", [windows], {"axes": (4,), "keepdims": False}, hint=node.name)


def _windows(ctx, node, x: str, geometry, out_size):
    """x's pooling windows as [N, C, OH, OW, KH * KW] (-inf outside x), and the static
    [OH, OW, KH * KW] table of each window position's index in x's H * W plane."""
    kernel, stride, padding, dilation = geometry
    size = [static_dim(dim, "a max pool") for dim in shape_of(ctx, x)[2:]]
    padded = x
    for axis in (2, 3):
        index = axis - 2
        reach = (out_size[index] - 1) * stride[index] + (kernel[index] - 1) * dilation[index] + 1
        after = max(reach - padding[index] - size[index], 0)
        padded = _pad_axis(ctx, padded, axis, padding[index], after, -math.inf, f"{node.name}.pad{axis}")
    pieces, table = [], []
    for row in range(kernel[0]):
        rows = np.arange(out_size[0]) * stride[0] + row * dilation[0]
        picked_rows = op(ctx, "gather", [padded, ctx.builder.tensor(f"{node.name}.rows", rows.astype(np.int64))],
                         {"axis": 2}, hint=f"{node.name}.r{row}")
        for column in range(kernel[1]):
            columns = np.arange(out_size[1]) * stride[1] + column * dilation[1]
            picked = op(ctx, "gather", [picked_rows, ctx.builder.tensor(f"{node.name}.columns",
                                                                         columns.astype(np.int64))],
                        {"axis": 3}, hint=f"{node.name}.r{row}c{column}")
            pieces.append(reshape(ctx, picked, shape_of(ctx, picked) + (1,), f"{node.name}.w{row}_{column}"))
            table.append((rows[:, None] - padding[0]) * size[1] + (columns[None, :] - padding[1]))
    windows = pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": 4}, hint=f"{node.name}.windows")
    return windows, np.stack(table, axis=-1).astype(np.int64)


# --- transposed convolution --------------------------------------------------------------
def transposed_convolution(ctx, node, x: str, weight: str, bias, stride, padding, dilation, output_padding,
                           groups: int) -> str:
    """conv_transpose2d as a forward ``conv2d`` (`transposed_as_forward`)."""
    spread, forward = transposed_as_forward(ctx, node, x, weight, (stride, padding, dilation, output_padding), groups)
    operands = [spread, forward] + ([operand(ctx, bias, ctx.builder.type(x).dtype, f"{node.name}.bias")]
                                    if bias is not None else [])
    attrs = {"stride": (1, 1), "padding": (0, 0, 0, 0), "dilation": tuple(dilation), "groups": int(groups)}
    return op(ctx, "conv2d", operands, attrs, hint=node.name)


def transposed_as_forward(ctx, node, x: str, weight: str, geometry, groups: int) -> tuple[str, str]:
    """A transposed convolution (any number of spatial dims) as the input and kernel of a
    forward one with stride 1, no padding and the same dilation: zeros inserted between x's
    rows along each spatial dim (stride - 1 of them), padded by dilation (k - 1) - padding
    (+ output_padding after), and the kernel flipped with its in / out channels swapped
    within each group."""
    stride, padding, dilation, output_padding = geometry
    in_channels, per_group_out, *kernel = (static_dim(dim, "a transposed convolution")
                                           for dim in shape_of(ctx, weight))
    spread = x
    for index, step in enumerate(stride):
        spread = _insert_zeros(ctx, spread, 2 + index, step, f"{node.name}.spread{index}")
    for index, extent in enumerate(kernel):
        edge = dilation[index] * (extent - 1) - padding[index]
        if edge < 0:
            refuse(f"a transposed convolution whose padding {padding[index]} exceeds dilation (kernel - 1)",
                   "padding at most dilation * (kernel - 1)")
        spread = _pad_axis(ctx, spread, 2 + index, edge, edge + output_padding[index], 0, f"{node.name}.pad{index}")
    per_group_in = in_channels // groups
    flipped = weight
    for index, extent in enumerate(kernel):
        rows = np.arange(extent - 1, -1, -1, dtype=np.int64)
        flipped = op(ctx, "gather", [flipped, ctx.builder.tensor(f"{node.name}.flip", rows)], {"axis": 2 + index},
                     hint=f"{node.name}.flip{index}")
    grouped = reshape(ctx, flipped, (groups, per_group_in, per_group_out, *kernel), f"{node.name}.wg")
    swapped = op(ctx, "transpose", [grouped], {"perm": (0, 2, 1) + tuple(range(3, 3 + len(kernel)))},
                 hint=f"{node.name}.wswap")
    forward = reshape(ctx, swapped, (groups * per_group_out, per_group_in, *kernel), f"{node.name}.wfwd")
    return spread, forward


def _insert_zeros(ctx, x: str, axis: int, step: int, hint: str) -> str:
    """x with step - 1 zeros between consecutive rows along `axis`."""
    if step == 1:
        return x
    shape = shape_of(ctx, x)
    length = static_dim(shape[axis], "a transposed convolution")
    rows = reshape(ctx, x, shape[:axis + 1] + (1,) + shape[axis + 1:], f"{hint}.rows")
    zeros = ctx.builder.splat(f"{hint}.zeros", 0, TensorType(ctx.builder.type(x).dtype,
                                                              shape[:axis + 1] + (step - 1,) + shape[axis + 1:]))
    joined = op(ctx, "concat", [rows, zeros], {"axis": axis + 1}, hint=f"{hint}.joined")
    flat = reshape(ctx, joined, shape[:axis] + (length * step,) + shape[axis + 1:], f"{hint}.flat")
    return op(ctx, "slice", [flat], {"axis": axis, "start": 0, "len": (length - 1) * step + 1}, hint=hint)


# --- distances -----------------------------------------------------------------------------
def _norm_last(ctx, difference: str, p: float, hint: str) -> str:
    """The p-norm over the last axis (p = 0 counts the non-zero entries, p = inf the largest)."""
    dtype = ctx.builder.type(difference).dtype
    rank = ctx.builder.type(difference).rank
    axes = {"axes": (rank - 1,), "keepdims": False}
    size = op(ctx, "abs", [difference], hint=f"{hint}.abs")
    if p == 0:
        nonzero = op(ctx, "cast", [op(ctx, "ne", [difference, ctx.builder.scalar(0, dtype)], hint=f"{hint}.nz")],
                     {"to": dtype}, hint=f"{hint}.count")
        return op(ctx, "reduce_sum", [nonzero], axes, hint=hint)
    if math.isinf(p):
        return op(ctx, "reduce_max", [size], axes, hint=hint)
    if p == 1:
        return op(ctx, "reduce_sum", [size], axes, hint=hint)
    if p == 2:
        return op(ctx, "sqrt", [op(ctx, "reduce_sum", [op(ctx, "mul", [difference, difference], hint=f"{hint}.sq")],
                                    axes, hint=f"{hint}.sum")], hint=hint)
    powered = op(ctx, "pow", [size, ctx.builder.scalar(p, dtype)], hint=f"{hint}.pow")
    total = op(ctx, "reduce_sum", [powered], axes, hint=f"{hint}.sum")
    return op(ctx, "pow", [total, ctx.builder.scalar(1.0 / p, dtype)], hint=hint)


@converter("aten._cdist_forward")
def handle_cdist(ctx, node, args, kwargs):
    """_cdist_forward(x1 [..., P, M], x2 [..., R, M], p, compute_mode) -> [..., P, R]: the
    p-norm of every pair's difference."""
    dtype = result_dtype(node)
    first, second = (operand(ctx, item, dtype, node.name) for item in args[:2])
    p = float(args[2])
    a_shape, b_shape = shape_of(ctx, first), shape_of(ctx, second)
    left = reshape(ctx, first, a_shape[:-1] + (1, a_shape[-1]), f"{node.name}.rows")
    right = reshape(ctx, second, b_shape[:-2] + (1,) + b_shape[-2:], f"{node.name}.columns")
    difference = op(ctx, "sub", [left, right], hint=f"{node.name}.diff")
    if 0 in shape_of(ctx, difference):
        return ctx.builder.splat(node.name, 0, TensorType(dtype, shape_of(ctx, difference)[:-1]))
    return _norm_last(ctx, difference, p, node.name)


@converter("aten._pdist_forward")
def handle_pdist(ctx, node, args, kwargs):
    """_pdist_forward(x [N, M], p): the p-norm of row i - row j for every i < j, in that order."""
    x = operand(ctx, args[0], result_dtype(node), node.name)
    p = float(args[1]) if len(args) > 1 else 2.0
    rows = static_dim(shape_of(ctx, x)[0], "pdist")
    first, second = np.triu_indices(rows, 1)
    if first.size == 0:
        return ctx.builder.splat(node.name, 0, TensorType(result_dtype(node), (0,)))
    left = op(ctx, "gather", [x, ctx.builder.tensor(f"{node.name}.i", first.astype(np.int64))], {"axis": 0},
              hint=f"{node.name}.left")
    right = op(ctx, "gather", [x, ctx.builder.tensor(f"{node.name}.j", second.astype(np.int64))], {"axis": 0},
               hint=f"{node.name}.right")
    return _norm_last(ctx, op(ctx, "sub", [left, right], hint=f"{node.name}.diff"), p, node.name)


__all__ = ["transposed_as_forward", "transposed_convolution", "windowed_max_pool"]


# --- adaptive max pool -------------------------------------------------------------------
def _adaptive_windows(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows [floor(i size / out), ceil((i + 1) size / out)) as an
    [out, longest] table of positions (`size`, a padding row, where a window is shorter),
    and whether each entry is a real position."""
    starts = [index * size // out for index in range(out)]
    stops = [-(-(index + 1) * size // out) for index in range(out)]
    longest = max(stop - start for start, stop in zip(starts, stops))
    table = np.full((out, longest), size, dtype=np.int64)
    for index, (start, stop) in enumerate(zip(starts, stops)):
        table[index, :stop - start] = np.arange(start, stop)
    return table, table < size


@converter("aten.adaptive_max_pool2d")
def handle_adaptive_max_pool(ctx, node, args, kwargs):
    """adaptive_max_pool2d(x, (oh, ow)) -> (values, indices): each window's positions
    gathered (windows shorter than the longest read a -inf padding row), the largest kept,
    its index the first largest's position in the H * W plane; unbatched [C, H, W] too."""
    x = ctx.value(args[0])
    unbatched = ctx.builder.type(x).rank == 3
    if unbatched:
        x = reshape(ctx, x, (1,) + shape_of(ctx, x), f"{node.name}.batched")
    batch, channels, height, width = shape_of(ctx, x)
    height, width = static_dim(height, "an adaptive max pool"), static_dim(width, "an adaptive max pool")
    out_h, out_w = (int(size) for size in node.meta["val"][0].shape[-2:])
    (rows, _), (columns, _) = _adaptive_windows(height, out_h), _adaptive_windows(width, out_w)
    padded = _pad_axis(ctx, _pad_axis(ctx, x, 2, 0, 1, -math.inf, f"{node.name}.pad_h"), 3, 0, 1, -math.inf,
                       f"{node.name}.pad_w")
    picked = op(ctx, "gather", [padded, ctx.builder.tensor(f"{node.name}.rows", rows)], {"axis": 2},
                hint=f"{node.name}.rows_picked")
    picked = op(ctx, "gather", [picked, ctx.builder.tensor(f"{node.name}.columns", columns)], {"axis": 4},
                hint=f"{node.name}.picked")
    arranged = op(ctx, "transpose", [picked], {"perm": (0, 1, 2, 4, 3, 5)}, hint=f"{node.name}.arranged")
    count = rows.shape[1] * columns.shape[1]
    windows = reshape(ctx, arranged, (batch, channels, out_h, out_w, count), f"{node.name}.windows")
    values = op(ctx, "reduce_max", [windows], {"axes": (4,), "keepdims": False}, hint=f"{node.name}.values")
    table = None
    if 1 in read_results(node):
        table = (rows[:, None, :, None] * width + columns[None, :, None, :]).reshape(out_h, out_w, count)
        table = table.astype(np.int64)
    return _values_and_indices(ctx, node, windows, values, table, unbatched)


# --- upsampling ----------------------------------------------------------------------------
def _upsample_scales(node, args, first_scale: int) -> list:
    """The scale factors an upsample was given (None where it was given an output size)."""
    if node.target._overloadname == "vec":
        factors = args[first_scale] if len(args) > first_scale else None
        return list(factors) if factors else [None, None]
    given = list(args[first_scale:first_scale + 2]) + [None, None]
    return given[:2]


def _nearest_rows(size: int, out: int, scale) -> np.ndarray:
    """PyTorch's nearest source row of each output row (float32 arithmetic, as its kernel)."""
    if out == size:
        return np.arange(out, dtype=np.int64)
    step = np.float32(1.0 / scale) if scale else np.float32(size) / np.float32(out)
    rows = np.floor(np.arange(out, dtype=np.float32) * step).astype(np.int64)
    return np.minimum(rows, size - 1)


@converter("aten.upsample_nearest2d")
def handle_upsample_nearest(ctx, node, args, kwargs):
    """upsample_nearest2d(x, output_size, scales_h, scales_w) (and ``.vec``): a ``gather``
    of the nearest source rows, then columns (static index lists)."""
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    out_size = [int(size) for size in node.meta["val"].shape[-2:]]
    scales = _upsample_scales(node, args, 2)
    for axis, out, scale in zip((len(shape) - 2, len(shape) - 1), out_size, scales):
        rows = _nearest_rows(static_dim(shape[axis], "an upsample"), out, scale)
        x = op(ctx, "gather", [x, ctx.builder.tensor(f"{node.name}.rows{axis}", rows)], {"axis": axis},
               hint=node.name if axis == len(shape) - 1 else f"{node.name}.rows")
    return x


def _linear_weights(size: int, out: int, align_corners: bool, scale) -> np.ndarray:
    """The [out, size] matrix of PyTorch's linear interpolation weights along one axis."""
    if align_corners:
        step = np.float32((size - 1) / (out - 1)) if out > 1 else np.float32(0)
        source = np.arange(out, dtype=np.float32) * step
    else:
        step = np.float32(1.0 / scale) if scale else np.float32(size) / np.float32(out)
        source = np.maximum((np.arange(out, dtype=np.float32) + np.float32(0.5)) * step - np.float32(0.5),
                            np.float32(0))
    low = np.minimum(np.floor(source).astype(np.int64), size - 1)
    high = np.where(low < size - 1, low + 1, low)
    fraction = (source - low).astype(np.float32)
    matrix = np.zeros((out, size), dtype=np.float32)
    np.add.at(matrix, (np.arange(out), low), np.float32(1) - fraction)
    np.add.at(matrix, (np.arange(out), high), fraction)
    return matrix


@converter("aten.upsample_bilinear2d")
def handle_upsample_bilinear(ctx, node, args, kwargs):
    """upsample_bilinear2d(x, output_size, align_corners, scales_h, scales_w) (and ``.vec``):
    a ``matmul`` on each side by a static interpolation matrix."""
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    align_corners = bool(args[2])
    out_h, out_w = (int(size) for size in node.meta["val"].shape[-2:])
    scale_h, scale_w = _upsample_scales(node, args, 3)
    dtype = ctx.builder.type(x).dtype
    height, width = (static_dim(size, "an upsample") for size in shape[-2:])
    rows = ctx.builder.literal(f"{node.name}.rows", _linear_weights(height, out_h, align_corners, scale_h), dtype)
    columns = ctx.builder.literal(f"{node.name}.columns", _linear_weights(width, out_w, align_corners, scale_w).T,
                                  dtype)
    by_rows = op(ctx, "matmul", [rows, x], hint=f"{node.name}.by_rows")
    return op(ctx, "matmul", [by_rows, columns], hint=node.name)


@converter("aten.dist")
def handle_dist(ctx, node, args, kwargs):
    """dist(x, y, p=2): the p-norm of x - y over every element."""
    dtype = result_dtype(node)
    x, y = (operand(ctx, item, dtype, node.name) for item in args[:2])
    p = float(kwargs.get("p", args[2] if len(args) > 2 else 2))
    difference = op(ctx, "sub", [x, y], hint=f"{node.name}.diff")
    count = 1
    for size in shape_of(ctx, difference):
        count *= static_dim(size, "dist")
    if count == 0:
        return ctx.builder.splat(node.name, 0, TensorType(dtype, ()))
    return _norm_last(ctx, reshape(ctx, difference, (count,), f"{node.name}.flat"), p, node.name)


# --- grid sampling -------------------------------------------------------------------------
GRID_MODES = {0: "bilinear", 1: "nearest"}
GRID_PADDINGS = {0: "zeros", 1: "border"}


@converter("aten.grid_sampler_2d", "aten.grid_sampler_3d")
def handle_grid_sampler(ctx, node, args, kwargs):
    """grid_sampler_2d(x [N, C, H, W], grid [N, OH, OW, 2], mode, padding, align_corners) and
    grid_sampler_3d (x [N, C, D, H, W], grid [N, OD, OH, OW, 3]): each output point reads x
    at the grid's (x, y[, z]), bilinear / trilinear (the 4 or 8 corners weighted) or nearest
    (half to even), outside x zeros or the border; the positions are computed at run time
    and read by ``gather_elements`` over x's flattened spatial dims. Bicubic and reflection
    are refused."""
    x, grid = (operand(ctx, item, result_dtype(node), node.name) for item in args[:2])
    mode, padding, align_corners = args[2], args[3], bool(args[4])
    if mode not in GRID_MODES or padding not in GRID_PADDINGS:
        refuse(f"grid sampling mode {mode}, padding {padding}",
               "bilinear or nearest (0, 1), zeros or border padding (0, 1)")
    shape = shape_of(ctx, x)
    batch, channels, spatial = shape[0], shape[1], len(shape) - 2
    outs = shape_of(ctx, grid)[1:-1]
    sizes = [static_dim(size, "grid sampling") for size in reversed(shape[2:])]  # the grid's order: x, y[, z]
    count = 1
    for size in outs:
        count = mul(count, size)
    flat = reshape(ctx, x, (batch, channels, math.prod(sizes)), f"{node.name}.flat")
    points = [reshape(ctx, op(ctx, "slice", [grid], {"axis": spatial + 1, "start": axis, "len": 1},
                              hint=f"{node.name}.g{axis}"), (batch, 1, count), f"{node.name}.p{axis}")
              for axis in range(spatial)]
    coordinates = [_unnormalized(ctx, point, size, align_corners, GRID_PADDINGS[padding], f"{node.name}.c{axis}")
                   for axis, (point, size) in enumerate(zip(points, sizes))]
    reader = GridReader(ctx, node, flat, sizes, channels)
    if GRID_MODES[mode] == "nearest":
        result = reader.read([round_half_even(ctx, value, f"{node.name}.near{axis}")
                              for axis, value in enumerate(coordinates)], None)
    else:
        result = reader.interpolated(coordinates)
    return reshape(ctx, result, (batch, channels) + tuple(outs), node.name)


def _unnormalized(ctx, point: str, size: int, align_corners: bool, padding: str, hint: str) -> str:
    """A grid coordinate in [-1, 1] as a position along a dim of `size` (PyTorch's
    unnormalization), clamped into the dim for border padding."""
    dtype = ctx.builder.type(point).dtype
    shifted = op(ctx, "add", [point, ctx.builder.scalar(1, dtype)], hint=f"{hint}.shifted")
    if align_corners:
        position = op(ctx, "mul", [shifted, ctx.builder.scalar((size - 1) / 2, dtype)], hint=f"{hint}.position")
    else:
        scaled = op(ctx, "mul", [shifted, ctx.builder.scalar(size, dtype)], hint=f"{hint}.scaled")
        position = op(ctx, "div", [op(ctx, "sub", [scaled, ctx.builder.scalar(1, dtype)], hint=f"{hint}.minus1"),
                                   ctx.builder.scalar(2, dtype)], hint=f"{hint}.position")
    if padding == "border":
        position = op(ctx, "minimum", [op(ctx, "maximum", [position, ctx.builder.scalar(0, dtype)],
                                          hint=f"{hint}.low"), ctx.builder.scalar(size - 1, dtype)], hint=f"{hint}.in")
    return position


class GridReader:
    """Reads x's [N, C, W * H (* D)] flattened spatial dims at run-time (column, row[, depth])
    positions; a position outside x reads 0."""

    def __init__(self, ctx, node, flat: str, sizes, channels):
        self.ctx, self.node, self.flat, self.sizes, self.channels = ctx, node, flat, sizes, channels

    def read(self, position, weight) -> str:
        """x at integer-valued float positions (column, row[, depth]), times `weight` when given."""
        ctx, name = self.ctx, self.node.name
        dtype = ctx.builder.type(position[0]).dtype
        inside, linear, stride = None, None, 1
        for axis, (value, size) in enumerate(zip(position, self.sizes)):
            low = op(ctx, "ge", [value, ctx.builder.scalar(0, dtype)], hint=f"{name}.low{axis}")
            high = op(ctx, "le", [value, ctx.builder.scalar(size - 1, dtype)], hint=f"{name}.high{axis}")
            both = op(ctx, "minimum", [low, high], hint=f"{name}.in{axis}")
            inside = both if inside is None else op(ctx, "minimum", [inside, both], hint=f"{name}.inside")
            kept = op(ctx, "minimum", [op(ctx, "maximum", [value, ctx.builder.scalar(0, dtype)], hint=f"{name}.lo"),
                                       ctx.builder.scalar(size - 1, dtype)], hint=f"{name}.clamped{axis}")
            index = op(ctx, "cast", [kept], {"to": DType.i64}, hint=f"{name}.index{axis}")
            if stride != 1:
                index = op(ctx, "mul", [index, ctx.builder.scalar(stride, DType.i64)], hint=f"{name}.start{axis}")
            linear = index if linear is None else op(ctx, "add", [linear, index], hint=f"{name}.linear")
            stride *= size
        batch, _, points = shape_of(ctx, linear)
        spread = op(ctx, "expand", [linear], {"shape": (batch, self.channels, points)}, hint=f"{name}.spread")
        picked = op(ctx, "gather_elements", [self.flat, spread], {"axis": 2}, hint=f"{name}.picked")
        factor = op(ctx, "cast", [inside], {"to": dtype}, hint=f"{name}.inside_factor")
        if weight is not None:
            factor = op(ctx, "mul", [factor, weight], hint=f"{name}.weight")
        return op(ctx, "mul", [picked, factor], hint=f"{name}.read")

    def interpolated(self, coordinates) -> str:
        """Bilinear (2 coordinates) or trilinear (3): every corner of the cell around each
        point, weighted by the product of its distances' complements along each axis."""
        ctx, name = self.ctx, self.node.name
        dtype = ctx.builder.type(coordinates[0]).dtype
        lows = [op(ctx, "floor", [value], hint=f"{name}.floor{axis}") for axis, value in enumerate(coordinates)]
        highs = [op(ctx, "add", [low, ctx.builder.scalar(1, dtype)], hint=f"{name}.ceil") for low in lows]
        upper = [op(ctx, "sub", [value, low], hint=f"{name}.frac") for value, low in zip(coordinates, lows)]
        lower = [op(ctx, "sub", [ctx.builder.scalar(1, dtype), frac], hint=f"{name}.rest") for frac in upper]
        total = None
        for corner in itertools.product(*(((low, rest), (high, frac))
                                          for low, rest, high, frac in zip(lows, lower, highs, upper))):
            weight = corner[0][1]
            for _, factor in corner[1:]:
                weight = op(ctx, "mul", [weight, factor], hint=f"{name}.corner_weight")
            value = self.read([position for position, _ in corner], weight)
            total = value if total is None else op(ctx, "add", [total, value], hint=f"{name}.sum")
        return total
