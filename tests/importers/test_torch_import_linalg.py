"""Linear algebra by unrolled elimination (rlxir.importers.torch_linalg and
torch_linalg_solve): determinants, LU, solves, inverses, Cholesky and the matrix exponential
imported through torch.export, run by the interpreter and compared with eager PyTorch, on
single matrices, a symbolic batch dim and a zero-size batch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class One(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, a):
        return self.function(a)


class Two(One):
    def forward(self, a, b):
        return self.function(a, b)


class Three(One):
    def forward(self, a, b, c):
        return self.function(a, b, c)


def Call(function, count: int = 1) -> torch.nn.Module:
    """`function` as a module of `count` tensor arguments (export takes no *args)."""
    return (One, Two, Three)[count - 1](function)


def run(function, *tensors, batched: bool = False) -> list[np.ndarray]:
    """The imported graph's results on `tensors` (its last outputs: an error check's token
    comes first); axis 0 of every tensor is the symbol B when `batched`, every dim static
    otherwise."""
    dims = [{0: "B"} if batched else {} for _ in tensors]
    imported = import_torch(Call(function, len(tensors)), tensors, dims=dims)
    feeds = {value: tensor.numpy() for value, tensor in zip(imported.inputs.values(), tensors)}
    bindings = {"B": tensors[0].shape[0]} if batched else {}
    results = interpret(imported.graph, feeds, dict(imported.params), bindings)
    want = function(*tensors)
    count = len(want) if isinstance(want, (tuple, list)) else 1
    return [results[value] for value in imported.graph.outputs[-count:]]


def check(function, *tensors, batched: bool = False, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """The import agrees with eager PyTorch on every result (integers exactly)."""
    want = function(*tensors)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    got = run(function, *tensors, batched=batched)
    assert len(got) == len(want)
    for have, expected in zip(got, want):
        expected = expected.numpy()
        assert have.shape == expected.shape and have.dtype == expected.dtype
        if expected.dtype.kind in "iu":
            np.testing.assert_array_equal(have, expected)
        else:
            np.testing.assert_allclose(have, expected, rtol=rtol, atol=atol)


def matrices(*shape, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def positive_definite(*shape, seed: int = 0) -> torch.Tensor:
    factor = matrices(*shape, seed=seed)
    return factor @ factor.mT + shape[-1] * torch.eye(shape[-1])


def test_det_and_slogdet_with_a_batch_including_a_singular_matrix():
    a = matrices(4, 5, 5)
    a[1, 3] = 0.0  # singular: det 0, sign 0, log |det| -inf
    check(torch.linalg.det, a, batched=True)
    check(lambda x: tuple(torch.linalg.slogdet(x)), a, batched=True)


def test_lu_factor_matches_lapack_pivots_and_factors():
    a = matrices(3, 4, 4, seed=1)
    a[0] = torch.tensor([[0.0, 1, 2, 3], [1, 0, 0, 1], [-4, 1, 1, 1], [4, 2, 0, 1]])  # a tie: the first one wins
    check(lambda x: tuple(torch.linalg.lu_factor_ex(x)), a, batched=True)
    check(lambda x: tuple(torch.linalg.lu(x)), matrices(2, 3, 5, seed=2), batched=True)
    check(lambda x: tuple(torch.linalg.lu(x)), matrices(5, 3, seed=3))


def test_lu_unpack_and_lu_solve_read_pivots_at_run_time():
    a = matrices(2, 4, 4, seed=4)
    lu, pivots = torch.linalg.lu_factor(a)
    b = matrices(2, 4, 3, seed=5)
    check(lambda packed, found: tuple(torch.lu_unpack(packed, found)), lu, pivots, batched=True)
    for left, adjoint in ((True, False), (True, True), (False, False), (False, True)):
        rhs = b if left else b.mT

        def solve(packed, found, rhs, left=left, adjoint=adjoint):
            return torch.linalg.lu_solve(packed, found, rhs, left=left, adjoint=adjoint)

        check(solve, lu, pivots, rhs, batched=True)


def test_solve_broadcasts_and_takes_vectors_and_the_right_side():
    a = matrices(3, 4, 4, seed=6)
    check(torch.linalg.solve, a, matrices(3, 4, 2, seed=7), batched=True)
    check(torch.linalg.solve, a[0], matrices(4, seed=8))
    check(lambda x, y: torch.linalg.solve(x, y, left=False), a[0], matrices(2, 4, seed=9))
    check(lambda x, y: torch.linalg.solve(x, y), a, matrices(4, 1, seed=10)[None].expand(3, 4, 1).clone(),
          batched=True)


def test_inverse_with_a_batch_and_a_zero_size_batch():
    a = matrices(3, 6, 6, seed=11) + 4 * torch.eye(6)  # well conditioned: float32 PyTorch is accurate
    check(torch.linalg.inv, a, batched=True)
    check(lambda x: tuple(torch.linalg.inv_ex(x)), matrices(0, 3, 3), rtol=0, atol=0)
    check(torch.linalg.inv, matrices(0, 0))


def test_the_error_check_is_no_input_of_the_graph():
    """torch.linalg.inv's error check threads a token; the graph reads only the matrix."""
    imported = import_torch(Call(torch.linalg.inv), (matrices(3, 3),), dims=[{}])
    assert len(imported.inputs) == 1 and len(imported.graph.inputs()) == 1


