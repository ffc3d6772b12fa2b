"""ONNX op -> core ops: the quantized convolutions, ConvInteger and QLinearConv.

Both convolve ``x - x_zero_point`` by ``w - w_zero_point`` (the weight's zero point one, or
one per output channel) in f64, where sums of 8-bit products are exact (far below 2^53),
through the float Conv's path (`rlxir.importers.onnx_nn.convolve`, so 1, 2 and 3 spatial
dims). ConvInteger casts that to i32. QLinearConv adds the bias (quantized at scale
``x_scale * w_scale``), rescales by ``x_scale * w_scale / y_scale``, rounds half to even,
adds y_zero_point and saturates to the output's 8-bit range.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, round_half_even
from rlxir.importers.onnx_nn import convolve
from rlxir.importers.onnx_ops import hint, operand, optional_input
from rlxir.importers.onnx_registry import register


def convert_conv_integer(ctx, node, attrs):
    x = _minus_zero_point(ctx, ctx.value(node.input[0]), optional_input(node, 2), None, f"{hint(node)}.x")
    result = _centered_conv(ctx, node, attrs, x, node.input[1], optional_input(node, 3), f"{hint(node)}.f64")
    return [ctx.builder.op("cast", [result], {"to": DType.i32}, hint=hint(node))]


def convert_qlinear_conv(ctx, node, attrs):
    name, b = hint(node), ctx.builder
    x = _minus_zero_point(ctx, ctx.value(node.input[0]), node.input[2], None, f"{name}.x")
    total = _centered_conv(ctx, node, attrs, x, node.input[3], node.input[5], f"{name}.accumulated")
    out_channels = ctx.shape(node.input[3])[0]
    column = (out_channels,) + (1,) * (b.type(total).rank - 2)
    if optional_input(node, 8):
        bias = b.op("reshape", [operand(ctx, node.input[8], DType.f64)], {"shape": column}, hint=f"{name}.bias")
        total = b.op("add", [total, bias], hint=f"{name}.biased")
    scale = b.op("mul", [_per_channel(ctx, node.input[1], column, f"{name}.x_scale"),
                         _per_channel(ctx, node.input[4], column, f"{name}.w_scale")], hint=f"{name}.in_scale")
    scale = b.op("div", [scale, _per_channel(ctx, node.input[6], column, f"{name}.y_scale")], hint=f"{name}.scale")
    rescaled = b.op("mul", [total, scale], hint=f"{name}.rescaled")
    rounded = round_half_even(ctx.builder, rescaled, f"{name}.rounded")
    shifted = b.op("add", [rounded, _per_channel(ctx, node.input[7], column, f"{name}.y_zero")], hint=f"{name}.shifted")
    out_dtype = ctx.type(node.input[7]).dtype
    if out_dtype not in (DType.u8, DType.i8):
        raise UnsupportedModel(f"QLinearConv to {out_dtype.value}", expected="u8 or i8 output")
    info = np.iinfo(out_dtype.numpy)
    low = b.op("maximum", [shifted, b.scalar(float(info.min), DType.f64)], hint=f"{name}.low")
    high = b.op("minimum", [low, b.scalar(float(info.max), DType.f64)], hint=f"{name}.saturated")
    return [b.op("cast", [high], {"to": out_dtype}, hint=name)]


def _per_channel(ctx, onnx_name: str, column: tuple, name: str) -> str:
    """A scale or zero point as f64: a scalar, or a per-output-channel column."""
    value = operand(ctx, onnx_name, DType.f64)
    type_ = ctx.builder.type(value)
    if type_.rank == 0:
        return value
    if type_.rank == 1 and type_.shape[0] not in (1, column[0]):
        raise UnsupportedModel(f"a scale or zero point of shape {list(type_.shape)}",
                               expected=f"a scalar or one per output channel ({column[0]})")
    shape = column if type_.shape[0] != 1 else ()
    return ctx.builder.op("reshape", [value], {"shape": shape}, hint=name)


def _centered_conv(ctx, node, attrs, x: str, w_name: str, w_zero: str | None, name: str) -> str:
    dtype = DType.f64
    static = ctx.static(w_name) if w_name not in ctx.values else None
    static_zero = ctx.static(w_zero) if w_zero and w_zero not in ctx.values else (0 if not w_zero else None)
    if static is not None and static.dtype != object and static_zero is not None:
        zero = np.asarray(static_zero, np.float64)
        if zero.size not in (1, static.shape[0]):
            raise UnsupportedModel(f"a weight zero point of shape {list(zero.shape)}",
                                   expected=f"a scalar or one per output channel ({static.shape[0]})")
        column = zero.reshape((-1,) + (1,) * (static.ndim - 1)) if zero.size > 1 else zero
        weight = np.asarray(static, np.float64) - column
    else:
        channels = (ctx.shape(w_name)[0],) + (1,) * (len(ctx.shape(w_name)) - 1)
        weight = _minus_zero_point(ctx, operand(ctx, w_name, dtype), w_zero, channels, f"{name}.w")
    return convolve(ctx, node, attrs, x, weight, None, None, name)


def _minus_zero_point(ctx, value: str, zero_point: str | None, column: tuple | None, name: str) -> str:
    """`value` as f64 less its zero point (a scalar, or per leading channel as `column`)."""
    wide = value if ctx.builder.type(value).dtype is DType.f64 else \
        ctx.builder.op("cast", [value], {"to": DType.f64}, hint=f"{name}.f64")
    if zero_point is None:
        return wide
    zero = operand(ctx, zero_point, DType.f64)
    if column is not None and ctx.builder.type(zero).rank == 1 and ctx.builder.type(zero).shape[0] != 1:
        zero = ctx.builder.op("reshape", [zero], {"shape": column}, hint=f"{name}.zero_column")
    elif ctx.builder.type(zero).rank:
        zero = ctx.builder.op("reshape", [zero], {"shape": ()}, hint=f"{name}.zero")
    return ctx.builder.op("sub", [wide, zero], hint=f"{name}.centered")


register({"ConvInteger": convert_conv_integer, "QLinearConv": convert_qlinear_conv})
