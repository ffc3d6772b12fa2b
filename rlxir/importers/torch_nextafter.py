"""``nextafter(x, y)`` -> core ops: the representable number next to x towards y, built
exactly in f64 from x's binade (`torch_special._frexp`) instead of its bit pattern, which the
core ops cannot reach.

With |x| = m 2^e (m in [0.5, 1)), the numbers of x's binade are 2^(e - digits) apart
(`FORMATS`: 24 digits for float32, 53 for float64), and never closer than the smallest
subnormal; stepping towards 0 from a power of two (|m| = 0.5) crosses into the binade below,
half as wide. x ± that spacing is exact in f64 and exactly representable in x's dtype, so the
final cast does not round. Edge values as C's ``nextafter``: y where x == y, NaN where either
is NaN, ± the smallest subnormal from 0, ± the largest finite number from ±inf, inf past the
largest finite number. Other dtypes (float16, bfloat16) are refused: their formats are not in
`FORMATS`.
"""

from __future__ import annotations

import math

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, result_dtype
from rlxir.importers.torch_registry import converter
from rlxir.importers.torch_special import F64, _frexp

FORMATS = {
    DType.f32: (24, 2.0 ** -149, 3.4028234663852886e38),
    DType.f64: (53, 2.0 ** -1074, 1.7976931348623157e308),
}
"""dtype -> (significand digits, smallest subnormal, largest finite number)."""


def _nextafter(f: F64, x: str, y: str, digits: int, tiny: float, largest: float) -> str:
    """The neighbour of x towards y (see the module docstring)."""
    mantissa, exponent = _frexp(f, x)
    spacing = f.op("maximum", f.op("pow", 2.0, f.op("sub", exponent, float(digits))), tiny)
    below_power = f.op("maximum", f.op("mul", spacing, 0.5), tiny)
    power_of_two = f.op("eq", f.op("abs", mantissa), 0.5)
    upwards = f.op("gt", y, x)
    away = f.op("eq", upwards, f.op("gt", x, 0.0))
    step = f.where(away, spacing, f.where(power_of_two, below_power, spacing))
    value = f.where(upwards, f.op("add", x, step), f.op("sub", x, step))
    value = f.where(f.op("eq", x, 0.0), f.where(upwards, tiny, -tiny), value)
    value = f.where(f.op("eq", f.op("abs", x), math.inf), f.where(f.op("gt", x, 0.0), largest, -largest), value)
    value = f.where(f.op("eq", x, y), y, value)
    not_a_number = f.op("maximum", f.op("ne", x, x), f.op("ne", y, y))
    return f.where(not_a_number, math.nan, value)


@converter("aten.nextafter")
def handle_nextafter(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    if dtype not in FORMATS:
        refuse(f"nextafter on {dtype.value}", "float32 or float64 operands (the spacing of other formats is not "
                                              "built)")
    x = operand(ctx, args[0], DType.f64, f"{node.name}.x")
    y = operand(ctx, args[1], DType.f64, f"{node.name}.y")
    value = _nextafter(F64(ctx, node), x, y, *FORMATS[dtype])
    return value if dtype is DType.f64 else op(ctx, "cast", [value], {"to": dtype}, hint=node.name)
