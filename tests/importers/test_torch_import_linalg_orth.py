"""QR, Householder products, symmetric eigenvalues, singular values, pinv, matrix_sqrth and
polar imported as unrolled f64 algorithms (rlxir.importers.torch_linalg_orth), run by the
interpreter and compared with eager PyTorch (LAPACK) in float64, so a wrong sign convention,
ordering or tolerance rule shows up far above rounding."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class Apply(torch.nn.Module):
    """forward(a[, b[, c]]) = function(a[, b[, c]])."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, a, b=None, c=None):
        return self.function(*(tensor for tensor in (a, b, c) if tensor is not None))


def matches(function, *args, rtol=1e-9, atol=1e-10):
    """Import `function` over `args` and compare every output with eager PyTorch's."""
    module = Apply(function).eval()
    imported = import_torch(module, args, dims=[None] * len(args))
    expected = torch.utils._pytree.tree_leaves(module(*args))
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    results = interpret(imported.graph, feeds, dict(imported.params))
    outputs = imported.graph.outputs[len(imported.graph.outputs) - len(expected):]
    for value, want in zip(outputs, expected):
        assert results[value].shape == tuple(want.shape)
        np.testing.assert_allclose(results[value], want.numpy(), rtol=rtol, atol=atol)


def matrix(*shape, seed=0):
    return torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


SHAPES = [(5, 5), (6, 3), (3, 6), (2, 4, 3), (1, 1)]


# --- QR and Householder reflectors -------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
def test_geqrf_gives_lapack_reflectors_and_taus(shape):
    matches(torch.geqrf, matrix(*shape))


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", SHAPES)
def test_qr_matches_lapack_signs_included(shape, mode):
    matches(lambda a: torch.linalg.qr(a, mode=mode), matrix(*shape))


def test_qr_of_a_column_already_reduced_keeps_its_sign():
    a = matrix(4, 3)
    a[1:, 0] = 0.0
    a[0, 0] = -2.0
    matches(torch.linalg.qr, a)


@pytest.mark.parametrize("shape, count", [((5, 5), 5), ((6, 4), 3), ((2, 5, 3), 2)])
def test_householder_product(shape, count):
    a = matrix(*shape)
    tau = matrix(*shape[:-2], count, seed=1).abs()
    matches(torch.linalg.householder_product, a, tau)


@pytest.mark.parametrize("left, transpose", [(True, False), (True, True), (False, False), (False, True)])
def test_ormqr_in_every_side_and_transpose(left, transpose):
    a, tau = torch.geqrf(matrix(2, 5, 4))
    other = matrix(2, 5, 3, seed=2) if left else matrix(2, 3, 5, seed=2)
    matches(lambda a, tau, other: torch.ormqr(a, tau, other, left=left, transpose=transpose), a, tau, other)


# --- spectra -----------------------------------------------------------------------------
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 6, 6), (12, 12)])
def test_eigvalsh_reads_one_triangle_and_sorts_ascending(shape, uplo):
    matches(lambda a: torch.linalg.eigvalsh(a, UPLO=uplo), matrix(*shape))


def test_eigvalsh_with_repeated_eigenvalues():
    basis, _ = torch.linalg.qr(matrix(7, 7))
    values = torch.tensor([3.0, -1.0, 3.0, 0.0, 3.0, -1.0, 2.0], dtype=torch.float64)
    matches(torch.linalg.eigvalsh, basis @ torch.diag(values) @ basis.T)


@pytest.mark.parametrize("shape", SHAPES + [(16, 9)])
def test_svdvals_descending(shape):
    matches(torch.linalg.svdvals, matrix(*shape))


def test_small_singular_values_keep_their_relative_accuracy():
    left, _ = torch.linalg.qr(matrix(6, 6))
    right, _ = torch.linalg.qr(matrix(6, 6, seed=1))
    values = 10.0 ** torch.arange(0.0, -12.0, -2.0, dtype=torch.float64)
    module = Apply(torch.linalg.svdvals)
    a = left @ torch.diag(values) @ right.T
    imported = import_torch(module, (a,), dims=[None])
    got = interpret(imported.graph, {next(iter(imported.inputs.values())): a.numpy()}, dict(imported.params))
    np.testing.assert_allclose(got[imported.graph.outputs[0]], values.numpy(), rtol=1e-4)


