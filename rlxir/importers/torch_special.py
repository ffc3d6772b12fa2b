"""Special functions -> core ops: ``lgamma``, ``digamma`` and ``polygamma``, computed in f64
inside the graph (a ``cast`` in, a ``cast`` back) so float32 results keep their precision.

- ``lgamma``: Lanczos' approximation (g = 7, nine coefficients) for x >= 0.5, the reflection
  log(pi / |sin(pi x)|) - lgamma(1 - x) below; +inf at the poles 0, -1, -2, ...
- ``polygamma(n, x)`` (``digamma`` is n = 0): the first `SHIFT` terms of the series summed
  exactly, then the Euler-Maclaurin tail at x + SHIFT (Bernoulli numbers up to B10), as the
  Cephes ``zeta`` PyTorch uses; ``digamma`` reflects below 0.5. Relative error about 1e-12
  for x + SHIFT >= 9.
"""

from __future__ import annotations

import math

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, result_dtype
from rlxir.importers.torch_registry import converter

LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61503916999185,
           12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7)
"""Lanczos' coefficients for g = 7."""

SHIFT = 20
"""Series terms summed before the asymptotic tail (the tail is taken at x + SHIFT)."""

BERNOULLI = (1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0)
"""B2, B4, ..., B10."""


class F64:
    """Builds f64 arithmetic on one node's values (each op named after the node)."""

    def __init__(self, ctx, node):
        self.ctx, self.hint = ctx, node.name

    def const(self, value: float) -> str:
        return self.ctx.builder.scalar(value, DType.f64)

    def op(self, name: str, *operands) -> str:
        values = [item if isinstance(item, str) else self.const(item) for item in operands]
        return op(self.ctx, name, values, hint=f"{self.hint}.{name}")

    def where(self, condition: str, then, otherwise) -> str:
        return self.op("where", condition, then, otherwise)


def _lgamma(f: F64, x: str) -> str:
    """lgamma of x (f64), both branches computed, the reflection's where x < 0.5."""
    small = f.op("lt", x, 0.5)
    z = f.where(small, f.op("sub", 1.0, x), x)  # z >= 0.5 on the branch that is kept
    z = f.op("sub", z, 1.0)
    series = f.const(LANCZOS[0])
    for index, coefficient in enumerate(LANCZOS[1:], 1):
        series = f.op("add", series, f.op("div", coefficient, f.op("add", z, float(index))))
    t = f.op("add", z, 7.5)
    value = f.op("add", f.op("sub", f.op("mul", f.op("add", z, 0.5), f.op("log", t)), t),
                 f.op("add", f.op("log", series), 0.5 * math.log(2 * math.pi)))
    sine = f.op("abs", f.op("sin", f.op("mul", x, math.pi)))
    reflected = f.op("sub", f.op("sub", math.log(math.pi), f.op("log", sine)), value)
    result = f.where(small, reflected, value)
    pole = f.op("minimum", f.op("le", x, 0.0), f.op("eq", x, f.op("floor", x)))
    return f.where(pole, math.inf, result)


def _hurwitz_tail(f: F64, order: int, w: str) -> str:
    """Σ_{k>=0} (w + k)^-(order + 1) for w >= 9, by Euler-Maclaurin (order >= 1)."""
    s = order + 1
    total = f.op("add", f.op("div", f.op("pow", w, float(1 - s)), float(s - 1)),
                 f.op("mul", f.op("pow", w, float(-s)), 0.5))
    rising, factorial = float(s), 2.0
    for index, bernoulli in enumerate(BERNOULLI, 1):
        term = f.op("mul", f.op("pow", w, float(-s - 2 * index + 1)), bernoulli * rising / factorial)
        total = f.op("add", total, term)
        rising *= (s + 2 * index - 1) * (s + 2 * index)
        factorial *= (2 * index + 1) * (2 * index + 2)
    return total


