"""Modified Bessel functions of the second kind and Airy's Ai -> core ops:
``special_modified_bessel_k0/k1``, their exponentially scaled forms and ``special_airy_ai``,
computed in f64 inside the graph (`torch_special._in_f64`: a ``cast`` in, a ``cast`` back) so
float32 results keep their precision (J and Y: `torch_bessel_jy`).

Each function is two evaluations joined by a ``where`` on x (PyTorch's Cephes kernels also
switch between a form near 0 and an asymptotic one; the forms here are the classical series,
which agree with PyTorch's float64 kernels on [-120, 120] within a tenth of the OpInfo
special-function tolerance):

- K up to x = `K_SERIES_LIMIT`: ln(x/2) times I (`torch_special._i0` / `_i1`) plus the
  logarithmic series (`SERIES_TERMS` terms); past it the asymptotic expansion with
  `ASYMPTOTIC_TERMS` terms (relative error below 1e-9 there);
- Ai: its two Maclaurin series on [`AIRY_NEGATIVE_LIMIT`, `AIRY_POSITIVE_LIMIT`], the
  asymptotic expansions in ζ = 2/3 |x|^(3/2) outside; 0 past 103.892, as PyTorch.

Domains follow PyTorch: K is +inf at 0, NaN below and 0 at +inf; Ai is NaN at ±inf; NaN stays
NaN.
"""

from __future__ import annotations

import math

from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_special import F64, _i0, _i1, _in_f64

SERIES_TERMS = 60
"""Terms of the power series (their ratio falls below 1e-17 well before, for |x| <= 10)."""

ASYMPTOTIC_TERMS = 20
"""Terms of the asymptotic expansions (past the limits below, the smallest term is < 1e-9)."""

K_SERIES_LIMIT = 10.0
"""K uses its series up to x = 10 (I0(10) e^10 cancels to 1.5e-8 relative), the asymptotic
expansion past it."""

AIRY_POSITIVE_LIMIT, AIRY_NEGATIVE_LIMIT = 6.0, -8.0
"""Ai's Maclaurin series covers [-8, 6]; the asymptotic expansions the rest."""

AIRY_ZERO_BEYOND = 103.892
"""Ai is 0 past this (PyTorch's cut, where Ai underflows f64)."""

EULER_GAMMA = 0.57721566490153286061


def _hankel_coefficients(order: int) -> list[float]:
    """a_k(ν) = Π_{j=1..k} (4ν² - (2j - 1)²) / (k! 8^k), k < `ASYMPTOTIC_TERMS`."""
    coefficients, value = [], 1.0
    for k in range(ASYMPTOTIC_TERMS):
        coefficients.append(value)
        value *= (4 * order * order - (2 * k + 1) ** 2) / ((k + 1) * 8)
    return coefficients


def _inverse_series(f: F64, coefficients, inverse: str) -> str:
    """Σ_k coefficients[k] inverse^k by Horner's rule."""
    total = f.const(coefficients[-1])
    for coefficient in reversed(coefficients[:-1]):
        total = f.op("add", f.op("mul", total, inverse), coefficient)
    return total


def _log_companion(f: F64, order: int, x: str) -> tuple[str, str]:
    """(S, x/2) near 0, S = (x/2)^order Σ w_k t_k with t_k = q^k / (k! (k + order)!), q = x²/4,
    w_k = H_k for order 0 and H_k + H_k+1 for order 1 (H_k the harmonic numbers): the
    logarithmic series K adds to ln(x/2) I."""
    half = f.op("mul", x, 0.5)
    q = f.op("mul", half, half)
    term = f.const(1.0)
    companion = f.const(0.0 if order == 0 else 1.0)
    harmonic = 0.0
    for k in range(1, SERIES_TERMS):
        term = f.op("mul", term, f.op("div", q, float(k * (k + order))))
        harmonic += 1.0 / k
        weight = harmonic if order == 0 else 2 * harmonic + 1.0 / (k + 1)
        companion = f.op("add", companion, f.op("mul", term, weight))
    if order == 1:
        companion = f.op("mul", companion, half)
    return companion, half


def _bessel_k(order: int, scaled: bool):
    def build(f: F64, x: str) -> str:
        """K0 = S - (ln(x/2) + γ) I0; K1 = 1/x + ln(x/2) I1 - (S - 2γ I1) / 2 (I from
        `torch_special`); past x = 10 sqrt(π/(2x)) e^-x Σ a_k(ν) / x^k. The
        scaled forms are these times e^x. +inf at 0, NaN below 0, 0 at +inf."""
        near_x = f.op("minimum", f.op("maximum", x, 1e-300), K_SERIES_LIMIT)
        s, half = _log_companion(f, order, near_x)
        log_half = f.op("log", half)
        if order == 0:
            near = f.op("sub", s, f.op("mul", f.op("add", log_half, EULER_GAMMA), _i0(f, near_x)))
        else:
            i1 = _i1(f, near_x)
            digamma_sum = f.op("sub", s, f.op("mul", i1, 2.0 * EULER_GAMMA))
            near = f.op("sub", f.op("add", f.op("div", 1.0, near_x), f.op("mul", log_half, i1)),
                        f.op("mul", digamma_sum, 0.5))
        if scaled:
            near = f.op("mul", near, f.op("exp", near_x))
        far_x = f.op("maximum", x, K_SERIES_LIMIT)
        series = _inverse_series(f, _hankel_coefficients(order), f.op("div", 1.0, far_x))
        far = f.op("mul", f.op("sqrt", f.op("div", math.pi / 2, far_x)), series)
        if not scaled:
            far = f.op("mul", far, f.op("exp", f.op("neg", far_x)))
        value = f.where(f.op("le", x, K_SERIES_LIMIT), near, far)
        value = f.where(f.op("eq", x, 0.0), math.inf, value)
        return f.where(f.op("lt", x, 0.0), math.nan, value)

    return build


