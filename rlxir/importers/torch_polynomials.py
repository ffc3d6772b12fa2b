"""Orthogonal polynomials -> core ops: ``special_{chebyshev,shifted_chebyshev}_polynomial_{t,u,
v,w}``, ``special_hermite_polynomial_{h,he}``, ``special_laguerre_polynomial_l`` and
``special_legendre_polynomial_p`` of (x, n), with PyTorch's special cases (Math.h): n is
truncated to an integer (NaN, ±inf and |n| >= 2^63 count as negative), a negative n gives 0.

- Hermite, Laguerre and Legendre run PyTorch's three-term recurrence in the result's dtype,
  in PyTorch's order of operations, its multiply-subtract fused as PyTorch's compiled kernel
  fuses it (`_fused`; float32 results are then bit-identical, overflow to inf and inf - inf =
  NaN included), unrolled to the largest degree and selected per element by ``where``. A static
  n (known while importing) unrolls to its largest value, at most `STATIC_DEGREE_LIMIT`;
  an n computed at run time unrolls to the bound PyTorch itself has, where it has one
  (Hermite: `HERMITE_LIMITS`, NaN past it); Laguerre and Legendre have none (their recurrence
  runs n times), so a run-time n is the ``polynomial_recurrence`` op, which runs it itself.
- Chebyshev polynomials (plain and shifted) use their closed forms for every n, static or
  computed at run time (`torch_chebyshev`).
"""

from __future__ import annotations

import math

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, result_dtype
from rlxir.importers.torch_registry import Static, converter, op_key
from rlxir.importers.torch_special import F64

STATIC_DEGREE_LIMIT = 1024
"""The largest static degree unrolled (each degree is a few ops)."""

HERMITE_LIMITS = {DType.f32: 128, DType.f64: 512}
"""PyTorch's Hermite degree limit per dtype (NaN past it): the run-time unroll bound."""

LARGEST = {DType.f32: 3.4028234663852886e38, DType.f64: 1.7976931348623157e308}
"""The largest finite number of each dtype (where PyTorch's recurrence overflows)."""


class InDtype(F64):
    """`F64`'s arithmetic in another dtype (constants made in it)."""

    def __init__(self, ctx, node, dtype: DType):
        super().__init__(ctx, node)
        self.dtype = dtype

    def const(self, value: float) -> str:
        return self.ctx.builder.scalar(value, self.dtype)


def _degree(f: InDtype, n: str) -> str:
    """n truncated towards 0, in f's dtype; -1 where C's conversion to int64 has no value
    (NaN, ±inf, |n| >= 2^63: x86 gives INT64_MIN there, a negative degree)."""
    truncated = f.where(f.op("lt", n, 0.0), f.op("ceil", n), f.op("floor", n))
    invalid = f.op("maximum", f.op("ne", n, n), f.op("ge", f.op("abs", n), 2.0 ** 63))
    return f.where(invalid, -1.0, truncated)


def _static_degree(item) -> int | None:
    """The largest valid degree of a static n (0 when none is), None when n is not static."""
    if isinstance(item, (bool, int, float)):
        values = [float(item)]
    elif isinstance(item, Static) and not item.fake:
        values = [float(value) for value in item.tensor.detach().flatten().tolist()]
    else:
        return None
    degrees = [math.trunc(value) for value in values if math.isfinite(value) and 0 <= value < 2.0 ** 63]
    return max(degrees, default=0)


def _unrolled(f: InDtype, degree: str, top: int, first: str, second: str, step) -> str:
    """The recurrence value at `degree` (0 <= degree <= top): first at 0, second at 1, then
    step(k, previous, current) for k = 2..top, each selected where degree == k."""
    result = f.where(f.op("eq", degree, 0.0), first, second)
    previous, current = first, second
    for k in range(2, top + 1):
        previous, current = current, step(k, previous, current)
        result = f.where(f.op("eq", degree, float(k)), current, result)
    return result


def _fused(f: InDtype, factor: str, current: str, subtrahend: str) -> str:
    """factor * current - subtrahend rounded once, as PyTorch's compiled kernels contract it
    (a fused multiply-add): for float32 the product is exact in f64, the difference is
    rounded there and cast back (float64 has no wider type here, so it rounds twice)."""
    if f.dtype is not DType.f32:
        return f.op("sub", f.op("mul", factor, current), subtrahend)
    wide = [op(f.ctx, "cast", [value], {"to": DType.f64}, hint=f"{f.hint}.wide") for value in (factor, current,
                                                                                                 subtrahend)]
    exact = op(f.ctx, "sub", [op(f.ctx, "mul", wide[:2], hint=f"{f.hint}.product"), wide[2]], hint=f"{f.hint}.fma")
    return op(f.ctx, "cast", [exact], {"to": DType.f32}, hint=f"{f.hint}.fused")


