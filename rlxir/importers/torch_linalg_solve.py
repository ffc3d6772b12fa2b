"""Solves, inverses, Cholesky and the matrix exponential -> core ops, on the unrolled
building blocks of `rlxir.importers.torch_linalg` (static matrices of at most
``MAX_ORDER`` rows, any batch, computed in f64 and cast back).

- ``_linalg_solve_ex`` / ``linalg_inv_ex``: LU of Aᵀ with partial pivoting, then the adjoint
  solve, as PyTorch does for a contiguous A (so the LU and pivots it returns are PyTorch's);
  an inverse solves against the identity.
- ``linalg_lu_solve``: P, L and U applied from a packed LU and its pivots.
- ``linalg_solve_triangular`` / ``triangular_solve``: substitution reading one triangle.
- ``linalg_cholesky_ex``, ``cholesky_solve``, ``cholesky_inverse``: unrolled Cholesky.
- ``linalg_matrix_exp``: scaling and squaring around a degree-`TAYLOR_DEGREE` Taylor
  polynomial; the number of squarings s is computed at run time from the 1-norm so that
  ‖A / 2^s‖₁ <= `TAYLOR_RADIUS`, and `MAX_SQUARINGS` squarings are emitted, each kept only
  where s asks for it.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.torch_linalg import (Emitter, diagonal, factor_cholesky, factor_lu, first_flag, matrix_operand,
                                          order_from_pivots, permute_rows, result_dtypes, result_shape,
                                          solve_triangular, unpermute_rows)
from rlxir.importers.torch_ops import operand, refuse
from rlxir.importers.torch_registry import converter
from rlxir.ops import broadcast_shapes


def _square(node, em: Emitter, matrix: str) -> int:
    rows, cols = em.shape(matrix)[-2:]
    if rows != cols:
        refuse(f"{node.target} of a {rows} x {cols} matrix", "a square matrix")
    return rows


def _right_side(ctx, node, em: Emitter, item, rows: int) -> str:
    """The right-hand side as f64 ``[*batch, rows, k]``, its rows checked against the matrix."""
    value = operand(ctx, item, DType.f64, f"{node.name}.rhs")
    shape = em.shape(value)
    if len(shape) < 2 or shape[-2] != rows:
        refuse(f"{node.target} of a right-hand side {list(shape)} for {rows} rows",
               f"a right-hand side [..., {rows}, k]")
    return value


def _common_batch(em: Emitter, matrix: str, rhs: str) -> str:
    """`rhs` expanded to the batch both it and `matrix` broadcast to."""
    batch = broadcast_shapes(em.shape(matrix)[:-2], em.shape(rhs)[:-2])
    return em.expand(rhs, tuple(batch) + em.shape(rhs)[-2:])


def lu_solve(em: Emitter, lu: str, order: str, rhs: str, left: bool, adjoint: bool) -> str:
    """X with A X = B (Aᴴ X = B when `adjoint`; X A = B, X Aᴴ = B when not `left`), A = P L U
    given as a packed LU and its row order."""
    if not left:
        return em.swap_last(lu_solve(em, lu, order, em.swap_last(rhs), True, not adjoint))
    rhs = _common_batch(em, lu, rhs)
    if not adjoint:
        forward = solve_triangular(em, lu, permute_rows(em, rhs, order), lower=True, unit=True)
        return solve_triangular(em, lu, forward, lower=False, unit=False)
    transposed = em.swap_last(lu)
    forward = solve_triangular(em, transposed, rhs, lower=True, unit=False)
    return unpermute_rows(em, solve_triangular(em, transposed, forward, lower=False, unit=True), order)


def _identity(em: Emitter, batch: tuple, order: int) -> str:
    return em.expand(em.literal(np.eye(order)), tuple(batch) + (order, order))


def _singular_info(em: Emitter, lu: str) -> str:
    """``getrf``'s info: the first zero on U's diagonal (1-based), else 0."""
    flags = [em.op("eq", entry, 0.0) for entry in diagonal(em, lu)]
    return first_flag(em, flags, em.shape(lu)[:-2])


@converter("aten._linalg_solve_ex")
def handle_solve_ex(ctx, node, args, kwargs):
    """(X, LU, pivots, info) with A X = B (X A = B when left=False); B is a vector when it is
    1-d or A's shape without its last dim (PyTorch's rule)."""
    left = args[2] if len(args) > 2 else kwargs.get("left", True)
    em, matrix = matrix_operand(ctx, node, args[0])
    rows = _square(node, em, matrix)
    rhs_shape = tuple(ctx.type(args[1]).shape)
    vector = len(rhs_shape) == 1 or left and rhs_shape == em.shape(matrix)[:-1]
    rhs = operand(ctx, args[1], DType.f64, f"{node.name}.rhs")
    if vector:
        rhs = em.reshape(rhs, rhs_shape + (1,))
    if left and not vector:
        rhs = _right_side(ctx, node, em, rhs, rows)
    lu, pivots, order = factor_lu(em, em.swap_last(matrix))
    solution = lu_solve(em, lu, order, rhs, left, adjoint=True)
    dtypes = result_dtypes(node)
    if vector:
        solution = em.reshape(solution, result_shape(ctx, node))
    return [em.cast(solution, dtypes[0]), em.cast(lu, dtypes[1]), em.cast(pivots, DType.i32), _singular_info(em, lu)]


@converter("aten.linalg_inv_ex")
def handle_inv_ex(ctx, node, args, kwargs):
    """(A⁻¹, info): A X = I solved as `handle_solve_ex` solves."""
    em, matrix = matrix_operand(ctx, node, args[0])
    rows = _square(node, em, matrix)
    lu, _, order = factor_lu(em, em.swap_last(matrix))
    inverse = lu_solve(em, lu, order, _identity(em, em.shape(matrix)[:-2], rows), left=True, adjoint=True)
    return [em.cast(inverse, result_dtypes(node)[0]), _singular_info(em, lu)]


@converter("aten.linalg_lu_solve")
def handle_lu_solve(ctx, node, args, kwargs):
    """X from a packed LU, its pivots and B (``left`` and ``adjoint`` as PyTorch)."""
    left = kwargs.get("left", args[3] if len(args) > 3 else True)
    adjoint = kwargs.get("adjoint", args[4] if len(args) > 4 else False)
    em, lu = matrix_operand(ctx, node, args[0], "the LU")
    rows = _square(node, em, lu)
    order = order_from_pivots(em, operand(ctx, args[1], None, f"{node.name}.pivots"), rows)
    rhs = operand(ctx, args[2], DType.f64, f"{node.name}.rhs")
    solution = lu_solve(em, lu, order, rhs, left, adjoint)
    return em.cast(solution, result_dtypes(node)[0])


def _triangular(em: Emitter, matrix: str, rhs: str, upper: bool, left: bool, unit: bool) -> str:
    """X with T X = B (X T = B when not `left`), T one triangle of `matrix`."""
    if not left:
        transposed = em.swap_last(matrix)
        return em.swap_last(_triangular(em, transposed, em.swap_last(rhs), not upper, True, unit))
    return solve_triangular(em, matrix, _common_batch(em, matrix, rhs), lower=not upper, unit=unit)


@converter("aten.linalg_solve_triangular")
def handle_solve_triangular(ctx, node, args, kwargs):
    upper = kwargs.get("upper", args[2] if len(args) > 2 else None)
    left = kwargs.get("left", args[3] if len(args) > 3 else True)
    unit = kwargs.get("unitriangular", args[4] if len(args) > 4 else False)
    em, matrix = matrix_operand(ctx, node, args[0])
    _square(node, em, matrix)
    rhs = operand(ctx, args[1], DType.f64, f"{node.name}.rhs")
    return em.cast(_triangular(em, matrix, rhs, upper, left, unit), result_dtypes(node)[0])


@converter("aten.triangular_solve")
def handle_triangular_solve(ctx, node, args, kwargs):
    """(X, A) with A X = b (Aᵀ X = b when ``transpose``); A comes back broadcast to the batch."""
    upper = kwargs.get("upper", args[2] if len(args) > 2 else True)
    transpose = kwargs.get("transpose", args[3] if len(args) > 3 else False)
    unit = kwargs.get("unitriangular", args[4] if len(args) > 4 else False)
    em, matrix = matrix_operand(ctx, node, args[1])
    _square(node, em, matrix)
    rhs = operand(ctx, args[0], DType.f64, f"{node.name}.rhs")
    factor = em.swap_last(matrix) if transpose else matrix
    solution = _triangular(em, factor, rhs, upper != transpose, True, unit)
    dtypes = result_dtypes(node)
    coefficient = em.expand(matrix, result_shape(ctx, node, 1))
    return [em.cast(solution, dtypes[0]), em.cast(coefficient, dtypes[1])]


def _cholesky_lower(em: Emitter, matrix: str, upper: bool) -> tuple[str, list[str]]:
    """L (and its failure flags) of the matrix whose lower triangle (upper, if `upper`) is read."""
    return factor_cholesky(em, em.swap_last(matrix) if upper else matrix)


@converter("aten.linalg_cholesky_ex")
def handle_cholesky_ex(ctx, node, args, kwargs):
    """(L, info) with A = L Lᵀ (U with A = Uᵀ U when upper); info is the first pivot that is
    not positive, as ``potrf`` (L is then not PyTorch's partial factor)."""
    upper = kwargs.get("upper", args[1] if len(args) > 1 else False)
    em, matrix = matrix_operand(ctx, node, args[0])
    _square(node, em, matrix)
    lower, flags = _cholesky_lower(em, matrix, upper)
    factor = em.swap_last(lower) if upper else lower
    return [em.cast(factor, result_dtypes(node)[0]), first_flag(em, flags, em.shape(matrix)[:-2])]


def _cholesky_apply(em: Emitter, factor: str, rhs: str, upper: bool) -> str:
    """A⁻¹ B for A = L Lᵀ given L (or Uᵀ U given U): two triangular solves."""
    lower = em.swap_last(factor) if upper else factor
    rhs = _common_batch(em, lower, rhs)
    forward = solve_triangular(em, lower, rhs, lower=True, unit=False)
    return solve_triangular(em, em.swap_last(lower), forward, lower=False, unit=False)


@converter("aten.cholesky_solve")
def handle_cholesky_solve(ctx, node, args, kwargs):
    upper = kwargs.get("upper", args[2] if len(args) > 2 else False)
    em, factor = matrix_operand(ctx, node, args[1], "the Cholesky factor")
    _square(node, em, factor)
    rhs = operand(ctx, args[0], DType.f64, f"{node.name}.rhs")
    solution = _cholesky_apply(em, factor, rhs, upper)
    return em.expand(em.cast(solution, result_dtypes(node)[0]), result_shape(ctx, node))


@converter("aten.cholesky_inverse")
def handle_cholesky_inverse(ctx, node, args, kwargs):
    upper = kwargs.get("upper", args[1] if len(args) > 1 else False)
    em, factor = matrix_operand(ctx, node, args[0], "the Cholesky factor")
    rows = _square(node, em, factor)
    identity = _identity(em, em.shape(factor)[:-2], rows)
    return em.cast(_cholesky_apply(em, factor, identity, upper), result_dtypes(node)[0])


TAYLOR_RADIUS = 0.5
"""The 1-norm the matrix is scaled down to before the Taylor polynomial."""

TAYLOR_DEGREE = 16
"""Terms of the Taylor polynomial: the tail at norm 0.5 is below 0.5^17 / 17! e^0.5 < 1e-19."""

MAX_SQUARINGS = 64
"""Squarings emitted: matrices of 1-norm up to 0.5 * 2^64 (about 9e18); beyond, NaN."""


def _matrix_exp(em: Emitter, matrix: str) -> str:
    """exp(A) = (T(A / 2^s))^(2^s), s = max(0, ceil(log2(‖A‖₁ / TAYLOR_RADIUS))) per matrix."""
    shape = em.shape(matrix)
    order = shape[-1]
    column_sums = em.op("reduce_sum", em.op("abs", matrix), axes=[-2], keepdims=True)
    norm = em.op("reduce_max", column_sums, axes=[-1], keepdims=True)
    exponent = em.op("ceil", em.op("div", em.op("log", em.op("div", norm, TAYLOR_RADIUS)), math.log(2.0)))
    exponent = em.op("maximum", exponent, 0.0)
    # log rounding may leave the scaled norm a hair above the radius: one more halving then
    scaled_norm = em.op("mul", norm, em.op("pow", 2.0, em.op("neg", exponent)))
    exponent = em.where(em.op("gt", scaled_norm, TAYLOR_RADIUS), em.op("add", exponent, 1.0), exponent)
    scaled = em.op("mul", matrix, em.op("pow", 2.0, em.op("neg", exponent)))
    identity = em.literal(np.eye(order))
    power = identity
    for degree in range(TAYLOR_DEGREE, 0, -1):
        power = em.op("add", identity, em.op("div", em.op("matmul", scaled, power), float(degree)))
    for squaring in range(MAX_SQUARINGS):
        power = em.where(em.op("gt", exponent, float(squaring)), em.op("matmul", power, power), power)
    return em.where(em.op("gt", exponent, float(MAX_SQUARINGS)), math.nan, power)


@converter("aten.linalg_matrix_exp")
def handle_matrix_exp(ctx, node, args, kwargs):
    em, matrix = matrix_operand(ctx, node, args[0])
    if _square(node, em, matrix) == 0:
        return em.cast(matrix, result_dtypes(node)[0])
    return em.cast(_matrix_exp(em, matrix), result_dtypes(node)[0])
