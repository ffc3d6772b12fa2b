"""LDLᵀ with Bunch-Kaufman pivoting -> core ops: ``linalg_ldl_factor_ex`` and
``linalg_ldl_solve``, as LAPACK's unblocked ``sytf2`` / ``sytrs`` (lower triangle), unrolled
on the building blocks of `rlxir.importers.torch_linalg` (static matrices of at most
``MAX_ORDER`` rows, any batch, f64 inside).

Bunch-Kaufman picks, from the values, a 1 x 1 or a 2 x 2 pivot block at each step, so the
elimination's step sizes differ between the matrices of a batch. The unrolled graph therefore
visits every position k once and keeps, per matrix, whether k is the second column of a 2 x 2
block begun at k - 1 (then the position changes nothing); each position computes the
zero-pivot, 1 x 1 and 2 x 2 outcomes on the whole (static-size) matrix, masked to the rows and
columns they touch, and selects per matrix with ``where``. Interchanges are symmetric row and
column permutations done by ``gather_elements`` (exact copies). Pivots are LAPACK's: kp + 1 for
a 1 x 1 block, -(kp + 1) on both columns of a 2 x 2 block.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.torch_linalg import Emitter, first_flag, first_largest, matrix_operand, result_dtypes
from rlxir.importers.torch_ops import operand, refuse
from rlxir.importers.torch_registry import converter

ALPHA = (1.0 + math.sqrt(17.0)) / 8.0
"""Bunch-Kaufman's threshold: the growth bound is minimal for this value."""


def _rows(em: Emitter, order: int, test) -> str:
    """A bool ``[order, 1]`` literal: test(row index) for each row."""
    return em.literal(test(np.arange(order)).reshape(-1, 1), DType.bool)


def _both(em: Emitter, first: str, second: str) -> str:
    return em.where(first, second, em.builder.scalar(False, DType.bool))


def _negate(em: Emitter, flag: str) -> str:
    return em.op("eq", flag, em.builder.scalar(False, DType.bool))


def _swap_rows(em: Emitter, value: str, static: int, moving: str) -> str:
    """`value` ``[*batch, n, k]`` with rows `static` and `moving` (f64 ``[*batch, 1, 1]``)
    exchanged (unchanged where they are the same row)."""
    order = em.shape(value)[-2]
    places = em.iota(order, -2)
    source = em.where(em.op("eq", places, float(static)), moving,
                      em.where(em.op("eq", places, moving), float(static), places))
    index = em.cast(em.expand(source, em.shape(value)), DType.i64)
    return em.op("gather_elements", value, index, axis=len(em.shape(value)) - 2)


def _swap_symmetric(em: Emitter, value: str, static: int, moving: str) -> str:
    """Rows and columns `static` and `moving` of a square matrix exchanged."""
    return em.swap_last(_swap_rows(em, em.swap_last(_swap_rows(em, value, static, moving)), static, moving))


def _select_row(em: Emitter, value: str, index: str) -> str:
    """Row `index` (f64 ``[*batch, 1, 1]``) of `value`, ``[*batch, 1, n]``."""
    chosen = em.op("eq", em.iota(em.shape(value)[-2], -2), index)
    return em.op("reduce_sum", em.where(chosen, value, 0.0), axes=[-2], keepdims=True)


