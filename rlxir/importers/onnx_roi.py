"""ONNX op -> core ops: RoiAlign and MaxRoiPool (2-D), pooled bins of regions that arrive
at run time (MaxRoiPool: see `convert_max_roi_pool`).

Each region's ``output_height x output_width`` bins are sampled on a regular
``sampling_ratio x sampling_ratio`` grid; a sample is bilinear over its four neighbouring
cells (ONNX's rules: a sample past ``[-1, size]`` reads zero, one below 0 reads at 0, one
past the last cell reads the last cell), and a bin is the mean (mode avg) or the maximum
(mode max, of the four weighted corner values, as ONNX defines it) of its samples. The
sample positions are the region's start plus its bin size times static fractions, so only
the sampling grid must be static: ``sampling_ratio`` > 0, or regions known while importing
whose adaptive grids (``ceil(roi size / bins)``) agree.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_grid import gather_cells
from rlxir.importers.onnx_ops import hint, operand
from rlxir.importers.onnx_registry import register


def _feature_map(ctx, node):
    """(x, its type, C, H, W) of a region op's float [N, C, H, W] input with static H, W."""
    x = ctx.value(node.input[0])
    x_type = ctx.builder.type(x)
    if x_type.rank != 4 or not x_type.dtype.is_float:
        raise UnsupportedModel(f"{node.op_type} of a {x_type.dtype.value}{list(x_type.shape)} input",
                               expected="float [N, C, H, W]")
    _, channels, height, width = x_type.shape
    if not isinstance(height, int) or not isinstance(width, int):
        raise UnsupportedModel(f"{node.op_type} over symbolic spatial dims", expected="static H and W")
    return x, x_type, channels, height, width


def convert_roi_align(ctx, node, attrs):
    x, x_type, channels, height, width = _feature_map(ctx, node)
    mode = attrs.get("mode", "avg")
    transform = attrs.get("coordinate_transformation_mode", "half_pixel" if ctx.opset >= 16 else "output_half_pixel")
    if mode not in ("avg", "max") or transform not in ("half_pixel", "output_half_pixel"):
        raise UnsupportedModel(f"RoiAlign in mode {mode!r} with coordinate_transformation_mode {transform!r}",
                               expected="mode avg or max; half_pixel or output_half_pixel")
    bins = (int(attrs.get("output_height", 1)), int(attrs.get("output_width", 1)))
    scale = float(attrs.get("spatial_scale", 1.0))
    half_pixel = transform == "half_pixel"
    grid = _sampling_grid(ctx, node, int(attrs.get("sampling_ratio", 0)), bins, scale, half_pixel)
    name, b = hint(node), ctx.builder
    rois = operand(ctx, node.input[1], x_type.dtype)
    count = b.type(rois).shape[0]
    axes = [_bilinear_taps(ctx, _region_samples(ctx, rois, axis, bins[axis], grid[axis], scale, half_pixel,
                                                f"{name}.{'yx'[axis]}"), size, f"{name}.{'yx'[axis]}")
            for axis, size in enumerate((height, width))]  # 0: y (rows), 1: x (columns)
    images = b.op("gather", [x, operand(ctx, node.input[2], DType.i64)], {"axis": 0}, hint=f"{name}.images")
    planes = b.op("reshape", [images], {"shape": (count, channels, height * width)}, hint=f"{name}.planes")
    combined = None
    for row_tap in axes[0]:
        for column_tap in axes[1]:
            term = _corner(ctx, planes, row_tap, column_tap, width, f"{name}.corner")
            if combined is None:
                combined = term
            else:
                combined = b.op("add" if mode == "avg" else "maximum", [combined, term], hint=f"{name}.samples")
    shaped = b.op("reshape", [combined], {"shape": (count, channels, bins[0], grid[0], bins[1], grid[1])},
                  hint=f"{name}.bins")
    reduce = "reduce_max" if mode == "max" else "reduce_mean"
    return [b.op(reduce, [shaped], {"axes": (3, 5), "keepdims": False}, hint=name)]


