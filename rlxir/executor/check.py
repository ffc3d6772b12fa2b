"""Check a run in the planned arena against the reference interpreter on the original graph.

`check_execution(graph, result)` makes the feeds once from the original graph (the same
arrays go to both runs), runs `rlxir.interpret` on the original graph (for a training
result, on its training step `rlxir.autodiff.training.training_graph(graph, optimizer=...)`: the
loss and the gradients, or with an optimizer the loss and the updated weights and state) and
`run_in_arena` on the compiled one, and compares the outputs position by position within
the tolerance of each output's precision: the least precise float dtype among the values
it depends on and the dtypes the target executes them in (`output_precisions`).

The verdict tells causes apart (`ExecutionCheck.cause`): a poisoned read, or values no
rounding explains, is a defect in the target's pipeline or planner; a mismatch where the
target's storage changed values is its storage loss; a bounded numeric difference beyond
the tolerance is precision, reported with the relative error and the tolerance used.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from rlxir.dtypes import DType
from rlxir.executor.runner import ArenaRun, compiled_step, run_in_arena
from rlxir.ir.graph import Graph
from rlxir.interpreter import interpret, interpret_rounded_again, random_feeds
from rlxir.autodiff.optimizers import DEFAULT_OPTIMIZER

if TYPE_CHECKING:
    from rlxir.compiler.compile import CompileResult
    from rlxir.autodiff.optimizers import Optimizer
    from rlxir.targets.target import Target
    from rlxir.autodiff.training import TrainingResult

TOLERANCES = {
    DType.f64: (1e-9, 1e-12), DType.f32: (1e-4, 1e-5), DType.c64: (1e-4, 1e-5),
    DType.f16: (1e-2, 1e-3), DType.bf16: (2e-2, 1e-2),
}
"""(rtol, atol) by precision; integer and bool outputs must be equal."""
PRECISION_BOUND = 0.5
"""A relative error up to min(100 x rtol, this) is a precision difference; a larger one
(or a NaN or inf the reference does not have) is a wrong value."""
SENSITIVITY_FACTOR = 10.0
"""A difference up to this many times the reference's own change under one more rounding of
every value that rounds (`rlxir.interpreter.interpret_rounded_again`) is the graph's
conditioning, not a defect."""
Array = Any
"""A NumPy array, or a CuPy one where a run or a reference stayed on the GPU."""
BLOCK = 1 << 20
"""Elements compared at a time, so a comparison holds no temporary of an output's size."""


@attrs.frozen
class OutputCheck:
    """One output next to the reference, within the tolerance of its precision."""

    name: str  # the original graph's output name
    compiled_name: str  # the compiled graph's
    dtype: str
    matched: bool
    max_abs_error: float
    precision: str | None = None  # the least precise dtype the output depends on (None: compared exactly)
    rtol: float = 0.0
    atol: float = 0.0  # times the output's scale (its largest finite magnitude, at least 1)
    relative_error: float = 0.0  # max |actual - expected| / (|expected| + atol x scale / rtol)
    nonfinite: int = 0  # elements NaN or inf in one run and not the same in the other
    sensitivity: float | None = None  # max |change| of the reference under one more rounding of its values

    @property
    def ill_conditioned(self) -> bool:
        """The reference itself moves by as much as this difference when every value that
        rounds (its float feeds and computed results) is rounded once more: any two
        implementations of the graph in this precision may differ so (`SENSITIVITY_FACTOR`)."""
        return self.sensitivity is not None and self.max_abs_error <= SENSITIVITY_FACTOR * self.sensitivity

    @property
    def cause(self) -> str:
        """``matched``, ``precision`` (a bounded numeric difference beyond the tolerance, or one
        the graph's own conditioning explains) or ``wrong`` (values no rounding explains:
        shape, NaN or inf, or far off)."""
        if self.matched:
            return "matched"
        if self.precision is None or self.nonfinite:
            return "wrong"
        if self.relative_error > precision_bound(self.rtol) and not self.ill_conditioned:
            return "wrong"
        return "precision"

    def text(self) -> str:
        """``%name: relative error 3.1e-03 (bf16 tolerance rtol 2e-02, atol 1e-02)``."""
        if self.precision is None:
            return f"%{self.name}: {'equal' if self.matched else f'max abs error {self.max_abs_error:.3g}'} (exact)"
        extra = f", {self.nonfinite} NaN or inf element(s) differ" if self.nonfinite else ""
        if self.ill_conditioned and not self.matched:
            extra += (f"; ill-conditioned: the reference itself moves by {self.sensitivity:.3g} when its values are "
                      f"rounded once more, against a max abs error of {self.max_abs_error:.3g}")
        return (f"%{self.name}: relative error {self.relative_error:.2g}{extra} ({self.precision} tolerance rtol "
                f"{self.rtol:g}, atol {self.atol:g})")