class Choice:
    """The Bunch-Kaufman choice at position k: per matrix, a zero pivot (no elimination), a
    two-by-two block, and the row kp exchanged into place (f64)."""

    def __init__(self, em: Emitter, work: str, step: int):
        order = em.shape(work)[-1]
        self.step = step
        diagonal = em.op("abs", em.entry(work, step, step))
        if step == order - 1:
            self.zero = em.op("maximum", em.op("eq", diagonal, 0.0), em.op("ne", diagonal, diagonal))
            self.two = em.builder.scalar(False, DType.bool)
            self.pivot = em.fill(float(step), em.shape(work)[:-2] + (1, 1))
            return
        column = em.part(em.part(work, -1, step, 1), -2, step + 1, order - step - 1)
        largest_row = em.op("add", first_largest(em, column), float(step + 1))
        largest = em.op("reduce_max", em.op("abs", column), axes=[-2], keepdims=True)
        row = em.op("abs", _select_row(em, work, largest_row))
        places = em.iota(order, -1)
        others = _both(em, em.op("ge", places, float(step)), em.op("ne", places, largest_row))
        row_largest = em.op("reduce_max", em.where(others, row, -1.0), axes=[-1], keepdims=True)
        own = em.op("reduce_sum", em.where(em.op("eq", places, largest_row), row, 0.0), axes=[-1], keepdims=True)
        bound = em.op("mul", largest, ALPHA)
        keep = em.op("maximum", em.op("ge", diagonal, bound),
                     em.op("ge", diagonal, em.op("mul", bound, em.op("div", largest, row_largest))))
        exchange_one = _both(em, _negate(em, keep), em.op("ge", own, em.op("mul", row_largest, ALPHA)))
        self.zero = em.op("maximum", em.op("eq", em.op("maximum", diagonal, largest), 0.0),
                          em.op("ne", diagonal, diagonal))
        self.two = _both(em, _negate(em, self.zero), _negate(em, em.op("maximum", keep, exchange_one)))
        self.pivot = em.where(em.op("maximum", keep, self.zero), float(step), largest_row)


def _ldl_step(em: Emitter, work: str, choice: Choice) -> tuple[str, str, str, str]:
    """(the matrix after step k, column k of LD, column k + 1 of LD for a 2 x 2 block,
    LAPACK's pivot at k), each chosen per matrix among the zero, 1 x 1 and 2 x 2 outcomes."""
    order, step = em.shape(work)[-1], choice.step
    at_step = _rows(em, order, lambda index: index == step)
    below = _rows(em, order, lambda index: index > step)
    exchanged = work if step == order - 1 else _swap_symmetric(em, work, step, choice.pivot)
    column = em.part(exchanged, -1, step, 1)
    head = em.entry(exchanged, step, step)
    tail = em.where(below, column, 0.0)
    one_work = em.op("sub", exchanged, em.op("div", em.op("mul", tail, em.swap_last(tail)), head))
    one_column = em.where(at_step, head, em.op("div", tail, head))
    zero_column = em.where(_rows(em, order, lambda index: index >= step), column, 0.0)
    pivot = em.op("add", choice.pivot, 1.0)
    if step == order - 1:
        return em.where(choice.zero, work, one_work), em.where(choice.zero, zero_column, one_column), None, pivot
    paired = _swap_symmetric(em, work, step + 1, choice.pivot)
    two_work, two_columns = _two_by_two(em, paired, step)
    new_work = em.where(choice.zero, work, em.where(choice.two, two_work, one_work))
    new_column = em.where(choice.zero, zero_column, em.where(choice.two, two_columns[0], one_column))
    return new_work, new_column, two_columns[1], em.where(choice.two, em.op("neg", pivot), pivot)


def _two_by_two(em: Emitter, work: str, step: int) -> tuple[str, list[str]]:
    """``sytf2``'s 2 x 2 elimination at (step, step + 1) of the exchanged matrix: (the matrix
    after it, LD's two columns)."""
    order = em.shape(work)[-1]
    later = _rows(em, order, lambda index: index >= step + 2)
    first = em.where(later, em.part(work, -1, step, 1), 0.0)
    second = em.where(later, em.part(work, -1, step + 1, 1), 0.0)
    off = em.entry(work, step + 1, step)
    lower_ratio = em.op("div", em.entry(work, step + 1, step + 1), off)
    upper_ratio = em.op("div", em.entry(work, step, step), off)
    scale = em.op("div", em.op("div", 1.0, em.op("sub", em.op("mul", lower_ratio, upper_ratio), 1.0)), off)
    multiplier_first = em.op("mul", scale, em.op("sub", em.op("mul", lower_ratio, first), second))
    multiplier_second = em.op("mul", scale, em.op("sub", em.op("mul", upper_ratio, second), first))
    update = em.op("add", em.op("mul", first, em.swap_last(multiplier_first)),
                   em.op("mul", second, em.swap_last(multiplier_second)))
    at_step = _rows(em, order, lambda index: index == step)
    at_next = _rows(em, order, lambda index: index == step + 1)
    column_first = em.where(at_step, em.entry(work, step, step), em.where(at_next, off, multiplier_first))
    column_second = em.where(at_next, em.entry(work, step + 1, step + 1), multiplier_second)
    return em.op("sub", work, update), [column_first, column_second]


