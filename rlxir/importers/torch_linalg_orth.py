"""Orthogonal factorizations and spectra -> core ops, for matrices whose two trailing dims are
static and at most `MATRIX_LIMIT` (the algorithms, unrolled in f64 over the whole batch:
`rlxir.importers.torch_linalg_unrolled`); results are cast back to the op's dtype.

- ``geqrf``, ``linalg_qr`` (every mode), ``linalg_householder_product``, ``ormqr``: LAPACK's
  Householder QR and reflectors, so Q, R, (a, tau) match PyTorch's, signs included.
- ``_linalg_eigh``'s eigenvalues (ascending, from the UPLO triangle): Jacobi rotations.
- ``_linalg_svd``'s singular values (descending): one-sided Jacobi. ``svdvals``,
  ``matrix_rank``, ``cond``, the nuclear and spectral norms reach these two.
- ``linalg_pinv`` (every overload, ``hermitian`` too), ``linalg_matrix_sqrth`` and
  ``linalg_polar``: unique results, built from the Jacobi factors with PyTorch's tolerance rules.

Eigenvectors and singular vectors are refused: they are defined only up to sign (and order
among equal values), which LAPACK fixes by choices of its own; only empty ones are produced.
"""

from __future__ import annotations

import numpy as np
import torch

from rlxir.dtypes import DType
from rlxir.importers.torch_linalg_unrolled import (MATRIX_LIMIT, Matrices, apply_reflectors, column_norms_squared,
                                                   householder_qr, one_sided_jacobi, stored_reflectors,
                                                   symmetric_jacobi)
from rlxir.importers.torch_ops import op, operand, read_results, refuse, shape_of
from rlxir.importers.torch_registry import converter, torch_dtype
from rlxir.types import TensorType


# --- shared ------------------------------------------------------------------------------
def _metas(node) -> list:
    meta = node.meta["val"]
    return list(meta) if isinstance(meta, (list, tuple)) else [meta]


def _all_empty(node) -> bool:
    return all(isinstance(meta, torch.Tensor) and meta.numel() == 0 for meta in _metas(node))


def _empty(ctx, node, index: int) -> str:
    """Result `index` of the node, which has no elements, as a const of its recorded type."""
    meta = _metas(node)[index]
    type_ = TensorType(torch_dtype(meta.dtype), tuple(ctx.dim(size) for size in meta.shape))
    return ctx.builder.splat(f"{node.name}.empty", 0, type_)


def _empties(ctx, node) -> list[str] | str:
    results = [_empty(ctx, node, index) for index in range(len(_metas(node)))]
    return results if isinstance(node.meta["val"], (list, tuple)) else results[0]


def _matrix(ctx, node, item, what: str) -> tuple[Matrices, str, int, int]:
    """(the builder, `item` in f64, rows, cols) after checking the op can be unrolled."""
    dtype = torch_dtype(_metas(node)[0].dtype)
    if dtype not in (DType.f32, DType.f64):
        refuse(f"{what} of a {dtype.value} matrix", "a float32 or float64 matrix")
    shape = shape_of(ctx, item)
    rows, cols = shape[-2:]
    if not isinstance(rows, int) or not isinstance(cols, int):
        refuse(f"{what} of a matrix with symbolic dims {rows} x {cols}", "static matrix dims (batch dims may vary)")
    if max(rows, cols) > MATRIX_LIMIT:
        refuse(f"{what} of a {rows} x {cols} matrix",
               f"matrices of at most {MATRIX_LIMIT} rows and columns (each is unrolled into the graph)")
    f = Matrices(ctx, node, shape[:-2])
    return f, operand(ctx, item, DType.f64, f"{node.name}.f64"), rows, cols


