"""Linear algebra by elimination on small static matrices -> core ops: the building blocks
(LU with partial pivoting, permutations, triangular solves, Cholesky) and the LU family's
converters (``_linalg_det``, ``_linalg_slogdet``, ``linalg_lu_factor_ex``, ``linalg_lu``,
``lu_unpack``); solves, inverses, Cholesky and ``matrix_exp`` build on these in
`rlxir.importers.torch_linalg_solve`, LDLᵀ in `rlxir.importers.torch_linalg_ldl`.

Every factorization is unrolled at import time: a matrix's trailing two dims must be static
and at most `MAX_ORDER` (the graph grows with the square of the order); its batch dims may be
anything, symbolic or zero-size, since each step works on the whole batch at once (slices,
``where``, ``concat``, broadcasting arithmetic). Values are computed in f64 and cast back to the
result's dtype, so float32 results keep their precision. Pivoting follows LAPACK's ``getrf``:
at step k the pivot is the first row (from k down) whose entry in column k has the largest
magnitude, rows are swapped whole, and the pivots are LAPACK's 1-based int32 indices, so LU,
pivots, L, U and P agree with PyTorch's.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import pad_axis
from rlxir.importers.torch_ops import operand, refuse
from rlxir.importers.torch_registry import converter, torch_dtype
from rlxir.types import TensorType

MAX_ORDER = 32
"""The largest matrix dim an unrolled factorization accepts (its graph has O(n²) ops)."""


class Emitter:
    """Builds f64 matrix arithmetic for one node (each op named after the node); values are
    ``[*batch, rows, cols]`` and Python floats become f64 scalars."""

    def __init__(self, ctx, node):
        self.ctx, self.builder, self.hint = ctx, ctx.builder, node.name

    def shape(self, value: str) -> tuple:
        return tuple(self.builder.type(value).shape)

    def op(self, name: str, *operands, **attrs) -> str:
        values = [item if isinstance(item, str) else self.builder.scalar(item, DType.f64) for item in operands]
        return self.builder.op(name, values, attrs or None, hint=f"{self.hint}.{name}")

    def where(self, condition: str, then, otherwise) -> str:
        return self.op("where", condition, then, otherwise)

    def literal(self, array: np.ndarray, dtype: DType = DType.f64) -> str:
        return self.builder.literal(f"{self.hint}.table", np.asarray(array), dtype)

    def iota(self, length: int, axis: int) -> str:
        """0, 1, ..., length - 1 (f64) laid along `axis` (-1 or -2) of a rank-2 literal."""
        return self.literal(np.arange(length, dtype=np.float64).reshape((1, -1) if axis == -1 else (-1, 1)))

    def part(self, value: str, axis: int, start: int, length: int) -> str:
        """`length` cells of `value` from `start` along `axis` (the value itself when whole)."""
        if start == 0 and length == self.shape(value)[axis]:
            return value
        return self.op("slice", value, axis=axis % len(self.shape(value)), start=start, len=length)

    def entry(self, value: str, row: int, col: int) -> str:
        """The ``[*batch, 1, 1]`` entry at (row, col)."""
        return self.part(self.part(value, -2, row, 1), -1, col, 1)

    def join(self, pieces: list, axis: int) -> str:
        """`pieces` concatenated along `axis`, those of no extent there dropped."""
        kept = [piece for piece in pieces if piece is not None and self.shape(piece)[axis] != 0]
        if len(kept) == 1:
            return kept[0]
        return self.op("concat", *kept, axis=axis % len(self.shape(kept[0])))

    def swap_last(self, value: str) -> str:
        rank = len(self.shape(value))
        return self.op("transpose", value, perm=tuple(range(rank - 2)) + (rank - 1, rank - 2))

    def expand(self, value: str, shape) -> str:
        if self.shape(value) == tuple(shape):
            return value
        return self.op("expand", value, shape=tuple(shape))

    def reshape(self, value: str, shape) -> str:
        if self.shape(value) == tuple(shape):
            return value
        return self.op("reshape", value, shape=tuple(shape))

    def cast(self, value: str, dtype: DType) -> str:
        if self.builder.type(value).dtype is dtype:
            return value
        return self.op("cast", value, to=dtype)

    def fill(self, value, shape, dtype: DType = DType.f64) -> str:
        return self.builder.splat(f"{self.hint}.fill", value, TensorType(dtype, tuple(shape)))

    def pad_above(self, value: str, rows: int) -> str:
        """`value` with `rows` rows of zeros on top."""
        return pad_axis(self.builder, value, len(self.shape(value)) - 2, rows, 0, 0.0, f"{self.hint}.pad")


# --- reading operands ------------------------------------------------------------------
def matrix_operand(ctx, node, item, what: str = "the matrix") -> tuple[Emitter, str]:
    """`item` as f64, after checking its trailing two dims are static and small and its dtype
    a real float; with the emitter of `node`."""
    dtype = ctx.type(item).dtype
    if not dtype.is_float or dtype is DType.c64:
        refuse(f"{node.target} of a {dtype.value} matrix", "a real floating-point matrix")
    shape = tuple(ctx.type(item).shape)
    if len(shape) < 2:
        refuse(f"{node.target} of a rank-{len(shape)} tensor", "a matrix [..., rows, cols]")
    rows, cols = shape[-2:]
    if not isinstance(rows, int) or not isinstance(cols, int):
        refuse(f"{what} of {node.target} has symbolic dims {rows} x {cols}",
               "static matrix dims (the elimination is unrolled at import time)")
    if max(rows, cols) > MAX_ORDER:
        refuse(f"{what} of {node.target} is {rows} x {cols}, too large to unroll",
               f"matrices of at most {MAX_ORDER} x {MAX_ORDER}")
    return Emitter(ctx, node), operand(ctx, item, DType.f64, f"{node.name}.f64")


def result_dtypes(node) -> list[DType]:
    """The dtype of each of the node's results."""
    meta = node.meta["val"]
    metas = meta if isinstance(meta, (list, tuple)) else [meta]
    return [torch_dtype(item.dtype) for item in metas]