def factor_ldl(em: Emitter, matrix: str) -> tuple[str, str, list[str]]:
    """(LD, pivots f64 ``[*batch, n]``, zero-pivot flags) of the symmetric matrix whose lower
    triangle `matrix` holds."""
    shape = em.shape(matrix)
    order, batch = shape[-1], shape[:-2]
    row, col = np.indices((order, order))
    work = em.where(em.literal(row >= col, DType.bool), matrix, em.swap_last(matrix))
    second = em.fill(False, batch + (1, 1), DType.bool)
    pending_column = pending_pivot = None
    columns, pivots, failures = [], [], []
    for step in range(order):
        choice = Choice(em, work, step)
        new_work, column, next_column, pivot = _ldl_step(em, work, choice)
        if pending_column is not None:
            column = em.where(second, pending_column, column)
            pivot = em.where(second, pending_pivot, pivot)
        work = em.where(second, work, new_work)
        columns.append(column)
        pivots.append(pivot)
        failures.append(_both(em, _negate(em, second), choice.zero))
        pending_column, pending_pivot = next_column, pivot
        second = _both(em, _negate(em, second), choice.two)
    if not order:
        return matrix, em.fill(0.0, batch + (0,)), []
    return em.join(columns, -1), em.reshape(em.join(pivots, -1), batch + (order,)), failures


def solve_ldl(em: Emitter, ld: str, pivots: str, rhs: str) -> str:
    """X with A X = B from ``sytrf``'s LD and pivots, as ``sytrs``: L D Y = P B forward, then
    Lᵀ X = Y backward, each position a 1 x 1 step, the first or the second column of a 2 x 2
    block (read from the pivots' signs per matrix)."""
    order = em.shape(ld)[-1]
    pivots = em.cast(pivots, DType.f64)
    batch = em.shape(pivots)[:-1]
    second = em.fill(False, batch + (1, 1), DType.bool)
    seconds, firsts = [], []
    for step in range(order):
        negative = em.op("lt", em.reshape(em.part(pivots, -1, step, 1), batch + (1, 1)), 0.0)
        seconds.append(second)
        firsts.append(_both(em, _negate(em, second), negative))
        second = firsts[-1]
    for step in range(order):
        rhs = em.where(seconds[step], rhs, _forward_step(em, ld, pivots, rhs, step, firsts[step]))
    for step in range(order - 1, -1, -1):
        rhs = em.where(firsts[step], rhs, _backward_step(em, ld, pivots, rhs, step, seconds[step]))
    return rhs


def _pivot_row(em: Emitter, pivots: str, step: int) -> str:
    """The 0-based row LAPACK's pivot at `step` names (its sign dropped), ``[*batch, 1, 1]``."""
    batch = em.shape(pivots)[:-1]
    return em.op("sub", em.op("abs", em.reshape(em.part(pivots, -1, step, 1), batch + (1, 1))), 1.0)


