"""Bessel functions of the first and second kind -> core ops: ``special_bessel_j0/j1`` and
``special_bessel_y0/y1``, by the Cephes rational approximations PyTorch's kernels use (their
coefficients are PyTorch's, in `CEPHES_0` / `CEPHES_1`), evaluated in f64 inside the graph
(`torch_special._in_f64`'s casts):

- |x| <= 5: J0 = (z - r1)(z - r2) RP(z) / RQ(z) (z = x², r1, r2 the squares of J0's first two
  zeros; 1 - z/4 below 1e-5), J1 = x (z - r1)(z - r2) RP(z) / RQ(z), Y0 = YP(z) / YQ(z) +
  (2/π) ln(x) J0, Y1 = x YP(z) / YQ(z) + (2/π) (J1 ln(x) - 1/x);
- |x| > 5: with w = 25 / x² and the phase φ = x - π/4 (order 0) or x - 3π/4 (order 1),
  J = sqrt(2/(π x)) (P cos φ - (5/x) Q sin φ), Y = sqrt(2/(π x)) (P sin φ + (5/x) Q cos φ),
  P = PP(w) / PQ(w), Q = QP(w) / QQ(w).

Every polynomial is evaluated by Horner's rule over its whole table, as PyTorch loops over
it. The phase is rounded to the result's dtype, as PyTorch subtracts in it: far out (|x|
around 1e6 in float32) that rounding decides the value, and it is the same here. J1 is odd,
J0 even; Y is -inf at 0 and NaN below; NaN at ±inf and NaN.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, result_dtype
from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_special import F64

CEPHES_0 = {
    "PP": (
        0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687, 8.74716500199817,
        5.303240382353949, 1.0,
    ),
    "PQ": (
        0.0009244088105588637, 0.08562884743544745, 1.2535274390105895, 5.470977403304171,
        8.761908832370695, 5.306052882353947, 1.0,
    ),
    "QP": (
        -0.011366383889846916, -1.2825271867050931, -19.553954425773597, -93.20601521237683,
        -177.68116798048806, -147.07750515495118, -51.41053267665993, -6.050143506007285,
    ),
    "QQ": (
        64.3178256118178, 856.4300259769806, 3882.4018360540163, 7240.467741956525, 5930.727011873169,
        2062.0933166032783, 242.0057402402914,
    ),
    "RP": (
        -4794432209.782018, 1956174919465.5657, -249248344360967.72, 9708622510473064.0,
    ),
    "RQ": (
        499.563147152651, 173785.4016763747, 48440965.83399621, 11185553704.535683, 2112775201154.892,
        310518229857422.56, 3.1812195594320496e+16, 1.7108629408104315e+18,
    ),
    "YP": (
        15592.436785523574, -14663929.59039716, 5435264770.518765, -982136065717.9115, 87590639439536.7,
        -3466283033847297.0, 4.4273326857256984e+16, -1.8495080043698668e+16,
    ),
    "YQ": (
        1041.2835366425984, 626107.330137135, 268919633.39381415, 86400248710.3935, 20297961275010.555,
        3171577528429750.5, 2.5059625617265306e+17,
    ),
}
"""Cephes' tables for order 0 (J0: PP, PQ, QP, QQ, RP, RQ; Y0: YP, YQ)."""

CEPHES_1 = {
    "PP": (
        0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076,
        8.424045901417724, 5.214515986823615, 1.0,
    ),
    "PQ": (
        0.0005713231280725487, 0.06884559087544954, 1.105142326340617, 5.073863861286015,
        8.399855543276042, 5.209828486823619, 1.0,
    ),
    "QP": (
        0.05108625947501766, 4.982138729512334, 75.82382841325453, 366.7796093601508, 710.8563049989261,
        597.4896124006136, 211.68875710057213, 25.207020585802372,
    ),
    "QQ": (
        74.23732770356752, 1056.4488603826283, 4986.410583376536, 9562.318924047562, 7997.041604473507,
        2826.1927851763908, 336.0936078106983,
    ),
    "RP": (
        -899971225.7055594, 452228297998.19403, -72749424522181.83, 3682957328638529.0,
    ),
    "RQ": (
        620.8364781180543, 256987.25675774884, 83514679.14319493, 22151159547.97925, 4749141220799.914,
        784369607876235.9, 8.952223361846274e+16, 5.322786203326801e+18,
    ),
    "YP": (
        1263204747.9017804, -647355876379.1603, 114509511541823.73, -8127702555013251.0,
        2.024394757135949e+17, -7.788771962659501e+17,
    ),
    "YQ": (
        594.3015923461282, 235564.09294306856, 73481194.44597217, 18760131610.870617, 3882312774962.3857,
        620557727146953.8, 6.871410873553005e+16, 3.9727060811656064e+18,
    ),
}
"""The same for order 1 (J1, Y1)."""

ZEROS_SQUARED = {0: (5.78318596294678452118, 30.4712623436620863991), 1: (14.6819706421238932572,
                                                                           49.2184563216946036703)}
"""The squares of the first two zeros of J0 and of J1 (the factors of the near form)."""

PHASES = {0: math.pi / 4, 1: 3 * math.pi / 4}

NEAR_LIMIT = 5.0
"""The near form covers |x| <= 5."""


def _horner(f: F64, table, z: str) -> str:
    """Σ table[i] z^(n-1-i), from 0 as PyTorch's loops."""
    total = f.const(table[0])
    for coefficient in table[1:]:
        total = f.op("add", f.op("mul", total, z), coefficient)
    return total


