"""ONNX op -> core ops: the optimizer updates of ``ai.onnx.preview.training`` (Adagrad, Adam,
Momentum), elementwise formulas of the learning rate R, the step count T (both rank 0) and
one group of tensors per optimized input.

Each reads R, T, then n X's, n G's (gradients) and the n state tensors of each kind, and
writes the n new X's, then the new states of each kind, as ONNX's reference computes them
(T > 0 decides the first-step adjustments at run time; R and T are cast to X's type).
"""

from __future__ import annotations

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_ops import Arith, hint, operand
from rlxir.importers.onnx_registry import register

STATES = {"Adagrad": 1, "Momentum": 1, "Adam": 2}
"""The state tensors per optimized input, after X and G."""


def convert_optimizer(ctx, node, attrs):
    states = STATES[node.op_type]
    count, rest = divmod(len(node.input) - 2, 2 + states)
    if rest or count < 1 or len(node.output) != count * (1 + states):
        raise UnsupportedModel(f"{node.op_type} with {len(node.input)} inputs and {len(node.output)} outputs",
                               expected=f"R, T, then {2 + states} tensors per optimized input, and {1 + states} "
                                        "outputs per input")
    groups = [[node.input[2 + kind * count + index] for kind in range(2 + states)] for index in range(count)]
    results = [UPDATES[node.op_type](ctx, node, attrs, group, index) for index, group in enumerate(groups)]
    return [result[kind] for kind in range(1 + states) for result in results]


def _setup(ctx, node, group: list[str], index: int) -> tuple[Arith, str, str, list[str]]:
    """(arith in X's type, R and T as scalars of it, the group's tensors as values)."""
    dtype = ctx.type(group[0]).dtype
    if not dtype.is_float:
        raise UnsupportedModel(f"{node.op_type} of a {dtype} tensor", expected="float tensors")
    f = Arith(ctx, dtype, f"{hint(node, index)}.update")
    rate, step = operand(ctx, node.input[0], dtype), operand(ctx, node.input[1], dtype)
    return f, rate, step, [operand(ctx, name, dtype) for name in group]


def adagrad(ctx, node, attrs, group: list[str], index: int) -> tuple[str, str]:
    f, rate, step, (x, gradient, history) = _setup(ctx, node, group, index)
    decayed = f("div", rate, f("add", f("mul", step, attrs.get("decay_factor", 0.0)), 1.0), tag="rate")
    regularized = f("add", f("mul", x, attrs.get("norm_coefficient", 0.0)), gradient, tag="gradient")
    history = f("add", history, f("mul", regularized, regularized), tag="history")
    scale = f("add", f("sqrt", history), attrs.get("epsilon", 1e-6), tag="scale")
    return f("sub", x, f("div", f("mul", decayed, regularized), scale), tag="x"), history


def momentum(ctx, node, attrs, group: list[str], index: int) -> tuple[str, str]:
    mode = attrs.get("mode", "")
    if mode not in ("standard", "nesterov"):
        raise UnsupportedModel(f"Momentum mode {mode!r}", expected="standard or nesterov")
    missing = [name for name in ("alpha", "beta", "norm_coefficient") if name not in attrs]
    if missing:
        raise UnsupportedModel(f"Momentum without its attribute {missing[0]!r}", expected="alpha, beta, mode and "
                               "norm_coefficient (all required)")
    f, rate, step, (x, gradient, velocity) = _setup(ctx, node, group, index)
    alpha, beta = attrs["alpha"], attrs["beta"]
    regularized = f("add", f("mul", x, attrs["norm_coefficient"]), gradient, tag="gradient")
    weight = f("where", f("gt", step, 0.0), beta, 1.0, tag="beta")  # the first step takes the whole gradient
    velocity = f("add", f("mul", velocity, alpha), f("mul", regularized, weight), tag="velocity")
    direction = velocity if mode == "standard" else f("add", regularized, f("mul", velocity, alpha), tag="direction")
    return f("sub", x, f("mul", rate, direction), tag="x"), velocity


def adam(ctx, node, attrs, group: list[str], index: int) -> tuple[str, str, str]:
    f, rate, step, (x, gradient, velocity, history) = _setup(ctx, node, group, index)
    alpha, beta = attrs.get("alpha", 0.9), attrs.get("beta", 0.999)
    regularized = f("add", f("mul", x, attrs.get("norm_coefficient", 0.0)), gradient, tag="gradient")
    velocity = f("add", f("mul", velocity, alpha), f("mul", regularized, 1.0 - alpha), tag="velocity")
    squared = f("mul", regularized, regularized, tag="squared")
    history = f("add", f("mul", history, beta), f("mul", squared, 1.0 - beta), tag="history")
    scale = f("add", f("sqrt", history), attrs.get("epsilon", 1e-6), tag="scale")
    correction = f("div", f("sqrt", f("sub", 1.0, f("pow", beta, step))), f("sub", 1.0, f("pow", alpha, step)),
                   tag="correction")
    adjusted = f("where", f("gt", step, 0.0), f("mul", rate, correction), rate, tag="rate")
    moved = f("sub", x, f("mul", adjusted, f("div", velocity, scale)), tag="moved")
    return f("mul", moved, 1.0 - attrs.get("norm_coefficient_post", 0.0), tag="x"), velocity, history


UPDATES = {"Adagrad": adagrad, "Momentum": momentum, "Adam": adam}

register({f"ai.onnx.preview.training.{op}": convert_optimizer for op in STATES})