def _region_samples(ctx, rois: str, axis: int, bins: int, grid: int, scale: float, half_pixel: bool,
                    name: str) -> str:
    """[R, bins * grid]: each region's sample positions along one axis (0: y, 1: x), bin-major."""
    b = ctx.builder
    dtype = b.type(rois).dtype
    shift = 0.5 if half_pixel else 0.0
    start = _affine(ctx, _column(ctx, rois, 1 - axis, f"{name}.start"), scale, shift, f"{name}.start_scaled")
    end = _affine(ctx, _column(ctx, rois, 3 - axis, f"{name}.end"), scale, shift, f"{name}.end_scaled")
    extent = b.op("sub", [end, start], hint=f"{name}.extent")
    if not half_pixel:
        extent = b.op("maximum", [extent, b.scalar(1.0, dtype)], hint=f"{name}.extent_at_least_1")
    fractions = (np.arange(bins)[:, None] + (np.arange(grid)[None, :] + 0.5) / grid) / bins
    offsets = b.op("mul", [extent, b.literal(f"{name}.fractions", fractions.reshape(1, -1), dtype)],
                   hint=f"{name}.offsets")
    return b.op("add", [start, offsets], hint=f"{name}.samples")


def _corner(ctx, planes: str, row_tap: tuple, column_tap: tuple, width: int, name: str) -> str:
    """[R, C, rows * columns]: one of the four bilinear corners of every sample, weighted."""
    b = ctx.builder
    (row_index, row_weight), (column_index, column_weight) = row_tap, column_tap
    count, rows = b.type(row_index).shape
    columns = b.type(column_index).shape[1]
    row_start = b.op("mul", [row_index, b.scalar(width, DType.i64)], hint=f"{name}.row")
    index = b.op("add", [b.op("reshape", [row_start], {"shape": (count, rows, 1)}, hint=f"{name}.row_column"),
                         b.op("reshape", [column_index], {"shape": (count, 1, columns)}, hint=f"{name}.column_row")],
                 hint=f"{name}.index")
    weight = b.op("mul", [b.op("reshape", [row_weight], {"shape": (count, rows, 1)}, hint=f"{name}.wr"),
                          b.op("reshape", [column_weight], {"shape": (count, 1, columns)}, hint=f"{name}.wc")],
                  hint=f"{name}.w")
    return gather_cells(ctx, planes, index, weight, name)


def _sampling_grid(ctx, node, ratio: int, bins, scale: float, half_pixel: bool) -> tuple[int, int]:
    """Samples per bin along y and x: `ratio`, or the adaptive count of static regions."""
    if ratio > 0:
        return ratio, ratio
    rois = ctx.static(node.input[1])
    if rois is None or rois.dtype == object:
        raise UnsupportedModel("RoiAlign with sampling_ratio 0 over regions computed at run time",
                               expected="sampling_ratio > 0, or regions known while importing")
    rois = np.asarray(rois, np.float64).reshape(-1, 4) * scale
    extents = [rois[:, 3] - rois[:, 1], rois[:, 2] - rois[:, 0]]
    counts = []
    for axis in range(2):
        extent = extents[axis] if half_pixel else np.maximum(extents[axis], 1.0)
        per_roi = {max(math.ceil(value / bins[axis]), 1) for value in extent.tolist()}
        if len(per_roi) != 1:
            raise UnsupportedModel(f"RoiAlign with sampling_ratio 0 over regions whose adaptive grids differ "
                                   f"({sorted(per_roi)})", expected="regions of one adaptive grid, or sampling_ratio > 0")
        counts.append(per_roi.pop())
    return counts[0], counts[1]


def _column(ctx, rois: str, index: int, name: str) -> str:
    return ctx.builder.op("slice", [rois], {"axis": 1, "start": index, "len": 1}, hint=name)


def _affine(ctx, value: str, scale: float, shift: float, name: str) -> str:
    b = ctx.builder
    dtype = b.type(value).dtype
    if scale != 1.0:
        value = b.op("mul", [value, b.scalar(scale, dtype)], hint=f"{name}.times")
    if shift:
        value = b.op("sub", [value, b.scalar(shift, dtype)], hint=name)
    return value


