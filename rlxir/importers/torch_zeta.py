"""Hurwitz zeta and the regularized incomplete gamma functions -> core ops: ``special_zeta``,
``igamma`` and ``igammac``, computed in f64 inside the graph (`torch_special._in_f64`'s
casts) with a fixed number of terms, so float32 results keep their precision.

- ``zeta(s, q)`` = Σ_{k>=0} (q + k)^-s: the first `ZETA_HEAD` terms summed, then the
  Euler-Maclaurin tail at w = q + `ZETA_HEAD` with Bernoulli numbers up to B24 (as Cephes'
  ``zeta``, which PyTorch uses, with its twelve); exact to f64 for w >= 9, that is for
  q >= -21 (a q further below, only allowed with an integer s, gives NaN). Domain as
  PyTorch: +inf at s = 1 and at q = 0, -1, -2, ...; NaN for s < 1 and for q < 0 with a
  non-integer s.
- ``igamma(a, x)`` = P(a, x) and ``igammac(a, x)`` = Q(a, x) = 1 - P: where x < a + 1 the
  series P = x^a e^-x / Γ(a + 1) Σ x^n / ((a+1)...(a+n)) (`GAMMA_SERIES_TERMS` terms), else
  the continued fraction of Q (`GAMMA_FRACTION_DEPTH` levels, evaluated from the bottom);
  both are exact to f64 for a up to about 1000 (`GAMMA_A_LIMIT`; a larger a gives NaN).
  Edge values as PyTorch: NaN for a < 0 or x < 0; P(0, x > 0) = 1; P(a, 0) = 0; P(inf, x) =
  0; P(a, inf) = 1 (Q the complements).
"""

from __future__ import annotations

import math

from rlxir.importers.torch_ops import op, operand, refuse, result_dtype
from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_special import F64, _lgamma
from rlxir.dtypes import DType

ZETA_HEAD = 30
"""Terms of the Hurwitz zeta series summed before the Euler-Maclaurin tail."""

ZETA_BERNOULLI = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6, -3617.0 / 510,
                  43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730)
"""B2, B4, ..., B24."""

GAMMA_SERIES_TERMS = 300
"""Terms of P's series (their ratio x / (a + n) with x < a + 1 is below e^-n²/(2a))."""

GAMMA_FRACTION_DEPTH = 300
"""Levels of Q's continued fraction."""

GAMMA_A_LIMIT = 1000.0
"""P and Q are computed for a up to this (both expansions are converged there); NaN above."""


def _zeta(f: F64, s: str, q: str) -> str:
    """Σ_{k < ZETA_HEAD} (q + k)^-s + w^(1-s)/(s-1) + w^-s/2 + Σ_j B2j/(2j)! s(s+1)...(s+2j-2)
    w^(-s-2j+1) at w = q + ZETA_HEAD, then PyTorch's domain."""
    head = None
    for index in range(ZETA_HEAD):
        term = f.op("pow", f.op("add", q, float(index)), f.op("neg", s))
        head = term if head is None else f.op("add", head, term)
    w = f.op("add", q, float(ZETA_HEAD))
    power = f.op("pow", w, f.op("neg", s))  # w^-s, then w^(-s-2j+1) for j = 1, 2, ...
    tail = f.op("add", f.op("div", f.op("mul", power, w), f.op("sub", s, 1.0)), f.op("mul", power, 0.5))
    rising = s  # s (s+1) ... (s+2j-2) / (2j)!
    power = f.op("div", power, w)
    inverse_square = f.op("div", 1.0, f.op("mul", w, w))
    for index, bernoulli in enumerate(ZETA_BERNOULLI, 1):
        term = f.op("mul", f.op("mul", rising, power), bernoulli / math.factorial(2 * index))
        tail = f.op("add", tail, term)
        rising = f.op("mul", rising, f.op("mul", f.op("add", s, float(2 * index - 1)), f.op("add", s, float(2 * index))))
        power = f.op("mul", power, inverse_square)
    value = f.op("add", head, tail)
    value = f.where(f.op("lt", w, 9.0), math.nan, value)
    nonpositive_q = f.op("le", q, 0.0)
    fractional_s = f.op("ne", s, f.op("floor", s))
    value = f.where(f.op("minimum", nonpositive_q, fractional_s), math.nan, value)
    value = f.where(f.op("minimum", nonpositive_q, f.op("eq", q, f.op("floor", q))), math.inf, value)
    value = f.where(f.op("lt", s, 1.0), math.nan, value)
    return f.where(f.op("eq", s, 1.0), math.inf, value)


