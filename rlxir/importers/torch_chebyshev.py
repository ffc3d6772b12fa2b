"""Chebyshev polynomials -> core ops: ``special_chebyshev_polynomial_{t,u,v,w}`` and
``special_shifted_chebyshev_polynomial_{t,u,v,w}`` (the same at y = 2x - 1, computed in the
result's dtype as PyTorch does), by their closed forms in f64 for every n, static or computed
at run time (see `torch_polynomials` for the other families and the reading of n):

- inside (-1, 1), with y = cos θ: T = cos nθ, U = sin (n+1)θ / sin θ, V = cos (n+½)θ / cos θ/2,
  W = sin (n+½)θ / sin θ/2: PyTorch's own form there past a small degree, which it evaluates
  in the result's dtype (θ and the angle are rounded to it here too; PyTorch's float32 acos
  and sin / cos may still differ by an ulp, about n ulps of θ in the result); below that
  degree PyTorch runs the recurrence, and the exact form stands for it;
- outside, with |y| = cosh t: the same with cosh / sinh, times (-1)^n for y < 0 where V and W
  also trade places; this is the value of the recurrence PyTorch runs (to rounding), and
  where that recurrence overflows two steps before n (inf - inf) the result is NaN, as there;
  at y = ±inf: +inf for n = 2, NaN above;
- PyTorch's exact values at n < 0 (0), at y = ±1, and at n = 0 and 1.
"""

from __future__ import annotations

import math

from rlxir.dtypes import DType
from rlxir.importers.torch_bessel_jy import rounding_to
from rlxir.importers.torch_ops import op, operand
from rlxir.importers.torch_polynomials import LARGEST, InDtype, _degree, _float_result
from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_special import F64

ACOS_TERMS = 50
"""Terms of the arcsine series behind acos (its argument is at most 1/√2: 2^-50 left)."""


def _acos(f: F64, y: str) -> str:
    """acos y for y in [-1, 1]: 2 asin sqrt((1 - |y|) / 2) by the arcsine series (its argument
    at most 1/√2), reflected to π - acos |y| for y < 0; exact to f64, also near ±1."""
    size = f.op("abs", y)
    s = f.op("sqrt", f.op("mul", f.op("sub", 1.0, size), 0.5))
    square = f.op("mul", s, s)
    coefficients, value = [], 1.0
    for k in range(ACOS_TERMS):
        coefficients.append(value)
        value *= (2 * k + 1) ** 2 / ((2 * k + 2) * (2 * k + 3))
    series = f.const(coefficients[-1])
    for coefficient in reversed(coefficients[:-1]):
        series = f.op("add", f.op("mul", series, square), coefficient)
    angle = f.op("mul", f.op("mul", series, s), 2.0)
    return f.where(f.op("lt", y, 0.0), f.op("sub", math.pi, angle), angle)


def _cosh(f: F64, a: str) -> str:
    return f.op("mul", f.op("add", f.op("exp", a), f.op("exp", f.op("neg", a))), 0.5)


def _sinh(f: F64, a: str) -> str:
    return f.op("mul", f.op("sub", f.op("exp", a), f.op("exp", f.op("neg", a))), 0.5)


def _inside(f: F64, kind: str, n: str, theta: str, rounded) -> str:
    """The trigonometric form at y = cos θ; `rounded` rounds θ and the angles to the result's
    dtype where PyTorch computes them in it (identity elsewhere)."""
    theta = rounded(theta)
    if kind == "t":
        return f.op("cos", rounded(f.op("mul", n, theta)))
    if kind == "u":
        return f.op("div", f.op("sin", rounded(f.op("mul", f.op("add", n, 1.0), theta))), f.op("sin", theta))
    angle = rounded(f.op("mul", rounded(f.op("add", n, 0.5)), theta))
    half = f.op("mul", theta, 0.5)
    if kind == "v":
        return f.op("div", f.op("cos", angle), f.op("cos", half))
    return f.op("div", f.op("sin", angle), f.op("sin", half))


def _outside(f: F64, kind: str, n: str, t: str, negative: str) -> str:
    """The hyperbolic form at |y| = cosh t, with (-1)^n and V <-> W where y < 0."""
    sign = f.where(f.op("eq", f.op("mod", n, 2.0), 1.0), -1.0, 1.0)
    if kind == "t":
        value = _cosh(f, f.op("mul", n, t))
    elif kind == "u":
        value = f.op("div", _sinh(f, f.op("mul", f.op("add", n, 1.0), t)), _sinh(f, t))
    else:
        angle = f.op("mul", f.op("add", n, 0.5), t)
        half = f.op("mul", t, 0.5)
        cosine_form = f.op("div", _cosh(f, angle), _cosh(f, half))  # V at y > 0, W at y < 0
        sine_form = f.op("div", _sinh(f, angle), _sinh(f, half))  # W at y > 0, V at y < 0
        value = f.where(negative, sine_form, cosine_form) if kind == "v" else f.where(negative, cosine_form,
                                                                                      sine_form)
    return f.where(negative, f.op("mul", value, sign), value)


