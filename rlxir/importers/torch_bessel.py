"""Modified Bessel functions of the second kind and Airy's Ai -> core ops:
``special_modified_bessel_k0/k1``, their exponentially scaled forms and ``special_airy_ai``,
computed in f64 inside the graph (`torch_special._in_f64`: a ``cast`` in, a ``cast`` back) so
float32 results keep their precision (J and Y: `torch_bessel_jy`).

- K: PyTorch's Cephes Chebyshev expansions (its coefficients, `K0_CHEBYSHEV` /
  `K1_CHEBYSHEV`, summed by Clenshaw's recurrence in its loop's order): on (0, 2] one in
  x² - 2 plus ln(x/2) times I (`torch_special._i0` / `_i1`), past 2 one in 8/x - 2 times
  e^-x / sqrt(x); the scaled forms times e^x. +inf at 0, NaN below 0, 0 at +inf.
- Ai: PyTorch's Cephes kernel (its coefficients, `AIRY_RATIONALS`): below -2.09 the modulus
  and phase rationals in 1/ζ (ζ = 2/3 |x|^(3/2)), the phase rounded to the result's dtype
  step by step as PyTorch computes it; from 2.09 the decaying rational; between, the two
  Maclaurin series; 0 past 103.892, NaN at ±inf.
"""

from __future__ import annotations

import math

from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_bessel_jy import in_f64_rounding
from rlxir.importers.torch_special import F64, _i0, _i1, _in_f64

NEAR_LIMIT = 2.0
"""K's first Chebyshev expansion covers (0, 2], the second the rest (as Cephes)."""

AIRY_SPLIT = 2.09
"""Ai's Maclaurin series covers (-2.09, 2.09), its rationals the rest (as Cephes)."""

AIRY_SERIES_TERMS = 20
"""Terms of Ai's Maclaurin series (x³ <= 9.2 there: the 20th is below 1e-40)."""

AIRY_ZERO_BEYOND = 103.892
"""Ai is 0 past this (PyTorch's cut, where Ai underflows f64)."""

AIRY_AI0, AIRY_AI0_SLOPE = 0.355028053887817239, 0.258819403792806798
"""Ai(0) = 1 / (3^(2/3) Γ(2/3)) and -Ai'(0) = 1 / (3^(1/3) Γ(1/3))."""

K0_CHEBYSHEV = {
    "A": (
        1.374465435613523e-16, 4.25981614279661e-14, 1.0349695257633842e-11, 1.904516377220209e-09,
        2.5347910790261494e-07, 2.286212103119452e-05, 0.001264615411446926, 0.0359799365153615,
        0.3442898999246285, -0.5353273932339028,
    ),
    "B": (
        5.300433772686263e-18, -1.6475804301524212e-17, 5.2103915050390274e-17, -1.678231096805412e-16,
        5.512055978524319e-16, -1.848593377343779e-15, 6.3400764774050706e-15, -2.2275133269916698e-14,
        8.032890775363575e-14, -2.9800969231727303e-13, 1.140340588208475e-12, -4.514597883373944e-12,
        1.8559491149547177e-11, -7.957489244477107e-11, 3.577397281400301e-10, -1.69753450938906e-09,
        8.574034017414225e-09, -4.660489897687948e-08, 2.766813639445015e-07, -1.8317555227191195e-06,
        1.39498137188765e-05, -0.00012849549581627802, 0.0015698838857300533, -0.0314481013119645,
        2.4403030820659555,
    ),
}
"""Cephes' Chebyshev coefficients of K0: A on [0, 2] (in x² - 2), B past 2 (in 8/x - 2)."""

