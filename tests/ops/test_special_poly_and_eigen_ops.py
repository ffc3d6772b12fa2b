"""polynomial_recurrence and eigvals: known values, PyTorch's edge cases, the text form, and
what the rest of the framework says about them (autodiff and the targets refuse by name)."""

from __future__ import annotations

import numpy as np
import pytest

from rlxir import RlxError, interpret, parse, print_graph
from rlxir.autodiff.backward import grad
from rlxir.compiler.compile import compile
from rlxir.ops import check_attributes, get_op
from rlxir.ops.special_poly import DEGREE_LIMIT

SOURCE = """
graph g {
  input %x : f32[6]
  input %n : f32[6]
  input %a : f64[2, 3, 3]
  %l = polynomial_recurrence(%x, %n) {family = "laguerre_l"} : f32[6]
  %p = polynomial_recurrence(%x, %n) {family = "legendre_p"} : f32[6]
  %e = eigvals(%a) : f64[2, 3, 2]
  output %l, %p, %e
}
"""


def reference(op: str, *inputs, **attrs) -> np.ndarray:
    opdef = get_op(op)
    _, full = check_attributes(opdef, attrs)
    return opdef.reference([np.asarray(value) for value in inputs], full)


def laguerre_3(x):
    return (-x ** 3 + 9 * x ** 2 - 18 * x + 6) / 6


def legendre_4(x):
    return (35 * x ** 4 - 30 * x ** 2 + 3) / 8


# --- polynomial_recurrence -----------------------------------------------------------------
def test_the_recurrence_gives_the_closed_forms():
    x = np.linspace(-3.0, 3.0, 25)
    np.testing.assert_allclose(reference("polynomial_recurrence", x, np.full_like(x, 3.0), family="laguerre_l"),
                               laguerre_3(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reference("polynomial_recurrence", x, np.full_like(x, 4.0), family="legendre_p"),
                               legendre_4(x), rtol=1e-12, atol=1e-12)


def test_each_element_runs_to_its_own_degree():
    x = np.array([0.5, 0.5, 0.5, 0.5], np.float64)
    n = np.array([0.0, 1.0, 3.9, -2.0])  # 3.9 truncates to 3; a negative degree gives 0
    got = reference("polynomial_recurrence", x, n, family="laguerre_l")
    np.testing.assert_allclose(got, [1.0, 0.5, laguerre_3(0.5), 0.0], rtol=1e-14)


def test_pytorchs_special_cases():
    nan, inf = np.nan, np.inf
    laguerre = reference("polynomial_recurrence", np.array([0.0, 2.0, 2.0, 2.0]), np.array([7.0, nan, inf, -inf]),
                         family="laguerre_l")
    np.testing.assert_array_equal(laguerre, [1.0, 0.0, 0.0, 0.0])  # L_n(0) = 1; n without an integer value: 0
    legendre = reference("polynomial_recurrence", np.array([1.0, -1.0, -1.0]), np.array([5.0, 5.0, 4.0]),
                         family="legendre_p")
    np.testing.assert_array_equal(legendre, [1.0, -1.0, 1.0])


def test_broadcasting_and_the_operand_dtype():
    got = reference("polynomial_recurrence", np.full((3, 1), 0.25, np.float32), np.arange(4, dtype=np.float32),
                    family="legendre_p")
    assert got.shape == (3, 4) and got.dtype == np.float32
    np.testing.assert_allclose(got[0], [1.0, 0.25, (3 * 0.0625 - 1) / 2, (5 * 0.25 ** 3 - 3 * 0.25) / 2], rtol=1e-6)


def test_a_degree_past_the_limit_is_an_error_at_run_time():
    with pytest.raises(RlxError, match="polynomial_recurrence of degree"):
        reference("polynomial_recurrence", np.array([0.5]), np.array([DEGREE_LIMIT + 1.0]), family="laguerre_l")


def test_float32_is_pytorchs_value_bit_for_bit():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(4000) * 3).astype(np.float32)
    n = rng.uniform(-2, 40, 4000).astype(np.float32)
    for family, function in (("laguerre_l", torch.special.laguerre_polynomial_l),
                             ("legendre_p", torch.special.legendre_polynomial_p)):
        want = function(torch.from_numpy(x), torch.from_numpy(n)).numpy()
        np.testing.assert_array_equal(reference("polynomial_recurrence", x, n, family=family), want)


