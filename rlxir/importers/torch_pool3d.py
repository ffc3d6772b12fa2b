"""Core ATen 3-D pools -> core ops: ``max_pool3d_with_indices``, ``avg_pool3d`` and the
adaptive 3-D pools. Each reads its windows as gathers through static tables of input
positions, one table per spatial axis, on the helpers of `torch_spatial`.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.importers.torch_ops import op, read_results, reshape, shape_of, static_dim
from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_spatial import _adaptive_windows, _pad_axis, _pair


def _gathered_windows(ctx, node, x: str, tables, fill) -> str:
    """x [N, C, *S] read through one [O, K] table of positions per spatial axis (positions
    below 0 or past the dim read `fill`) as [N, C, *O, K1 * K2 * ...]."""
    spatial = len(tables)
    for index in range(spatial - 1, -1, -1):
        axis = 2 + index
        size = static_dim(shape_of(ctx, x)[axis], "a pool")
        table = tables[index]
        before = max(-int(table.min()), 0)
        after = max(int(table.max()) - size + 1, 0)
        x = _pad_axis(ctx, x, axis, before, after, fill, f"{node.name}.pad{axis}")
        x = op(ctx, "gather", [x, ctx.builder.tensor(f"{node.name}.table{axis}", (table + before).astype(np.int64))],
               {"axis": axis}, hint=f"{node.name}.windows{axis}")
    outs = [table.shape[0] for table in tables]
    kernels = [table.shape[1] for table in tables]
    perm = (0, 1) + tuple(2 + 2 * index for index in range(spatial)) + tuple(3 + 2 * index for index in range(spatial))
    arranged = op(ctx, "transpose", [x], {"perm": perm}, hint=f"{node.name}.arranged")
    return reshape(ctx, arranged, shape_of(ctx, x)[:2] + tuple(outs) + (int(np.prod(kernels)),),
                   f"{node.name}.windows")


def _window_tables(outs, kernels, strides, paddings, dilations) -> list[np.ndarray]:
    return [np.arange(out)[:, None] * stride - padding + np.arange(kernel)[None, :] * dilation
            for out, kernel, stride, padding, dilation in zip(outs, kernels, strides, paddings, dilations)]


def _batched(ctx, node, x: str, spatial: int) -> tuple[str, bool]:
    if ctx.builder.type(x).rank == spatial + 1:
        return reshape(ctx, x, (1,) + shape_of(ctx, x), f"{node.name}.batched"), True
    return x, False


def _unbatched(ctx, node, value, was_unbatched: bool):
    if value is None or not was_unbatched:
        return value
    return reshape(ctx, value, shape_of(ctx, value)[1:], f"{value}.unbatched")


@converter("aten.max_pool3d_with_indices")
def handle_max_pool3d(ctx, node, args, kwargs):
    """max_pool3d_with_indices(x, kernel, stride=kernel, padding=0, dilation=1, ceil_mode)
    -> (values, indices into each channel's D * H * W positions): windows gathered per
    axis (static tables), the largest kept, the first largest's position looked up."""
    given = {**dict(zip(("kernel_size", "stride", "padding", "dilation", "ceil_mode"), args[1:])), **kwargs}
    x, unbatched = _batched(ctx, node, ctx.value(args[0]), 3)
    kernel = _pair(given["kernel_size"], 3)
    stride = _pair(given.get("stride") or kernel, 3)
    outs = [int(size) for size in node.meta["val"][0].shape[-3:]]
    tables = _window_tables(outs, kernel, stride, _pair(given.get("padding", 0), 3), _pair(given.get("dilation", 1), 3))
    windows = _gathered_windows(ctx, node, x, tables, -math.inf)
    rank = ctx.builder.type(windows).rank
    values = op(ctx, "reduce_max", [windows], {"axes": (rank - 1,), "keepdims": False}, hint=f"{node.name}.values")
    indices = None
    if 1 in read_results(node):
        sizes = [static_dim(size, "a max pool") for size in shape_of(ctx, x)[2:]]
        indices = _first_largest(ctx, node, windows, _volume_positions(tables, sizes, outs), shape_of(ctx, values))
    return [_unbatched(ctx, node, values, unbatched), _unbatched(ctx, node, indices, unbatched)]


def _volume_positions(tables, sizes, outs) -> np.ndarray:
    """[OD, OH, OW, KD * KH * KW]: each window entry's position in a D * H * W volume."""
    flat = (tables[0][:, None, None, :, None, None] * sizes[1] * sizes[2]
            + tables[1][None, :, None, None, :, None] * sizes[2] + tables[2][None, None, :, None, None, :])
    return flat.reshape(list(outs) + [-1]).astype(np.int64)


def _first_largest(ctx, node, windows: str, table: np.ndarray, shape) -> str:
    """The position (from `table`) of each window's first largest entry, in `shape`."""
    rank = ctx.builder.type(windows).rank
    best = op(ctx, "topk", [windows], {"k": 1, "axis": rank - 1, "largest": True}, hint=f"{node.name}.best")
    positions = op(ctx, "expand", [ctx.builder.tensor(f"{node.name}.positions", table)],
                   {"shape": shape_of(ctx, windows)}, hint=f"{node.name}.positions_spread")
    found = op(ctx, "gather_elements", [positions, best], {"axis": rank - 1}, hint=f"{node.name}.found")
    return reshape(ctx, found, shape, f"{node.name}.indices")


@converter("aten.avg_pool3d")
def handle_avg_pool3d(ctx, node, args, kwargs):
    """avg_pool3d(x, kernel, stride=kernel, padding=0, ceil_mode, count_include_pad=True,
    divisor_override=None): the windows' sums (zeros outside x) over PyTorch's divisor of
    each window (a static table)."""
    names = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")
    given = {"count_include_pad": True, "divisor_override": None, **dict(zip(names, args[1:])), **kwargs}
    x, unbatched = _batched(ctx, node, ctx.value(args[0]), 3)
    kernel = _pair(given["kernel_size"], 3)
    stride = _pair(given.get("stride") or kernel, 3)
    padding = _pair(given.get("padding", 0), 3)
    outs = [int(size) for size in node.meta["val"].shape[-3:]]
    sizes = [static_dim(size, "an average pool") for size in shape_of(ctx, x)[2:]]
    windows = _gathered_windows(ctx, node, x, _window_tables(outs, kernel, stride, padding, [1, 1, 1]), 0)
    rank = ctx.builder.type(windows).rank
    total = op(ctx, "reduce_sum", [windows], {"axes": (rank - 1,), "keepdims": False}, hint=f"{node.name}.sum")
    divisor = _average_divisors(outs, sizes, kernel, stride, padding, given["count_include_pad"],
                                given["divisor_override"])
    result = op(ctx, "div", [total, ctx.builder.tensor(f"{node.name}.divisor", divisor,
                                                       dtype=ctx.builder.type(total).dtype)], hint=node.name)
    return _unbatched(ctx, node, result, unbatched)


def _average_divisors(outs, sizes, kernel, stride, padding, include_pad: bool, override) -> np.ndarray:
    """PyTorch's divisor of each average-pool window: its extent inside the padded input
    (or inside the input without `include_pad`), or `override`."""
    if override:
        return np.full(outs, float(override), dtype=np.float32)
    divisor = np.ones(outs, dtype=np.float32)
    for axis, (out, size, extent, step, pad) in enumerate(zip(outs, sizes, kernel, stride, padding)):
        start = np.arange(out) * step - pad
        end = np.minimum(start + extent, size + pad)
        counted = end - start if include_pad else np.minimum(end, size) - np.maximum(start, 0)
        divisor = divisor * counted.reshape([out if index == axis else 1 for index in range(len(outs))])
    return divisor.astype(np.float32)


@converter("aten._adaptive_avg_pool3d")
def handle_adaptive_avg_pool3d(ctx, node, args, kwargs):
    """_adaptive_avg_pool3d(x, (od, oh, ow)): PyTorch's adaptive windows per axis (shorter
    ones read zeros past their end), summed over each window's size."""
    x, unbatched = _batched(ctx, node, ctx.value(args[0]), 3)
    sizes = [static_dim(size, "an adaptive pool") for size in shape_of(ctx, x)[2:]]
    outs = [int(size) for size in node.meta["val"].shape[-3:]]
    tables = [_adaptive_windows(size, out) for size, out in zip(sizes, outs)]
    windows = _gathered_windows(ctx, node, x, [table for table, _ in tables], 0)
    rank = ctx.builder.type(windows).rank
    total = op(ctx, "reduce_sum", [windows], {"axes": (rank - 1,), "keepdims": False}, hint=f"{node.name}.sum")
    divisor = np.ones(outs, dtype=np.float32)
    for axis, (_, valid) in enumerate(tables):
        counts = valid.sum(axis=1).astype(np.float32)
        divisor = divisor * counts.reshape([len(counts) if index == axis else 1 for index in range(3)])
    result = op(ctx, "div", [total, ctx.builder.tensor(f"{node.name}.divisor", divisor,
                                                       dtype=ctx.builder.type(total).dtype)], hint=node.name)
    return _unbatched(ctx, node, result, unbatched)


@converter("aten.adaptive_max_pool3d")
def handle_adaptive_max_pool3d(ctx, node, args, kwargs):
    """adaptive_max_pool3d(x, (od, oh, ow)) -> (values, indices): PyTorch's adaptive windows
    per axis (shorter ones read -inf past their end), the largest, and the first largest's
    position in each channel's D * H * W positions."""
    x, unbatched = _batched(ctx, node, ctx.value(args[0]), 3)
    sizes = [static_dim(size, "an adaptive pool") for size in shape_of(ctx, x)[2:]]
    outs = [int(size) for size in node.meta["val"][0].shape[-3:]]
    tables = [_adaptive_windows(size, out)[0] for size, out in zip(sizes, outs)]
    windows = _gathered_windows(ctx, node, x, tables, -math.inf)
    rank = ctx.builder.type(windows).rank
    values = op(ctx, "reduce_max", [windows], {"axes": (rank - 1,), "keepdims": False}, hint=f"{node.name}.values")
    indices = None
    if 1 in read_results(node):
        indices = _first_largest(ctx, node, windows, _volume_positions(tables, sizes, outs), shape_of(ctx, values))
    return [_unbatched(ctx, node, values, unbatched), _unbatched(ctx, node, indices, unbatched)]