@pytest.mark.parametrize("upper, left, unit", [(True, True, False), (False, True, True), (True, False, False),
                                               (False, False, True)])
def test_triangular_solves_read_one_triangle(upper, left, unit):
    a = matrices(2, 4, 4, seed=12) + 4 * torch.eye(4)
    b = matrices(2, 4, 3, seed=13) if left else matrices(2, 3, 4, seed=13)

    def solve(x, y):
        return torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit)

    check(solve, a, b, batched=True)
    if left:
        check(lambda y, x: tuple(torch.triangular_solve(y, x, upper=upper, transpose=unit)), b, a, batched=True)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_and_its_solves(upper):
    a = positive_definite(3, 5, 5, seed=14)
    check(lambda x: tuple(torch.linalg.cholesky_ex(x, upper=upper)), a, batched=True)
    factor = torch.linalg.cholesky(a, upper=upper)
    b = matrices(3, 5, 2, seed=15)
    check(lambda y, f: torch.cholesky_solve(y, f, upper=upper), b, factor, batched=True)
    check(lambda f: torch.cholesky_inverse(f[0], upper=upper), factor, batched=True)


def test_cholesky_info_names_the_first_pivot_that_is_not_positive():
    a = positive_definite(2, 4, 4, seed=16)
    a[1, 2, 2] = -100.0
    _, info = run(lambda x: tuple(torch.linalg.cholesky_ex(x)), a, batched=True)
    np.testing.assert_array_equal(info, torch.linalg.cholesky_ex(a).info.numpy())
    assert info.tolist() == [0, 3]


def test_ldl_factor_matches_lapack_blocks_and_solves():
    """Bunch-Kaufman pivots with 1 x 1 and 2 x 2 blocks (negative pivots) per matrix of a
    batch, and the solve reading them at run time."""
    a = matrices(3, 6, 6, seed=18)
    a = a + a.mT
    a[0] = torch.tensor([[0.0, 1, 2, 0, 0, 1], [1, 0, 1, 2, 0, 0], [2, 1, 0, 1, 0, 0], [0, 2, 1, 0, 1, 1],
                         [0, 0, 0, 1, 0, 2], [1, 0, 0, 1, 2, 0]])  # a zero diagonal: 2 x 2 blocks
    factored = torch.linalg.ldl_factor_ex(a)
    assert (factored.pivots < 0).any() and (factored.pivots > 0).any()
    check(lambda x: tuple(torch.linalg.ldl_factor_ex(x)), a, batched=True)
    b = matrices(3, 6, 2, seed=19)
    check(torch.linalg.ldl_solve, factored.LD, factored.pivots, b, batched=True)


def test_matrix_exp_scales_by_the_norm_at_run_time():
    """Norms from 0.01 to about 200 (up to nine squarings), compared with f64 PyTorch."""
    a = matrices(4, 4, 4, seed=17) * torch.tensor([0.005, 0.5, 5.0, 50.0])[:, None, None]
    a[3] = -a[3].abs()  # a large norm with a moderate exponential
    got = run(torch.linalg.matrix_exp, a, batched=True)[0]
    want = torch.linalg.matrix_exp(a.double()).numpy()
    scale = np.abs(want).max(axis=(-2, -1), keepdims=True)
    np.testing.assert_array_less(np.abs(got - want) / scale, 1e-6)


def test_a_matrix_too_large_to_unroll_is_refused_naming_its_size():
    with pytest.raises(RlxError, match="33 x 33, too large to unroll"):
        import_torch(Call(torch.linalg.det), (matrices(33, 33),), dims=[{}])


def test_symbolic_matrix_dims_are_refused():
    with pytest.raises(RlxError, match="symbolic dims"):
        import_torch(Call(torch.linalg.det), (matrices(4, 4),), dims=[{0: "N", 1: "N"}])