def _lower_series(f: F64, a: str, x: str) -> str:
    """P(a, x) by its series (for x < a + 1; a and x kept positive by the caller)."""
    term, total = f.const(1.0), f.const(1.0)
    for index in range(1, GAMMA_SERIES_TERMS):
        term = f.op("mul", term, f.op("div", x, f.op("add", a, float(index))))
        total = f.op("add", total, term)
    log_prefactor = f.op("sub", f.op("sub", f.op("mul", a, f.op("log", x)), x), _lgamma(f, f.op("add", a, 1.0)))
    return f.op("mul", total, f.op("exp", log_prefactor))


def _upper_fraction(f: F64, a: str, x: str) -> str:
    """Q(a, x) = x^a e^-x / Γ(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / ...)), the
    fraction evaluated from its last level up (for x >= a + 1)."""
    base = f.op("sub", x, a)
    fraction = f.op("add", base, float(2 * GAMMA_FRACTION_DEPTH + 1))
    for level in range(GAMMA_FRACTION_DEPTH, 0, -1):
        numerator = f.op("mul", f.op("sub", a, float(level)), float(level))  # -level (level - a)
        fraction = f.op("add", f.op("add", base, float(2 * level - 1)), f.op("div", numerator, fraction))
    log_prefactor = f.op("sub", f.op("sub", f.op("mul", a, f.op("log", x)), x), _lgamma(f, a))
    return f.op("div", f.op("exp", log_prefactor), fraction)


def _incomplete_gamma(upper: bool):
    def build(f: F64, a: str, x: str) -> str:
        """P (or Q = 1 - P): the series where x < a + 1, the fraction elsewhere; edge values."""
        safe_a = f.where(f.op("gt", a, 0.0), f.op("minimum", a, GAMMA_A_LIMIT), 1.0)
        safe_x = f.where(f.op("gt", x, 0.0), x, 1.0)
        use_series = f.op("lt", safe_x, f.op("add", safe_a, 1.0))
        series_x = f.where(use_series, safe_x, f.op("minimum", safe_x, safe_a))  # each branch in its regime
        fraction_x = f.where(use_series, f.op("add", safe_a, 1.0), safe_x)
        lower = _lower_series(f, safe_a, series_x)
        upper_value = _upper_fraction(f, safe_a, fraction_x)
        if upper:
            value = f.where(use_series, f.op("sub", 1.0, lower), upper_value)
        else:
            value = f.where(use_series, lower, f.op("sub", 1.0, upper_value))
        zero, one = (1.0, 0.0) if upper else (0.0, 1.0)
        infinite_x = f.op("eq", x, math.inf)
        value = f.where(f.op("gt", a, GAMMA_A_LIMIT), math.nan, value)
        value = f.where(infinite_x, one, value)
        value = f.where(f.op("eq", a, math.inf), f.where(infinite_x, math.nan, zero), value)
        value = f.where(f.op("eq", x, 0.0), zero, value)
        value = f.where(f.op("eq", a, 0.0), f.where(f.op("gt", x, 0.0), one, math.nan), value)
        invalid = f.op("maximum", f.op("lt", x, 0.0), f.op("lt", a, 0.0))
        return f.where(invalid, math.nan, value)

    return build


def _binary_in_f64(ctx, node, args, build) -> str:
    """`build` on both operands in f64 (broadcast by the ops themselves), cast to the result."""
    dtype = result_dtype(node)
    if not dtype.is_float:
        refuse(f"{node.target} with a {dtype.value} result", "a floating-point result")
    first = operand(ctx, args[0], DType.f64, f"{node.name}.first")
    second = operand(ctx, args[1], DType.f64, f"{node.name}.second")
    value = build(F64(ctx, node), first, second)
    return value if dtype is DType.f64 else op(ctx, "cast", [value], {"to": dtype}, hint=node.name)


@converter("aten.special_zeta")
def handle_zeta(ctx, node, args, kwargs):
    return _binary_in_f64(ctx, node, args, _zeta)


@converter("aten.igamma", "aten.special_gammainc")
def handle_igamma(ctx, node, args, kwargs):
    return _binary_in_f64(ctx, node, args, _incomplete_gamma(upper=False))


@converter("aten.igammac", "aten.special_gammaincc")
def handle_igammac(ctx, node, args, kwargs):
    return _binary_in_f64(ctx, node, args, _incomplete_gamma(upper=True))
