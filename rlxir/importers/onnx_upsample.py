"""ONNX op -> core ops: ConvTranspose and Resize, the two ways a decoder grows its feature maps.

- **ConvTranspose** is the input gradient of a convolution: ``conv2d_grad_input`` of the
  conv2d that maps the (larger) output back to the input, whose weight has ONNX's
  ``[C_in, C_out / group, kH, kW]`` layout as it stands. The output size is
  ``stride (in - 1) + output_padding + dilation (k - 1) + 1 - pad_begin - pad_end``;
  output_padding cells receive no taps (zeros, then the bias). A 1-D one runs over a unit
  height.
- **Resize** works per resized axis from the source coordinate ONNX defines for each output
  position (`source_coordinates`), computed while importing (the spatial dims must be
  static). Nearest: a ``gather`` of the picked rows, or a ``reshape``/``expand`` when every
  input row repeats the same whole number of times. Linear: the two neighbouring rows
  gathered and blended, ``low + (high - low) * weight``, per resized axis (two axes for
  bilinear; any axis works). Row numbers and weights are literals of the output's length
  (never params: they belong to the op, not to the model's weights).
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_ops import hint, operand, optional_input, static_input, static_ints
from rlxir.importers.onnx_nn import channel_column, resolve_pads


# --- ConvTranspose ---------------------------------------------------------------------
def convert_conv_transpose(ctx, node, attrs):
    x = ctx.value(node.input[0])
    x_type = ctx.builder.type(x)
    w = operand(ctx, node.input[1], x_type.dtype)
    w_shape = ctx.builder.type(w).shape
    spatial = len(w_shape) - 2
    if x_type.rank != spatial + 2 or spatial not in (1, 2):
        raise UnsupportedModel(f"a {spatial}-D ConvTranspose", expected="ConvTranspose over 1 or 2 spatial dims")
    if "output_shape" in attrs:
        raise UnsupportedModel("ConvTranspose with an output_shape attribute",
                               expected="pads and output_padding (what PyTorch exports)")
    kernel = [int(k) for k in attrs.get("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in attrs.get("strides", [1] * spatial)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * spatial)]
    extra = [int(p) for p in attrs.get("output_padding", [0] * spatial)]
    groups = int(attrs.get("group", 1))
    if any(padding >= stride for padding, stride in zip(extra, strides)):
        raise UnsupportedModel(f"ConvTranspose with output_padding {extra} not below strides {strides}",
                               expected="output_padding smaller than the stride on each axis")
    pads = _transpose_pads(attrs, x_type.shape[2:], kernel, strides, dilations, extra)
    name = hint(node)
    if spatial == 1:
        x = _unit_height(ctx, x, f"{name}.x2d")
        w = _unit_height(ctx, w, f"{name}.w2d")
        kernel, strides, dilations, extra = [1] + kernel, [1] + strides, [1] + dilations, [0] + extra
        pads = [0, pads[0], 0, pads[1]]
    batch, _, *sizes = ctx.builder.type(x).shape
    out_sizes = [stride * (size - 1) + padding + dilation * (window - 1) + 1 - begin - end
                 for size, window, stride, dilation, padding, begin, end
                 in zip(sizes, kernel, strides, dilations, extra, pads[:2], pads[2:])]
    out_channels = w_shape[1] * groups
    attributes = {"input_shape": (batch, out_channels, *out_sizes), "stride": tuple(strides), "padding": tuple(pads),
                  "dilation": tuple(dilations), "groups": groups}
    bias = optional_input(node, 2)
    result_name = name if bias is None and spatial == 2 else f"{name}.unbiased"
    result = ctx.builder.op("conv2d_grad_input", [x, w], attributes, hint=result_name)
    if bias is not None:
        column = channel_column(ctx, bias, x_type.dtype, (out_channels, 1, 1), f"{name}.bias")
        result = ctx.builder.op("add", [result, column], hint=name if spatial == 2 else f"{name}.biased")
    if spatial == 1:
        result = ctx.builder.op("reshape", [result], {"shape": (batch, out_channels, out_sizes[1])}, hint=name)
    return [result]


def _transpose_pads(attrs, spatial, kernel, strides, dilations, extra) -> list[int]:
    """``[begin..., end...]``; SAME_UPPER / SAME_LOWER make the output ``in * stride``."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        return resolve_pads(attrs, spatial, kernel, strides, dilations)
    begins, ends = [], []
    for size, window, stride, dilation, padding in zip(spatial, kernel, strides, dilations, extra):
        if not isinstance(size, int):
            raise UnsupportedModel(f"auto_pad {auto_pad} over the symbolic dim {size}", expected="static spatial dims")
        total = max(stride * (size - 1) + padding + dilation * (window - 1) + 1 - size * stride, 0)
        begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def _unit_height(ctx, value: str, name: str) -> str:
    first, second, length = ctx.builder.type(value).shape
    return ctx.builder.op("reshape", [value], {"shape": (first, second, 1, length)}, hint=name)


