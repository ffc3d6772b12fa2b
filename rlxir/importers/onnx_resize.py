"""ONNX op -> core ops: Resize and Upsample, one resized axis at a time.

Resize is separable: each resized axis is an independent 1-D interpolation whose taps (the
input rows each output row reads, and their weights) depend only on static sizes and
attributes. They are computed while importing (`axis_taps`, following ONNX's definition:
source coordinate per coordinate_transformation_mode, a window of neighbours clamped to
the input as an edge pad does, coefficients of the mode, antialias stretching the kernel
when downsampling, exclude_outside renormalising), then applied with core ops:

- one tap of weight 1 per row (nearest): a ``gather`` of the picked rows, or a
  ``reshape``/``expand`` when every input row repeats the same whole number of times;
- several taps (linear, cubic, antialias): ``sum_k gather(x, rows_k) * weight_k``, with the
  taps of a row merged where the clamping makes them read the same input row;
- tf_crop_and_resize: rows whose source lies outside the input take extrapolation_value
  (a ``where`` on a static mask);
- integer data that is blended is interpolated in f64, rounded half to even once at the
  end and saturated, as ONNX's reference does.

Row numbers, weights and masks are literals (they belong to the op, not to the model's
weights). Sizes, scales and roi must be static; so must every resized dim.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, round_half_even
from rlxir.importers.onnx_ops import hint, optional_input, static_input, static_ints
from rlxir.importers.onnx_registry import register
from rlxir.symbolic import Expr, format_dim

TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
              "tf_crop_and_resize", "tf_half_pixel_for_nn")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
MODES = ("nearest", "linear", "cubic")
POLICIES = ("stretch", "not_larger", "not_smaller")


# --- taps (import-time NumPy) ---------------------------------------------------------
def source_coordinates(transform: str, size: int, out: int, scale: float,
                       roi: tuple[float, float] = (0.0, 1.0)) -> np.ndarray:
    """Where in the input each output position samples, by ONNX's
    coordinate_transformation_mode. `scale` is the declared one (or out / in for sizes);
    ONNX measures the output length as ``scale * size``, which need not be whole."""
    positions = np.arange(out, dtype=np.float64)
    length = scale * size
    if transform == "half_pixel":
        return (positions + 0.5) / scale - 0.5
    if transform == "half_pixel_symmetric":
        offset = size / 2 * (1 - out / length)
        return offset + (positions + 0.5) / scale - 0.5
    if transform == "pytorch_half_pixel":
        return (positions + 0.5) / scale - 0.5 if length != 1 else np.full(out, -0.5)
    if transform == "align_corners":
        return positions * (size - 1) / (length - 1) if length != 1 else np.zeros(out)
    if transform == "tf_crop_and_resize":
        start, end = roi
        if length == 1:
            return np.full(out, (end - start) * (size - 1) / 2 + start * (size - 1))
        return positions * (end - start) * (size - 1) / (length - 1) + start * (size - 1)
    if transform == "tf_half_pixel_for_nn":  # opset 11 only
        return (positions + 0.5) / scale
    return positions / scale


def _coefficients(mode: str, ratios: np.ndarray, scale: float, options: dict) -> np.ndarray:
    """[out, n] weights of the n window taps, from each row's ratio in (0, 1] (the distance
    of the source coordinate past the tap just below it; 1 on a whole coordinate)."""
    if mode == "nearest":
        upper = {"round_prefer_floor": ratios > 0.5, "round_prefer_ceil": ratios >= 0.5,
                 "floor": np.zeros_like(ratios, dtype=bool), "ceil": np.ones_like(ratios, dtype=bool)}
        picked = np.where(ratios == 1.0, True, upper[options["nearest_mode"]])
        return np.stack([~picked, picked], axis=1).astype(np.float64)
    if options["antialias"]:
        return _antialias_coefficients(mode, ratios, min(scale, 1.0), options["cubic_a"])
    if mode == "linear":
        return np.stack([1 - ratios, ratios], axis=1)
    distances = np.stack([1 + ratios, ratios, 1 - ratios, 2 - ratios], axis=1)
    return _cubic_kernel(distances, options["cubic_a"])


def _cubic_kernel(distances: np.ndarray, a: float) -> np.ndarray:
    d = np.abs(distances)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _antialias_coefficients(mode: str, ratios: np.ndarray, scale: float, a: float) -> np.ndarray:
    """The kernel stretched by 1 / scale (a downsampling low-pass), normalised to sum 1."""
    reach = 1 if mode == "linear" else 2
    start = math.floor(-reach / scale) + 1
    offsets = np.arange(start, 2 - start, dtype=np.float64)
    distances = (offsets[None, :] - ratios[:, None]) * scale
    if mode == "linear":
        weights = np.clip(1 - np.abs(distances), 0, 1)
    else:
        weights = _cubic_kernel(distances, a)
    return weights / weights.sum(axis=1, keepdims=True)


def axis_taps(mode: str, transform: str, size: int, out: int, scale: float, options: dict,
              roi: tuple[float, float] = (0.0, 1.0)) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(rows [out, K], weights [out, K], outside [out] or None) of one resized axis: output
    row i is ``sum_k weights[i, k] * input[rows[i, k]]``, or extrapolation_value where
    `outside` (tf_crop_and_resize only). Taps reading the same clamped row are merged, and
    K is the most nonzero taps any row has."""
    coordinates = source_coordinates(transform, size, out, scale, roi)
    below = np.floor(coordinates)
    whole = coordinates == below
    ratios = np.where(whole, 1.0, coordinates - below)
    weights = _coefficients(mode, ratios, scale, options)
    count = weights.shape[1]
    if count % 2 == 0:  # the n taps nearest the coordinate, the lower one on a tie
        first = below - count // 2 + np.where(whole, 0, 1)
    else:
        first = np.round(coordinates) - (count - 1) // 2
    rows = first[:, None].astype(np.int64) + np.arange(count)[None, :]
    if options["exclude_outside"]:
        weights = np.where((rows < 0) | (rows >= size), 0.0, weights)
        totals = weights.sum(axis=1, keepdims=True)
        weights = weights / np.where(totals == 0, 1.0, totals)
    rows = np.clip(rows, 0, size - 1)
    outside = (coordinates < 0) | (coordinates > size - 1) if transform == "tf_crop_and_resize" else None
    return (*_merged(rows, weights), outside if outside is not None and outside.any() else None)