def result_shape(ctx, node, index: int = 0) -> tuple:
    """The shape torch.export recorded for the node's result `index`, in rlx dims."""
    meta = node.meta["val"]
    return tuple(ctx.dim(size) for size in (meta[index] if isinstance(meta, (list, tuple)) else meta).shape)


# --- LU with partial pivoting ----------------------------------------------------------
def first_largest(em: Emitter, column: str) -> str:
    """The position (f64, ``[*batch, 1, 1]``) of the first entry of largest magnitude in a
    ``[*batch, rows, 1]`` column, as LAPACK's ``i?amax``: 0 when none compares (NaN)."""
    rows = em.shape(column)[-2]
    size = em.op("abs", column)
    hits = em.op("eq", size, em.op("reduce_max", size, axes=[-2], keepdims=True))
    first = em.op("reduce_min", em.where(hits, em.iota(rows, -2), float(rows)), axes=[-2], keepdims=True)
    return em.where(em.op("eq", first, float(rows)), 0.0, first)


def swap_to_top(em: Emitter, block: str, chosen: str) -> tuple[str, str]:
    """(the chosen row, `block` with the chosen row replaced by the top one): a row swap
    that copies values exactly (`chosen` is a bool ``[*batch, rows, 1]`` one-hot)."""
    top = em.part(block, -2, 0, 1)
    picked = em.op("reduce_sum", em.where(chosen, block, 0.0), axes=[-2], keepdims=True)
    return picked, em.where(chosen, top, block)


