"""The PyTorch ops that reach the IR's polynomial_recurrence and eigvals, and complex128 /
complex32 values made from real ones: imported, interpreted and compared with eager PyTorch
(complex outputs as their real view); and what stays refused."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_torch_import_aten import Apply  # noqa: E402

from rlxir.errors import RlxError  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


def run(function, *args):
    """(the imported graph, its outputs, eager PyTorch's as NumPy real views)."""
    module = Apply(function)
    imported = import_torch(module, args, dims=[{} for _ in args])
    with torch.no_grad():
        expected = module(*args)
    expected = [expected] if isinstance(expected, torch.Tensor) else list(expected)
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    results = interpret(imported.graph, feeds, dict(imported.params))
    have = [results[value] for value in imported.outputs.values()]
    want = []
    for item in expected:
        if item.dtype == torch.complex32:
            item = item.to(torch.complex64)
        want.append((torch.view_as_real(item) if item.is_complex() else item).numpy())
    return imported, have, want


def ops_of(imported) -> set[str]:
    graph = imported.graph
    return {graph.op(node) for node in graph.ops()}


@pytest.mark.parametrize("function", [torch.special.laguerre_polynomial_l, torch.special.legendre_polynomial_p])
def test_a_degree_fed_at_run_time_is_one_polynomial_recurrence(function):
    x = torch.linspace(-2.5, 2.5, 12).reshape(3, 4)
    n = torch.tensor([0.0, 1.0, 4.7, 9.0])
    imported, have, want = run(function, x, n)
    assert "polynomial_recurrence" in ops_of(imported)
    np.testing.assert_array_equal(have[0], want[0])  # float32: bit for bit


def test_eigvals_of_a_batch_in_pytorchs_order():
    a = torch.from_numpy(np.random.default_rng(5).standard_normal((3, 5, 5)).astype(np.float32))
    imported, have, want = run(torch.linalg.eigvals, a)
    assert "eigvals" in ops_of(imported)
    assert have[0].shape == (3, 5, 2) and have[0].dtype == np.float32
    np.testing.assert_allclose(have[0], want[0], rtol=1e-5, atol=1e-5)


def test_eig_of_an_empty_batch_gives_both_empty_results():
    _, have, want = run(torch.linalg.eig, torch.zeros(0, 4, 4))
    assert [item.shape for item in have] == [item.shape for item in want] == [(0, 4, 2), (0, 4, 4, 2)]


def test_eig_refuses_the_eigenvectors_of_a_non_empty_matrix():
    with pytest.raises(RlxError, match="eigenvectors of a non-empty matrix"):
        import_torch(Apply(lambda a: torch.linalg.eig(a)[1]), (torch.randn(4, 4),), dims=[{}])


@pytest.mark.parametrize("convert, pair_dtype", [(torch.Tensor.cdouble, np.float64), (torch.Tensor.chalf, np.float16)])
def test_complex128_and_complex32_of_a_real_tensor_are_pairs_of_their_part_dtype(convert, pair_dtype):
    x = torch.randn(2, 3)
    _, have, want = run(convert, x)
    assert have[0].dtype == pair_dtype and have[0].shape == (2, 3, 2)
    np.testing.assert_array_equal(have[0], want[0])


def test_an_op_without_a_complex128_pair_form_is_refused_not_computed_in_f32():
    with pytest.raises(RlxError, match="mixes f64 and f32"):
        import_torch(Apply(lambda x: x.cdouble() * 2), (torch.randn(2, 3),), dims=[{}])


@pytest.mark.parametrize("x, kwargs", [
    (torch.tensor([[1.5, -0.0, float("nan")], [2.0, 1.5, 3.25]]), {}),
    (torch.tensor([[1.5, -0.0, 7.0], [2.0, 1.5, 3.25]]), {"dim": 1}),
    (torch.tensor([[1.5, -0.0, 7.0], [2.0, 1.5, 3.25]]), {"dim": [0], "keepdim": True}),
    (torch.tensor(-2.5), {"dim": -1}),
])
def test_hash_tensor_is_the_xor_of_the_float64_patterns(x, kwargs):
    imported, have, want = run(lambda value: torch.hash_tensor(value, **kwargs), x)
    assert {"bitcast"} <= ops_of(imported)
    assert have[0].dtype == np.uint64
    np.testing.assert_array_equal(have[0], want[0])
