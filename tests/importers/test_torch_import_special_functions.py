"""Special functions of the PyTorch importer (Bessel J, Y, K, Airy Ai, Hurwitz zeta, the
incomplete gamma functions, nextafter, the orthogonal polynomials), each exported here,
interpreted and compared with eager PyTorch on a batch and on points chosen to cross every
branch; and what is refused, with its reason."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlxir.importers import UnsupportedModel  # noqa: E402
from rlxir.importers.torch import import_torch  # noqa: E402
from rlxir.interpreter import interpret  # noqa: E402


class Apply(torch.nn.Module):
    """forward(x[, y]) = function(x[, y])."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x, y=None):
        return self.function(x) if y is None else self.function(x, y)


class WithStaticN(torch.nn.Module):
    """forward(x) = function(x, n) with n a buffer (known while importing)."""

    def __init__(self, function, n):
        super().__init__()
        self.function = function
        self.register_buffer("n", n)

    def forward(self, x):
        return self.function(x, self.n)


def interpreted(module, args) -> np.ndarray:
    """The module imported with a symbolic batch dim (static rows where it reads a buffer of
    its own, which fixes them) and run on the interpreter."""
    batch = not any(True for _ in module.buffers())
    imported = import_torch(module, args, dims=None if batch else [None] * len(args))
    feeds = {value: arg.numpy() for value, arg in zip(imported.inputs.values(), args)}
    results = interpret(imported.graph, feeds, dict(imported.params), {"B": args[0].shape[0]} if batch else {})
    return results[imported.graph.outputs[-1]]


def assert_matches(module, args, rtol=1e-4, atol=1e-5):
    with torch.no_grad():
        want = module(*args).numpy()
    np.testing.assert_allclose(interpreted(module, args), want, rtol=rtol, atol=atol, equal_nan=True)


def spread(*extra: float, low: float = -30.0, high: float = 30.0) -> torch.Tensor:
    """A batch of 4 rows: a grid over [low, high] and the given points."""
    grid = torch.linspace(low, high, 4 * 64)
    points = torch.tensor(extra, dtype=torch.float32)
    return torch.cat([grid, points, torch.zeros((-len(extra)) % 4)]).reshape(4, -1)


EDGES = (0.0, -0.0, 1e-20, 1.99, 2.01, 2.08, 2.1, -2.08, -2.1, 4.99, 5.01, 8.32, 8.33, 103.8, 104.0, 150.0, -150.0,
         float("inf"), -float("inf"), float("nan"))
"""Points on both sides of every switch between forms, and the domain's edges."""


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
                                  "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                  "airy_ai"])
def test_bessel_and_airy_match_pytorch_across_their_branches(name):
    assert_matches(Apply(getattr(torch.special, name)), (spread(*EDGES),))


@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai"])
def test_oscillating_functions_far_out_round_their_phase_as_pytorch(name):
    x = spread(1e6, -1e6, 3e7, 1e30, 4.99, 5.01, low=-200.0, high=200.0)
    assert_matches(Apply(getattr(torch.special, name)), (x,))


def test_bessel_functions_keep_their_sign_and_domain():
    x = torch.tensor([[-2.0, 0.0, 2.0, float("inf")]] * 2)
    j1 = interpreted(Apply(torch.special.bessel_j1), (x,))
    assert j1[0, 0] == pytest.approx(-j1[0, 2]) and j1[0, 0] < 0  # J1 is odd
    y0 = interpreted(Apply(torch.special.bessel_y0), (x,))
    assert np.isnan(y0[0, 0]) and y0[0, 1] == -np.inf
    k0 = interpreted(Apply(torch.special.modified_bessel_k0), (x,))
    assert np.isnan(k0[0, 0]) and k0[0, 1] == np.inf and k0[0, 3] == 0.0


def test_zeta_matches_pytorch_with_its_poles_and_domain():
    s = torch.tensor([[2.0, 3.5, 1.0, 0.5], [4.0, 2.5, 30.0, 2.0], [3.0, 1.0001, 7.0, 2.0]])
    q = torch.tensor([[1.0, 0.25, 2.0, 2.0], [-2.5, -2.5, 3.0, 0.0], [-7.5, 5.0, 0.1, 1e9]])
    assert_matches(Apply(torch.special.zeta), (s, q))
    torch.manual_seed(0)
    assert_matches(Apply(torch.special.zeta), (torch.rand(3, 40) * 10 + 1.01, torch.rand(3, 40) * 20 + 0.01))


@pytest.mark.parametrize("function", [torch.special.gammainc, torch.special.gammaincc], ids=["igamma", "igammac"])
def test_incomplete_gamma_matches_pytorch_in_both_regimes(function):
    torch.manual_seed(0)
    a = torch.cat([torch.rand(2, 64) * 12, torch.tensor([[0.0, 0.0, 1.0, float("inf"), 2.0, -1.0, 1e-3, 900.0]
                                                         + [1.0] * 56])])
    x = torch.cat([torch.rand(2, 64) * 20, torch.tensor([[1.0, 0.0, 0.0, 1.0, float("inf"), 1.0, 1.0, 930.0]
                                                         + [3.0] * 56])])
    assert_matches(Apply(function), (a, x))