K1_CHEBYSHEV = {
    "A": (
        -7.023863479386288e-18, -2.427449850519366e-15, -6.666901694199329e-13, -1.4114883926335278e-10,
        -2.213387630734726e-08, -2.4334061415659684e-06, -0.0001730288957513052, -0.006975723859639864,
        -0.12261118082265715, -0.3531559607765449, 1.5253002273389478,
    ),
    "B": (
        -5.756744483665017e-18, 1.7940508731475592e-17, -5.689462558442859e-17, 1.838093544366639e-16,
        -6.057047248373319e-16, 2.038703165624334e-15, -7.019837090418314e-15, 2.4771544244813043e-14,
        -8.976705182324994e-14, 3.3484196660784293e-13, -1.2891739609510289e-12, 5.13963967348173e-12,
        -2.1299678384275683e-11, 9.218315187605006e-11, -4.1903547593418965e-10, 2.015049755197033e-09,
        -1.0345762465678097e-08, 5.7410841254500495e-08, -3.5019606030878126e-07, 2.406484947837217e-06,
        -1.936197974166083e-05, 0.00019521551847135162, -0.002857816859622779, 0.10392373657681724,
        2.7206261904844427,
    ),
}
"""The same for K1."""

AIRY_RATIONALS = {
    "AN": (
        0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058, 159.75639135016442,
        70.53609068404442, 14.026469116338967, 1.0,
    ),
    "AD": (
        0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045, 164.2346928715297,
        71.47784008255756, 14.095913560783403, 1.0,
    ),
    "AFN": (
        -0.1316963234183318, -0.6264565444319123, -0.6931580360369335, -0.2797799815451191,
        -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621, -2.776491081552329e-06,
        -1.6778769848911465e-08,
    ),
    "AFD": (
        13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596, 1.4752914677166642,
        0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05, 4.5185009297058035e-07,
    ),
    "AGN": (
        0.01973399320916857, 0.39110302961568827, 1.0657989759959559, 0.9391692298166502,
        0.35146565610554764, 0.06338889196289255, 0.005858041130483885, 0.000282851600836737,
        6.98793669997261e-06, 8.117892395543892e-08, 3.415517847659236e-10,
    ),
    "AGD": (
        9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755, 0.9542936116189619,
        0.08645808263523921, 0.004126565238242226, 0.00010125908511650914, 1.1716673321441352e-06,
        4.9183457006293e-09,
    ),
}
"""Cephes' rationals of Ai (PyTorch's coefficients): AN / AD in 1/ζ for x >= 2.09, AFN /
AFD and AGN / AGD in 1/ζ² for x < -2.09."""


def _clenshaw(f: F64, table, t: str) -> str:
    """Σ' table[i] T_i(t/2) by Clenshaw's recurrence, in the order of PyTorch's loop."""
    value, previous, current = f.const(table[0]), f.const(0.0), f.const(0.0)
    for coefficient in table[1:]:
        previous, current = current, value
        value = f.op("add", f.op("sub", f.op("mul", t, current), previous), coefficient)
    return f.op("mul", f.op("sub", value, previous), 0.5)


def _bessel_k(order: int, scaled: bool):
    def build(f: F64, x: str) -> str:
        """On (0, 2]: K0 = A(x² - 2) - ln(x/2) I0, K1 = ln(x/2) I1 + A(x² - 2) / x (I from
        `torch_special`); past 2: e^-x B(8/x - 2) / sqrt(x). The scaled forms are these times
        e^x. +inf at 0, NaN below 0, 0 at +inf."""
        tables = K0_CHEBYSHEV if order == 0 else K1_CHEBYSHEV
        near_x = f.op("minimum", f.op("maximum", x, 1e-300), NEAR_LIMIT)
        expansion = _clenshaw(f, tables["A"], f.op("sub", f.op("mul", near_x, near_x), 2.0))
        log_half = f.op("log", f.op("mul", near_x, 0.5))
        if order == 0:
            near = f.op("sub", expansion, f.op("mul", log_half, _i0(f, near_x)))
        else:
            near = f.op("add", f.op("mul", log_half, _i1(f, near_x)), f.op("div", expansion, near_x))
        if scaled:
            near = f.op("mul", near, f.op("exp", near_x))
        far_x = f.op("maximum", x, NEAR_LIMIT)
        far = f.op("div", _clenshaw(f, tables["B"], f.op("sub", f.op("div", 8.0, far_x), 2.0)), f.op("sqrt", far_x))
        if not scaled:
            far = f.op("mul", far, f.op("exp", f.op("neg", far_x)))
        value = f.where(f.op("le", x, NEAR_LIMIT), near, far)
        value = f.where(f.op("eq", x, 0.0), math.inf, value)
        return f.where(f.op("lt", x, 0.0), math.nan, value)

    return build