def test_rank_cond_and_the_norms_built_on_singular_values():
    a = matrix(2, 5, 5)
    a[0, :, 4] = a[0, :, 0] + a[0, :, 1]  # rank 4
    matches(torch.linalg.matrix_rank, a)
    matches(lambda a: torch.linalg.matrix_rank(a, hermitian=True), a + a.mT)
    matches(torch.linalg.cond, matrix(2, 4, 4))
    matches(lambda a: torch.linalg.matrix_norm(a, ord="nuc"), matrix(3, 4, 6))
    matches(lambda a: torch.linalg.matrix_norm(a, ord=-2), matrix(3, 6, 4))


# --- pinv, matrix_sqrth, polar -------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 5), (6, 3), (3, 6), (2, 4, 3)])
def test_pinv_of_full_rank_and_rank_deficient_matrices(shape):
    matches(torch.linalg.pinv, matrix(*shape))
    low_rank = matrix(*shape[:-1], 2) @ matrix(*shape[:-2], 2, shape[-1], seed=3)
    matches(torch.linalg.pinv, low_rank)


def test_pinv_tolerances_follow_pytorch():
    a = matrix(5, 5) @ torch.diag(torch.tensor([1.0, 0.5, 0.1, 1e-3, 1e-6], dtype=torch.float64))
    matches(lambda a: torch.linalg.pinv(a, atol=1e-2), a)
    matches(lambda a: torch.linalg.pinv(a, rtol=1.0), a)
    matches(lambda a: torch.linalg.pinv(a, atol=0.0, rtol=1e-4), a)
    matches(lambda a: torch.pinverse(a, rcond=1e-3), a)
    matches(lambda a, rtol: torch.linalg.pinv(a, rtol=rtol), a, torch.tensor(1e-2, dtype=torch.float64))


def test_hermitian_pinv_reads_the_lower_triangle():
    a = matrix(2, 5, 5)
    a[1] = a[1] @ torch.diag(torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.float64)) @ a[1].T
    matches(lambda a: torch.linalg.pinv(a, hermitian=True), a)


def test_matrix_sqrth_and_polar():
    a = matrix(2, 5, 5)
    matches(torch.linalg.matrix_sqrth, a @ a.mT + torch.eye(5, dtype=torch.float64))
    matches(torch.linalg.polar, a)
    matches(torch.linalg.polar, matrix(6, 3))


def test_float32_results_are_cast_back():
    matches(torch.linalg.qr, matrix(2, 4, 4).float(), rtol=1e-5, atol=1e-5)
    matches(torch.linalg.svdvals, matrix(4, 3).float(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("function", [torch.linalg.qr, torch.linalg.svdvals, torch.linalg.pinv, torch.linalg.eigvalsh])
def test_a_symbolic_batch_dim(function):
    imported = import_torch(Apply(function), (matrix(3, 4, 4),))
    a = matrix(5, 4, 4, seed=4)
    results = interpret(imported.graph, {next(iter(imported.inputs.values())): a.numpy()}, dict(imported.params),
                        {"B": 5})
    expected = torch.utils._pytree.tree_leaves(function(a))
    for value, want in zip(imported.graph.outputs, expected):
        np.testing.assert_allclose(results[value], want.numpy(), rtol=1e-9, atol=1e-10)


# --- refusals ----------------------------------------------------------------------------
def test_a_matrix_past_the_unroll_limit_is_refused_naming_its_size():
    with pytest.raises(RlxError, match=r"svd of a 40 x 3 matrix"):
        matches(torch.linalg.svdvals, matrix(40, 3))


@pytest.mark.parametrize("function", [torch.linalg.eigh, torch.linalg.svd])
def test_eigenvectors_and_singular_vectors_are_refused(function):
    with pytest.raises(RlxError, match=r"(eigenvectors|U) of a non-empty matrix"):
        matches(function, matrix(4, 4))


def test_empty_matrices_give_empty_results():
    matches(torch.linalg.eigh, matrix(0, 5, 5))
    matches(torch.linalg.svd, matrix(0, 0))