# --- Resize ----------------------------------------------------------------------------
TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coordinates(mode: str, size: int, out: int, scale: float) -> np.ndarray:
    """Where in the input each output position samples, by ONNX's
    coordinate_transformation_mode (`scale` is the declared one, or out / in for sizes)."""
    positions = np.arange(out, dtype=np.float64)
    if mode == "half_pixel":
        return (positions + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (positions + 0.5) / scale - 0.5 if out > 1 else np.zeros(out)
    if mode == "align_corners":
        return positions * (size - 1) / (out - 1) if out > 1 else np.zeros(out)
    return positions / scale


def nearest_rows(coordinates: np.ndarray, nearest_mode: str, size: int) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        picked = np.ceil(coordinates - 0.5)
    elif nearest_mode == "round_prefer_ceil":
        picked = np.floor(coordinates + 0.5)
    elif nearest_mode == "floor":
        picked = np.floor(coordinates)
    else:
        picked = np.ceil(coordinates)
    return np.clip(picked, 0, size - 1).astype(np.int64)


def linear_taps(coordinates: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower row, upper row, weight of the upper row) of linear interpolation at
    `coordinates`, clamped to the input as ONNX clamps them."""
    clamped = np.clip(coordinates, 0, size - 1)
    low = np.floor(clamped).astype(np.int64)
    high = np.minimum(low + 1, size - 1)
    return low, high, clamped - low


def _resize_options(attrs) -> tuple[str, str, str]:
    mode = attrs.get("mode", "nearest")
    transform = attrs.get("coordinate_transformation_mode", "half_pixel")
    nearest_mode = attrs.get("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear"):
        raise UnsupportedModel(f"Resize in mode {mode!r}", expected="mode nearest or linear")
    if transform not in TRANSFORMS:
        raise UnsupportedModel(f"Resize with coordinate_transformation_mode {transform!r}",
                               expected="one of " + ", ".join(TRANSFORMS))
    if nearest_mode not in NEAREST_MODES:
        raise UnsupportedModel(f"Resize with nearest_mode {nearest_mode!r}", expected="one of " + ", ".join(NEAREST_MODES))
    if attrs.get("antialias", 0) or attrs.get("axes") is not None:
        raise UnsupportedModel("Resize with antialias or axes", expected="no antialias, every axis in scales/sizes")
    if attrs.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise UnsupportedModel("Resize with a keep_aspect_ratio_policy other than stretch", expected="stretch")
    return mode, transform, nearest_mode


def _resize_targets(ctx, node, shape) -> list[tuple[object, float | None]]:
    """(output size, scale) per axis from the sizes or the scales input; the scale is None
    for an axis that keeps its size."""
    if optional_input(node, 3):
        sizes = static_ints(ctx, node, 3, "sizes")
        if len(sizes) != len(shape):
            raise UnsupportedModel(f"Resize sizes {sizes} for a rank-{len(shape)} input", expected="a size per axis")
        return [(size, None) if size == dim else (size, _ratio(size, dim)) for size, dim in zip(sizes, shape)]
    scales = [float(scale) for scale in np.asarray(static_input(ctx, node, 2, "scales")).reshape(-1)]
    if len(scales) != len(shape):
        raise UnsupportedModel(f"Resize scales {scales} for a rank-{len(shape)} input", expected="a scale per axis")
    return [(dim, None) if scale == 1.0 else (math.floor(_static(dim) * scale), scale)
            for scale, dim in zip(scales, shape)]


def _static(dim) -> int:
    if not isinstance(dim, int):
        raise UnsupportedModel(f"Resize of the symbolic dim {dim}", expected="static resized dims")
    return dim


def _ratio(size, dim) -> float:
    if not isinstance(size, int):
        raise UnsupportedModel(f"Resize to the symbolic size {size}", expected="static resized dims")
    return size / _static(dim)


def convert_resize(ctx, node, attrs):
    if ctx.opset < 11:
        raise UnsupportedModel(f"Resize of opset {ctx.opset}", expected="opset 11 or later")
    mode, transform, nearest_mode = _resize_options(attrs)
    x = ctx.value(node.input[0])
    shape = ctx.builder.type(x).shape
    name = hint(node)
    resized = [(axis, out, scale) for axis, (out, scale) in enumerate(_resize_targets(ctx, node, shape))
               if scale is not None]
    for count, (axis, out, scale) in enumerate(resized):
        size = _static(ctx.builder.type(x).shape[axis])
        if not isinstance(out, int) or out < 1:
            raise UnsupportedModel(f"Resize of axis {axis} from {size} to {out}", expected="at least one output row")
        coordinates = source_coordinates(transform, size, out, scale)
        step = name if count == len(resized) - 1 else f"{name}.axis{axis}"
        if mode == "nearest":
            x = _resize_nearest(ctx, x, axis, nearest_rows(coordinates, nearest_mode, size), step)
        else:
            x = _resize_linear(ctx, x, axis, linear_taps(coordinates, size), step)
    return [x]


def _resize_nearest(ctx, x: str, axis: int, rows: np.ndarray, name: str) -> str:
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
    # A literal, not a param: the rows are part of the op, not a weight `rlxir run` may fill.
    index = ctx.builder.literal(f"{name}.rows", rows)
    return ctx.builder.op("gather", [x, index], {"axis": axis}, hint=name)


def _resize_linear(ctx, x: str, axis: int, taps, name: str) -> str:
    """``x[low] + (x[high] - x[low]) * weight`` along `axis`."""
    low, high, weight = taps
    type_ = ctx.builder.type(x)
    lower = _gather_rows(ctx, x, axis, low, f"{name}.low" if weight.any() else name)
    if not weight.any():  # every output sits on an input row
        return lower
    upper = _gather_rows(ctx, x, axis, high, f"{name}.high")
    step = ctx.builder.op("sub", [upper, lower], hint=f"{name}.step")
    column = weight.reshape((-1,) + (1,) * (type_.rank - 1 - axis)).astype(np.float64)
    fraction = ctx.builder.literal(f"{name}.weight", column, type_.dtype)
    scaled = ctx.builder.op("mul", [step, fraction], hint=f"{name}.scaled")
    return ctx.builder.op("add", [lower, scaled], hint=name)


register({"ConvTranspose": convert_conv_transpose, "Resize": convert_resize})