def _horner(f: F64, table, z: str) -> str:
    """Σ table[i] z^(n-1-i), from 0 as PyTorch's loops."""
    total = f.const(table[0])
    for coefficient in table[1:]:
        total = f.op("add", f.op("mul", total, z), coefficient)
    return total


def _airy_ai(f: F64, x: str, rounded) -> str:
    """Ai(x) as PyTorch's Cephes kernel: below -2.09 the modulus and phase rationals in
    z = 1/ζ (ζ = 2/3 |x|^(3/2)), Ai = (1/√π) |x|^(-1/4) (sin t (1 + z² AF) - cos t z AG) with
    t = ζ + π/4 rounded step by step to the result's dtype as PyTorch computes it; from 2.09
    (1/√π) AN/AD(1/ζ) / (2 x^(1/4) e^ζ); between, Ai(0) F(x) - (-Ai'(0)) G(x) by the
    Maclaurin series (`AIRY_SERIES_TERMS` terms). 0 past 103.892, NaN at ±inf."""
    size = f.op("maximum", f.op("abs", x), AIRY_SPLIT)
    quarter_root = f.op("sqrt", f.op("sqrt", size))
    zeta = f.op("div", f.op("mul", size, f.op("sqrt", size)), 1.5)
    # below: t as PyTorch's float arithmetic rounds it, (-2x) sqrt(-x) / 3 + π/4
    rounded_zeta = rounded(f.op("div", rounded(f.op("mul", size, rounded(f.op("sqrt", size)))), 1.5))
    t = rounded(f.op("add", rounded_zeta, rounded(f.const(math.pi / 4))))
    z = f.op("div", 1.0, zeta)
    z_square = f.op("mul", z, z)
    modulus = f.op("add", 1.0, f.op("div", f.op("mul", z_square, _horner(f, AIRY_RATIONALS["AFN"], z_square)),
                                     _horner(f, AIRY_RATIONALS["AFD"], z_square)))
    phase = f.op("div", f.op("mul", z, _horner(f, AIRY_RATIONALS["AGN"], z_square)),
                 _horner(f, AIRY_RATIONALS["AGD"], z_square))
    below = f.op("div", f.op("sub", f.op("mul", f.op("sin", t), modulus), f.op("mul", f.op("cos", t), phase)),
                 f.op("mul", quarter_root, math.sqrt(math.pi)))
    decay = f.op("div", _horner(f, AIRY_RATIONALS["AN"], z), _horner(f, AIRY_RATIONALS["AD"], z))
    above = f.op("div", f.op("mul", decay, 1 / math.sqrt(math.pi)),
                 f.op("mul", f.op("mul", quarter_root, 2.0), f.op("exp", f.op("minimum", zeta, 800.0))))
    near_x = f.op("minimum", f.op("maximum", x, -AIRY_SPLIT), AIRY_SPLIT)
    cube = f.op("mul", f.op("mul", near_x, near_x), near_x)
    f_term, g_term = f.const(1.0), near_x
    f_sum, g_sum = f_term, g_term
    for k in range(1, AIRY_SERIES_TERMS):
        f_term = f.op("mul", f_term, f.op("div", cube, float((3 * k - 1) * 3 * k)))
        g_term = f.op("mul", g_term, f.op("div", cube, float(3 * k * (3 * k + 1))))
        f_sum, g_sum = f.op("add", f_sum, f_term), f.op("add", g_sum, g_term)
    near = f.op("sub", f.op("mul", f_sum, AIRY_AI0), f.op("mul", g_sum, AIRY_AI0_SLOPE))
    value = f.where(f.op("ge", x, AIRY_SPLIT), above, near)
    value = f.where(f.op("lt", x, -AIRY_SPLIT), below, value)
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
    return in_f64_rounding(ctx, node, args[0], _airy_ai)