def _forward_step(em: Emitter, ld: str, pivots: str, rhs: str, step: int, two: str) -> str:
    """Position `step` of L D Y = P B: a 1 x 1 step, or (where `two`) a 2 x 2 block."""
    order = em.shape(ld)[-1]
    target = _pivot_row(em, pivots, step)
    exchanged = _swap_rows(em, rhs, step, target)
    head = em.part(exchanged, -2, step, 1)
    below = em.where(_rows(em, order, lambda index: index > step), em.part(ld, -1, step, 1), 0.0)
    one = em.op("sub", exchanged, em.op("mul", below, head))
    one = em.where(_rows(em, order, lambda index: index == step), em.op("div", head, em.entry(ld, step, step)), one)
    if step == order - 1:
        return one
    paired = _swap_rows(em, rhs, step + 1, target)
    first, second = em.part(paired, -2, step, 1), em.part(paired, -2, step + 1, 1)
    later = _rows(em, order, lambda index: index >= step + 2)
    column_first = em.where(later, em.part(ld, -1, step, 1), 0.0)
    column_second = em.where(later, em.part(ld, -1, step + 1, 1), 0.0)
    eliminated = em.op("sub", em.op("sub", paired, em.op("mul", column_first, first)),
                       em.op("mul", column_second, second))
    off = em.entry(ld, step + 1, step)
    upper_ratio = em.op("div", em.entry(ld, step, step), off)
    lower_ratio = em.op("div", em.entry(ld, step + 1, step + 1), off)
    denominator = em.op("sub", em.op("mul", upper_ratio, lower_ratio), 1.0)
    first, second = em.op("div", first, off), em.op("div", second, off)
    new_first = em.op("div", em.op("sub", em.op("mul", lower_ratio, first), second), denominator)
    new_second = em.op("div", em.op("sub", em.op("mul", upper_ratio, second), first), denominator)
    at_step = _rows(em, order, lambda index: index == step)
    at_next = _rows(em, order, lambda index: index == step + 1)
    block = em.where(at_step, new_first, em.where(at_next, new_second, eliminated))
    return em.where(two, block, one)


def _backward_step(em: Emitter, ld: str, pivots: str, rhs: str, step: int, second: str) -> str:
    """Position `step` of Lᵀ X = Y: its row less L's column times the solved rows below
    (and, where `second` closes a 2 x 2 block, the row above too), then the interchange."""
    order = em.shape(ld)[-1]
    after = _rows(em, order, lambda index: index > step)
    at_step = _rows(em, order, lambda index: index == step)

    def dot(column: int) -> str:
        weights = em.where(after, em.part(ld, -1, column, 1), 0.0)
        return em.op("reduce_sum", em.op("mul", weights, rhs), axes=[-2], keepdims=True)

    one = em.where(at_step, em.op("sub", rhs, dot(step)), rhs) if step < order - 1 else rhs
    if step > 0 and step < order - 1:
        at_previous = _rows(em, order, lambda index: index == step - 1)
        closing = em.where(at_previous, em.op("sub", rhs, dot(step - 1)), one)
        one = em.where(second, closing, one)
    return _swap_rows(em, one, step, _pivot_row(em, pivots, step))


@converter("aten.linalg_ldl_factor_ex")
def handle_ldl_factor_ex(ctx, node, args, kwargs):
    """(LD, pivots, info) of a symmetric matrix (its lower triangle read); info is the first
    zero pivot, as ``sytrf``."""
    em, matrix = matrix_operand(ctx, node, args[0])
    rows, cols = em.shape(matrix)[-2:]
    if rows != cols:
        refuse(f"{node.target} of a {rows} x {cols} matrix", "a square matrix")
    ld, pivots, failures = factor_ldl(em, matrix)
    return [em.cast(ld, result_dtypes(node)[0]), em.cast(pivots, DType.i32),
            first_flag(em, failures, em.shape(matrix)[:-2])]


@converter("aten.linalg_ldl_solve")
def handle_ldl_solve(ctx, node, args, kwargs):
    em, ld = matrix_operand(ctx, node, args[0], "the LD factor")
    rows, cols = em.shape(ld)[-2:]
    if rows != cols:
        refuse(f"{node.target} of a {rows} x {cols} LD factor", "a square LD factor")
    pivots = operand(ctx, args[1], None, f"{node.name}.pivots")
    rhs = operand(ctx, args[2], DType.f64, f"{node.name}.rhs")
    batch = tuple(em.shape(ld)[:-2])
    rhs = em.expand(rhs, batch + em.shape(rhs)[-2:]) if len(em.shape(rhs)) < len(em.shape(ld)) else rhs
    return em.cast(solve_ldl(em, ld, pivots, rhs), result_dtypes(node)[0])