def precision_bound(rtol: float) -> float:
    return min(100 * rtol, PRECISION_BOUND)


@attrs.frozen
class ExecutionCheck:
    """A run in the arena next to the reference: does every output agree?"""

    run: ArenaRun
    reference: dict
    outputs: tuple  # OutputCheck per output, in output order
    scope: str = "every element: the NumPy interpreter on the original graph"  # see rlxir.executor.device_check

    @property
    def matched(self) -> bool:
        return all(output.matched for output in self.outputs) and not self.run.poisoned_reads

    @property
    def cause(self) -> str:
        """``matched``; ``defect`` (a poisoned read, or values no rounding explains: the
        target's pipeline or planner); ``storage`` (a mismatch where the target's storage
        changed values); ``precision`` (every difference bounded, some beyond tolerance)."""
        if self.matched:
            return "matched"
        if self.run.poisoned_reads:
            return "defect"
        causes = {output.cause for output in self.outputs} - {"matched"}
        if self.run.storage_losses:
            return "storage"
        return "defect" if "wrong" in causes else "precision"

    @property
    def verdict(self) -> str:
        cause = self.cause
        if cause == "matched":
            return "ran, matched"
        if self.run.poisoned_reads:
            node, operand = self.run.poisoned_reads[0]
            return f"ran, read dead memory (%{node} read %{operand}): a defect in the target's pipeline or planner"
        wrong = [output for output in self.outputs if not output.matched]
        names = ", ".join(f"%{output.name}" for output in wrong)
        if cause == "storage":
            return f"ran, mismatch on {names} (storage loss)"
        if cause == "precision":
            return f"ran, precision beyond tolerance on {'; '.join(output.text() for output in wrong)}"
        shown = next(output for output in wrong if output.cause == "wrong")
        return (f"ran, wrong values on {names} ({shown.text()}; beyond any rounding): a defect in the target's "
                "pipeline or planner")

    @property
    def closest_call(self) -> OutputCheck | None:
        """The output nearest its tolerance (the largest relative error), None without outputs."""
        return max(self.outputs, key=lambda output: (output.relative_error, output.max_abs_error), default=None)

    def summary(self) -> dict:
        return {"matched": self.matched, "cause": self.cause, "verdict": self.verdict, "scope": self.scope,
                "run": self.run.summary(),
                "outputs": [attrs.asdict(output) | {"cause": output.cause} for output in self.outputs]}


def grad_of(graph: Graph, optimizer: Optimizer | str | None = None) -> Graph:
    """The training step of `graph`: its gradients, and `optimizer`'s update when given."""
    from rlxir.autodiff.training import training_graph

    return training_graph(graph, optimizer=optimizer)


def reference_graph(graph: Graph, result: CompileResult | TrainingResult) -> Graph:
    """What the compiled graph computes, before any pass: the graph, or its training step."""
    return grad_of(graph, getattr(result, "optimizer", None)) if hasattr(result, "backward") else graph


@attrs.frozen
class ReferenceRun:
    """The interpreter's run of what a compiled graph computes: the feeds and the outputs.
    One serves every target a graph is compiled for (`check_execution(..., reference=)`)."""

    graph: Graph
    inputs: dict
    params: dict
    outputs: dict


def reference_run(graph: Graph, bindings: Mapping[str, int] | None = None, inputs: Mapping | None = None,
                  params: Mapping | None = None, seed: int = 0, training: bool = False,
                  optimizer: Optimizer | str | None = DEFAULT_OPTIMIZER) -> ReferenceRun:
    """Fill the feeds from `graph` (or its training step, ending with `optimizer`'s update as
    `compile_training`'s does by default; None for the gradients alone), run the interpreter."""
    reference_of = grad_of(graph, optimizer) if training else graph
    filled_inputs, filled_params = random_feeds(reference_of, bindings, seed)
    filled_inputs.update({key.removeprefix("%"): value for key, value in (inputs or {}).items()})
    filled_params.update({key.removeprefix("%"): value for key, value in (params or {}).items()})
    outputs = interpret(reference_of, filled_inputs, filled_params, bindings, seed)
    return ReferenceRun(reference_of, filled_inputs, filled_params, outputs)


