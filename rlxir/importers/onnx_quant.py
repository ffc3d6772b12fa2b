"""ONNX op -> core ops: linear quantization on the IR's integer types (u8, i8, i16).

- **DequantizeLinear**: (x - zero_point) * scale, computed in f32 as ONNX's reference does,
  then cast to the scale's type (or ``output_dtype``).
- **QuantizeLinear**: x / scale in x's type (or ``precision``), rounded half to even, plus
  the zero point, clipped to the output type's range (the zero point's type, else
  ``output_dtype``, else u8).
- **DynamicQuantizeLinear**: u8 with the scale and zero point of x's range (widened to 0).
- **MatMulInteger**: (A - a_zero_point) @ (B - b_zero_point) in i32.
- **QLinearMatMul**: that product times a_scale * b_scale / y_scale (the factor in the
  scales' type, the product in f64, as the reference computes), quantized to y.

A scale or zero point is per tensor (one element), per axis (1-D along ``axis``; for the
matmuls per row of A, per column of B) or blocked (``block_size`` positions of ``axis``
share one, repeated by a gather). Float8/int4 types have no IR dtype and are refused where
the type is read; ``saturate`` only concerns float8 outputs, so it never applies here.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import onnx_dtype
from rlxir.importers.onnx_math import round_half_even
from rlxir.importers.onnx_ops import Arith, along, hint, operand, optional_input, product
from rlxir.importers.onnx_registry import register
from rlxir.ops import normalize_axis

RANGES = {DType.u8: (0, 255), DType.i8: (-128, 127), DType.i16: (-32768, 32767)}
"""The quantized types the IR holds, with their ranges."""


def parameter(ctx, node, index: int, x_shape: tuple, axis: int, block: int, dtype: DType) -> str | None:
    """Input `index` (a scale or zero point) as `dtype`, shaped to broadcast against x: one
    element as a scalar, 1-D along `axis`, blocked ones repeated `block` times along it."""
    name = optional_input(node, index)
    if name is None:
        return None
    value = operand(ctx, name, dtype)
    shape = tuple(ctx.builder.type(value).shape)
    label = f"{hint(node)}.{node.op_type.lower()}_{index}"
    if product(shape) == 1:
        return value if not shape else ctx.builder.op("reshape", [value], {"shape": ()}, hint=label)
    if not -len(x_shape) <= axis < len(x_shape):
        raise UnsupportedModel(f"{node.op_type} along axis {axis} of a rank-{len(x_shape)} input",
                               expected=f"an axis in [{-len(x_shape)}, {len(x_shape)})")
    axis = normalize_axis(axis, len(x_shape))
    if not block:
        if len(shape) != 1:
            raise UnsupportedModel(f"{node.op_type} input {index} of shape {list(shape)} without block_size",
                                   expected="one element, or a 1-D tensor along axis")
        return ctx.builder.op("reshape", [value], {"shape": along(len(x_shape), axis, shape[0])}, hint=label)
    size = x_shape[axis]
    if not isinstance(size, int) or len(shape) != len(x_shape) or shape[axis] != -(-size // block):
        raise UnsupportedModel(f"{node.op_type} input {index} of shape {list(shape)} for blocks of {block} along "
                               f"axis {axis} of {list(x_shape)}",
                               expected="x's shape with ceil(dim / block_size) on axis (a static dim)")
    blocks = ctx.builder.literal(f"{label}.blocks", np.arange(size, dtype=np.int64) // block)
    return ctx.builder.op("gather", [value, blocks], {"axis": axis}, hint=label)


def _layout(ctx, node, attrs, x: str) -> tuple[tuple, int, int]:
    """x's shape, the axis (checked where a per-axis parameter reads it), block_size."""
    shape = tuple(ctx.shape(x))
    axis = int(attrs.get("axis", 1))
    block = int(attrs.get("block_size", 0))
    if block < 0:
        raise UnsupportedModel(f"{node.op_type} with block_size {block}", expected="block_size >= 0")
    return shape, axis, block


