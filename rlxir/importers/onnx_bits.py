"""ONNX op -> core ops: bit manipulation on the IR's types, by integer arithmetic.

- **BitShift**: LEFT multiplies by a power of two (wrapped to the type's width), RIGHT
  floor-divides (an arithmetic shift on signed types); out-of-range shifts as ONNX's
  reference gives them.
- **BitwiseAnd/Or/Xor** split each operand into its bits along a new last axis, combine
  them per bit and sum them back with two's complement weights; **BitwiseNot** is
  ``-a - 1`` (signed) or ``2^width - 1 - a`` (unsigned).
- **BitCast** between types of one width: integers re-wrap to the other type's range;
  a float's bits are its sign, exponent (``floor(log2 |x|)``, corrected to exact) and
  mantissa, computed exactly in float arithmetic, and the other way round. Every NaN
  becomes the quiet NaN of positive sign (arithmetic cannot see a NaN's payload).
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import onnx_dtype
from rlxir.importers.onnx_ops import Arith, first_dtype, hint, operand
from rlxir.importers.onnx_registry import register

BITS = {DType.i8: 8, DType.u8: 8, DType.i16: 16, DType.i32: 32, DType.u32: 32, DType.i64: 64}
SIGNED = {DType.i8, DType.i16, DType.i32, DType.i64}


def _integer_operands(ctx, node) -> tuple[list[str], DType]:
    names = [name for name in node.input if name]
    dtype = first_dtype(ctx, names)
    if dtype not in BITS:
        raise UnsupportedModel(f"{node.op_type} of {dtype} tensors", expected="integer tensors")
    return [operand(ctx, name, dtype) for name in names], dtype


def floor_divide(f: Arith, a: str, divisor: str) -> str:
    """floor(a / divisor) for a positive integer divisor: (a - a mod divisor) / divisor is
    exact, so the truncating ``div`` gives the floor."""
    return f("div", f("sub", a, f("mod", a, divisor)), divisor, tag="floor_div")


def wrap_bits(f: Arith, value: str, dtype: DType) -> str:
    """An i64 `value` reduced to `dtype`'s width in two's complement, then cast to it (i64
    itself wraps in its own arithmetic)."""
    width = BITS[dtype]
    if width < 64:
        value = f("mod", value, 1 << width, tag="wrapped")
        if dtype in SIGNED:
            value = f("where", f("ge", value, 1 << (width - 1)), f("sub", value, 1 << width), value, tag="signed")
    return value if dtype is DType.i64 else f.builder.op("cast", [value], {"to": dtype}, hint=f.name)


def _powers_of_two(f: Arith, shift: str, top: int) -> str:
    """2 ** shift for shift in [0, top] (clamped there), as i64 picked from a table (the
    IR's pow goes through floats; 2 ** 63 is the table's wrapped -2 ** 63)."""
    table = np.array([1 << k if k < 63 else -(1 << 63) for k in range(top + 1)], dtype=np.int64)
    clamped = f("minimum", f("maximum", shift, 0), top, tag="clamped_shift")
    return f.builder.op("gather", [f.builder.literal(f"{f.name}.powers", table), clamped], {"axis": 0},
                        hint=f"{f.name}.power")


def convert_bit_shift(ctx, node, attrs):
    """BitShift as ONNX's reference defines it for every integer type: LEFT multiplies by
    2^shift wrapped to the width, RIGHT floor-divides (an arithmetic shift on signed types);
    a shift outside [0, width) gives 0 (or -1 for a negative value shifted right)."""
    direction = attrs.get("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise UnsupportedModel(f"BitShift direction {direction!r}", expected="LEFT or RIGHT")
    (a, shift), dtype = _integer_operands(ctx, node)
    width, signed = BITS[dtype], dtype in SIGNED
    f = Arith(ctx, DType.i64, hint(node))
    if dtype is not DType.i64:
        a = f("cast", a, attrs={"to": DType.i64}, tag="a")
        shift = f("cast", shift, attrs={"to": DType.i64}, tag="shift")
    in_range = f("minimum", f("ge", shift, 0), f("lt", shift, width), tag="in_range")
    if direction == "LEFT":
        moved = wrap_bits(f, f("mul", a, _powers_of_two(f, shift, width - 1), tag="moved"), dtype)
        return [ctx.builder.op("where", [in_range, moved, ctx.builder.scalar(0, dtype)], hint=hint(node))]
    top = width - 2 if signed else width - 1  # a signed shift by width - 1 is the sign, as out of range
    moved = floor_divide(f, a, _powers_of_two(f, shift, top))
    in_range = f("minimum", in_range, f("le", shift, top), tag="in_range") if signed else in_range
    beyond = f("where", f("lt", a, 0), -1, 0, tag="beyond") if signed else f.const(0)
    shifted = f("where", in_range, moved, beyond, tag="shifted", final=dtype is DType.i64)
    return [shifted if dtype is DType.i64 else ctx.builder.op("cast", [shifted], {"to": dtype}, hint=hint(node))]


def bits_of(f: Arith, a: str, width: int) -> str:
    """The `width` bits of an i64 `a` (a value of a type that wide), least significant
    first, along a new last axis: floor(a / 2^k) mod 2; the top bit of a 64-bit value is
    its sign."""
    low = min(width, 63)
    powers = f.builder.literal(f"{f.name}.bit_weights", np.array([1 << k for k in range(low)], dtype=np.int64))
    column = f.builder.op("reshape", [a], {"shape": (*f.builder.type(a).shape, 1)}, hint=f"{f.name}.column")
    bits = f("mod", floor_divide(f, column, powers), 2, tag="bits")
    if width == 64:
        sign = f("cast", f("lt", column, 0), attrs={"to": DType.i64}, tag="sign_bit")
        bits = f.builder.op("concat", [bits, sign], {"axis": -1}, hint=f"{f.name}.bits")
    return bits


def convert_bitwise(ctx, node, attrs):
    """BitwiseAnd/Or/Xor: both operands split into bits (`bits_of`, broadcast against each
    other), combined per bit (min, max, not-equal), and summed back with the weights of a
    two's complement number of the type's width."""
    (a, b), dtype = _integer_operands(ctx, node)
    width = BITS[dtype]
    f = Arith(ctx, DType.i64, hint(node))
    wide = [value if dtype is DType.i64 else f("cast", value, attrs={"to": DType.i64}, tag="wide") for value in (a, b)]
    bits_a, bits_b = (bits_of(f, value, width) for value in wide)
    if node.op_type == "BitwiseAnd":
        combined = f("minimum", bits_a, bits_b, tag="combined")
    elif node.op_type == "BitwiseOr":
        combined = f("maximum", bits_a, bits_b, tag="combined")
    else:
        combined = f("cast", f("ne", bits_a, bits_b), attrs={"to": DType.i64}, tag="combined")
    weights = [1 << k for k in range(width)]
    if dtype in SIGNED:
        weights[-1] = -(1 << (width - 1))
    weight = f.builder.literal(f"{f.name}.weights", np.array(weights, dtype=np.int64))
    total = f("reduce_sum", f("mul", combined, weight), attrs={"axes": (-1,), "keepdims": False}, tag="total",
              final=dtype is DType.i64)
    return [total if dtype is DType.i64 else ctx.builder.op("cast", [total], {"to": dtype}, hint=hint(node))]


def convert_bitwise_not(ctx, node, attrs):
    """~a is -a - 1 on signed types and (2^width - 1) - a on unsigned ones."""
    (a,), dtype = _integer_operands(ctx, node)
    f = Arith(ctx, dtype, hint(node))
    if dtype in SIGNED:
        return [f("sub", f("neg", a), 1, final=True)]
    return [f("sub", (1 << BITS[dtype]) - 1, a, final=True)]


# --- BitCast -----------------------------------------------------------------------------
FLOAT_LAYOUT = {DType.f32: (8, 23), DType.f64: (11, 52), DType.f16: (5, 10), DType.bf16: (8, 7)}
"""Exponent and mantissa bits of each float type."""

WIDTH = {**BITS, DType.f32: 32, DType.f64: 64, DType.f16: 16, DType.bf16: 16, DType.bool: 8}


def convert_bitcast(ctx, node, attrs):
    x = ctx.value(node.input[0])
    source = ctx.builder.type(x).dtype
    target = onnx_dtype(attrs["to"], "BitCast's target")
    if WIDTH.get(source) is None or WIDTH.get(source) != WIDTH.get(target):
        raise UnsupportedModel(f"BitCast from {source} to {target}", expected="two types of one bit width")
    name = hint(node)
    if source is target:
        return [x]
    if source is DType.bool:
        return [ctx.builder.op("cast", [x], {"to": target}, hint=name)]
    if target is DType.bool:  # a byte read as a bool: any set bit is true
        return [ctx.builder.op("ne", [x, ctx.builder.scalar(0, source)], hint=name)]
    f = Arith(ctx, DType.i64, name)
    if source.is_float:
        bits = float_bits(ctx, x, source, name)
    else:
        bits = x if source is DType.i64 else f("cast", x, attrs={"to": DType.i64}, tag="wide")
    return [bits_float(ctx, bits, target, name) if target.is_float else wrap_bits(f, bits, target)]


def float_bits(ctx, x: str, dtype: DType, name: str) -> str:
    """The bit pattern of float `x` as an i64 holding the unsigned value of `dtype`'s width
    (its sign bit set for negatives and -0; NaN the positive quiet NaN)."""
    exponent_bits, mantissa_bits = FLOAT_LAYOUT[dtype]
    wide = DType.f64 if dtype is DType.f64 else DType.f32
    value = x if dtype is wide else ctx.builder.op("cast", [x], {"to": wide}, hint=f"{name}.wide")
    f, i = Arith(ctx, wide, name), Arith(ctx, DType.i64, name)
    bias, top = (1 << (exponent_bits - 1)) - 1, (1 << exponent_bits) - 1
    a = f("abs", value, tag="abs")
    exponent = _exact_exponent(f, a)
    normal = f("ge", a, 2.0 ** (1 - bias), tag="normal")
    scale = f("pow", 2.0, exponent, tag="scale")
    fraction = f("mul", f("sub", f("div", a, scale), 1.0), 2.0 ** mantissa_bits, tag="fraction")
    tiny = f("mul", f("mul", a, 2.0 ** (bias - 1)), 2.0 ** mantissa_bits, tag="subnormal")
    field = f("where", normal, f("add", exponent, float(bias)), 0.0, tag="exponent_field")
    mantissa = f("where", normal, fraction, tiny, tag="mantissa_field")
    infinite = f("gt", a, float(_largest(dtype)), tag="infinite")
    nan = f("ne", value, value, tag="nan")
    field = f("where", f.builder.op("maximum", [infinite, nan], hint=f"{name}.special"), float(top), field,
              tag="exponent_field")
    mantissa = f("where", infinite, 0.0, f("where", nan, 2.0 ** (mantissa_bits - 1), mantissa), tag="mantissa_field")
    negative = f.builder.op("maximum", [f("lt", value, 0.0), f("lt", f("div", 1.0, value), 0.0)], hint=f"{name}.negative")
    negative = f.builder.op("minimum", [negative, f.builder.op("eq", [nan, f.builder.scalar(False, DType.bool)],
                                                               hint=f"{name}.number")], hint=f"{name}.sign")
    whole = i("add", i("mul", i("cast", field, attrs={"to": DType.i64}), 1 << mantissa_bits),
              i("cast", mantissa, attrs={"to": DType.i64}), tag="magnitude_bits")
    width = exponent_bits + mantissa_bits + 1
    sign_weight = -(1 << 63) if width == 64 else 1 << (width - 1)  # i64 wraps the top bit of a 64-bit pattern
    return i("add", whole, i("where", negative, sign_weight, 0, tag="sign_bits"), tag="bits")


def _exact_exponent(f: Arith, a: str) -> str:
    """floor(log2 a) for a positive normal `a`, as a float: estimated by logarithms and
    moved by one where 2^e overshoots or undershoots (powers of two are exact)."""
    estimate = f("floor", f("div", f("log", a), math.log(2.0)), tag="log2")
    power = f("pow", 2.0, estimate, tag="power")
    estimate = f("where", f("gt", power, a), f("sub", estimate, 1.0), estimate, tag="log2_low")
    power = f("pow", 2.0, estimate, tag="power")
    return f("where", f("le", f("mul", power, 2.0), a), f("add", estimate, 1.0), estimate, tag="exponent")


def bits_float(ctx, bits: str, dtype: DType, name: str) -> str:
    """The float of `dtype` whose bit pattern is the low bits of i64 `bits`."""
    exponent_bits, mantissa_bits = FLOAT_LAYOUT[dtype]
    width = exponent_bits + mantissa_bits + 1
    wide = DType.f64 if dtype is DType.f64 else DType.f32
    i, f = Arith(ctx, DType.i64, name), Arith(ctx, wide, name)
    bias, top = (1 << (exponent_bits - 1)) - 1, (1 << exponent_bits) - 1
    if width == 64:
        negative = i("lt", bits, 0, tag="negative")
        rest = i("where", negative, i("sub", bits, -(1 << 63)), bits, tag="rest")  # clears the top bit
    else:
        unsigned = i("mod", bits, 1 << width, tag="unsigned")
        negative = i("ge", unsigned, 1 << (width - 1), tag="negative")
        rest = i("mod", unsigned, 1 << (width - 1), tag="rest")
    field = floor_divide(i, rest, i.const(1 << mantissa_bits))
    mantissa = f("cast", i("mod", rest, 1 << mantissa_bits, tag="mantissa"), attrs={"to": wide}, tag="mantissa")
    exponent = f("cast", field, attrs={"to": wide}, tag="exponent")
    fraction = f("add", f("mul", mantissa, 2.0 ** -mantissa_bits), 1.0, tag="fraction")
    normal = f("mul", fraction, f("pow", 2.0, f("sub", exponent, float(bias))), tag="normal")
    tiny = f("mul", f("mul", mantissa, 2.0 ** (1 - bias)), 2.0 ** -mantissa_bits, tag="subnormal")
    special = f("where", f("eq", mantissa, 0.0), math.inf, math.nan, tag="special")
    magnitude = f("where", f("eq", exponent, 0.0), tiny, f("where", f("eq", exponent, float(top)), special, normal),
                  tag="magnitude")
    result = f("where", negative, f("neg", magnitude), magnitude, final=dtype is wide)
    return result if dtype is wide else ctx.builder.op("cast", [result], {"to": dtype}, hint=name)


def _largest(dtype: DType) -> float:
    exponent_bits, mantissa_bits = FLOAT_LAYOUT[dtype]
    bias = (1 << (exponent_bits - 1)) - 1
    return (2.0 - 2.0 ** -mantissa_bits) * 2.0 ** bias


register({
    "BitShift": convert_bit_shift, "BitwiseAnd": convert_bitwise, "BitwiseOr": convert_bitwise,
    "BitwiseXor": convert_bitwise, "BitwiseNot": convert_bitwise_not, "BitCast": convert_bitcast,
})