ENDPOINTS = {
    # kind -> (value at y = 1, magnitude at y = -1 before (-1)^n), from n
    "t": (lambda f, n: f.const(1.0), lambda f, n: f.const(1.0)),
    "u": (lambda f, n: f.op("add", n, 1.0), lambda f, n: f.op("add", n, 1.0)),
    "v": (lambda f, n: f.const(1.0), lambda f, n: f.op("add", f.op("add", n, n), 1.0)),
    "w": (lambda f, n: f.op("add", f.op("add", n, n), 1.0), lambda f, n: f.const(1.0)),
}

TRIGONOMETRIC_ABOVE = {("t", False): 6, ("u", False): 8, ("v", False): 8, ("w", False): 8,
                       ("t", True): 6, ("u", True): 6, ("v", True): 6, ("w", True): 4}
"""(kind, shifted) -> the degree past which PyTorch uses the trigonometric form inside (-1, 1)."""

DEGREE_ONE = {
    "t": lambda f, y: y,
    "u": lambda f, y: f.op("add", y, y),
    "v": lambda f, y: f.op("sub", f.op("add", y, y), 1.0),
    "w": lambda f, y: f.op("add", f.op("add", y, y), 1.0),
}
"""kind -> its value at degree 1."""


def _chebyshev(f: F64, kind: str, y: str, n: str, largest: float, trigonometric_above: int, rounded) -> str:
    """The Chebyshev polynomial of `kind` at y (f64) of degree n (f64, already truncated).
    Inside (-1, 1) past degree `trigonometric_above` PyTorch evaluates the trigonometric form
    in the result's dtype: θ and the angle are rounded to it there (`rounded`), so the
    results agree to its rounding; below, the exact form stands for its recurrence."""
    size = f.op("abs", y)
    negative = f.op("lt", y, 0.0)
    theta = _acos(f, f.op("minimum", f.op("maximum", y, -1.0), 1.0))
    wide = f.op("maximum", size, 1.0)
    t = f.op("log", f.op("add", wide, f.op("sqrt", f.op("sub", f.op("mul", wide, wide), 1.0))))
    outside = _outside(f, kind, n, t, negative)
    overflowed = f.op("gt", f.op("abs", _outside(f, kind, f.op("sub", n, 2.0), t, negative)), largest)
    outside = f.where(f.op("minimum", overflowed, f.op("ge", n, 2.0)), math.nan, outside)
    outside = f.where(f.op("eq", size, math.inf), f.where(f.op("eq", n, 2.0), math.inf, math.nan), outside)
    exact = _inside(f, kind, n, theta, lambda value: value)
    as_pytorch = _inside(f, kind, n, theta, rounded)
    inside = f.where(f.op("gt", n, float(trigonometric_above)), as_pytorch, exact)
    value = f.where(f.op("lt", size, 1.0), inside, outside)
    value = f.where(f.op("eq", n, 1.0), DEGREE_ONE[kind](f, y), value)
    value = f.where(f.op("eq", n, 0.0), 1.0, value)
    at_one, at_minus_one = ENDPOINTS[kind]
    sign = f.where(f.op("eq", f.op("mod", n, 2.0), 1.0), -1.0, 1.0)
    value = f.where(f.op("eq", y, 1.0), at_one(f, n), value)
    value = f.where(f.op("eq", y, -1.0), f.op("mul", at_minus_one(f, n), sign), value)
    return f.where(f.op("lt", n, 0.0), 0.0, value)


def _convert(ctx, node, args, kind: str, shifted: bool) -> str:
    """y (shifted: x + x - 1 in the result's dtype) and n's truncated degree, then the closed
    form in f64, cast back."""
    dtype = _float_result(node)
    native = InDtype(ctx, node, dtype)
    x = operand(ctx, args[0], dtype, f"{node.name}.x")
    y = native.op("sub", native.op("add", x, x), 1.0) if shifted else x
    degree = _degree(native, operand(ctx, args[1], dtype, f"{node.name}.n"))
    y, degree = (operand(ctx, value, DType.f64, f"{node.name}.f64") for value in (y, degree))
    value = _chebyshev(F64(ctx, node), kind, y, degree, LARGEST[dtype], TRIGONOMETRIC_ABOVE[kind, shifted],
                       rounding_to(ctx, node, dtype))
    return value if dtype is DType.f64 else op(ctx, "cast", [value], {"to": dtype}, hint=node.name)


@converter("aten.special_chebyshev_polynomial_t")
def handle_chebyshev_t(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "t", shifted=False)


@converter("aten.special_chebyshev_polynomial_u")
def handle_chebyshev_u(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "u", shifted=False)


@converter("aten.special_chebyshev_polynomial_v")
def handle_chebyshev_v(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "v", shifted=False)


@converter("aten.special_chebyshev_polynomial_w")
def handle_chebyshev_w(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "w", shifted=False)


@converter("aten.special_shifted_chebyshev_polynomial_t")
def handle_shifted_chebyshev_t(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "t", shifted=True)


@converter("aten.special_shifted_chebyshev_polynomial_u")
def handle_shifted_chebyshev_u(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "u", shifted=True)


@converter("aten.special_shifted_chebyshev_polynomial_v")
def handle_shifted_chebyshev_v(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "v", shifted=True)


@converter("aten.special_shifted_chebyshev_polynomial_w")
def handle_shifted_chebyshev_w(ctx, node, args, kwargs):
    return _convert(ctx, node, args, "w", shifted=True)
