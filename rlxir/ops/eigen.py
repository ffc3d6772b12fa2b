"""``eigvals(a)``: the eigenvalues of general real square matrices, as (real, imaginary) pairs.

`a` is ``[..., n, n]`` of a float dtype; the result is ``[..., n, 2]`` of that dtype, each
eigenvalue a pair (real part, imaginary part), the layout the PyTorch importer carries complex
values in. A real matrix's eigenvalues are real or come in conjugate pairs, so they cannot be
returned as one real tensor, and computing them takes an iteration whose length depends on
the values (Hessenberg reduction, then shifted QR until the subdiagonal deflates): this op
stands for that whole computation.

The order is LAPACK's ``geev`` (the Schur form's diagonal, a conjugate pair with the positive
imaginary part first), computed in float64 and rounded to the result's dtype once; that is the
order PyTorch's ``linalg.eigvals`` gives in float64 (single-precision ``sgeev`` converges in
another order on some matrices). A matrix holding NaN or ±inf gives NaN
eigenvalues (LAPACK refuses it; an rlx graph raises nothing at run time). Empty matrices and
empty batches give empty results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rlxir.numpy_on_use import numpy_on_use
from rlxir.ops.core import _register, _shape
from rlxir.ops.registry import ShapeError, attach
from rlxir.types import TensorType

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)


def eigvals_rule(types, attrs) -> TensorType:
    (a,) = types
    if not a.dtype.is_float:
        raise ShapeError(f"eigvals takes a float matrix, got {a.dtype.value}", operand=0,
                         expected="f64, f32, f16 or bf16")
    if a.rank < 2:
        raise ShapeError(f"eigvals takes [..., n, n] matrices, got {_shape(a.shape)}", operand=0,
                         expected="a rank of at least 2")
    rows, cols = a.shape[-2:]
    if rows != cols:
        raise ShapeError(f"eigvals takes square matrices, got {_shape(a.shape)}", operand=0,
                         expected=f"[..., {rows}, {rows}]")
    return a.with_shape((*a.shape[:-1], 2))


def eigvals_reference(inputs: Sequence[np.ndarray], attrs: Mapping) -> np.ndarray:
    (a,) = inputs
    size = a.shape[-1]
    matrices = a.astype(np.float64).reshape(int(np.prod(a.shape[:-2])), size, size)
    values = np.full(matrices.shape[:2], complex(np.nan, np.nan))
    finite = np.isfinite(matrices).all(axis=(1, 2))
    if size and finite.any():
        values[finite] = np.linalg.eigvals(matrices[finite])
    pairs = np.stack([values.real, values.imag], axis=-1)
    return pairs.reshape(*a.shape[:-1], 2).astype(a.dtype)


_register("eigvals", (1, 1), eigvals_rule, ("linalg",), operands=("a",),
          doc="eigenvalues of general real square matrices as (re, im) pairs, in LAPACK geev's order")
attach("eigvals", reference=eigvals_reference)