def _polygamma(f: F64, order: int, x: str) -> str:
    """ψ^(order)(x) = (-1)^(order + 1) order! ζ(order + 1, x) for order >= 1."""
    s = float(order + 1)
    head = None
    for index in range(SHIFT):
        term = f.op("pow", f.op("add", x, float(index)), -s)
        head = term if head is None else f.op("add", head, term)
    zeta = f.op("add", head, _hurwitz_tail(f, order, f.op("add", x, float(SHIFT))))
    return f.op("mul", zeta, (-1.0) ** (order + 1) * math.factorial(order))


def _digamma(f: F64, x: str) -> str:
    """ψ(x): for x >= 0.5 the series shifted by SHIFT and the asymptotic expansion of ψ at
    x + SHIFT; below, ψ(1 - x) - π / tan(π x); -inf at 0 and NaN at the negative integers."""
    small = f.op("lt", x, 0.5)
    y = f.where(small, f.op("sub", 1.0, x), x)
    head = None
    for index in range(SHIFT):
        term = f.op("div", 1.0, f.op("add", y, float(index)))
        head = term if head is None else f.op("add", head, term)
    w = f.op("add", y, float(SHIFT))
    inverse_square = f.op("div", 1.0, f.op("mul", w, w))
    tail = f.op("sub", f.op("log", w), f.op("div", 0.5, w))
    power = inverse_square
    for index, bernoulli in enumerate(BERNOULLI, 1):
        tail = f.op("sub", tail, f.op("mul", power, bernoulli / (2 * index)))
        power = f.op("mul", power, inverse_square)
    value = f.op("sub", tail, head)
    angle = f.op("mul", x, math.pi)
    reflected = f.op("sub", value, f.op("div", math.pi, f.op("div", f.op("sin", angle), f.op("cos", angle))))
    result = f.where(small, reflected, value)
    integer = f.op("eq", x, f.op("floor", x))
    result = f.where(f.op("minimum", integer, f.op("lt", x, 0.0)), math.nan, result)
    return f.where(f.op("eq", x, 0.0), -math.inf, result)


def _in_f64(ctx, node, item, build) -> str:
    dtype = result_dtype(node)
    if not dtype.is_float:
        refuse(f"{node.target} with a {dtype.value} result", "a floating-point result")
    x = operand(ctx, item, DType.f64, f"{node.name}.f64")
    value = build(F64(ctx, node), x)
    return value if dtype is DType.f64 else op(ctx, "cast", [value], {"to": dtype}, hint=node.name)


@converter("aten.lgamma")
def handle_lgamma(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _lgamma)


@converter("aten.digamma", "aten.special_digamma", "aten.special_psi")
def handle_digamma(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _digamma)


@converter("aten.polygamma", "aten.special_polygamma")
def handle_polygamma(ctx, node, args, kwargs):
    """polygamma(n, x): digamma for n = 0, the Hurwitz zeta series above."""
    order = args[0]
    if not isinstance(order, int) or order < 0:
        refuse(f"polygamma of order {order!r}", "a static order n >= 0")
    if order == 0:
        return _in_f64(ctx, node, args[1], _digamma)
    return _in_f64(ctx, node, args[1], lambda f, x: _polygamma(f, order, x))


def _erfinv(f: F64, x: str) -> str:
    """erfinv(x): Winitzki's closed form (about 2e-3 relative error), then three Newton steps
    on erf (quadratic convergence: f64 precision); +-inf at +-1, NaN beyond."""
    a = 0.147
    log_term = f.op("log", f.op("sub", 1.0, f.op("mul", x, x)))
    first = f.op("add", 2.0 / (math.pi * a), f.op("mul", log_term, 0.5))
    root = f.op("sqrt", f.op("sub", f.op("sqrt", f.op("sub", f.op("mul", first, first), f.op("div", log_term, a))),
                             first))
    y = f.where(f.op("lt", x, 0.0), f.op("neg", root), root)
    for _ in range(3):
        slope = f.op("mul", f.op("exp", f.op("neg", f.op("mul", y, y))), 2.0 / math.sqrt(math.pi))
        y = f.op("sub", y, f.op("div", f.op("sub", f.op("erf", y), x), slope))
    edge = f.op("eq", f.op("abs", x), 1.0)
    return f.where(edge, f.op("mul", x, math.inf), y)


