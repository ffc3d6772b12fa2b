"""Check a run in the planned arena against the reference interpreter on the original graph.

`check_execution(graph, result)` makes the feeds once from the original graph (the same
arrays go to both runs), runs `rlxir.interpret` on the original graph (for a training
result, on `rlxir.grad(graph)`, whose outputs are the loss and the gradients) and
`run_in_arena` on the compiled one, and compares the outputs position by position within
the tolerance of each output's dtype. A mismatch, a poisoned read or a storage loss is
reported, never hidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs
import numpy as np

from rlxir.dtypes import DType
from rlxir.executor.runner import ArenaRun, compiled_step, run_in_arena
from rlxir.graph import Graph
from rlxir.interpreter import interpret, random_feeds

if TYPE_CHECKING:
    from rlxir.compiler import CompileResult
    from rlxir.training import TrainingResult

TOLERANCES = {
    DType.f64: (1e-9, 1e-12), DType.f32: (1e-4, 1e-5), DType.c64: (1e-4, 1e-5),
    DType.f16: (1e-2, 1e-3), DType.bf16: (2e-2, 1e-2),
}
"""(rtol, atol) by dtype; integers and bool must be equal."""


@attrs.frozen
class OutputCheck:
    name: str  # the original graph's output name
    compiled_name: str  # the compiled graph's
    dtype: str
    matched: bool
    max_abs_error: float


@attrs.frozen
class ExecutionCheck:
    """A run in the arena next to the reference: does every output agree?"""

    run: ArenaRun
    reference: dict
    outputs: tuple  # OutputCheck per output, in output order

    @property
    def matched(self) -> bool:
        return all(output.matched for output in self.outputs) and not self.run.poisoned_reads

    @property
    def verdict(self) -> str:
        if self.matched:
            return "ran, matched"
        if self.run.poisoned_reads:
            node, operand = self.run.poisoned_reads[0]
            return f"ran, read dead memory (%{node} read %{operand})"
        wrong = [output.name for output in self.outputs if not output.matched]
        loss = " (storage loss)" if self.run.storage_losses else ""
        return f"ran, mismatch on %{', %'.join(wrong)}{loss}"

    def summary(self) -> dict:
        return {"matched": self.matched, "verdict": self.verdict, "run": self.run.summary(),
                "outputs": [attrs.asdict(output) for output in self.outputs]}


def grad_of(graph: Graph) -> Graph:
    from rlxir.autodiff import grad

    return grad(graph)


def reference_graph(graph: Graph, result: CompileResult | TrainingResult) -> Graph:
    """What the compiled graph computes, before any pass: the graph, or its training step."""
    return grad_of(graph) if hasattr(result, "backward") else graph


@attrs.frozen
class ReferenceRun:
    """The interpreter's run of what a compiled graph computes: the feeds and the outputs.
    One serves every target a graph is compiled for (`check_execution(..., reference=)`)."""

    graph: Graph
    inputs: dict
    params: dict
    outputs: dict


def reference_run(graph: Graph, bindings: Mapping[str, int] | None = None, inputs: Mapping | None = None,
                  params: Mapping | None = None, seed: int = 0, training: bool = False) -> ReferenceRun:
    """Fill the feeds from `graph` (or its training step), run the interpreter on it."""
    reference_of = grad_of(graph) if training else graph
    filled_inputs, filled_params = random_feeds(reference_of, bindings, seed)
    filled_inputs.update({key.removeprefix("%"): value for key, value in (inputs or {}).items()})
    filled_params.update({key.removeprefix("%"): value for key, value in (params or {}).items()})
    outputs = interpret(reference_of, filled_inputs, filled_params, bindings, seed)
    return ReferenceRun(reference_of, filled_inputs, filled_params, outputs)


def check_execution(graph: Graph, result: CompileResult | TrainingResult, inputs: Mapping | None = None,
                    params: Mapping | None = None, seed: int = 0, device: str = "cpu",
                    reference: ReferenceRun | None = None) -> ExecutionCheck:
    """Run `result` (compiled from `graph`) in its arena and compare with the interpreter
    (`reference`, when given, is the interpreter's run to compare with: see `reference_run`)."""
    bindings = dict(compiled_step(result).bindings)
    if reference is None:
        reference = reference_run(graph, bindings, inputs, params, seed, training=hasattr(result, "backward"))
    compiled = compiled_step(result).graph
    run = run_in_arena(result, _known(compiled, reference.inputs, "input"), _known(compiled, reference.params, "param"),
                       seed, device)
    checks = []
    for name, compiled_name in zip(reference.graph.outputs, compiled.outputs):
        expected, actual = reference.outputs[name], run.outputs[compiled_name]
        checks.append(_compare(name, compiled_name, reference.graph.type(name).dtype, expected, actual))
    return ExecutionCheck(run, reference.outputs, tuple(checks))


def _known(graph: Graph, feeds: dict, kind: str) -> dict:
    """The feeds `graph` still has as `kind` (a pipeline may drop an unread input)."""
    names = set(graph.values_of_kind(kind))
    return {name: value for name, value in feeds.items() if name in names}


def _compare(name: str, compiled_name: str, dtype: DType, expected: np.ndarray, actual: np.ndarray) -> OutputCheck:
    if expected.shape != actual.shape:
        return OutputCheck(name, compiled_name, dtype.value, False, float("inf"))
    if dtype in TOLERANCES:
        rtol, atol = TOLERANCES[dtype]
        finite = np.isfinite(expected) & np.isfinite(actual)
        # A sum taken in another order differs by rounding relative to the magnitudes summed:
        # an element that cancels to near zero (a gradient) carries its big terms' error.
        scale = max(float(np.max(np.abs(expected[finite]), initial=0.0)), 1.0)
        matched = bool(np.allclose(actual, expected, rtol=rtol, atol=atol * scale, equal_nan=True))
        error = float(np.max(np.abs(actual[finite] - expected[finite]), initial=0.0))
    else:
        matched = bool(np.array_equal(actual, expected))
        error = float(np.max(np.abs(actual.astype(np.float64) - expected.astype(np.float64)), initial=0.0))
    return OutputCheck(name, compiled_name, dtype.value, matched, error)
