"""ONNX op -> core ops: elementwise math the IR has no op for, decomposed.

- **Activations**: Softplus, Elu, Selu, Celu, ThresholdedRelu, Shrink, Softsign, Swish, Mish (SwiGLU is in `onnx_decoder`).
- **Rounding and tests**: Round (half to even), Sign, IsInf.
- **Trigonometry**: Tan, Sinh, Cosh, Asinh, Acosh, Atanh from ``exp``/``log``/``sqrt``
  identities written the way a libm keeps them accurate (``expm1`` and ``log1p`` by Kahan's
  correction, so small arguments keep their relative precision); Atan, Asin, Acos from one
  range-reduced odd polynomial for atan (`ATAN_COEFFICIENTS`). f16 and bf16 inputs are
  computed in f32 and rounded back once.
- **Det** of matrices up to 4x4, by cofactor expansion.

Bit manipulation (BitShift, Bitwise*, BitCast) is in `rlxir.importers.onnx_bits`.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import Arith, hint
from rlxir.importers.onnx_registry import register
from rlxir.symbolic import format_dim
from rlxir.types import TensorType

BF16_MAX = float(np.array(0x7F7F0000, dtype=np.uint32).view(np.float32))
"""The largest finite bf16 (f32's exponent, 7 mantissa bits)."""

LARGE_ARGUMENT = {DType.f32: 2.0**12, DType.f64: 2.0**28}
"""Per compute dtype: above this, asinh(a) and acosh(a) are log(a) + log(2) to within the
dtype's rounding (the next term, 1/(4 a^2), is below it)."""


def _atan_coefficients(terms: int) -> tuple[float, ...]:
    """c[k] with atan(u) ~= u + u * z * sum(c[k] z^k), z = u^2, for |u| <= tan(pi/8):
    a least-squares fit in z on Chebyshev points of [0.0004, tan(pi/8)^2] (computed in f64,
    once; smaller u would only add the cancellation of atan(u) - u to the fit)."""
    low, high = 0.0004, math.tan(math.pi / 8) ** 2
    z = low + (high - low) * (1 - np.cos(np.linspace(0, np.pi, 400))) / 2
    u = np.sqrt(z)
    target = (np.arctan(u) - u) / (u * z)
    powers = np.stack([z**k for k in range(terms)], axis=1)
    coefficients, *_ = np.linalg.lstsq(powers, target, rcond=None)
    return tuple(float(c) for c in coefficients)


ATAN_COEFFICIENTS = {DType.f64: _atan_coefficients(14), DType.f32: _atan_coefficients(7)}
"""Per compute dtype: enough terms for an error below the dtype's rounding."""


class FloatMath(Arith):
    """Arith on a float node's input `x`, computed in f32 for f16/bf16 inputs; `result`
    makes the last op, named after the node and cast back to the input's dtype."""

    def __init__(self, ctx, node):
        value = ctx.value(node.input[0])
        self.given = ctx.builder.type(value).dtype
        if not self.given.is_float:
            raise UnsupportedModel(f"{node.op_type} of a {self.given} tensor", expected="a float tensor")
        super().__init__(ctx, DType.f32 if self.given.is_low_precision else self.given, hint(node))
        self.x = value if self.dtype is self.given else \
            self.builder.op("cast", [value], {"to": self.dtype}, hint=f"{self.name}.wide")

    def result(self, op: str, *operands) -> str:
        if self.dtype is self.given:
            return self(op, *operands, final=True)
        return self.builder.op("cast", [self(op, *operands)], {"to": self.given}, hint=self.name)


# --- accurate building blocks -----------------------------------------------------------
def expm1(f: Arith, x: str) -> str:
    """exp(x) - 1 without cancellation near 0: (u - 1) * x / log(u) for u = exp(x) (Kahan),
    x itself where u rounds to 1, plain u - 1 for |x| >= 0.5 (where it is exact enough and
    the ratio would meet inf / inf)."""
    u = f("exp", x, tag="exp")
    less = f("sub", u, 1.0, tag="u_minus_1")
    ratio = f("div", f("mul", less, x), f("log", u), tag="expm1_ratio")
    near = f("where", f("eq", u, 1.0), x, ratio, tag="expm1_near")
    return f("where", f("lt", f("abs", x), 0.5), near, less, tag="expm1")


def log1p(f: Arith, y: str) -> str:
    """log(1 + y) without losing y's precision near 0: log(u) * y / (u - 1) for u = 1 + y
    (Kahan), y where u rounds to 1, plain log(u) for |y| >= 0.5."""
    u = f("add", y, 1.0, tag="one_plus")
    log_u = f("log", u, tag="log_u")
    ratio = f("mul", log_u, f("div", y, f("sub", u, 1.0)), tag="log1p_ratio")
    near = f("where", f("eq", u, 1.0), y, ratio, tag="log1p_near")
    return f("where", f("lt", f("abs", y), 0.5), near, log_u, tag="log1p")


def with_sign_of(f: Arith, x: str, magnitude: str, final: bool = False) -> str:
    """`magnitude` (of an odd function of |x|) carrying the sign of `x`."""
    return f("where", f("lt", x, 0.0), f("neg", magnitude), magnitude, tag="signed", final=final)


def atan(f: Arith, x: str, final: bool = False) -> str:
    """atan(x): |x| > 1 reduces to pi/2 - atan(1/|x|), then t > tan(pi/8) to pi/4 +
    atan((t - 1)/(t + 1)), leaving |u| <= tan(pi/8) for the odd polynomial."""
    magnitude = f("abs", x, tag="abs")
    big = f("gt", magnitude, 1.0, tag="big")
    t = f("where", big, f("div", 1.0, magnitude), magnitude, tag="t")
    middle = f("gt", t, math.tan(math.pi / 8), tag="middle")
    u = f("where", middle, f("div", f("sub", t, 1.0), f("add", t, 1.0)), t, tag="u")
    z = f("mul", u, u, tag="z")
    coefficients = ATAN_COEFFICIENTS[DType.f64 if f.dtype is DType.f64 else DType.f32]
    series = f("mul", z, coefficients[-1], tag="series")
    for coefficient in reversed(coefficients[:-1]):
        series = f("mul", f("add", series, coefficient), z, tag="series")
    small = f("add", u, f("mul", u, series), tag="atan_small")
    reduced = f("where", middle, f("add", small, math.pi / 4), small, tag="atan_t")
    positive = f("where", big, f("sub", math.pi / 2, reduced), reduced, tag="atan_abs")
    return with_sign_of(f, x, positive, final)


# --- activations ----------------------------------------------------------------------
def convert_softplus(ctx, node, attrs):
    """log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): no overflow for large x."""
    f = FloatMath(ctx, node)
    tail = log1p(f, f("exp", f("neg", f("abs", f.x)), tag="decay"))
    return [f.result("add", f("maximum", f.x, 0.0), tail)]


def convert_elu(ctx, node, attrs):
    f = FloatMath(ctx, node)
    negative = f("mul", expm1(f, f.x), attrs.get("alpha", 1.0), tag="negative")
    return [f.result("where", f("gt", f.x, 0.0), f.x, negative)]


def convert_selu(ctx, node, attrs):
    alpha = attrs.get("alpha", 1.67326319217681884765625)
    gamma = attrs.get("gamma", 1.05070102214813232421875)
    f = FloatMath(ctx, node)
    negative = f("mul", expm1(f, f.x), alpha * gamma, tag="negative")
    return [f.result("where", f("gt", f.x, 0.0), f("mul", f.x, gamma), negative)]


def convert_celu(ctx, node, attrs):
    alpha = attrs.get("alpha", 1.0)
    f = FloatMath(ctx, node)
    negative = f("mul", expm1(f, f("div", f.x, alpha)), alpha, tag="negative")
    return [f.result("add", f("maximum", f.x, 0.0), f("minimum", negative, 0.0))]


def convert_thresholded_relu(ctx, node, attrs):
    f = FloatMath(ctx, node)
    return [f.result("where", f("gt", f.x, attrs.get("alpha", 1.0)), f.x, 0.0)]


def convert_shrink(ctx, node, attrs):
    """Shrink: x + bias below -lambd, x - bias above lambd, 0 between. On integers the
    thresholds compare as floor(lambd) does (the same for integer x); a fractional bias
    would need a rounding ONNX leaves to the cast, so it is refused there."""
    bias, lambd = float(attrs.get("bias", 0.0)), float(attrs.get("lambd", 0.5))
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    if dtype.is_integer:
        if not bias.is_integer():
            raise UnsupportedModel(f"Shrink of an integer tensor with the fractional bias {bias}",
                                   expected="an integral bias for integer inputs")
        bias, lambd = int(bias), math.floor(lambd)
        f = Arith(ctx, dtype, hint(node))
        below, above = f("lt", x, -lambd, tag="below"), f("gt", x, lambd, tag="above")
        middle = f("where", above, f("sub", x, bias), 0, tag="above_or_zero")
        return [f("where", below, f("add", x, bias), middle, final=True)]
    f = FloatMath(ctx, node)
    below, above = f("lt", f.x, -lambd, tag="below"), f("gt", f.x, lambd, tag="above")
    middle = f("where", above, f("sub", f.x, bias), 0.0, tag="above_or_zero")
    return [f.result("where", below, f("add", f.x, bias), middle)]


def convert_softsign(ctx, node, attrs):
    f = FloatMath(ctx, node)
    return [f.result("div", f.x, f("add", f("abs", f.x), 1.0))]


def convert_swish(ctx, node, attrs):
    f = FloatMath(ctx, node)
    alpha = attrs.get("alpha", 1.0)
    scaled = f.x if alpha == 1.0 else f("mul", f.x, alpha)
    return [f.result("mul", f.x, f("sigmoid", scaled))]


def convert_mish(ctx, node, attrs):
    """x * tanh(softplus(x)), softplus as log1p(exp(x)) so a very negative x keeps its tiny
    (not zero) result."""
    f = FloatMath(ctx, node)
    softplus = log1p(f, f("exp", f.x))
    return [f.result("mul", f.x, f("tanh", softplus))]


# --- rounding and tests -----------------------------------------------------------------
def convert_round(ctx, node, attrs):
    f = FloatMath(ctx, node)
    return [_narrowed(f, round_half_even(f, f.x, final=f.dtype is f.given))]


def round_half_even(f: Arith, x: str, final: bool = False) -> str:
    """Round half to even: floor(x), plus 1 above the half, plus floor(x) mod 2 at exactly
    the half (x - floor(x) is exact); inf and NaN give floor's own result."""
    down = f("floor", x)
    fraction = f("sub", x, down, tag="fraction")
    up = f("where", f("gt", fraction, 0.5), f("add", down, 1.0), down, tag="nearest")
    even = f("add", down, f("mod", down, 2.0), tag="even")
    return f("where", f("eq", fraction, 0.5), even, up, tag="rounded", final=final)


def convert_sign(ctx, node, attrs):
    x = ctx.value(node.input[0])
    f = Arith(ctx, ctx.builder.type(x).dtype, hint(node))
    negative = f("where", f("lt", x, 0), -1, x, tag="negative") if f.dtype not in (DType.u8, DType.u32) else x
    return [f("where", f("gt", x, 0), 1, negative, final=True)]  # zero (and NaN) stay themselves


def convert_isinf(ctx, node, attrs):
    """IsInf: x above (below) the dtype's largest finite value (no inf literal needed)."""
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    name = hint(node)
    if not dtype.is_float:
        return [ctx.builder.splat(name, False, TensorType(DType.bool, ctx.builder.type(x).shape))]
    largest = BF16_MAX if dtype is DType.bf16 else float(np.finfo(dtype.numpy).max)
    f = Arith(ctx, dtype, name)
    positive, negative = bool(attrs.get("detect_positive", 1)), bool(attrs.get("detect_negative", 1))
    if positive and negative:
        return [f("gt", f("abs", x), largest, final=True)]
    if positive:
        return [f("gt", x, largest, final=True)]
    if negative:
        return [f("lt", x, -largest, final=True)]
    return [ctx.builder.splat(name, False, TensorType(DType.bool, ctx.builder.type(x).shape))]


# --- trigonometry ---------------------------------------------------------------------
def convert_tan(ctx, node, attrs):
    f = FloatMath(ctx, node)
    return [f.result("div", f("sin", f.x), f("cos", f.x))]


def convert_sinh(ctx, node, attrs):
    """sinh(a) = (e - 1/e) / 2 for a = |x| >= 1, (m + m / (m + 1)) / 2 with m = expm1(a)
    below (no cancellation); the sign of x restored."""
    f = FloatMath(ctx, node)
    magnitude = f("abs", f.x, tag="abs")
    grown = f("exp", magnitude, tag="e")
    large = f("mul", f("sub", grown, f("div", 1.0, grown)), 0.5, tag="large")
    m = expm1(f, magnitude)
    small = f("mul", f("add", m, f("div", m, f("add", m, 1.0))), 0.5, tag="small")
    positive = f("where", f("lt", magnitude, 1.0), small, large, tag="sinh_abs")
    return [f.result("where", f("lt", f.x, 0.0), f("neg", positive), positive)]


def convert_cosh(ctx, node, attrs):
    f = FloatMath(ctx, node)
    grown = f("exp", f("abs", f.x), tag="e")
    return [f.result("mul", f("add", grown, f("div", 1.0, grown)), 0.5)]


def convert_asinh(ctx, node, attrs):
    """asinh(a) = log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a = |x|, log(a) + log 2 for huge a."""
    f = FloatMath(ctx, node)
    a = f("abs", f.x, tag="abs")
    square = f("mul", a, a, tag="square")
    inner = f("add", a, f("div", square, f("add", f("sqrt", f("add", square, 1.0)), 1.0)), tag="inner")
    huge = f("add", f("log", a), math.log(2.0), tag="huge")
    positive = f("where", f("gt", a, LARGE_ARGUMENT[f.dtype]), huge, log1p(f, inner), tag="asinh_abs")
    return [f.result("where", f("lt", f.x, 0.0), f("neg", positive), positive)]


def convert_acosh(ctx, node, attrs):
    """acosh(x) = log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1), log(x) + log 2
    for huge x; NaN below 1 (the sqrt of a negative)."""
    f = FloatMath(ctx, node)
    t = f("sub", f.x, 1.0, tag="t")
    inner = f("add", t, f("sqrt", f("mul", t, f("add", t, 2.0))), tag="inner")
    huge = f("add", f("log", f.x), math.log(2.0), tag="huge")
    return [f.result("where", f("gt", f.x, LARGE_ARGUMENT[f.dtype]), huge, log1p(f, inner))]


def convert_atanh(ctx, node, attrs):
    """atanh(a) = log1p(2a / (1 - a)) / 2 for a = |x|, the sign of x restored."""
    f = FloatMath(ctx, node)
    a = f("abs", f.x, tag="abs")
    positive = f("mul", log1p(f, f("div", f("mul", a, 2.0), f("sub", 1.0, a), tag="ratio")), 0.5, tag="atanh_abs")
    return [f.result("where", f("lt", f.x, 0.0), f("neg", positive), positive)]


def convert_atan(ctx, node, attrs):
    f = FloatMath(ctx, node)
    return [_narrowed(f, atan(f, f.x, final=f.dtype is f.given))]


def convert_asin(ctx, node, attrs):
    """asin(x) = atan(x / sqrt((1 - x)(1 + x))): +-inf at +-1 gives +-pi/2."""
    f = FloatMath(ctx, node)
    cosine = f("sqrt", f("mul", f("sub", 1.0, f.x), f("add", f.x, 1.0)), tag="cosine")
    return [_narrowed(f, atan(f, f("div", f.x, cosine, tag="tangent"), final=f.dtype is f.given))]


def convert_acos(ctx, node, attrs):
    """acos(x) = 2 atan(sqrt((1 - x) / (1 + x))): accurate near 1, pi at -1."""
    f = FloatMath(ctx, node)
    half = f("sqrt", f("div", f("sub", 1.0, f.x), f("add", f.x, 1.0)), tag="half_tangent")
    return [f.result("mul", atan(f, half), 2.0)]


def _narrowed(f: FloatMath, value: str) -> str:
    """`value`, computed wide for an f16/bf16 input, cast back (as the node's result)."""
    if f.dtype is f.given:
        return value
    return f.builder.op("cast", [value], {"to": f.given}, hint=f.name)


# --- determinant -----------------------------------------------------------------------
DET_LIMIT = 4
"""The largest matrix Det expands by cofactors (n! products: 24 at 4)."""


def convert_det(ctx, node, attrs):
    """Det of [..., n, n] by cofactor expansion along the first row, each entry a slice
    [..., 1, 1] of the input, for static n up to `DET_LIMIT` (larger ones need a pivoted
    elimination, which this expansion is not)."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank < 2 or type_.shape[-1] != type_.shape[-2] or not isinstance(type_.shape[-1], int):
        shape = ", ".join(format_dim(dim) for dim in type_.shape)
        raise UnsupportedModel(f"Det of shape [{shape}]", expected="[..., n, n] with a static n")
    size = type_.shape[-1]
    if size > DET_LIMIT:
        raise UnsupportedModel(f"Det of {size}x{size} matrices",
                               expected=f"n <= {DET_LIMIT} (expanded by cofactors, which grows as n!)")
    if not type_.dtype.is_float:
        raise UnsupportedModel(f"Det of a {type_.dtype} tensor", expected="a float tensor")
    f = Arith(ctx, type_.dtype, hint(node))
    rows = [f("slice", x, attrs={"axis": type_.rank - 2, "start": row, "len": 1}, tag=f"row{row}")
            for row in range(size)]
    entries = [[f("slice", row, attrs={"axis": type_.rank - 1, "start": column, "len": 1}, tag=f"e{index}{column}")
                for column in range(size)] for index, row in enumerate(rows)]
    value = _cofactor_expansion(f, entries, list(range(size)))
    return [f.builder.op("reshape", [value], {"shape": tuple(type_.shape[:-2])}, hint=f.name)]


def _cofactor_expansion(f: Arith, entries, columns: list[int]) -> str:
    """The determinant of the rows ``len(entries) - len(columns)`` on and `columns` of
    `entries`, expanded along its first row."""
    row = len(entries) - len(columns)
    if len(columns) == 1:
        return entries[row][columns[0]]
    total = None
    for position, column in enumerate(columns):
        minor = _cofactor_expansion(f, entries, columns[:position] + columns[position + 1:])
        term = f("mul", entries[row][column], minor, tag="term")
        if total is None:
            total = term
        else:
            total = f("sub" if position % 2 else "add", total, term, tag="sum")
    return total


register({
    "Softplus": convert_softplus, "Elu": convert_elu, "Selu": convert_selu, "Celu": convert_celu, "ThresholdedRelu": convert_thresholded_relu, "Shrink": convert_shrink,
    "Softsign": convert_softsign, "Swish": convert_swish, "Mish": convert_mish, "Round": convert_round,
    "Sign": convert_sign, "IsInf": convert_isinf, "Tan": convert_tan, "Sinh": convert_sinh, "Cosh": convert_cosh,
    "Asinh": convert_asinh, "Acosh": convert_acosh, "Atanh": convert_atanh, "Atan": convert_atan,
    "Asin": convert_asin, "Acos": convert_acos, "Det": convert_det,
})