def _near_j(f: F64, order: int, x: str) -> str:
    """J_order on |x| <= 5 (x >= 0 for order 1's caller, any sign for order 0 through z)."""
    tables = CEPHES_0 if order == 0 else CEPHES_1
    z = f.op("mul", x, x)
    first, second = ZEROS_SQUARED[order]
    value = f.op("div", f.op("mul", f.op("mul", f.op("sub", z, first), f.op("sub", z, second)),
                             _horner(f, tables["RP"], z)), _horner(f, tables["RQ"], z))
    if order == 1:
        return f.op("mul", value, x)
    return f.where(f.op("lt", f.op("abs", x), 1e-5), f.op("sub", 1.0, f.op("mul", z, 0.25)), value)


def _far(f: F64, order: int, size: str, phase_constant: float, rounded) -> tuple[str, str]:
    """(J, Y) of order at size > 5 from Cephes' modulus and phase rationals."""
    tables = CEPHES_0 if order == 0 else CEPHES_1
    inverse = f.op("div", 5.0, size)
    w = f.op("mul", inverse, inverse)
    p = f.op("div", _horner(f, tables["PP"], w), _horner(f, tables["PQ"], w))
    q = f.op("mul", f.op("div", _horner(f, tables["QP"], w), _horner(f, tables["QQ"], w)), inverse)
    phase = rounded(f.op("sub", size, phase_constant))
    cosine, sine = f.op("cos", phase), f.op("sin", phase)
    amplitude = f.op("div", math.sqrt(2.0 / math.pi), f.op("sqrt", size))
    j = f.op("mul", f.op("sub", f.op("mul", p, cosine), f.op("mul", q, sine)), amplitude)
    y = f.op("mul", f.op("add", f.op("mul", p, sine), f.op("mul", q, cosine)), amplitude)
    return j, y


def _bessel(order: int, second_kind: bool, dtype: DType):
    """The builder of J_order (or Y_order) for a result of `dtype`."""
    phase_constant = PHASES[order]
    if dtype is DType.f32:  # PyTorch's T(π/4) is a float32 constant
        phase_constant = float(np.float32(phase_constant))

    def build(f: F64, x: str, rounded) -> str:
        size = f.op("abs", x)
        far_j, far_y = _far(f, order, f.op("maximum", size, NEAR_LIMIT), phase_constant, rounded)
        near_x = f.op("minimum", size, NEAR_LIMIT)
        near_j = _near_j(f, order, near_x)
        if not second_kind:
            value = f.where(f.op("le", size, NEAR_LIMIT), near_j, far_j)
            if order == 1:
                value = f.where(f.op("lt", x, 0.0), f.op("neg", value), value)
            return f.where(f.op("eq", size, math.inf), math.nan, value)
        tables = CEPHES_0 if order == 0 else CEPHES_1
        safe_x = f.op("maximum", near_x, 1e-300)
        z = f.op("mul", safe_x, safe_x)
        rational = f.op("div", _horner(f, tables["YP"], z), _horner(f, tables["YQ"], z))
        logarithm = f.op("log", safe_x)
        if order == 0:
            near = f.op("add", rational, f.op("mul", f.op("mul", logarithm, near_j), 2.0 / math.pi))
        else:
            bracket = f.op("sub", f.op("mul", near_j, logarithm), f.op("div", 1.0, safe_x))
            near = f.op("add", f.op("mul", safe_x, rational), f.op("mul", bracket, 2.0 / math.pi))
        value = f.where(f.op("le", x, NEAR_LIMIT), near, far_y)
        value = f.where(f.op("eq", x, math.inf), math.nan, value)
        value = f.where(f.op("eq", x, 0.0), -math.inf, value)
        return f.where(f.op("lt", x, 0.0), math.nan, value)

    return build


def rounding_to(ctx, node, dtype: DType):
    """f64 value -> the same rounded to `dtype` (and back to f64): where PyTorch computes an
    intermediate in the result's dtype and that rounding matters. Identity for f64."""
    def rounded(value: str) -> str:
        if dtype is DType.f64:
            return value
        narrow = op(ctx, "cast", [value], {"to": dtype}, hint=f"{node.name}.narrow")
        return op(ctx, "cast", [narrow], {"to": DType.f64}, hint=f"{node.name}.rounded")

    return rounded


def in_f64_rounding(ctx, node, item, build) -> str:
    """`build(f, x, rounded)` on x in f64 (`rounded`: `rounding_to` the result's dtype), cast
    to the result's dtype."""
    dtype = result_dtype(node)
    if not dtype.is_float:
        refuse(f"{node.target} with a {dtype.value} result", "a floating-point result")
    x = operand(ctx, item, DType.f64, f"{node.name}.f64")
    value = build(F64(ctx, node), x, rounding_to(ctx, node, dtype))
    return value if dtype is DType.f64 else op(ctx, "cast", [value], {"to": dtype}, hint=node.name)


def _convert(ctx, node, args, order: int, second_kind: bool) -> str:
    return in_f64_rounding(ctx, node, args[0], _bessel(order, second_kind, result_dtype(node)))


@converter("aten.special_bessel_j0")
def handle_bessel_j0(ctx, node, args, kwargs):
    return _convert(ctx, node, args, 0, second_kind=False)


@converter("aten.special_bessel_j1")
def handle_bessel_j1(ctx, node, args, kwargs):
    return _convert(ctx, node, args, 1, second_kind=False)


@converter("aten.special_bessel_y0")
def handle_bessel_y0(ctx, node, args, kwargs):
    return _convert(ctx, node, args, 0, second_kind=True)


@converter("aten.special_bessel_y1")
def handle_bessel_y1(ctx, node, args, kwargs):
    return _convert(ctx, node, args, 1, second_kind=True)