def _bilinear_taps(ctx, samples: str, size: int, name: str) -> list[tuple[str, str]]:
    """[(index as i64, weight)] of the low and high neighbours of each sample along one axis,
    by ONNX's RoiAlign rules (weights zero for a sample past [-1, size])."""
    b = ctx.builder
    dtype = b.type(samples).dtype

    def scalar(value):
        return b.scalar(value, dtype)

    inside = b.op("ne", [b.op("lt", [samples, scalar(-1.0)], hint=f"{name}.before"),
                         b.op("le", [samples, scalar(float(size))], hint=f"{name}.not_after")], hint=f"{name}.inside")
    raised = b.op("maximum", [samples, scalar(0.0)], hint=f"{name}.raised")
    floor = b.op("floor", [raised], hint=f"{name}.floor")
    at_end = b.op("ge", [floor, scalar(size - 1.0)], hint=f"{name}.at_end")
    last = scalar(size - 1.0)
    low = b.op("where", [at_end, last, floor], hint=f"{name}.low")
    high = b.op("where", [at_end, last, b.op("add", [low, scalar(1.0)], hint=f"{name}.next")], hint=f"{name}.high")
    fraction = b.op("where", [at_end, scalar(0.0), b.op("sub", [raised, low], hint=f"{name}.past_low")],
                    hint=f"{name}.fraction")
    keep = b.op("cast", [inside], {"to": dtype}, hint=f"{name}.keep")
    upper = b.op("mul", [fraction, keep], hint=f"{name}.w_high")
    lower = b.op("mul", [b.op("sub", [scalar(1.0), fraction], hint=f"{name}.one_minus"), keep], hint=f"{name}.w_low")
    return [(b.op("cast", [low], {"to": DType.i64}, hint=f"{name}.low_index"), lower),
            (b.op("cast", [high], {"to": DType.i64}, hint=f"{name}.high_index"), upper)]


register({"RoiAlign": convert_roi_align})


# --- MaxRoiPool -----------------------------------------------------------------------
def convert_max_roi_pool(ctx, node, attrs):
    """MaxRoiPool (Fast R-CNN's RoI pooling): region corners rounded to cells, each region cut
    into ``pooled_shape`` bins of whole cells (``floor`` start, ``ceil`` end, clipped to the
    image), the maximum of each bin (0 for an empty one). A rectangle's maximum is the
    maximum over its rows of the maxima over its columns, so the bins are two masked
    reductions, over the columns then the rows, with run-time masks."""
    x, x_type, channels, height, width = _feature_map(ctx, node)
    bins = [int(size) for size in attrs["pooled_shape"]]
    scale = float(attrs.get("spatial_scale", 1.0))
    name, b = hint(node), ctx.builder
    dtype = x_type.dtype
    rois = operand(ctx, node.input[1], dtype)
    count = b.type(rois).shape[0]
    batch = b.op("reshape", [b.op("cast", [_column(ctx, rois, 0, f"{name}.batch")], {"to": DType.i64},
                                  hint=f"{name}.batch_i64")], {"shape": (count,)}, hint=f"{name}.batch_index")
    images = b.op("gather", [x, batch], {"axis": 0}, hint=f"{name}.images")  # [R, C, H, W]
    masks = [_bin_mask(ctx, rois, axis, bins[axis], size, scale, f"{name}.{'yx'[axis]}")
             for axis, size in enumerate((height, width))]  # [R, bins, size]
    lowest = b.scalar(-math.inf, dtype)
    columns = b.op("reshape", [masks[1]], {"shape": (count, 1, 1, bins[1], width)}, hint=f"{name}.column_mask")
    spread = b.op("reshape", [images], {"shape": (count, channels, height, 1, width)}, hint=f"{name}.spread")
    by_column = b.op("reduce_max", [b.op("where", [columns, spread, lowest], hint=f"{name}.in_column")],
                     {"axes": (4,), "keepdims": False}, hint=f"{name}.column_max")  # [R, C, H, PW]
    rows = b.op("reshape", [masks[0]], {"shape": (count, 1, bins[0], height, 1)}, hint=f"{name}.row_mask")
    stacked = b.op("reshape", [by_column], {"shape": (count, channels, 1, height, bins[1])}, hint=f"{name}.stacked")
    pooled = b.op("reduce_max", [b.op("where", [rows, stacked, lowest], hint=f"{name}.in_row")],
                  {"axes": (3,), "keepdims": False}, hint=f"{name}.bin_max")  # [R, C, PH, PW]
    empty = b.op("eq", [pooled, lowest], hint=f"{name}.empty")
    return [b.op("where", [empty, b.scalar(0.0, dtype), pooled], hint=name)]