def _result(ctx, node, value: str, index: int = 0) -> str:
    """`value` cast to result `index`'s dtype and given its recorded shape."""
    meta = _metas(node)[index]
    dtype = torch_dtype(meta.dtype)
    shape = tuple(ctx.dim(size) for size in meta.shape)
    if shape_of(ctx, value) != shape:
        value = op(ctx, "reshape", [value], {"shape": shape}, hint=f"{node.name}.shape")
    return value if dtype is DType.f64 else op(ctx, "cast", [value], {"to": dtype}, hint=node.name)


def _identity(f: Matrices, rows: int, cols: int) -> str:
    """The first `cols` columns of the rows x rows identity, over the batch."""
    return f.op("add", f.zeros(rows, cols), f.constant(np.eye(rows, cols)))


def _symmetric(f: Matrices, a: str, n: int, lower: bool) -> str:
    """The symmetric matrix a's lower (or upper) triangle holds, the diagonal included."""
    rows, cols = np.indices((n, n))
    kept = f.constant(rows >= cols if lower else rows <= cols, DType.bool)
    return f.where(kept, a, f.transpose(a))


def _tolerance(ctx, node, item) -> str:
    """A tolerance (a Python number or a tensor over the batch) as a [..., 1, 1] f64 value."""
    value = operand(ctx, item, DType.f64, f"{node.name}.tolerance")
    shape = shape_of(ctx, value)
    return op(ctx, "reshape", [value], {"shape": shape + (1, 1)}, hint=f"{node.name}.tolerance") if shape else value


# --- QR ----------------------------------------------------------------------------------
@converter("aten.geqrf")
def handle_geqrf(ctx, node, args, kwargs):
    """(a, tau): R on and above a's diagonal, the reflectors below it, as LAPACK's geqrf."""
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, rows, cols = _matrix(ctx, node, args[0], "geqrf")
    r, reflectors, taus = householder_qr(f, a, rows, cols)
    below = f.concat(reflectors, -1)
    if len(reflectors) < cols:
        below = f.concat([below, f.zeros(rows, cols - len(reflectors))], -1)
    row, col = np.indices((rows, cols))
    packed = f.where(f.constant(row > col, DType.bool), below, r)
    return [_result(ctx, node, packed, 0), _result(ctx, node, f.concat(taus, -1), 1)]


@converter("aten.linalg_qr")
def handle_linalg_qr(ctx, node, args, kwargs):
    """(Q, R) in mode "reduced" (Q [m, k], R [k, n]), "complete" (Q [m, m], R [m, n]) or "r"
    (Q empty), k = min(m, n); Q is the product of geqrf's reflectors, as PyTorch's orgqr."""
    mode = args[1] if len(args) > 1 else kwargs.get("mode", "reduced")
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, rows, cols = _matrix(ctx, node, args[0], "linalg_qr")
    r, reflectors, taus = householder_qr(f, a, rows, cols)
    count = min(rows, cols)
    kept_rows = rows if mode == "complete" else count
    r = f.slice(r, -2, 0, kept_rows) if kept_rows < rows else r
    if mode == "r":
        return [_empty(ctx, node, 0), _result(ctx, node, r, 1)]
    q = apply_reflectors(f, _identity(f, rows, kept_rows), reflectors, taus, from_left=True, first_last=True)
    return [_result(ctx, node, q, 0), _result(ctx, node, r, 1)]


def _taus(ctx, node, f: Matrices, item, count: int) -> list[str]:
    """The first `count` scalars of a [..., k] tau as [..., 1, 1] values."""
    tau = operand(ctx, item, DType.f64, f"{node.name}.tau")
    tau = f.reshape(tau, 1, shape_of(ctx, tau)[-1])
    return [f.slice(tau, -1, step, 1) for step in range(count)]


@converter("aten.linalg_householder_product")
def handle_householder_product(ctx, node, args, kwargs):
    """H_0 ... H_{k-1} (the first n columns of it) from reflectors stored as geqrf stores them."""
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, rows, cols = _matrix(ctx, node, args[0], "linalg_householder_product")
    count = shape_of(ctx, args[1])[-1]
    reflectors = stored_reflectors(f, a, rows, count)
    q = apply_reflectors(f, _identity(f, rows, cols), reflectors, _taus(ctx, node, f, args[1], count),
                         from_left=True, first_last=True)
    return _result(ctx, node, q)