# --- eigvals -------------------------------------------------------------------------------
def test_a_rotation_has_a_conjugate_pair_positive_imaginary_part_first():
    got = reference("eigvals", np.array([[0.0, -1.0], [1.0, 0.0]]))
    np.testing.assert_allclose(got, [[0.0, 1.0], [0.0, -1.0]], atol=1e-15)


def test_eigenpairs_satisfy_their_equation():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5, 5))
    pairs = reference("eigvals", a)
    values = pairs[..., 0] + 1j * pairs[..., 1]
    np.testing.assert_allclose(values.sum(-1), np.trace(a, axis1=-2, axis2=-1), atol=1e-12)
    np.testing.assert_allclose(values.prod(-1), np.linalg.det(a), rtol=1e-10, atol=1e-12)
    for matrix, row in zip(a, values):
        for value in row:  # A - λI is singular: its smallest singular value vanishes
            assert np.linalg.svd(matrix - value * np.eye(5), compute_uv=False)[-1] < 1e-10


def test_eigvals_keeps_the_dtype_and_handles_empty_and_non_finite_matrices():
    assert reference("eigvals", np.eye(3, dtype=np.float32)).dtype == np.float32
    assert reference("eigvals", np.zeros((0, 4, 4))).shape == (0, 4, 2)
    assert reference("eigvals", np.zeros((2, 0, 0))).shape == (2, 0, 2)
    a = np.stack([np.diag([1.0, 2.0, 3.0]), np.full((3, 3), np.nan)])
    got = reference("eigvals", a)
    np.testing.assert_allclose(np.sort(got[0, :, 0]), [1.0, 2.0, 3.0])
    assert np.isnan(got[1]).all()


def test_eigvals_order_is_pytorchs_in_float64():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(11).standard_normal((50, 6, 6))
    want = torch.view_as_real(torch.linalg.eigvals(torch.from_numpy(a))).numpy()
    np.testing.assert_allclose(reference("eigvals", a), want, rtol=1e-10, atol=1e-12)


# --- the framework around them -------------------------------------------------------------
def test_text_roundtrip_and_interpretation():
    graph = parse(SOURCE).main
    text = print_graph(graph)
    assert 'polynomial_recurrence(%x, %n) {family = "laguerre_l"}' in text and "eigvals(%a)" in text
    assert print_graph(parse(text).main) == text
    x = np.array([0.0, 0.5, -1.0, 2.0, 1.0, -0.3], np.float32)
    n = np.full(6, 3.0, np.float32)
    a = np.stack([np.diag([3.0, 1.0, 2.0]), np.eye(3)])
    out = interpret(graph, {"x": x, "n": n, "a": a})
    np.testing.assert_allclose(out["l"], laguerre_3(x.astype(np.float64)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out["e"][0, :, 0], [3.0, 1.0, 2.0])


def test_autodiff_refuses_them_by_name():
    text = ("graph g {\n  input %x : f32[4]\n  input %n : f32[4]\n"
            '  %p = polynomial_recurrence(%x, %n) {family = "legendre_p"}\n'
            "  %s = reduce_sum(%p) {axes = [0]}\n  output %s\n}\n")
    with pytest.raises(RlxError, match="polynomial_recurrence has no gradient"):
        grad(parse(text).main, ["x"])


def test_no_target_claims_them():
    with pytest.raises(RlxError, match="polynomial_recurrence .not in the cpu op set"):
        compile(parse(SOURCE).main, "cpu")