def check_execution(graph: Graph, result: CompileResult | TrainingResult, inputs: Mapping | None = None,
                    params: Mapping | None = None, seed: int = 0, device: str = "cpu",
                    reference: ReferenceRun | None = None) -> ExecutionCheck:
    """Run `result` (compiled from `graph`) in its arena and compare with the interpreter
    (`reference`, when given, is the interpreter's run to compare with: see `reference_run`).

    Each output is compared within the tolerance of its precision (`output_precisions`):
    the least precise float dtype among the values it depends on in the reference graph
    and the dtypes the target executes them in. The outputs are compared where the run
    left them (views of the arena), a block at a time."""
    step = compiled_step(result)
    if reference is None:
        reference = reference_run(graph, dict(step.bindings), inputs, params, seed, training=hasattr(result, "backward"),
                                  optimizer=getattr(result, "optimizer", None))
    compiled = step.graph
    run = run_in_arena(result, _known(compiled, reference.inputs, "input"), _known(compiled, reference.params, "param"),
                       seed, device, to_host=device != "cpu")  # on the CPU: the slots themselves
    precisions = output_precisions(reference.graph, step.target)
    checks = tuple(compare_output(name, compiled_name, reference.graph.type(name).dtype, precisions[name],
                                  reference.outputs[name], run.outputs[compiled_name])
                   for name, compiled_name in zip(reference.graph.outputs, compiled.outputs))
    if needs_sensitivity(checks) and not run.poisoned_reads:
        moved = interpret_rounded_again(reference.graph, reference.inputs, reference.params, dict(step.bindings), seed)
        checks = with_sensitivity(checks, reference.outputs, moved)
    return ExecutionCheck(run, reference.outputs, checks)


def _known(graph: Graph, feeds: dict, kind: str) -> dict:
    """The feeds `graph` still has as `kind` (a pipeline may drop an unread input)."""
    names = set(graph.values_of_kind(kind))
    return {name: value for name, value in feeds.items() if name in names}


# --- precision ---------------------------------------------------------------------------
def execution_dtype(target: Target, dtype: DType) -> DType:
    """The dtype `target` computes and holds a `dtype` value in: f32 sizing holds every
    float as float32 (f64 loses precision there), and a pipeline with `f32-exec` computes
    f16 and bf16 in f32."""
    if not dtype.is_float:
        return dtype
    if target.sizing == "f32" and dtype is DType.f64:
        return DType.f32
    if dtype.is_low_precision and "f32-exec" in target.pipeline:
        return DType.f32
    return dtype


def least_precise(dtypes: Iterable[DType]) -> DType | None:
    """The dtype with the widest tolerance among `dtypes` (None when none has one)."""
    toleranced = [dtype for dtype in dtypes if dtype in TOLERANCES]
    return max(toleranced, key=lambda dtype: TOLERANCES[dtype][0], default=None)


def output_precisions(graph: Graph, target: Target) -> dict[str, DType | None]:
    """For each output of `graph`: the least precise float dtype among it and its ancestors,
    each taken with the dtype `target` executes it in; None for integer and bool outputs,
    which must be equal. One walk in schedule order: a value's precision is the least
    precise of its own and its operands'."""
    precision: dict[str, DType | None] = {}
    for name in graph.schedule():
        dtype = graph.type(name).dtype
        inherited = [precision[operand] for operand in graph.operands(name)]
        precision[name] = least_precise([dtype, execution_dtype(target, dtype)]
                                        + [operand for operand in inherited if operand is not None])
    return {name: precision[name] if graph.type(name).dtype in TOLERANCES else None for name in graph.outputs}


# --- conditioning ------------------------------------------------------------------------
def needs_sensitivity(checks: Iterable[OutputCheck]) -> bool:
    """Whether some output differs beyond what rounding explains (so the reference's own
    conditioning is worth measuring)."""
    return any(check.cause == "wrong" and check.precision is not None and not check.nonfinite for check in checks)


def with_sensitivity(checks: Iterable[OutputCheck], reference: Mapping, moved: Mapping) -> tuple[OutputCheck, ...]:
    """`checks` with each float output's sensitivity: the max change from `reference` to
    `moved` (the reference with its values rounded once more)."""
    return tuple(attrs.evolve(check, sensitivity=max_change(reference[check.name], moved[check.name]))
                 if check.precision is not None else check for check in checks)