@converter("aten.ormqr")
def handle_ormqr(ctx, node, args, kwargs):
    """op(Q) C or C op(Q) with Q = H_0 ... H_{k-1} from geqrf's (a, tau), without forming Q."""
    left = args[3] if len(args) > 3 else kwargs.get("left", True)
    transpose = args[4] if len(args) > 4 else kwargs.get("transpose", False)
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, rows, _ = _matrix(ctx, node, args[0], "ormqr")
    _, target, _, _ = _matrix(ctx, node, args[2], "ormqr")
    count = shape_of(ctx, args[1])[-1]
    reflectors = stored_reflectors(f, a, rows, count)
    result = apply_reflectors(f, target, reflectors, _taus(ctx, node, f, args[1], count), from_left=left,
                              first_last=left != transpose)
    return _result(ctx, node, result)


# --- spectra -----------------------------------------------------------------------------
def _refuse_vectors(node, what: str, position: int) -> None:
    if position in read_results(node) and _metas(node)[position].numel() > 0:
        refuse(f"{what} of a non-empty matrix",
               "only the values: the vectors are defined up to sign (and order among equal values), which "
               "LAPACK fixes by its own internal choices that the importer does not reproduce")


@converter("aten._linalg_eigh")
def handle_linalg_eigh(ctx, node, args, kwargs):
    """Eigenvalues of the symmetric matrix in the UPLO triangle, ascending; eigenvectors
    only when empty (`_refuse_vectors`)."""
    lower = (args[1] if len(args) > 1 else kwargs.get("UPLO", "L")) == "L"
    if _all_empty(node):
        return _empties(ctx, node)
    _refuse_vectors(node, "eigh's eigenvectors", 1)
    f, a, n, _ = _matrix(ctx, node, args[0], "eigh")
    values, _ = symmetric_jacobi(f, _symmetric(f, a, n, lower), n, vectors=False)
    values = f.sorted_row(values, n, descending=False)
    vectors = _empty(ctx, node, 1) if _metas(node)[1].numel() == 0 else None
    return [_result(ctx, node, values, 0), vectors]


def singular_values(f: Matrices, a: str, rows: int, cols: int, vectors: bool) -> tuple[str, str, str | None]:
    """(the squared singular values as an unsorted [..., 1, k] row, W with orthogonal columns,
    V) with W V^T = a (rows >= cols) or = a^T (otherwise), k = min(rows, cols)."""
    w = a if rows >= cols else f.transpose(a)
    w, basis = one_sided_jacobi(f, w, min(rows, cols), vectors)
    return column_norms_squared(f, w), w, basis


@converter("aten._linalg_svd")
def handle_linalg_svd(ctx, node, args, kwargs):
    """Singular values, descending; U and Vh only when empty or not read."""
    if _all_empty(node):
        return _empties(ctx, node)
    _refuse_vectors(node, "the SVD's U", 0)
    _refuse_vectors(node, "the SVD's Vh", 2)
    f, a, rows, cols = _matrix(ctx, node, args[0], "svd")
    squares, _, _ = singular_values(f, a, rows, cols, vectors=False)
    values = f.sorted_row(f.op("sqrt", squares), min(rows, cols), descending=True)
    return [_empty(ctx, node, 0) if _metas(node)[0].numel() == 0 else None, _result(ctx, node, values, 1),
            _empty(ctx, node, 2) if _metas(node)[2].numel() == 0 else None]


