"""Check `rlxir.grad` against central finite differences, with the reference interpreter.

    from rlxir.testing.gradcheck import check_gradients, with_scalar_loss
    report = check_gradients(with_scalar_loss(graph), bindings={"B": 2})
    assert report.agrees, report.explain()

For each value differentiated (every float input and param by default; all of them at
once with `joint`) the check draws a random direction d and compares the analytic
directional derivative ``<grad, d>`` (from interpreting the backward graph) with
``(L(v + h d) - L(v - h d)) / 2h``. The numeric
slope is taken at two step sizes; where they disagree the loss is not smooth at that
scale around the point (a kink of relu or max within h, a pole), the value is marked
`smooth = False`, and it is not held against the gradient. Run it in f64.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs
import numpy as np

from rlxir.autodiff.backward import grad
from rlxir.dtypes import DType
from rlxir.ir.graph import Graph
from rlxir.interpreter import bind_for_run, interpret, random_feeds

STEP = 1e-5
RTOL = 1e-4
ATOL = 1e-8


@attrs.frozen
class Slope:
    """One value's directional derivative: analytic, numeric at steps h and h/10."""

    value: str
    analytic: float
    numeric: float
    numeric_coarse: float
    scale: float

    @property
    def smooth(self) -> bool:
        return _close(self.numeric, self.numeric_coarse, self.scale)

    @property
    def agrees(self) -> bool:
        return _close(self.analytic, self.numeric, self.scale)


def _close(first: float, second: float, scale: float) -> bool:
    return abs(first - second) <= RTOL * (abs(first) + abs(second)) + ATOL * scale


@attrs.frozen
class GradCheck:
    """The slopes of every value checked, and the loss at the point."""

    loss: float
    slopes: tuple

    @property
    def finite(self) -> bool:
        numbers = [self.loss] + [number for slope in self.slopes for number in (slope.analytic, slope.numeric)]
        return bool(np.all(np.isfinite(numbers)))

    @property
    def agrees(self) -> bool:
        """Every smooth value's analytic slope matches its numeric one."""
        return all(slope.agrees for slope in self.slopes if slope.smooth)

    def explain(self) -> str:
        lines = [f"loss {self.loss!r}"]
        for slope in self.slopes:
            verdict = "ok" if slope.agrees else ("MISMATCH" if slope.smooth else "not smooth here")
            lines.append(f"  %{slope.value}: analytic {slope.analytic!r}, numeric {slope.numeric!r} "
                         f"(coarse {slope.numeric_coarse!r}) {verdict}")
        return "\n".join(lines)


def with_scalar_loss(graph: Graph, seed: int = 0) -> Graph:
    """A copy of `graph` whose one output is ``sum_i reduce_sum(output_i * W_i)`` over its
    floating-point outputs, each W_i a constant of random numbers (so every element of
    every output matters, with its own weight). Symbols must be bound."""
    result = graph.copy()
    rng = np.random.default_rng(seed)
    terms = []
    for index, output in enumerate(result.outputs):
        type_ = result.type(output)
        if not type_.dtype.is_float:
            continue
        weights = tuple(float(value) for value in rng.normal(size=type_.numel).round(3))
        literal = weights if weights else 0.0
        weighted = result.add_op("mul", [output, result.add_const(result.fresh_name(f"loss.w{index}"), type_, literal)],
                                 name=result.fresh_name(f"loss.term{index}"))
        if type_.rank:
            weighted = result.add_op("reduce_sum", [weighted], {"axes": tuple(range(type_.rank))},
                                     name=result.fresh_name(f"loss.sum{index}"))
        terms.append(weighted)
    total = terms[0]
    for term in terms[1:]:
        total = result.add_op("add", [total, term], name=result.fresh_name("loss"))
    result.set_outputs([total])
    return result


def check_gradients(graph: Graph, bindings: Mapping[str, int] | None = None, seed: int = 0,
                    wrt: Iterable[str] | None = None, step: float = STEP, joint: bool = False) -> GradCheck:
    """Directional-derivative check of `grad(graph, wrt)` at the interpreter's random feeds
    for `seed` (`wrt` default: every float input and param). One slope per value, or with
    `joint` one slope (named ``*``) along a direction that moves every value at once (four
    forward runs in all, for big graphs)."""
    bound = bind_for_run(graph, bindings)
    if wrt is None:
        wrt = [name for name in bound.schedule()
               if bound.kind(name) in ("input", "param") and bound.type(name).dtype.is_float]
    wrt = list(wrt)
    inputs, params = random_feeds(bound, seed=seed)
    backward = grad(bound, wrt)
    values = interpret(backward, inputs, params)
    loss = float(values[backward.outputs[0]])
    gradients = {name: values[output] for name, output in zip(wrt, backward.outputs[1:])}
    rng = np.random.default_rng(seed + 1)
    feeds = {**inputs, **params}
    directions = {name: rng.normal(size=feeds[name].shape).astype(feeds[name].dtype) for name in wrt}
    groups = [("*", wrt)] if joint else [(name, [name]) for name in wrt]
    slopes = []
    for label, names in groups:
        moves = {name: directions[name] for name in names}
        products = [gradients[name] * moves[name] for name in names]
        analytic = float(sum(np.sum(product) for product in products))
        fine = _numeric_slope(bound, inputs, params, moves, step)
        coarse = _numeric_slope(bound, inputs, params, moves, step * 10)
        scale = 1.0 + abs(loss) + float(sum(np.sum(np.abs(product)) for product in products))
        slopes.append(Slope(label, analytic, fine, coarse, scale))
    return GradCheck(loss, tuple(slopes))


def _numeric_slope(graph: Graph, inputs: dict, params: dict, moves: dict, step: float) -> float:
    values = []
    for sign in (1, -1):
        moved_inputs = {name: array + sign * step * moves[name] if name in moves else array
                        for name, array in inputs.items()}
        moved_params = {name: array + sign * step * moves[name] if name in moves else array
                        for name, array in params.items()}
        values.append(float(interpret(graph, moved_inputs, moved_params)[graph.outputs[0]]))
    return (values[0] - values[1]) / (2 * step)


def in_float64(graph: Graph) -> Graph:
    """A copy of `graph` that computes in f64: every floating-point input, param, const and
    op result is f64 (casts to a float type cast to f64), so finite differences are exact
    enough to check against."""
    result = Graph(graph.name, graph.symbols)
    for name in graph.schedule():
        data = graph.data(name)
        kind = graph.kind(name)
        type_ = data.type
        wide = type_.with_dtype(DType.f64) if type_.dtype.is_float else type_
        if kind == "input":
            result.add_input(name, wide, data.loc)
        elif kind == "param":
            result.add_param(name, wide, data.loc)
        elif kind == "const":
            result.add_const(name, wide, data.attrs["value"], data.loc)
        else:
            attrs = dict(data.attrs)
            if data.op == "cast" and attrs["to"].is_float:
                attrs["to"] = DType.f64
            result.add_op(data.op, data.operands, attrs, name=name, loc=data.loc)
    result.set_outputs(graph.outputs)
    return result