def convert_dequantize(ctx, node, attrs):
    x = node.input[0]
    source = ctx.type(x).dtype
    if not source.is_integer:
        raise UnsupportedModel(f"DequantizeLinear of {source} data", expected="integer data (u8, i8, i16, i32)")
    shape, axis, block = _layout(ctx, node, attrs, x)
    target = onnx_dtype(attrs["output_dtype"], "DequantizeLinear's output_dtype") if attrs.get("output_dtype") \
        else ctx.type(node.input[1]).dtype
    f = Arith(ctx, DType.f32, hint(node))
    value = f("cast", ctx.value(x), attrs={"to": DType.f32}, tag="f32")
    zero = parameter(ctx, node, 2, shape, axis, block, DType.f32)
    if zero is not None:
        value = f("sub", value, zero, tag="centered")
    scaled = f("mul", value, parameter(ctx, node, 1, shape, axis, block, DType.f32), final=target is DType.f32)
    return [scaled if target is DType.f32 else ctx.builder.op("cast", [scaled], {"to": target}, hint=hint(node))]


def convert_quantize(ctx, node, attrs):
    x = node.input[0]
    shape, axis, block = _layout(ctx, node, attrs, x)
    zero_name = optional_input(node, 2)
    target = ctx.type(zero_name).dtype if zero_name else \
        onnx_dtype(attrs["output_dtype"], "QuantizeLinear's output_dtype") if attrs.get("output_dtype") else DType.u8
    if target not in RANGES:
        raise UnsupportedModel(f"QuantizeLinear to {target}", expected="u8, i8 or i16")
    x_type, scale_type = ctx.type(x).dtype, ctx.type(node.input[1]).dtype
    compute = onnx_dtype(attrs["precision"], "QuantizeLinear's precision") if attrs.get("precision") else \
        _promoted(x_type, scale_type)
    f = Arith(ctx, compute, hint(node))
    ratio = f("div", operand(ctx, x, compute), parameter(ctx, node, 1, shape, axis, block, compute), tag="ratio")
    rounded = round_half_even(f, ratio)
    wide = DType.f64 if compute is DType.f64 else DType.f32  # a zero point of i16 is exact in f32, not f16
    g = Arith(ctx, wide, hint(node))
    if wide is not compute:
        rounded = g("cast", rounded, attrs={"to": wide}, tag="wide")
    zero = parameter(ctx, node, 2, shape, axis, block, wide)
    return [_clipped(g, rounded if zero is None else g("add", rounded, zero, tag="shifted"), target)]


def _promoted(a: DType, b: DType) -> DType:
    """The type NumPy divides an `a` by a `b` in (both floats)."""
    for dtype in (a, b):
        if not dtype.is_float:
            raise UnsupportedModel(f"QuantizeLinear of {a} by a {b} scale", expected="float data and scale")
    return a if a is b else DType.f64 if DType.f64 in (a, b) else DType.f32


def _clipped(f: Arith, value: str, target: DType) -> str:
    low, high = RANGES[target]
    clipped = f("minimum", f("maximum", value, float(low), tag="low"), float(high), tag="clipped")
    return f.builder.op("cast", [clipped], {"to": target}, hint=f.name)


def convert_dynamic_quantize(ctx, node, attrs):
    """DynamicQuantizeLinear: u8 over the range of x widened to hold 0: scale = (max - min)
    / 255, zero point = round(clip(-min / scale, 0, 255)), then QuantizeLinear. An all-zero
    x (a range of 0, where the formula divides by zero) gets scale 1 and zero point 0, as
    onnxruntime gives."""
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    if dtype is not DType.f32:
        raise UnsupportedModel(f"DynamicQuantizeLinear of {dtype} data", expected="f32 data")
    name = hint(node)
    f = Arith(ctx, DType.f32, name)
    every = {"axes": tuple(range(ctx.builder.type(x).rank)), "keepdims": False}
    low = f("minimum", f("reduce_min", x, attrs=every, tag="min"), 0.0, tag="low")
    high = f("maximum", f("reduce_max", x, attrs=every, tag="max"), 0.0, tag="high")
    span = f("sub", high, low, tag="range")
    span = f("where", f("eq", span, 0.0, tag="empty"), 255.0, span, tag="span")
    scale = f.builder.op("div", [span, f.const(255.0)], hint=hint(node, 1))
    zero_float = f("minimum", f("maximum", f("neg", f("div", low, scale)), 0.0), 255.0, tag="zero_float")
    zero = f.builder.op("cast", [round_half_even(f, zero_float)], {"to": DType.u8}, hint=hint(node, 2))
    rounded = round_half_even(f, f("div", x, scale, tag="ratio"))
    shifted = f("add", rounded, f("cast", zero, attrs={"to": DType.f32}, tag="zero"), tag="shifted")
    return [_clipped(f, shifted, DType.u8), scale, zero]