# --- pinv, matrix_sqrth, polar -------------------------------------------------------------
def _pinv_tolerances(ctx, node, args, kwargs, f: Matrices, size: int) -> tuple[str, str]:
    """(atol, rtol) as [..., 1, 1] values by PyTorch's rules: rcond is rtol with atol 0; an
    absent rtol is max(m, n) eps, or 0 where atol > 0."""
    overload = node.target._overloadname
    if overload in ("default", "rcond_tensor"):
        return f.const(0.0), _tolerance(ctx, node, args[1])
    atol = kwargs.get("atol")
    rtol = kwargs.get("rtol")
    atol = f.const(0.0) if atol is None else _tolerance(ctx, node, atol)
    if rtol is not None:
        return atol, _tolerance(ctx, node, rtol)
    default = size * float(torch.finfo(_metas(node)[0].dtype).eps)
    if kwargs.get("atol") is None:
        return atol, f.const(default)
    return atol, f.where(f.op("gt", atol, 0.0), 0.0, default)


def _inverse_kept(f: Matrices, values: str, magnitudes: str, atol: str, rtol: str) -> str:
    """1 / values where magnitudes exceed max(atol, rtol * their largest), 0 elsewhere."""
    threshold = f.op("maximum", atol, f.op("mul", rtol, f.largest(magnitudes, -1)))
    kept = f.op("gt", magnitudes, threshold)
    return f.where(kept, f.op("div", 1.0, f.where(kept, values, 1.0)), 0.0)


@converter("aten.linalg_pinv")
def handle_linalg_pinv(ctx, node, args, kwargs):
    """The pseudo-inverse V diag(1 / s) U^T over the singular values PyTorch keeps; with
    hermitian, Q diag(1 / λ) Q^T from the lower triangle's eigen decomposition."""
    hermitian = kwargs.get("hermitian", args[2] if len(args) > 2 else False)
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, rows, cols = _matrix(ctx, node, args[0], "pinv")
    atol, rtol = _pinv_tolerances(ctx, node, args, kwargs, f, max(rows, cols))
    if hermitian:
        values, basis = symmetric_jacobi(f, _symmetric(f, a, rows, lower=True), rows, vectors=True)
        inverse = _inverse_kept(f, values, f.op("abs", values), atol, rtol)
        return _result(ctx, node, f.matmul(f.scale_columns(basis, inverse), basis, transpose_b=True))
    squares, w, basis = singular_values(f, a, rows, cols, vectors=True)
    inverse = _inverse_kept(f, squares, f.op("sqrt", squares), atol, rtol)
    pinv = f.matmul(f.scale_columns(basis, inverse), w, transpose_b=True)  # V diag(1 / s^2) (U diag(s))^T
    return _result(ctx, node, pinv if rows >= cols else f.transpose(pinv))


@converter("aten.linalg_matrix_sqrth")
def handle_matrix_sqrth(ctx, node, args, kwargs):
    """Q diag(sqrt(λ)) Q^T from the lower triangle (NaN where an eigenvalue is negative)."""
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, n, _ = _matrix(ctx, node, args[0], "matrix_sqrth")
    values, basis = symmetric_jacobi(f, _symmetric(f, a, n, lower=True), n, vectors=True)
    root = f.matmul(f.scale_columns(basis, f.op("sqrt", values)), basis, transpose_b=True)
    return _result(ctx, node, root)


@converter("aten.linalg_polar")
def handle_linalg_polar(ctx, node, args, kwargs):
    """(U, H) with A = U H (PyTorch requires m >= n): U = W diag(1 / s) V^T, H = V diag(s) V^T from the
    one-sided Jacobi factors (W = A V); a rank-deficient A's U is not unique (NaN here)."""
    if _all_empty(node):
        return _empties(ctx, node)
    f, a, rows, cols = _matrix(ctx, node, args[0], "polar")
    squares, w, basis = singular_values(f, a, rows, cols, vectors=True)
    values = f.op("sqrt", squares)
    unitary = f.matmul(f.scale_columns(w, f.op("div", 1.0, values)), basis, transpose_b=True)
    positive = f.matmul(f.scale_columns(basis, values), basis, transpose_b=True)
    return [_result(ctx, node, unitary, 0), _result(ctx, node, positive, 1)]