@converter("aten.erfinv", "aten.special_erfinv")
def handle_erfinv(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _erfinv)


@converter("aten.special_ndtri")
def handle_ndtri(ctx, node, args, kwargs):
    """The standard normal quantile: sqrt(2) erfinv(2p - 1)."""
    return _in_f64(ctx, node, args[0], lambda f, p: f.op("mul", _erfinv(f, f.op("sub", f.op("mul", p, 2.0), 1.0)),
                                                         math.sqrt(2.0)))


I0_TERMS = 60
"""Terms of the power series of I0 (exact in f64 up to |x| of about 40)."""


def _i0(f: F64, x: str) -> str:
    """I0(x) = Σ (x² / 4)^k / (k!)²; past |x| = 40 the asymptotic e^|x| / sqrt(2π|x|) (1 +
    1/(8|x|) + 9/(128 x²) + 225/(3072 |x|³))."""
    quarter = f.op("mul", f.op("mul", x, x), 0.25)
    term, total = f.const(1.0), f.const(1.0)
    for index in range(1, I0_TERMS):
        term = f.op("mul", term, f.op("div", quarter, float(index * index)))
        total = f.op("add", total, term)
    size = f.op("abs", x)
    inverse = f.op("div", 1.0, size)
    correction = f.op("add", 1.0, f.op("mul", inverse, f.op("add", 0.125, f.op(
        "mul", inverse, f.op("add", 9.0 / 128.0, f.op("mul", inverse, 225.0 / 3072.0))))))
    asymptotic = f.op("mul", f.op("div", f.op("exp", size), f.op("sqrt", f.op("mul", size, 2 * math.pi))),
                      correction)
    return f.where(f.op("gt", size, 40.0), asymptotic, total)


@converter("aten.i0", "aten.special_i0")
def handle_i0(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _i0)


ERFCX_DEPTH = 60
"""Levels of the continued fraction of erfcx evaluated for x >= 2 (f64 precision there)."""


def _erfcx(f: F64, x: str) -> str:
    """exp(x²) erfc(x): for x >= 2 the continued fraction 1 / (√π (x + (1/2) / (x + 1 / (x +
    (3/2) / ...)))); below, exp(x²) (1 - erf(x)) (overflowing to inf far below 0, as PyTorch)."""
    size = f.op("maximum", x, 2.0)  # the fraction's branch, kept finite where it is not used
    fraction = size
    for level in range(ERFCX_DEPTH, 0, -1):
        fraction = f.op("add", size, f.op("div", level / 2.0, fraction))
    far = f.op("div", 1.0, f.op("mul", fraction, math.sqrt(math.pi)))
    near = f.op("mul", f.op("exp", f.op("mul", x, x)), f.op("sub", 1.0, f.op("erf", x)))
    return f.where(f.op("ge", x, 2.0), far, near)


@converter("aten.special_erfcx")
def handle_erfcx(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _erfcx)


def _frexp(f: F64, x: str) -> tuple[str, str]:
    """(mantissa in [0.5, 1), exponent) with x = mantissa 2^exponent; (0, 0) at 0; the
    exponent from log2, then corrected by one where rounding put the mantissa outside."""
    size = f.op("abs", x)
    zero = f.op("eq", size, 0.0)
    safe = f.where(zero, 1.0, size)
    exponent = f.op("add", f.op("floor", f.op("div", f.op("log", safe), math.log(2.0))), 1.0)
    mantissa = f.op("div", safe, f.op("pow", 2.0, exponent))
    high = f.op("ge", mantissa, 1.0)
    exponent = f.where(high, f.op("add", exponent, 1.0), exponent)
    mantissa = f.where(high, f.op("mul", mantissa, 0.5), mantissa)
    low = f.op("lt", mantissa, 0.5)
    exponent = f.where(low, f.op("sub", exponent, 1.0), exponent)
    mantissa = f.where(low, f.op("mul", mantissa, 2.0), mantissa)
    mantissa = f.where(f.op("lt", x, 0.0), f.op("neg", mantissa), mantissa)
    return f.where(zero, x, mantissa), f.where(zero, 0.0, exponent)


