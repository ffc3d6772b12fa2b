"""``polynomial_recurrence(x, n) {family}``: an orthogonal polynomial of a degree read at run time.

The value of the family's polynomial of degree n at x, elementwise with broadcasting; x and
n share a float dtype and the result has it. A degree known while importing can be unrolled
into core ops, but a degree that is a tensor has no bound before the graph runs, so this op
runs the three-term recurrence itself, up to the largest degree among the elements:

- ``laguerre_l``: L_0 = 1, L_1 = 1 - x, L_{k+1} = ((2k + 1 - x) L_k - k L_{k-1}) / (k + 1);
  L_n(0) = 1.
- ``legendre_p``: P_0 = 1, P_1 = x, P_{k+1} = ((2k + 1) x P_k - k P_{k-1}) / (k + 1);
  P_n(1) = 1, P_n(-1) = (-1)^n.

The degree is n truncated towards zero; a negative n gives 0, and so does an n with no
integer value (NaN, ±inf, |n| >= 2^63). The recurrence runs in the operands' dtype, in the
order of operations of PyTorch's kernels (``aten/src/ATen/native/Math.h``), the
multiply-subtract rounded once as their compiled loops contract it (for float32 the product
is exact in float64, so float32 results are PyTorch's bit for bit; float64 has no wider type
here and rounds twice, an ulp or so per step); an element whose value turns NaN stops there,
as those kernels stop.
A degree past `DEGREE_LIMIT` is an error at run time (the loop would take that many steps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlxir.errors import RlxError
from rlxir.numpy_on_use import numpy_on_use
from rlxir.ops.core import _register, binary_rule
from rlxir.ops.registry import AttrSpec, ShapeError, attach
from rlxir.types import TensorType

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

FAMILIES = ("laguerre_l", "legendre_p")

DEGREE_LIMIT = 1 << 24
"""The largest degree the reference runs (each degree is one pass over the elements)."""


def polynomial_recurrence_rule(types, attrs) -> TensorType:
    for index, type_ in enumerate(types):
        if not type_.dtype.is_float:
            raise ShapeError(f"polynomial_recurrence takes float operands, got {type_.dtype.value}", operand=index,
                             expected="x and n of one float dtype")
    return binary_rule(types, attrs)


def degrees(n: np.ndarray) -> np.ndarray:
    """n truncated towards zero as int64; -1 where C's conversion has no value."""
    wide = n.astype(np.float64)
    valid = np.isfinite(wide) & (np.abs(wide) < 2.0 ** 63)
    return np.where(valid, np.trunc(np.where(valid, wide, 0.0)), -1.0).astype(np.int64)


def _fused(factor: np.ndarray, current: np.ndarray, subtrahend: np.ndarray) -> np.ndarray:
    """factor * current - subtrahend rounded once to the operands' dtype (float32: the exact
    product in float64; float64 and the others: as NumPy rounds each step)."""
    if factor.dtype != np.float32:
        return factor * current - subtrahend
    exact = factor.astype(np.float64) * current.astype(np.float64) - subtrahend.astype(np.float64)
    return exact.astype(np.float32)


def _step(family: str, x: np.ndarray, k: int, previous: np.ndarray, current: np.ndarray) -> np.ndarray:
    """The degree k + 1 value from degrees k - 1 and k."""
    dtype = x.dtype.type
    if family == "laguerre_l":
        factor = dtype(k + k) + (dtype(1.0) - x)
    else:
        factor = dtype(k + k + 1) * x
    with np.errstate(all="ignore"):
        return _fused(factor, current, dtype(k) * previous) / dtype(k + 1)


def polynomial_recurrence_reference(inputs: Sequence[np.ndarray], attrs: Mapping) -> np.ndarray:
    x, n = np.broadcast_arrays(*inputs)
    family = attrs["family"]
    dtype = x.dtype.type
    degree = degrees(n)
    top = int(degree.max(initial=0))
    if top > DEGREE_LIMIT:
        raise RlxError(f"polynomial_recurrence of degree {top}", expected=f"degrees up to {DEGREE_LIMIT}")
    first = np.ones_like(x)
    second = dtype(1.0) - x if family == "laguerre_l" else x.copy()
    previous, current = first, second
    for k in range(1, top):
        running = (k < degree) & ~np.isnan(current)
        if not running.any():
            break
        following = _step(family, x, k, previous, current)
        previous, current = np.where(running, current, previous), np.where(running, following, current)
    result = np.where(degree == 0, first, current)
    if family == "laguerre_l":
        result = np.where(x == 0, dtype(1.0), result)
    else:
        endpoint = np.where((x > 0) | (degree % 2 == 0), dtype(1.0), dtype(-1.0))
        result = np.where(np.abs(x) == 1, endpoint, result)
    return np.where(degree < 0, dtype(0.0), result).astype(x.dtype)


_register("polynomial_recurrence", (2, 2), polynomial_recurrence_rule, ("elementwise", "binary"),
          {"family": AttrSpec("str", choices=FAMILIES, doc="which polynomial: laguerre_l or legendre_p")},
          operands=("x", "n"), doc="an orthogonal polynomial of x whose degree n is read at run time")
attach("polynomial_recurrence", reference=polynomial_recurrence_reference)