# --- integer matmuls ---------------------------------------------------------------------
def _centered(ctx, node, value_index: int, zero_index: int, per_row: bool, name: str) -> str:
    """An integer matmul operand in i32 minus its zero point (a 1-D zero point is per row
    of A, per column of B)."""
    value = operand(ctx, node.input[value_index], DType.i32)
    zero_name = optional_input(node, zero_index)
    if zero_name is None:
        return value
    zero = operand(ctx, zero_name, DType.i32)
    zero_shape = ctx.builder.type(zero).shape
    if per_row and len(zero_shape) == 1 and zero_shape[0] != 1:
        zero = ctx.builder.op("reshape", [zero], {"shape": (zero_shape[0], 1)}, hint=f"{name}.rows")
    return ctx.builder.op("sub", [value, zero], hint=f"{name}.centered")


def convert_matmul_integer(ctx, node, attrs):
    name = hint(node)
    a = _centered(ctx, node, 0, 2, True, f"{name}.a")
    b = _centered(ctx, node, 1, 3, False, f"{name}.b")
    return [ctx.builder.op("matmul", [a, b], hint=name)]


def convert_qlinear_matmul(ctx, node, attrs):
    """QLinearMatMul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero)."""
    name = hint(node)
    a = _centered(ctx, node, 0, 2, True, f"{name}.a")
    b = _centered(ctx, node, 3, 5, False, f"{name}.b")
    product_value = ctx.builder.op("matmul", [a, b], hint=f"{name}.product")
    scale_type = ctx.type(node.input[1]).dtype
    s = Arith(ctx, scale_type, name)
    factor = s("div", s("mul", _scale(ctx, node, 1, True, name), _scale(ctx, node, 4, False, name), tag="scales"),
               operand(ctx, node.input[6], scale_type), tag="factor")
    f = Arith(ctx, DType.f64, name)
    scaled = f("mul", f("cast", product_value, attrs={"to": DType.f64}, tag="product64"),
               f("cast", factor, attrs={"to": DType.f64}, tag="factor64"), tag="scaled")
    zero_name = optional_input(node, 7)
    target = ctx.type(zero_name).dtype if zero_name else ctx.type(node.input[0]).dtype
    if target not in RANGES:
        raise UnsupportedModel(f"QLinearMatMul to {target}", expected="u8, i8 or i16")
    if zero_name is not None:
        scaled = f("add", scaled, operand(ctx, zero_name, DType.f64), tag="shifted")
    return [_clipped(f, round_half_even(f, scaled), target)]


def _scale(ctx, node, index: int, per_row: bool, name: str) -> str:
    value = operand(ctx, node.input[index], ctx.type(node.input[1]).dtype)
    shape = ctx.builder.type(value).shape
    if per_row and len(shape) == 1 and shape[0] != 1:
        return ctx.builder.op("reshape", [value], {"shape": (shape[0], 1)}, hint=f"{name}.scale_rows")
    return value


register({"DequantizeLinear": convert_dequantize, "QuantizeLinear": convert_quantize,
          "DynamicQuantizeLinear": convert_dynamic_quantize,
          "MatMulInteger": convert_matmul_integer, "QLinearMatMul": convert_qlinear_matmul})