def factor_lu(em: Emitter, matrix: str) -> tuple[str, str, str]:
    """(LU, pivots, order) of ``[*batch, m, n]``: LU holds U on and above the diagonal and
    L's multipliers below; pivots ``[*batch, min(m, n)]`` are LAPACK's 1-based row indices
    (f64); order ``[*batch, m, 1]`` says which original row each row of LU came from. A zero
    pivot leaves its column unscaled, as ``getrf`` does (the matrix is singular)."""
    shape = em.shape(matrix)
    rows, cols = shape[-2:]
    order = em.expand(em.iota(rows, -2), shape[:-1] + (1,))
    pivots = []
    for step in range(min(rows, cols)):
        height = rows - step
        block = em.part(matrix, -2, step, height)
        position = first_largest(em, em.part(block, -1, step, 1))
        chosen = em.op("eq", em.iota(height, -2), position)
        pivot_row, block = swap_to_top(em, block, chosen)
        pivot_order, rest_order = swap_to_top(em, em.part(order, -2, step, height), chosen)
        order = em.join([em.part(order, -2, 0, step), pivot_order, em.part(rest_order, -2, 1, height - 1)], -2)
        pivots.append(em.op("add", position, float(step + 1)))
        below = eliminate_below(em, pivot_row, em.part(block, -2, 1, height - 1), step) if height > 1 else None
        matrix = em.join([em.part(matrix, -2, 0, step), pivot_row, below], -2)
    return matrix, join_pivots(em, pivots, shape[:-2]), order


def eliminate_below(em: Emitter, pivot_row: str, below: str, step: int) -> str:
    """The rows under the pivot after step `step`: column `step` becomes the multipliers
    (left unscaled when the pivot is 0), later columns lose multiplier times the pivot row."""
    cols = em.shape(below)[-1]
    pivot = em.part(pivot_row, -1, step, 1)
    column = em.part(below, -1, step, 1)
    multipliers = em.where(em.op("eq", pivot, 0.0), column, em.op("div", column, pivot))
    right = None
    if cols - step - 1:
        later = em.part(below, -1, step + 1, cols - step - 1)
        right = em.op("sub", later, em.op("mul", multipliers, em.part(pivot_row, -1, step + 1, cols - step - 1)))
    return em.join([em.part(below, -1, 0, step), multipliers, right], -1)


def join_pivots(em: Emitter, positions: list[str], batch: tuple) -> str:
    """``[*batch, 1, 1]`` pivots as one ``[*batch, k]`` f64 tensor (empty when k is 0)."""
    if not positions:
        return em.fill(0.0, batch + (0,))
    return em.reshape(em.join(positions, -1), batch + (len(positions),))


def order_from_pivots(em: Emitter, pivots: str, rows: int) -> str:
    """The row order ``[*batch, rows, 1]`` that LAPACK's pivots ``[*batch, k]`` (1-based, any
    dtype) make by swapping rows k and pivots[k] - 1 in turn."""
    pivots = em.cast(pivots, DType.f64)
    batch = em.shape(pivots)[:-1]
    order = em.expand(em.iota(rows, -1), batch + (1, rows))
    places = em.iota(rows, -1)
    for step in range(em.shape(pivots)[-1]):
        target = em.op("sub", em.reshape(em.part(pivots, -1, step, 1), batch + (1, 1)), 1.0)
        at_target = em.op("eq", places, target)
        at_step = em.op("eq", places, float(step))
        moved = em.op("reduce_sum", em.where(at_target, order, 0.0), axes=[-1], keepdims=True)
        order = em.where(at_step, moved, em.where(at_target, em.part(order, -1, step, 1), order))
    return em.swap_last(order)


def permutation(em: Emitter, order: str) -> str:
    """P (f64) with P @ LU-rows = original rows: P[i, j] = 1 where order[j] = i."""
    rows = em.shape(order)[-2]
    return em.cast(em.op("eq", em.iota(rows, -2), em.swap_last(order)), DType.f64)


def permute_rows(em: Emitter, value: str, order: str) -> str:
    """`value` ``[*batch, rows, k]`` with row i taken from row order[i] (exact copies)."""
    shape = em.shape(value)
    index = em.cast(em.expand(order, shape), DType.i64)
    return em.op("gather_elements", value, index, axis=len(shape) - 2)