def _merged(rows: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's taps with equal row numbers summed and zero weights dropped, padded to
    the widest row with (row 0, weight 0)."""
    kept = []
    for row_taps, row_weights in zip(rows, weights):
        merged: dict[int, float] = {}
        for tap, weight in zip(row_taps.tolist(), row_weights.tolist()):
            merged[tap] = merged.get(tap, 0.0) + weight
        kept.append([(tap, weight) for tap, weight in merged.items() if weight != 0.0] or [(0, 0.0)])
    width = max(len(taps) for taps in kept)
    merged_rows = np.zeros((len(kept), width), np.int64)
    merged_weights = np.zeros((len(kept), width), np.float64)
    for index, taps in enumerate(kept):
        for column, (tap, weight) in enumerate(taps):
            merged_rows[index, column], merged_weights[index, column] = tap, weight
    return merged_rows, merged_weights


# --- attributes and targets -----------------------------------------------------------
def _resize_options(ctx, attrs) -> dict:
    """The Resize attributes as one dict, each checked (before opset 11 the coordinates
    are asymmetric and nearest takes the floor, as in Upsample)."""
    legacy = ctx.opset < 11 and "coordinate_transformation_mode" not in attrs
    options = {
        "mode": attrs.get("mode", "nearest"),
        "transform": "asymmetric" if legacy else attrs.get("coordinate_transformation_mode", "half_pixel"),
        "nearest_mode": "floor" if legacy else attrs.get("nearest_mode", "round_prefer_floor"),
        "cubic_a": float(attrs.get("cubic_coeff_a", -0.75)),
        "exclude_outside": bool(attrs.get("exclude_outside", 0)),
        "extrapolation_value": float(attrs.get("extrapolation_value", 0.0)),
        "antialias": bool(attrs.get("antialias", 0)),
        "policy": attrs.get("keep_aspect_ratio_policy", "stretch"),
    }
    for key, allowed in (("mode", MODES), ("transform", TRANSFORMS), ("nearest_mode", NEAREST_MODES),
                         ("policy", POLICIES)):
        if options[key] not in allowed:
            raise UnsupportedModel(f"Resize with {key.replace('transform', 'coordinate_transformation_mode')} "
                                   f"{options[key]!r}", expected="one of " + ", ".join(allowed))
    if options["antialias"] and options["mode"] == "nearest":
        raise UnsupportedModel("Resize with antialias in mode nearest", expected="antialias with linear or cubic")
    return options


def same_size(ctx, dim, size) -> bool:
    """`size` is `dim`, counting the batch symbol as the model's static batch."""
    if dim == size:
        return True
    return (isinstance(dim, Expr) and format_dim(dim) == ctx.batch_dim and ctx.static_batch is not None
            and size == ctx.static_batch)


def _static_dim(dim, axis: int) -> int:
    if not isinstance(dim, int):
        raise UnsupportedModel(f"Resize of axis {axis}, whose size {format_dim(dim)} is symbolic",
                               expected="static resized dims")
    return dim


def _per_axis(values: list, axes: list[int], rank: int, fill) -> list:
    full = [fill(axis) for axis in range(rank)]
    for index, axis in enumerate(axes):
        full[axis] = values[index]
    return full


def _resize_plan(ctx, node, attrs, shape, options) -> list[tuple[int, int, float, tuple[float, float]]]:
    """(axis, output size, scale, roi span) for every axis that changes, from the sizes or
    scales input (or attribute), with axes and keep_aspect_ratio_policy applied."""
    rank = len(shape)
    axes = [axis % rank for axis in attrs.get("axes", range(rank))]
    if len(set(axes)) != len(axes):
        raise UnsupportedModel(f"Resize with repeated axes {attrs['axes']}", expected="distinct axes")
    sizes, scales = _sizes_and_scales(ctx, node, attrs, len(axes))
    roi = _roi(ctx, node, options, axes, rank)
    if sizes is not None:
        full = _per_axis(sizes, axes, rank, lambda axis: shape[axis])
        plan = [(axis, full[axis], None) for axis in range(rank)]
        if options["policy"] != "stretch":
            ratios = [sizes[index] / _static_dim(shape[axis], axis) for index, axis in enumerate(axes)]
            common = min(ratios) if options["policy"] == "not_larger" else max(ratios)
            plan = [(axis, int(common * shape[axis] + 0.5), common) if axis in axes else (axis, shape[axis], None)
                    for axis in range(rank)]
    else:
        full_scales = _per_axis(scales, axes, rank, lambda axis: 1.0)
        plan = [(axis, shape[axis] if scale == 1.0 else int(_static_dim(shape[axis], axis) * scale), scale)
                for axis, scale in enumerate(full_scales)]
    resized = []
    for axis, out, scale in plan:
        if (scale is None or math.isclose(scale, 1.0)) and same_size(ctx, shape[axis], out) \
                and roi[axis] == (0.0, 1.0):
            continue  # ONNX leaves such an axis as it is
        size = _static_dim(shape[axis], axis)
        if not isinstance(out, int) or out < 1:
            raise UnsupportedModel(f"Resize of axis {axis} from {size} to {format_dim(out)}",
                                   expected="at least one static output row")
        resized.append((axis, out, out / size if scale is None else scale, roi[axis]))
    return resized


def _sizes_and_scales(ctx, node, attrs, count: int) -> tuple[list | None, list | None]:
    if node.op_type == "Upsample" and ctx.opset < 7:  # Upsample-1 scales only H and W of NCHW
        scales = [1.0, 1.0, float(attrs.get("height_scale", 1.0)), float(attrs.get("width_scale", 1.0))]
    elif node.op_type == "Upsample" and ctx.opset < 9:
        scales = [float(scale) for scale in attrs.get("scales", [])]
    elif node.op_type == "Upsample" or ctx.opset < 11:
        scales = [float(item) for item in np.asarray(static_input(ctx, node, 1, "scales")).reshape(-1)]
    elif optional_input(node, 3) is not None and not _empty(ctx, node.input[3]):
        sizes = static_ints(ctx, node, 3, "sizes")
        if len(sizes) != count:
            raise UnsupportedModel(f"Resize sizes {sizes} for {count} axes", expected="a size per resized axis")
        return sizes, None
    else:
        scales = [float(item) for item in np.asarray(static_input(ctx, node, 2, "scales")).reshape(-1)]
    if len(scales) != count:
        raise UnsupportedModel(f"{node.op_type} scales {scales} for {count} axes", expected="a scale per axis")
    if any(scale <= 0 for scale in scales):
        raise UnsupportedModel(f"{node.op_type} scales {scales}", expected="positive scales")
    return None, scales


def _empty(ctx, name: str) -> bool:
    """An input given as an empty tensor (how opsets 11-12 leave out scales or sizes)."""
    return ctx.is_static(name) and ctx.static(name).size == 0


def _roi(ctx, node, options, axes: list[int], rank: int) -> list[tuple[float, float]]:
    """(start, end) per axis: read only for tf_crop_and_resize (ONNX ignores roi otherwise)."""
    identity = [(0.0, 1.0)] * rank
    if options["transform"] != "tf_crop_and_resize":
        return identity
    values = [float(item) for item in np.asarray(static_input(ctx, node, 1, "roi")).reshape(-1)]
    if len(values) != 2 * len(axes):
        raise UnsupportedModel(f"Resize roi {values} for {len(axes)} axes", expected="a start and an end per axis")
    return _per_axis([(values[index], values[len(axes) + index]) for index in range(len(axes))], axes, rank,
                     lambda axis: (0.0, 1.0))


# --- converters -----------------------------------------------------------------------
def convert_resize(ctx, node, attrs):
    if node.op_type == "Upsample":  # asymmetric coordinates, nearest by the floor
        mode = attrs.get("mode", "nearest")
        attrs = {**attrs, "mode": {"bilinear": "linear", "trilinear": "linear"}.get(mode, mode),
                 "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    options = _resize_options(ctx, attrs)
    x = ctx.value(node.input[0])
    shape = ctx.builder.type(x).shape
    plan = _resize_plan(ctx, node, attrs, shape, options)
    name = hint(node)
    steps = [(axis, *axis_taps(options["mode"], options["transform"], _static_dim(shape[axis], axis), out, scale,
                               options, roi)) for axis, out, scale, roi in plan]
    dtype = ctx.builder.type(x).dtype
    blends = any(rows.shape[1] > 1 or np.any(weights != 1.0) or outside is not None
                 for _, rows, weights, outside in steps)
    if blends and not dtype.is_float:
        return [_resize_integers(ctx, x, steps, options, name)]
    for count, (axis, rows, weights, outside) in enumerate(steps):
        step = name if count == len(steps) - 1 else f"{name}.axis{axis}"
        x = _apply_taps(ctx, x, axis, rows, weights, step)
        if outside is not None:
            x = _extrapolate(ctx, x, axis, outside, options["extrapolation_value"], step)
    return [x]


def _resize_integers(ctx, x: str, steps: list, options: dict, name: str) -> str:
    """Integer data interpolated as ONNX's reference does: in f64, rounded half to even
    once at the end, saturated to the dtype's range."""
    b = ctx.builder
    dtype = b.type(x).dtype
    x = b.op("cast", [x], {"to": DType.f64}, hint=f"{name}.f64")
    for axis, rows, weights, outside in steps:
        x = _apply_taps(ctx, x, axis, rows, weights, f"{name}.axis{axis}")
        if outside is not None:
            x = _extrapolate(ctx, x, axis, outside, options["extrapolation_value"], f"{name}.axis{axis}")
    rounded = round_half_even(ctx.builder, x, f"{name}.rounded")
    info = np.iinfo(dtype.numpy)
    low = b.op("maximum", [rounded, b.scalar(float(info.min), DType.f64)], hint=f"{name}.low")
    high = b.op("minimum", [low, b.scalar(float(info.max), DType.f64)], hint=f"{name}.saturated")
    return b.op("cast", [high], {"to": dtype}, hint=name)


def _apply_taps(ctx, x: str, axis: int, rows: np.ndarray, weights: np.ndarray, name: str) -> str:
    if rows.shape[1] == 1 and np.all(weights == 1.0):
        return _pick_rows(ctx, x, axis, rows[:, 0], name)
    type_ = ctx.builder.type(x)
    total = None
    for tap in range(rows.shape[1]):
        last = tap == rows.shape[1] - 1
        taken = _gather_rows(ctx, x, axis, rows[:, tap], f"{name}.tap{tap}")
        column = np.ascontiguousarray(weights[:, tap]).reshape((-1,) + (1,) * (type_.rank - 1 - axis))
        if not np.all(column == 1.0):
            weight = ctx.builder.literal(f"{name}.weight{tap}", column, type_.dtype)
            taken = ctx.builder.op("mul", [taken, weight], hint=name if last and total is None else f"{name}.term{tap}")
        total = taken if total is None else ctx.builder.op("add", [total, taken], hint=name if last else f"{name}.sum")
    return total


def _pick_rows(ctx, x: str, axis: int, rows: np.ndarray, name: str) -> str:
    shape = tuple(ctx.builder.type(x).shape)
    size, out = shape[axis], len(rows)
    repeat = out // size
    if repeat * size == out and np.array_equal(rows, np.arange(out) // repeat):
        # Each input row repeated `repeat` times: a broadcast, no index tensor.
        column = ctx.builder.op("reshape", [x], {"shape": shape[:axis + 1] + (1,) + shape[axis + 1:]},
                                hint=f"{name}.column")
        spread = ctx.builder.op("expand", [column], {"shape": shape[:axis + 1] + (repeat,) + shape[axis + 1:]},
                                hint=f"{name}.repeated")
        return ctx.builder.op("reshape", [spread], {"shape": shape[:axis] + (out,) + shape[axis + 1:]}, hint=name)
    return _gather_rows(ctx, x, axis, rows, name)


def _gather_rows(ctx, x: str, axis: int, rows: np.ndarray, name: str) -> str:
    index = ctx.builder.literal(f"{name}.rows", rows.astype(np.int64))
    return ctx.builder.op("gather", [x, index], {"axis": axis}, hint=name)


def _extrapolate(ctx, x: str, axis: int, outside: np.ndarray, value: float, name: str) -> str:
    type_ = ctx.builder.type(x)
    mask = ctx.builder.literal(f"{name}.outside", outside.reshape((-1,) + (1,) * (type_.rank - 1 - axis)))
    return ctx.builder.op("where", [mask, ctx.builder.scalar(value, type_.dtype), x], hint=name)


register({"Resize": convert_resize, "Upsample": convert_resize})
