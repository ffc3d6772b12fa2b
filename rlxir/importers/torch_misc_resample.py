"""Antialiased bilinear resizing (``_upsample_bilinear2d_aa``) -> two ``matmul`` by static
weight matrices.

Each output pixel is a weighted sum of the input pixels under a triangle filter centred on
it, stretched by the scale when shrinking (so every input pixel contributes: the
antialiasing), its weights normalized to sum to one; rows and columns are filtered apart.
The weights follow PyTorch's CPU kernel in float32: scale = in / out (1 / the given scale
factor; (in - 1) / (out - 1) with align_corners), support = max(scale, 1), the window
``[trunc(center - support + 0.5), trunc(center + support + 0.5))`` clipped to the input,
each tap weighted ``max(0, 1 - |(j - center + 0.5) / max(scale, 1)|)``.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.importers.torch_ops import op, operand, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import converter


@converter("aten._upsample_bilinear2d_aa")
def handle_upsample_bilinear_aa(ctx, node, args, kwargs):
    """_upsample_bilinear2d_aa(x, output_size, align_corners, scales_h, scales_w) (and ``.vec``
    with a list of scale factors)."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], dtype, f"{node.name}.x")
    align_corners = bool(args[2])
    if node.target._overloadname == "vec":
        scales = list(args[3]) if len(args) > 3 and args[3] else [None, None]
    else:
        scales = (list(args[3:5]) + [None, None])[:2]
    height, width = (static_dim(size, "an antialiased resize") for size in shape_of(ctx, x)[-2:])
    out_h, out_w = (int(size) for size in node.meta["val"].shape[-2:])
    rows = ctx.builder.literal(f"{node.name}.rows", antialiased_weights(height, out_h, align_corners, scales[0]),
                               dtype)
    columns = ctx.builder.literal(f"{node.name}.columns",
                                  antialiased_weights(width, out_w, align_corners, scales[1]).T, dtype)
    by_rows = op(ctx, "matmul", [rows, x], hint=f"{node.name}.by_rows")
    return op(ctx, "matmul", [by_rows, columns], hint=node.name)


def antialiased_weights(size: int, out: int, align_corners: bool, scale_factor) -> np.ndarray:
    """The [out, size] matrix of PyTorch's antialiased bilinear weights along one axis."""
    scale = _pixel_scale(size, out, align_corners, scale_factor)
    support = scale if scale >= 1 else np.float32(1)
    inverse = np.float32(1) / scale if scale >= 1 else np.float32(1)
    taps = int(math.ceil(support)) * 2 + 1
    matrix = np.zeros((out, size), dtype=np.float32)
    for index in range(out):
        center = scale * np.float32(index + 0.5)
        start = max(int(center - support + np.float32(0.5)), 0)
        stop = start + min(max(min(int(center + support + np.float32(0.5)), size) - start, 0), taps)
        offsets = (np.arange(start, stop, dtype=np.float32) - center + np.float32(0.5)) * inverse
        weights = np.maximum(np.float32(1) - np.abs(offsets), np.float32(0)).astype(np.float32)
        total = weights.sum(dtype=np.float32)
        matrix[index, start:stop] = weights / total if total != 0 else weights
    return matrix


def _pixel_scale(size: int, out: int, align_corners: bool, scale_factor) -> np.float32:
    """PyTorch's input pixels per output pixel (``area_pixel_compute_scale``)."""
    if align_corners:
        return np.float32((size - 1) / (out - 1)) if out > 1 else np.float32(0)
    if scale_factor is not None and scale_factor > 0:
        return np.float32(1.0 / scale_factor)
    return np.float32(size / out)