def unpermute_rows(em: Emitter, value: str, order: str) -> str:
    """`value` with row order[i] taken from row i (the inverse of `permute_rows`)."""
    rows = em.shape(order)[-2]
    inverse = em.op("reduce_sum", em.where(em.op("eq", em.iota(rows, -2), em.swap_last(order)), em.iota(rows, -1),
                                           0.0), axes=[-1], keepdims=True)
    return permute_rows(em, value, inverse)


def diagonal(em: Emitter, matrix: str) -> list[str]:
    """The diagonal entries ``[*batch, 1, 1]`` of a matrix."""
    return [em.entry(matrix, index, index) for index in range(min(em.shape(matrix)[-2:]))]


def triangle(em: Emitter, matrix: str, lower: bool, unit: bool) -> str:
    """The strict lower (or upper, with the diagonal) triangle; 1 on the diagonal if `unit`."""
    rows, cols = em.shape(matrix)[-2:]
    row, col = np.indices((rows, cols))
    keep = em.literal(row > col if lower else row <= col, DType.bool)
    kept = em.where(keep, matrix, 0.0)
    return em.where(em.literal(row == col, DType.bool), 1.0, kept) if unit else kept


def first_flag(em: Emitter, flags: list[str], batch: tuple) -> str:
    """LAPACK's ``info``: the 1-based index of the first true ``[*batch, 1, 1]`` flag, 0 if
    none (int32 ``[*batch]``)."""
    if not flags:
        return em.fill(0, batch, DType.i32)
    count = len(flags)
    joined = em.join(flags, -1)
    first = em.op("reduce_min", em.where(joined, em.op("add", em.iota(count, -1), 1.0), float(count + 1)),
                  axes=[-1], keepdims=True)
    info = em.where(em.op("eq", first, float(count + 1)), 0.0, first)
    return em.cast(em.reshape(info, batch), DType.i32)


# --- triangular solves and Cholesky ----------------------------------------------------
def solve_triangular(em: Emitter, factor: str, rhs: str, lower: bool, unit: bool) -> str:
    """X with T X = B, T the lower (or upper) triangle of `factor` ``[*batch, n, n]`` (unit
    diagonal if `unit`), B `rhs` ``[*batch, n, k]`` expanded to the common batch already:
    substitution column by column, as LAPACK's ``trsm`` (the other triangle is never read)."""
    order = em.shape(factor)[-1]
    steps = range(order) if lower else range(order - 1, -1, -1)
    rest, solved = rhs, {}
    for step in steps:
        remaining = em.shape(rest)[-2] - 1
        head = em.part(rest, -2, 0 if lower else remaining, 1)
        if not unit:
            head = em.op("div", head, em.entry(factor, step, step))
        solved[step] = head
        if not remaining:
            continue
        others = range(step + 1, order) if lower else range(step)
        column = em.part(em.part(factor, -1, step, 1), -2, others[0], remaining)
        kept = em.part(rest, -2, 1 if lower else 0, remaining)
        rest = em.op("sub", kept, em.op("mul", column, head))
    return em.join([solved[step] for step in range(order)], -2) if order else rhs


def factor_cholesky(em: Emitter, matrix: str) -> tuple[str, list[str]]:
    """(L, failure flags) with L Lᵀ = the symmetric matrix whose lower triangle `matrix`
    holds; flag j is true where pivot j is not positive (LAPACK's ``potrf`` stops there;
    here the rest of L is then NaN or garbage)."""
    order = em.shape(matrix)[-1]
    row, col = np.indices((order, order))
    rest = em.where(em.literal(row >= col, DType.bool), matrix, em.swap_last(matrix))
    columns, flags = [], []
    for step in range(order):
        pivot = em.entry(rest, 0, 0)
        flags.append(em.op("eq", em.op("gt", pivot, 0.0), em.builder.scalar(False, DType.bool)))
        root = em.op("sqrt", pivot)
        remaining = order - step - 1
        if not remaining:
            columns.append(em.pad_above(root, step))
            continue
        below = em.op("div", em.part(em.part(rest, -1, 0, 1), -2, 1, remaining), root)
        columns.append(em.pad_above(em.join([root, below], -2), step))
        trailing = em.part(em.part(rest, -2, 1, remaining), -1, 1, remaining)
        rest = em.op("sub", trailing, em.op("mul", below, em.swap_last(below)))
    return (em.join(columns, -1) if order else matrix), flags