def max_change(expected: Array, moved: Array) -> float:
    """The largest |moved - expected| over the pairs finite in both, a block at a time."""
    changes = [_block_errors(want, got, 1.0)[0] for want, got in _blocks(expected, moved)]
    return max(changes, default=0.0)


# --- comparison --------------------------------------------------------------------------
def compare_output(name: str, compiled_name: str, dtype: DType, precision: DType | None, expected: np.ndarray,
                   actual: np.ndarray) -> OutputCheck:
    """`actual` next to `expected`: exactly for integers and bool (`precision` None), else
    within `TOLERANCES[precision]`: ``|actual - expected| <= rtol |expected| + atol scale``
    for every finite pair, NaN and inf where the reference has them. Either array may be a
    device (CuPy) array: a block is compared where `expected` is, `actual`'s moved there."""
    if expected.shape != actual.shape:
        return OutputCheck(name, compiled_name, dtype.value, False, float("inf"), precision and precision.value)
    if precision is None:
        error = max((_max_abs(want.astype(np.float64), got.astype(np.float64)) if not bool((want == got).all())
                     else 0.0 for want, got in _blocks(expected, actual)), default=0.0)
        return OutputCheck(name, compiled_name, dtype.value, error == 0.0, error)
    rtol, atol = TOLERANCES[precision]
    # A sum taken in another order differs by rounding relative to the magnitudes summed:
    # an element that cancels to near zero (a gradient) carries its big terms' error.
    scale = max([_max_finite_magnitude(want) for want, _ in _blocks(expected, actual)] + [1.0])
    floor = atol * scale / rtol
    error = relative = 0.0
    nonfinite = 0
    for want, got in _blocks(expected, actual):
        block_error, block_relative, block_nonfinite = _block_errors(want, got, floor)
        error, relative = max(error, block_error), max(relative, block_relative)
        nonfinite += block_nonfinite
    matched = relative <= rtol and not nonfinite
    return OutputCheck(name, compiled_name, dtype.value, matched, error, precision.value, rtol, atol, relative, nonfinite)


def _block_errors(want: Array, got: Array, floor: float) -> tuple[float, float, int]:
    """(max |got - want|, max relative error, elements NaN or inf in one and not the same in the
    other) over the finite pairs of one block, computed where the block is (host or device)."""
    if want.size == 0:
        return 0.0, 0.0, 0
    with np.errstate(invalid="ignore"):  # inf - inf where a pair is not finite: masked out
        finite = np.isfinite(want) & np.isfinite(got)
        difference = np.where(finite, np.abs(got - want), 0)
    relative = difference / (np.where(finite, np.abs(want), 0) + floor)
    nonfinite = ~finite & ~((want == got) | (np.isnan(want) & np.isnan(got)))
    return float(difference.max()), float(relative.max()), int(nonfinite.sum())


def _blocks(expected: np.ndarray, actual: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Pairs of matching pieces of the two arrays, each of at most about `BLOCK` elements."""
    if expected.ndim == 0 or (expected.flags.c_contiguous and actual.flags.c_contiguous):
        flat_expected, flat_actual = expected.reshape(-1), actual.reshape(-1)  # views: both are contiguous
        for begin in range(0, flat_expected.size, BLOCK):
            yield flat_expected[begin:begin + BLOCK], _beside(flat_expected, flat_actual[begin:begin + BLOCK])
        return
    rows = max(1, BLOCK // max(1, expected[0].size))
    for begin in range(0, expected.shape[0], rows):
        yield expected[begin:begin + rows], _beside(expected, actual[begin:begin + rows])


def _beside(expected: Array, block: Array) -> Array:
    """`block` in the memory `expected` is in: a device block copied to the host, or a host
    block to the device (one block at a time, so neither side holds a whole output twice)."""
    on_host = isinstance(expected, np.ndarray)
    if on_host == isinstance(block, np.ndarray):
        return block
    if on_host:
        return block.get()
    import cupy

    return cupy.asarray(block)


def _max_finite_magnitude(values: Array) -> float:
    magnitudes = np.abs(values)
    finite = np.where(np.isfinite(magnitudes), magnitudes, 0)
    return float(finite.max()) if finite.size else 0.0


def _max_abs(expected: Array, actual: Array) -> float:
    difference = np.abs(actual - expected)
    return float(difference.max()) if difference.size else 0.0