def _bin_mask(ctx, rois: str, axis: int, bins: int, size: int, scale: float, name: str) -> str:
    """[R, bins, size]: which cells along one axis (0: y, 1: x) each bin of each region covers."""
    b = ctx.builder
    dtype = b.type(rois).dtype
    start = _round_half_away(ctx, _affine(ctx, _column(ctx, rois, 2 - axis, f"{name}.start"), scale, 0.0,
                                          f"{name}.start_scaled"), f"{name}.start_cell")
    end = _round_half_away(ctx, _affine(ctx, _column(ctx, rois, 4 - axis, f"{name}.end"), scale, 0.0,
                                        f"{name}.end_scaled"), f"{name}.end_cell")
    extent = b.op("maximum", [b.op("add", [b.op("sub", [end, start], hint=f"{name}.span"), b.scalar(1.0, dtype)],
                                   hint=f"{name}.cells"), b.scalar(1.0, dtype)], hint=f"{name}.extent")
    step = b.op("div", [extent, b.scalar(float(bins), dtype)], hint=f"{name}.bin_size")  # [R, 1]
    first = b.literal(f"{name}.first", np.arange(bins, dtype=np.float64).reshape(1, -1), dtype)
    after = b.literal(f"{name}.after", np.arange(1, bins + 1, dtype=np.float64).reshape(1, -1), dtype)
    low = _clip(ctx, b.op("add", [b.op("floor", [b.op("mul", [first, step], hint=f"{name}.low_offset")],
                                       hint=f"{name}.low_floor"), start], hint=f"{name}.low_unclipped"),
                size, f"{name}.low")
    high = _clip(ctx, b.op("add", [b.op("ceil", [b.op("mul", [after, step], hint=f"{name}.high_offset")],
                                        hint=f"{name}.high_ceil"), start], hint=f"{name}.high_unclipped"),
                 size, f"{name}.high")
    cells = b.literal(f"{name}.cell", np.arange(size, dtype=np.float64).reshape(1, 1, -1), dtype)
    low = b.op("reshape", [low], {"shape": (b.type(rois).shape[0], bins, 1)}, hint=f"{name}.low_column")
    high = b.op("reshape", [high], {"shape": (b.type(rois).shape[0], bins, 1)}, hint=f"{name}.high_column")
    from_low = b.op("ge", [cells, low], hint=f"{name}.from_low")
    below_high = b.op("lt", [cells, high], hint=f"{name}.below_high")
    return b.op("minimum", [from_low, below_high], hint=f"{name}.covered")  # and, on bools


def _clip(ctx, value: str, size: int, name: str) -> str:
    b = ctx.builder
    dtype = b.type(value).dtype
    raised = b.op("maximum", [value, b.scalar(0.0, dtype)], hint=f"{name}.raised")
    return b.op("minimum", [raised, b.scalar(float(size), dtype)], hint=name)


def _round_half_away(ctx, value: str, name: str) -> str:
    """C's round: to the nearest whole number, a tie away from zero."""
    b = ctx.builder
    dtype = b.type(value).dtype
    magnitude = b.op("floor", [b.op("add", [b.op("abs", [value], hint=f"{name}.abs"), b.scalar(0.5, dtype)],
                                    hint=f"{name}.half_up")], hint=f"{name}.magnitude")
    negative = b.op("lt", [value, b.scalar(0.0, dtype)], hint=f"{name}.negative")
    return b.op("where", [negative, b.op("neg", [magnitude], hint=f"{name}.negated"), magnitude], hint=name)


register({"MaxRoiPool": convert_max_roi_pool})
