"""rlxir.grad on random differentiable graphs agrees with central finite differences (f64).

Each drawn graph is bound, given a scalar loss (every float output times a fixed random
constant, summed), and differentiated with respect to every float input and param; each
value's directional derivative along a random direction is compared with the slope of the
interpreted loss (`rlxir.testing.gradcheck`). Points where the loss is not finite, or not
smooth at the finite-difference step (a kink within it), prove nothing and are rejected.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.interpreter import bind_for_run
from rlxir.testing.gradcheck import check_gradients, with_scalar_loss
from rlxir.testing import strategies

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Families drawn on their own too, so each op is differentiated often (a mixed draw
# favours the cheap unary ops); add, mul and tanh glue them into longer chains.
FAMILIES = {
    "unary": ("neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "sigmoid", "silu", "sin", "cos", "erf", "gelu"),
    "binary": ("sub", "div", "pow", "maximum", "minimum", "cast"),
    "reductions": ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "softmax", "cumsum"),
    "linalg": ("matmul", "linear", "fused_matmul_bias_act"),
    "norms": ("layernorm", "rmsnorm", "batchnorm", "fused_residual_layernorm", "fused_residual_rmsnorm"),
    "shape": ("reshape", "transpose", "expand", "concat", "slice"),
    "sequence": ("attention", "selective_scan", "fused_elementwise"),
    "conv": ("conv2d", "max_pool2d", "avg_pool2d"),
}
GLUE = ("add", "mul", "tanh")


@st.composite
def loss_graphs(draw, ops=None, max_ops=8):
    graph = draw(strategies.graphs(float_only=True, dtypes=(DType.f64,), ops=ops, max_ops=max_ops, max_dim=4,
                                   symbols=("B", "S")))
    bindings = draw(strategies.bindings_for(graph, max_value=3))
    seed = draw(st.integers(0, 3))
    return with_scalar_loss(bind_for_run(graph, bindings), seed), seed


def check(drawn) -> None:
    graph, seed = drawn
    report = check_gradients(graph, seed=seed)
    assume(report.slopes and report.finite and all(slope.smooth for slope in report.slopes))
    assert report.agrees, report.explain()


@SETTINGS
@given(loss_graphs())
def test_random_graphs(drawn):
    check(drawn)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_random_graphs_of_one_family(family):
    @FEW
    @given(loss_graphs(ops=FAMILIES[family] * 2 + GLUE, max_ops=5))
    def run(drawn):
        check(drawn)

    run()