def _hermite_h_step(f, x):
    double = f.op("add", x, x)
    return lambda k, previous, current: _fused(f, double, current, f.op("mul", previous, float(2 * (k - 1))))


def _hermite_he_step(f, x):
    return lambda k, previous, current: _fused(f, x, current, f.op("mul", previous, float(k - 1)))


def _laguerre_step(f, x):
    def step(k, previous, current):
        j = k - 1  # PyTorch's loop index
        factor = f.op("add", float(j + j), f.op("sub", 1.0, x))
        return f.op("div", _fused(f, factor, current, f.op("mul", previous, float(j))), float(j + 1))

    return step


def _legendre_step(f, x):
    def step(k, previous, current):
        j = k - 1
        factor = f.op("mul", x, float(j + j + 1))
        return f.op("div", _fused(f, factor, current, f.op("mul", previous, float(j))), float(j + 1))

    return step


RECURRENCES = {
    "hermite_h": (lambda f, x: f.op("add", x, x), _hermite_h_step),
    "hermite_he": (lambda f, x: x, _hermite_he_step),
    "laguerre_l": (lambda f, x: f.op("sub", 1.0, x), _laguerre_step),
    "legendre_p": (lambda f, x: x, _legendre_step),
}
"""family -> (degree-1 value, step builder) of the recurrences run in the result's dtype."""


def _recurrence(ctx, node, args, family: str):
    """Hermite, Laguerre or Legendre: the recurrence unrolled to the static or known bound."""
    dtype = _float_result(node)
    f = InDtype(ctx, node, dtype)
    x = operand(ctx, args[0], dtype, f"{node.name}.x")
    n = operand(ctx, args[1], dtype, f"{node.name}.n")
    top = _static_degree(args[1])
    limit = HERMITE_LIMITS.get(dtype) if family.startswith("hermite") else None
    if top is None and limit is None:  # no bound to unroll to: the IR op runs the recurrence itself
        return op(ctx, "polynomial_recurrence", [x, n], {"family": family}, hint=node.name)
    degree = _degree(f, n)
    top = limit if top is None else min(top, limit or top)
    if top > STATIC_DEGREE_LIMIT:
        refuse(f"{op_key(node.target)} of degree {top}", f"a degree up to {STATIC_DEGREE_LIMIT} (each degree is unrolled)")
    second, step = RECURRENCES[family]
    value = _unrolled(f, degree, max(top, 1), f.const(1.0), second(f, x), step(f, x))
    if family == "laguerre_l":
        value = f.where(f.op("eq", x, 0.0), 1.0, value)
    if family == "legendre_p":
        value = f.where(f.op("eq", f.op("abs", x), 1.0), _endpoint_sign(f, x, degree), value)
    if limit is not None:
        value = f.where(f.op("gt", degree, float(limit)), math.nan, value)
    return f.where(f.op("lt", degree, 0.0), 0.0, value)


def _endpoint_sign(f, x: str, degree: str) -> str:
    """1 at x = 1 or an even degree, -1 otherwise (the value at |x| = 1)."""
    even = f.op("eq", f.op("mod", degree, 2.0), 0.0)
    return f.where(f.op("maximum", f.op("gt", x, 0.0), even), 1.0, -1.0)


def _float_result(node) -> DType:
    dtype = result_dtype(node)
    if dtype not in LARGEST:
        refuse(f"{op_key(node.target)} with a {dtype.value} result", "a float32 or float64 result")
    return dtype


@converter("aten.special_hermite_polynomial_h")
def handle_hermite_h(ctx, node, args, kwargs):
    return _recurrence(ctx, node, args, "hermite_h")


@converter("aten.special_hermite_polynomial_he")
def handle_hermite_he(ctx, node, args, kwargs):
    return _recurrence(ctx, node, args, "hermite_he")


@converter("aten.special_laguerre_polynomial_l")
def handle_laguerre_l(ctx, node, args, kwargs):
    return _recurrence(ctx, node, args, "laguerre_l")


@converter("aten.special_legendre_polynomial_p")
def handle_legendre_p(ctx, node, args, kwargs):
    return _recurrence(ctx, node, args, "legendre_p")