# --- converters: the LU family ---------------------------------------------------------
def _product_sign(em: Emitter, pivots: str, batch: tuple) -> str:
    """(-1)^(number of pivots that moved a row), ``[*batch, 1, 1]``."""
    count = em.shape(pivots)[-1]
    moved = em.op("ne", pivots, em.op("add", em.iota(count, -1), 1.0))
    swaps = em.op("reduce_sum", em.cast(moved, DType.f64), axes=[-1], keepdims=True)
    odd = em.op("eq", em.op("fmod", swaps, 2.0), 1.0)
    return em.reshape(em.where(odd, -1.0, 1.0), batch + (1, 1)) if count else em.fill(1.0, batch + (1, 1))


def _lu_results(em: Emitter, node, lu: str, pivots: str) -> list[str]:
    """LU and pivots in the node's dtypes (a float LU, int32 pivots)."""
    dtypes = result_dtypes(node)
    return [em.cast(lu, dtypes[0]), em.cast(pivots, DType.i32)]


def _square(node, em: Emitter, matrix: str) -> None:
    rows, cols = em.shape(matrix)[-2:]
    if rows != cols:
        refuse(f"{node.target} of a {rows} x {cols} matrix", "a square matrix")


@converter("aten._linalg_det")
def handle_det(ctx, node, args, kwargs):
    """(det, LU, pivots): det is the product of U's diagonal times the pivots' sign."""
    em, matrix = matrix_operand(ctx, node, args[0])
    _square(node, em, matrix)
    batch = em.shape(matrix)[:-2]
    lu, pivots, _ = factor_lu(em, matrix)
    product = _product_sign(em, pivots, batch)
    for entry in diagonal(em, lu):
        product = em.op("mul", product, entry)
    det = em.cast(em.reshape(product, batch), result_dtypes(node)[0])
    return [det] + _lu_results(em, node, lu, pivots)


@converter("aten._linalg_slogdet")
def handle_slogdet(ctx, node, args, kwargs):
    """(sign, log |det|, LU, pivots): the sign from the pivots and U's diagonal signs, the
    logarithm a sum of log |u_ii| (-inf for a singular matrix, whose sign is 0)."""
    em, matrix = matrix_operand(ctx, node, args[0])
    _square(node, em, matrix)
    batch = em.shape(matrix)[:-2]
    lu, pivots, _ = factor_lu(em, matrix)
    sign = _product_sign(em, pivots, batch)
    logarithm = em.fill(0.0, batch + (1, 1))
    for entry in diagonal(em, lu):
        entry_sign = em.where(em.op("gt", entry, 0.0), 1.0, em.where(em.op("lt", entry, 0.0), -1.0, 0.0))
        sign = em.op("mul", sign, entry_sign)
        logarithm = em.op("add", logarithm, em.op("log", em.op("abs", entry)))
    dtypes = result_dtypes(node)
    return [em.cast(em.reshape(sign, batch), dtypes[0]), em.cast(em.reshape(logarithm, batch), dtypes[1]),
            em.cast(lu, dtypes[2]), em.cast(pivots, DType.i32)]


def _refuse_without_pivoting(node, args, kwargs) -> None:
    pivot = args[1] if len(args) > 1 else kwargs.get("pivot", True)
    if not pivot:
        refuse(f"{node.target} without pivoting", "pivot=True (PyTorch's CPU kernels pivot always)")


