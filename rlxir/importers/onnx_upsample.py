"""ONNX op -> core ops: ConvTranspose, the learned way a decoder grows its feature maps.

- **ConvTranspose** is the input gradient of a convolution: ``conv2d_grad_input`` of the
  conv2d that maps the (larger) output back to the input, whose weight has ONNX's
  ``[C_in, C_out / group, kH, kW]`` layout as it stands. The output size is
  ``stride (in - 1) + output_padding + dilation (k - 1) + 1 - pad_begin - pad_end``;
  output_padding cells receive no taps (zeros, then the bias), and so do the cells a
  negative pad adds (from output_shape), concatenated. A 1-D one runs over a unit height;
  a 3-D one is a convolution of the spread-out input (`rlxir.importers.onnx_conv_nd`).

Resize and Upsample are in `rlxir.importers.onnx_resize`.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import UnsupportedModel, pad_axis
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_ops import hint, operand, optional_input
from rlxir.importers.onnx_conv_nd import conv_transpose_nd
from rlxir.importers.onnx_nn import channel_column, resolve_pads


# --- ConvTranspose ---------------------------------------------------------------------
def convert_conv_transpose(ctx, node, attrs):
    x = ctx.value(node.input[0])
    x_type = ctx.builder.type(x)
    w_shape = ctx.shape(node.input[1])
    spatial = len(w_shape) - 2
    if x_type.rank != spatial + 2 or spatial not in (1, 2, 3):
        raise UnsupportedModel(f"a {spatial}-D ConvTranspose", expected="ConvTranspose over 1, 2 or 3 spatial dims")
    kernel = [int(k) for k in attrs.get("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in attrs.get("strides", [1] * spatial)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * spatial)]
    extra = [int(p) for p in attrs.get("output_padding", [0] * spatial)]
    groups = int(attrs.get("group", 1))
    if any(padding >= max(stride, dilation) for padding, stride, dilation in zip(extra, strides, dilations)):
        raise UnsupportedModel(f"ConvTranspose with output_padding {extra} not below strides {strides} or "
                               f"dilations {dilations}", expected="output_padding smaller than the stride or the "
                                                                  "dilation on each axis")
    pads = _transpose_pads(attrs, x_type.shape[2:], kernel, strides, dilations, extra)
    name = hint(node)
    bias = optional_input(node, 2)
    out_channels = w_shape[1] * groups
    if spatial == 3:
        static = ctx.static(node.input[1]) if node.input[1] not in ctx.values else None
        weight = np.asarray(static) if static is not None and static.dtype != object else \
            operand(ctx, node.input[1], x_type.dtype)
        bias_value = operand(ctx, bias, x_type.dtype) if bias is not None else None
        return [conv_transpose_nd(ctx, name, x, weight, bias_value, strides, dilations, pads, extra, groups)]
    w = operand(ctx, node.input[1], x_type.dtype)
    bias_column = channel_column(ctx, bias, x_type.dtype, (out_channels, 1, 1), f"{name}.bias") if bias else None
    if spatial == 2:
        return [_conv_transpose_2d(ctx, name, x, w, bias_column, out_channels, kernel, strides, dilations, pads, extra,
                                   groups)]
    high, wide = _unit_height(ctx, x, f"{name}.x2d"), _unit_height(ctx, w, f"{name}.w2d")
    result = _conv_transpose_2d(ctx, f"{name}.2d", high, wide, bias_column, out_channels, [1] + kernel,
                                [1] + strides, [1] + dilations, [0, pads[0], 0, pads[1]], [0] + extra, groups)
    batch, _, _, length = ctx.builder.type(result).shape
    return [ctx.builder.op("reshape", [result], {"shape": (batch, out_channels, length)}, hint=name)]


def _conv_transpose_2d(ctx, name: str, x: str, w: str, bias: str | None, out_channels, kernel, strides, dilations,
                       pads, extra, groups) -> str:
    """``conv2d_grad_input`` over the non-negative pads; a negative pad's cells (outside
    every tap) are concatenated zeros; then the bias column."""
    crops = [max(-pad, 0) for pad in pads]
    pads = [max(pad, 0) for pad in pads]
    batch, _, *sizes = ctx.builder.type(x).shape
    out_sizes = [stride * (size - 1) + padding + dilation * (window - 1) + 1 - begin - end
                 for size, window, stride, dilation, padding, begin, end
                 in zip(sizes, kernel, strides, dilations, extra, pads[:2], pads[2:])]
    attributes = {"input_shape": (batch, out_channels, *out_sizes), "stride": tuple(strides), "padding": tuple(pads),
                  "dilation": tuple(dilations), "groups": groups}
    grown = [axis for axis in range(2) if crops[axis] or crops[2 + axis]]
    last = "bias" if bias is not None else (grown[-1] if grown else "gradient")

    def label(step) -> str:  # the last step makes the result
        return name if step == last else f"{name}.{step}"

    result = ctx.builder.op("conv2d_grad_input", [x, w], attributes, hint=label("gradient"))
    for axis in grown:
        result = pad_axis(ctx.builder, result, 2 + axis, crops[axis], crops[2 + axis], 0, label(axis))
    if bias is None:
        return result
    return ctx.builder.op("add", [result, bias], hint=name)


def _transpose_pads(attrs, spatial, kernel, strides, dilations, extra) -> list[int]:
    """``[begin..., end...]``. From output_shape (which overrides pads) or SAME_UPPER /
    SAME_LOWER (whose output is ``in * stride``): the total padding that makes that output
    size, split evenly, the odd cell at the end for SAME_UPPER and at the beginning
    otherwise (ONNX's rule); a negative total adds cells. Else ``pads``."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    wanted = attrs.get("output_shape")
    if wanted is None and auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        return resolve_pads(attrs, spatial, kernel, strides, dilations)
    if wanted is not None:
        wanted = [int(size) for size in wanted][-len(kernel):]  # some exporters write N and C too
    begins, ends = [], []
    for axis, (size, window, stride, dilation, padding) in enumerate(zip(spatial, kernel, strides, dilations, extra)):
        if not isinstance(size, int):
            raise UnsupportedModel(f"ConvTranspose output size over the symbolic dim {size}",
                                   expected="static spatial dims")
        target = wanted[axis] if wanted is not None else size * stride
        total = stride * (size - 1) + padding + dilation * (window - 1) + 1 - target
        if wanted is None:
            total = max(total, 0)
        begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        begins.append(begin)
        ends.append(total - begin)
    return begins + ends


def _unit_height(ctx, value: str, name: str) -> str:
    first, second, length = ctx.builder.type(value).shape
    return ctx.builder.op("reshape", [value], {"shape": (first, second, 1, length)}, hint=name)


register({"ConvTranspose": convert_conv_transpose})
