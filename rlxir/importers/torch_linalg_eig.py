"""``linalg_eig`` -> ``eigvals``: the eigenvalues of a general real matrix, as complex pairs.

``torch.linalg.eig`` and ``torch.linalg.eigvals`` reach Core ATen as ``aten.linalg_eig``, two
complex results: the eigenvalues ``[..., n]`` and the eigenvectors ``[..., n, n]``. The
eigenvalues are the IR's ``eigvals`` op, whose (real, imaginary) pairs are the layout complex
values are carried in (`torch_complex`), in LAPACK ``geev``'s float64 order (PyTorch's in
float64; its float32 ``sgeev`` converges in another order on some matrices). The
eigenvectors are refused unless empty: LAPACK scales each to unit norm with its largest
component real, which leaves a sign (for a real eigenvalue) that its implementations choose
differently (MKL's and the reference LAPACK's disagree on random 5 x 5 matrices), so no
lowering can promise PyTorch's.
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.torch_complex import carried, is_pair
from rlxir.importers.torch_ops import op, operand, read_results, refuse
from rlxir.importers.torch_registry import converter, torch_dtype
from rlxir.types import TensorType

PAIR_DTYPES = {DType.f32, DType.f64}
"""Matrix dtypes whose eigenvalues are carried (complex64 and complex128 as f32 and f64 pairs)."""


@converter("aten.linalg_eig")
def handle_linalg_eig(ctx, node, args, kwargs):
    """The eigenvalues by ``eigvals``; the eigenvectors only when empty."""
    values_meta, vectors_meta = node.meta["val"]
    if is_pair(node.args[0]):
        refuse("linalg_eig of a complex matrix", "a real matrix")
    dtype = torch_dtype(node.args[0].meta["val"].dtype)
    if dtype not in PAIR_DTYPES:
        refuse(f"linalg_eig of a {dtype.value} matrix", "a float32 or float64 matrix")
    if 1 in read_results(node) and vectors_meta.numel() > 0:
        refuse("linalg_eig's eigenvectors of a non-empty matrix",
               "only the eigenvalues (linalg.eigvals): LAPACK fixes each vector's sign by choices of its own, "
               "which differ between its implementations")
    values = op(ctx, "eigvals", [operand(ctx, args[0], dtype, f"{node.name}.a")], hint=node.name)
    vectors = None
    if vectors_meta.numel() == 0:
        shape = tuple(ctx.dim(size) for size in vectors_meta.shape) + (2,)
        vectors = ctx.builder.splat(f"{node.name}.vectors", 0.0, TensorType(dtype, shape))
    results = [values, vectors]
    for user in node.users:
        carried(ctx, user, results[user.args[1]])
    return results
