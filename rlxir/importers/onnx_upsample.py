"""ONNX op -> core ops: ConvTranspose, the learned way a decoder grows its feature maps.

- **ConvTranspose** is the input gradient of a convolution: ``conv2d_grad_input`` of the
  conv2d that maps the (larger) output back to the input, whose weight has ONNX's
  ``[C_in, C_out / group, kH, kW]`` layout as it stands. The output size is
  ``stride (in - 1) + output_padding + dilation (k - 1) + 1 - pad_begin - pad_end``;
  output_padding cells receive no taps (zeros, then the bias). A 1-D one runs over a unit
  height.
Resize and Upsample are in `rlxir.importers.onnx_resize`.
"""

from __future__ import annotations



from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_ops import hint, operand, optional_input
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


register({"ConvTranspose": convert_conv_transpose})
