"""The error function on whole arrays, in float64, without a Python call per element.

NumPy has no erf. `erf(x)` evaluates the rational approximations of Sun's fdlibm (the
algorithm behind the C library's `erf`, which `math.erf` calls) on each of their ranges at
once, so it agrees with `math.erf` to the last bit or so (NumPy's `exp` may differ from the
C library's by an ulp) at NumPy speed:

- |x| < 0.84375: x + x R(x^2) / S(x^2);
- 0.84375 <= |x| < 1.25: erx + P(|x| - 1) / Q(|x| - 1) (erx is erf(1) rounded to float);
- 1.25 <= |x| < 6: 1 - exp(-z^2 - 0.5625) exp((z - |x|)(z + |x|) + R(1/x^2) / S(1/x^2)) / |x|,
  z being |x| with its low 32 bits cleared, so that z^2 is exact (two ranges of R/S);
- |x| >= 6: 1; the sign is x's, NaN stays NaN.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlxir.numpy_on_use import numpy_on_use

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

ERF_ONE = 8.45062911510467529297e-01
"""erf(1) rounded to single precision, the constant term on [0.84375, 1.25)."""
NEAR_ZERO = ((1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
              -5.77027029648944159157e-03, -2.37630166566501626084e-05),
             (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
              1.32494738004321644526e-04, -3.96022827877536812320e-06))
"""(numerator, denominator) in x^2 on [0, 0.84375), constant term first."""
NEAR_ONE = ((-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
             3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
             -2.16637559486879084300e-03),
            (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
             1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02))
"""(numerator, denominator) in |x| - 1 on [0.84375, 1.25)."""
TAIL_NEAR = ((-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
              -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
              -8.12874355063065934246e+01, -9.81432934416914548592e+00),
             (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
              6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
              6.57024977031928170135e+00, -6.04244152148580987438e-02))
"""(numerator, denominator) in 1/x^2 of the tail's correction on [1.25, 1/0.35)."""
TAIL_FAR = ((-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
             -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
             -4.83519191608651397019e+02),
            (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
             3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
             -2.24409524465858183362e+01))
"""(numerator, denominator) in 1/x^2 of the tail's correction on [1/0.35, 6)."""


def _ratio(coefficients: tuple, at: np.ndarray) -> np.ndarray:
    """numerator(at) / denominator(at), each by Horner's rule from its highest term."""
    numerator, denominator = (np.polynomial.polynomial.polyval(at, terms) for terms in coefficients)
    return numerator / denominator


def erf(x: np.ndarray) -> np.ndarray:
    """erf of every element of `x`, as a float64 array of its shape."""
    shape = np.shape(x)
    values = np.asarray(x, dtype=np.float64).reshape(-1)  # one axis: masks index a 0-d input too
    magnitude = np.abs(values)
    result = np.ones_like(magnitude)  # |x| >= 6 (and inf): erf is 1 to double precision
    small = magnitude < 0.84375
    near = small & (magnitude >= 2.0 ** -28)  # below 2^-28, x (1 + 2/sqrt(pi) - 1) is x + x R(0)
    result[small] = magnitude[small] * (1.0 + NEAR_ZERO[0][0])
    result[near] = magnitude[near] + magnitude[near] * _ratio(NEAR_ZERO, magnitude[near] ** 2)
    middle = (magnitude >= 0.84375) & (magnitude < 1.25)
    result[middle] = ERF_ONE + _ratio(NEAR_ONE, magnitude[middle] - 1.0)
    for low, high, coefficients in ((1.25, 1 / 0.35, TAIL_NEAR), (1 / 0.35, 6.0, TAIL_FAR)):
        inside = (magnitude >= low) & (magnitude < high)
        tail = magnitude[inside]
        rough = (tail.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
        correction = _ratio(coefficients, 1.0 / (tail * tail))
        result[inside] = 1.0 - np.exp(-rough * rough - 0.5625) * np.exp((rough - tail) * (rough + tail)
                                                                         + correction) / tail
    result = np.copysign(result, values)
    result[np.isnan(values)] = np.nan
    return result.reshape(shape)