def test_incomplete_gammas_sum_to_one():
    a, x = torch.tensor([[0.5, 3.0, 7.0, 40.0], [0.1, 1.0, 9.0, 100.0]]), torch.tensor([[0.2, 5.0, 2.0, 45.0],
                                                                                      [3.0, 1.0, 9.5, 90.0]])
    lower = interpreted(Apply(torch.special.gammainc), (a, x))
    upper = interpreted(Apply(torch.special.gammaincc), (a, x))
    np.testing.assert_allclose(lower + upper, 1.0, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nextafter_is_bit_exact(dtype):
    info = torch.finfo(dtype)
    x = torch.tensor([[1.0, 1.0, -1.0, 0.0, 0.0, 2.0, 0.5, 3.7], [info.max, info.max, -info.max, info.tiny,
                      float("inf"), float("nan"), 1e-3, info.tiny / 4]], dtype=dtype)
    y = torch.tensor([[2.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 3.7], [float("inf"), 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0]],
                     dtype=dtype)
    want = torch.nextafter(x, y).numpy()
    have = interpreted(Apply(torch.nextafter), (x, y))
    assert have.dtype == want.dtype
    assert np.array_equal(have, want, equal_nan=True)  # not close: the very same numbers


def test_nextafter_of_half_precision_is_refused_with_its_reason():
    x = torch.ones(2, 3, dtype=torch.float16)
    with pytest.raises(UnsupportedModel, match="(?s)nextafter on f16.*float32 or float64"):
        import_torch(Apply(torch.nextafter), (x, x * 2))


CHEBYSHEV = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
             "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
             "shifted_chebyshev_polynomial_w"]


def polynomial_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """x inside and outside [-1, 1] (and both shifted ends), degrees -2..24 (fractional ones
    truncated), NaN and inf among them."""
    torch.manual_seed(0)
    x = torch.cat([torch.rand(3, 48) * 2.4 - 1.2, torch.tensor([[1.0, -1.0, 0.0, 0.5, 3.0, -3.0, float("nan"),
                                                                 float("inf")] * 6])])
    n = torch.cat([torch.randint(-2, 25, (3, 48)).float() + 0.5 * torch.rand(3, 48),
                   torch.tensor([[0.0, 1.0, 2.0, 7.0, 9.0, 12.0, float("nan"), -1.0] * 6])])
    return x, n


@pytest.mark.parametrize("name", CHEBYSHEV)
def test_chebyshev_polynomials_of_a_run_time_degree_match_pytorch(name):
    assert_matches(Apply(getattr(torch.special, name)), polynomial_inputs())


@pytest.mark.parametrize("name", ["hermite_polynomial_h", "hermite_polynomial_he"])
def test_hermite_polynomials_of_a_run_time_degree_are_pytorchs_numbers(name):
    function = getattr(torch.special, name)
    x, n = polynomial_inputs()
    x, n = torch.cat([x * 5, torch.full((1, 48), 9.0)]), torch.cat([n * 2, torch.full((1, 48), 130.0)])
    have = interpreted(Apply(function), (x, n))
    want = function(x, n).numpy()
    assert np.array_equal(have, want, equal_nan=True)  # the same recurrence, fused the same way
    assert np.isnan(have[-1]).all()  # past PyTorch's float32 limit of 128


@pytest.mark.parametrize("name", ["laguerre_polynomial_l", "legendre_polynomial_p", "hermite_polynomial_h",
                                  "chebyshev_polynomial_v"])
def test_polynomials_of_a_static_degree_unroll_to_its_largest_value(name):
    function = getattr(torch.special, name)
    x, n = polynomial_inputs()
    assert_matches(WithStaticN(function, n), (x,))
    assert_matches(Apply(lambda t: function(t, 5)), (x,))


@pytest.mark.parametrize("name", ["laguerre_polynomial_l", "legendre_polynomial_p"])
def test_a_run_time_degree_without_a_bound_runs_the_recurrence_in_the_graph(name):
    """No bound is known while importing: the polynomial_recurrence op runs it to each n."""
    function = getattr(torch.special, name)
    x, n = polynomial_inputs()
    x, n = torch.cat([x * 3, torch.zeros(1, 48)]), torch.cat([n * 2, torch.full((1, 48), 200.0)])
    assert np.array_equal(interpreted(Apply(function), (x, n)), function(x, n).numpy(), equal_nan=True)


def test_a_static_degree_past_the_unroll_limit_is_refused():
    x = torch.rand(2, 3)
    with pytest.raises(UnsupportedModel, match=r"(?s)of degree 5000.*a degree up to 1024"):
        import_torch(Apply(lambda t: torch.special.legendre_polynomial_p(t, 5000)), (x,))