@converter("aten.linalg_lu_factor_ex")
def handle_lu_factor_ex(ctx, node, args, kwargs):
    """(LU, pivots, info) of any m x n matrix; info is the first zero on U's diagonal
    (1-based), as ``getrf``; ``check_errors`` raises nothing (the graph has no errors)."""
    _refuse_without_pivoting(node, args, kwargs)
    em, matrix = matrix_operand(ctx, node, args[0])
    lu, pivots, _ = factor_lu(em, matrix)
    singular = [em.op("eq", entry, 0.0) for entry in diagonal(em, lu)]
    return _lu_results(em, node, lu, pivots) + [first_flag(em, singular, em.shape(matrix)[:-2])]


def _unpacked(em: Emitter, node, lu: str, order: str) -> list[str]:
    """(P, L, U) of a packed LU and its row order, in the node's dtypes: L m x k with a unit
    diagonal, U k x n, k = min(m, n)."""
    rows, cols = em.shape(lu)[-2:]
    common = min(rows, cols)
    lower = triangle(em, em.part(lu, -1, 0, common), lower=True, unit=True)
    upper = triangle(em, em.part(lu, -2, 0, common), lower=False, unit=False)
    dtype = result_dtypes(node)[0]
    return [em.cast(permutation(em, order), dtype), em.cast(lower, dtype), em.cast(upper, dtype)]


@converter("aten.linalg_lu")
def handle_lu(ctx, node, args, kwargs):
    """(P, L, U) with A = P L U."""
    _refuse_without_pivoting(node, args, kwargs)
    em, matrix = matrix_operand(ctx, node, args[0])
    lu, _, order = factor_lu(em, matrix)
    return _unpacked(em, node, lu, order)


@converter("aten.lu_unpack")
def handle_lu_unpack(ctx, node, args, kwargs):
    """(P, L, U) from a packed LU and its pivots (``unpack_data`` / ``unpack_pivots`` False
    leave those results empty, as PyTorch)."""
    unpack_data = args[2] if len(args) > 2 else kwargs.get("unpack_data", True)
    unpack_pivots = args[3] if len(args) > 3 else kwargs.get("unpack_pivots", True)
    if not (unpack_data and unpack_pivots):
        refuse("lu_unpack with unpack_data or unpack_pivots False", "both True (the default)")
    em, lu = matrix_operand(ctx, node, args[0], "the LU")
    pivots = em.cast(operand(ctx, args[1], None, f"{node.name}.pivots"), DType.f64)
    order = order_from_pivots(em, pivots, em.shape(lu)[-2])
    batch = result_shape(ctx, node)[:-2]
    results = _unpacked(em, node, lu, order)
    return [em.expand(value, batch + em.shape(value)[-2:]) for value in results]


@converter("torch.ops.higher_order.with_effects", fold=False)
def handle_with_effects(ctx, node, args, kwargs):
    """``with_effects(token, aten._linalg_check_errors, info, ...)``: PyTorch threads a token
    through an op with a side effect (here: raising when a factorization's ``info`` is not
    0) to keep its order. An rlx graph is pure data flow and raises nothing at run time, so
    the check is dropped: a singular or indefinite matrix gives the factorization's inf or
    NaN instead of an error. The token is no value of the model: the program's token input
    becomes an empty constant (not an input a caller must feed), and the token result is it."""
    effect = args[1]
    if getattr(effect, "__name__", "") != "_linalg_check_errors.default":
        refuse(f"with_effects of {effect}", "aten._linalg_check_errors (the only side effect imported)")
    token = args[0]
    graph = ctx.builder.graph
    if isinstance(token, str) and graph.kind(token) == "input":
        empty = ctx.builder.splat(f"{node.name}.token", 0.0, graph.type(token))
        graph.replace_all_uses(token, empty)
        graph.erase(token)
        ctx.input_names = {key: value for key, value in ctx.input_names.items() if value != token}
        ctx.env = {key: empty if isinstance(value, str) and value == token else value for key, value in ctx.env.items()}
        token = empty
    return [token, None]