def _airy_u(count: int) -> list[float]:
    """u_k = (2k+1)(2k+3)...(6k-1) / (216^k k!), k < count (the Airy expansions' coefficients)."""
    coefficients, value = [], 1.0
    for k in range(1, count + 1):
        coefficients.append(value)
        value *= (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216.0 * k * (2 * k - 1))
    return coefficients


AIRY_AI0, AIRY_AI0_SLOPE = 0.355028053887817239, 0.258819403792806798
"""Ai(0) = 1 / (3^(2/3) Γ(2/3)) and -Ai'(0) = 1 / (3^(1/3) Γ(1/3))."""


def _airy_ai(f: F64, x: str) -> str:
    """Ai(x) = Ai(0) F(x) - (-Ai'(0)) G(x), F = Σ x^3k Π (3j-2) / (3k)!, G = Σ x^(3k+1)
    Π (3j-1) / (3k+1)! on [-8, 6]; above, e^-ζ / (2 sqrt(π) x^(1/4)) Σ (-1)^k u_k / ζ^k;
    below, (cos(ζ - π/4) Σ (-1)^k u_2k / ζ^2k + sin(ζ - π/4) Σ (-1)^k u_2k+1 / ζ^(2k+1)) /
    (sqrt(π) |x|^(1/4)), ζ = 2/3 |x|^(3/2); 0 past 103.892, NaN at ±inf."""
    near_x = f.op("minimum", f.op("maximum", x, AIRY_NEGATIVE_LIMIT), AIRY_POSITIVE_LIMIT)
    cube = f.op("mul", f.op("mul", near_x, near_x), near_x)
    f_term, g_term = f.const(1.0), near_x
    f_sum, g_sum = f_term, g_term
    for k in range(1, SERIES_TERMS):
        f_term = f.op("mul", f_term, f.op("div", cube, float((3 * k - 1) * 3 * k)))
        g_term = f.op("mul", g_term, f.op("div", cube, float(3 * k * (3 * k + 1))))
        f_sum, g_sum = f.op("add", f_sum, f_term), f.op("add", g_sum, g_term)
    near = f.op("sub", f.op("mul", f_sum, AIRY_AI0), f.op("mul", g_sum, AIRY_AI0_SLOPE))
    size = f.op("maximum", f.op("abs", x), 1.0)
    zeta = f.op("mul", f.op("pow", size, 1.5), 2.0 / 3.0)
    inverse = f.op("div", 1.0, zeta)
    u = _airy_u(ASYMPTOTIC_TERMS)
    quarter_root = f.op("pow", size, 0.25)
    decaying = _inverse_series(f, [value * (-1) ** k for k, value in enumerate(u)], inverse)
    above = f.op("div", f.op("mul", decaying, f.op("exp", f.op("neg", zeta))),
                 f.op("mul", quarter_root, 2.0 * math.sqrt(math.pi)))
    inverse_square = f.op("mul", inverse, inverse)
    even = _inverse_series(f, [u[k] * (-1) ** (k // 2) for k in range(0, len(u), 2)], inverse_square)
    odd = f.op("mul", _inverse_series(f, [u[k] * (-1) ** (k // 2) for k in range(1, len(u), 2)], inverse_square),
               inverse)
    cosine, sine = f.op("cos", zeta), f.op("sin", zeta)
    half = math.sqrt(0.5)
    cos_phase = f.op("mul", f.op("add", cosine, sine), half)  # cos(ζ - π/4)
    sin_phase = f.op("mul", f.op("sub", sine, cosine), half)  # sin(ζ - π/4)
    below = f.op("div", f.op("add", f.op("mul", cos_phase, even), f.op("mul", sin_phase, odd)),
                 f.op("mul", quarter_root, math.sqrt(math.pi)))
    value = f.where(f.op("gt", x, AIRY_POSITIVE_LIMIT), above, near)
    value = f.where(f.op("lt", x, AIRY_NEGATIVE_LIMIT), below, value)
    value = f.where(f.op("gt", x, AIRY_ZERO_BEYOND), 0.0, value)
    return f.where(f.op("eq", f.op("abs", x), math.inf), math.nan, value)


@converter("aten.special_modified_bessel_k0")
def handle_modified_bessel_k0(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _bessel_k(0, scaled=False))


@converter("aten.special_modified_bessel_k1")
def handle_modified_bessel_k1(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _bessel_k(1, scaled=False))


@converter("aten.special_scaled_modified_bessel_k0")
def handle_scaled_modified_bessel_k0(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _bessel_k(0, scaled=True))


@converter("aten.special_scaled_modified_bessel_k1")
def handle_scaled_modified_bessel_k1(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _bessel_k(1, scaled=True))


@converter("aten.special_airy_ai")
def handle_airy_ai(ctx, node, args, kwargs):
    return _in_f64(ctx, node, args[0], _airy_ai)