@converter("aten.frexp")
def handle_frexp(ctx, node, args, kwargs):
    """frexp(x) -> (mantissa, exponent); infinities and NaN are refused by no one: their
    exponent is whatever log2 gives (PyTorch leaves it unspecified)."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], DType.f64, f"{node.name}.f64")
    mantissa, exponent = _frexp(F64(ctx, node), x)
    return [op(ctx, "cast", [mantissa], {"to": dtype}, hint=node.name),
            op(ctx, "cast", [exponent], {"to": DType.i32}, hint=f"{node.name}.exponent")]


def _i1(f: F64, x: str) -> str:
    """I1(x) = Σ (x/2)^(2k+1) / (k! (k+1)!); past |x| = 40 the asymptotic sign(x) e^|x| /
    sqrt(2π|x|) (1 - 3/(8|x|) - 15/(128 x²) - 315/(3072 |x|³))."""
    quarter = f.op("mul", f.op("mul", x, x), 0.25)
    term = f.op("mul", x, 0.5)
    total = term
    for index in range(1, I0_TERMS):
        term = f.op("mul", term, f.op("div", quarter, float(index * (index + 1))))
        total = f.op("add", total, term)
    size = f.op("abs", x)
    inverse = f.op("div", 1.0, size)
    correction = f.op("sub", 1.0, f.op("mul", inverse, f.op("add", 0.375, f.op(
        "mul", inverse, f.op("add", 15.0 / 128.0, f.op("mul", inverse, 315.0 / 3072.0))))))
    asymptotic = f.op("mul", f.op("div", f.op("exp", size), f.op("sqrt", f.op("mul", size, 2 * math.pi))),
                      correction)
    asymptotic = f.where(f.op("lt", x, 0.0), f.op("neg", asymptotic), asymptotic)
    return f.where(f.op("gt", size, 40.0), asymptotic, total)


def _scaled(bessel):
    """e^-|x| times a modified Bessel function (the exponentially scaled form)."""
    def build(f: F64, x: str) -> str:
        return f.op("mul", bessel(f, x), f.op("exp", f.op("neg", f.op("abs", x))))

    return build


@converter("aten.special_i1", "aten.special_modified_bessel_i1")
def handle_i1(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _i1)


@converter("aten.special_i0e")
def handle_i0e(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _scaled(_i0))


@converter("aten.special_i1e")
def handle_i1e(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _scaled(_i1))


@converter("aten.special_modified_bessel_i0")
def handle_modified_bessel_i0(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _i0)


@converter("aten.special_spherical_bessel_j0")
def handle_spherical_bessel_j0(ctx, node, args, kwargs):
    """sin(x) / x, 1 at 0."""
    def build(f: F64, x: str) -> str:
        zero = f.op("eq", x, 0.0)
        return f.where(zero, 1.0, f.op("div", f.op("sin", x), f.where(zero, 1.0, x)))

    return _in_f64(ctx, node, args[0], build)


@converter("aten.angle")
def handle_angle(ctx, node, args, kwargs):
    """The angle of a real number: π below 0, 0 from 0 up, NaN stays NaN."""
    def build(f: F64, x: str) -> str:
        return f.where(f.op("ne", x, x), x, f.where(f.op("lt", x, 0.0), math.pi, 0.0))

    return _in_f64(ctx, node, args[0], build)
