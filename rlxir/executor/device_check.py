"""Checking a GPU run on the GPU: a reference that fits next to what the card already holds.

`rlxir run --target T --device gpu` checks the arena run against a reference computed on the
same machine without moving the outputs to the host. `plan_device_check` picks how, before
anything is allocated, from the device's free memory, the plan's arena and side buffers, the
outputs and the reference's own peak (`rlxir.interpreter.live_peak`: the graph's liveness):

1. ``device``: the reference on the GPU — the original graph (no pass, no plan) run node by
   node with the executor's kernels on CuPy, each value freed after its last reader (an op
   without a kernel runs its NumPy reference on a host copy). The arena run goes first; its
   outputs are copied out of the arena on the device, the arena is released, the reference
   runs, and every element is compared on the device. Needs arena + outputs and reference
   peak + outputs each within the free device memory.
2. ``rows``: when the full reference does not fit beside the outputs (a batch at the fit
   answer fills the card), the NumPy interpreter runs the original graph on a sample of batch
   rows (`sample_rows`: the first, the middle and the last) bound to a batch of that many,
   fed those rows of the same inputs, and those rows of every output are copied from the
   device and compared. It applies when every output has the batch symbol as an axis; that
   the rows are independent (no op mixes them, as a batch-norm in training or a mean over
   the batch would) is checked by running the last row alone as well and comparing it with
   its row of the sample. The report names the rows.
3. ``host``: otherwise, when the outputs fit in the host's memory (a training step's loss and
   gradients), they are copied to the host, the arena is released, and the reference runs on
   the device as in 1; each block of the reference is compared with the host copy.

A check that fits none of these is refused with the figures before the run starts.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from rlxir.targets.devices import format_bytes
from rlxir.errors import RlxError
from rlxir.executor.check import (ExecutionCheck, compare_output, needs_sensitivity, output_precisions,
                                  with_sensitivity)
from rlxir.executor.kernels import KERNELS, run_reference
from rlxir.executor.runner import _as_dtype, array_module, compiled_step, run_in_arena
from rlxir.ir.graph import Graph
from rlxir.interpreter import (_release_plan, bind_for_run, const_array, interpret, interpret_rounded_again, live_peak,
                               random_feeds, rounded_again_value)
from rlxir.symbolic import Expr

SAMPLED_ROWS = 3
"""Batch rows the ``rows`` check compares: the first, the middle and the last."""
HOST_SHARE = 0.5
"""The ``host`` check copies the outputs to the host only while they take at most this share
of the memory available there."""


class DeviceCheckError(RlxError):
    """A GPU check that fits neither on the device nor in the host's memory."""


@attrs.frozen
class DeviceCheckPlan:
    """How a GPU run is checked: ``device``, ``rows`` or ``host`` (module docstring)."""

    how: str
    rows: tuple = ()  # the batch rows compared (``rows``)
    batch_symbol: str | None = None
    figures: str = ""  # the sizes the choice was made from

    def scope(self) -> str:
        """What the check covered, in words, for the report."""
        if self.how == "rows":
            listed = ", ".join(str(row) for row in self.rows)
            return (f"batch rows {listed} of {self.batch_symbol}: the NumPy interpreter on the original graph at "
                    "those rows, as the full reference does not fit beside the outputs")
        parked = ", the outputs copied to the host" if self.how == "host" else ""
        return f"every element: the original graph on the GPU with the executor's kernels{parked}"


def free_device_memory(device: str) -> int:
    """Bytes free on the GPU now (CUDA's own count)."""
    xp = array_module(device)
    return int(xp.cuda.runtime.memGetInfo()[0])


def sample_rows(batch: int) -> tuple[int, ...]:
    """The first, the middle and the last row of a batch (fewer when the batch is smaller)."""
    return tuple(sorted({0, batch // 2, batch - 1}))[:SAMPLED_ROWS]


def batch_axis(graph: Graph, name: str, symbol: str) -> int | None:
    """The axis of %name whose dim is exactly the batch symbol in the unbound `graph`."""
    for axis, dim in enumerate(graph.type(name).shape):
        if isinstance(dim, Expr) and str(dim) == symbol:
            return axis
    return None


def _nbytes(graph: Graph, names) -> int:
    return sum(graph.type(name).nbytes(itemsize=np.dtype(graph.type(name).dtype.numpy).itemsize) for name in names)


def plan_device_check(reference: Graph, unbound: Graph | None, batch_symbol: str, arena_bytes: int, free_device: int,
                      available_host: int | None) -> DeviceCheckPlan:
    """Choose the check of a GPU run (module docstring): `reference` is what the compiled graph
    computes, bound; `unbound` the same graph before binding (None: no batch sampling, as for
    a training step), `arena_bytes` the arena and side buffers."""
    outputs = _nbytes(reference, reference.outputs)
    peak = live_peak(reference).bytes
    figures = (f"{format_bytes(free_device)} free on the device; arena and side buffers {format_bytes(arena_bytes)}, "
               f"outputs {format_bytes(outputs)}, the reference's peak {format_bytes(peak)}")
    if arena_bytes + outputs <= free_device and peak + outputs <= free_device:
        return DeviceCheckPlan("device", figures=figures)
    rows = _sampled_rows(reference, unbound, batch_symbol)
    if rows:
        return DeviceCheckPlan("rows", rows, batch_symbol, figures)
    host_budget = HOST_SHARE * available_host if available_host is not None else None
    if peak <= free_device and host_budget is not None and outputs <= host_budget:
        return DeviceCheckPlan("host", figures=figures)
    raise DeviceCheckError(f"the check of this GPU run fits neither on the device nor in host memory ({figures}; "
                           f"the outputs have no batch axis {batch_symbol} to sample)", reference.loc,
                           expected="a smaller batch, or --no-check to run the arena without the reference")


def _sampled_rows(reference: Graph, unbound: Graph | None, symbol: str) -> tuple[int, ...]:
    """The rows to sample, or () where sampling does not apply: no unbound graph, the batch
    symbol not declared, or an output without the batch axis."""
    if unbound is None or symbol not in unbound.symbols:
        return ()
    if any(batch_axis(unbound, name, symbol) is None for name in unbound.outputs):
        return ()
    name = unbound.outputs[0]
    return sample_rows(int(reference.type(name).shape[batch_axis(unbound, name, symbol)]))


# --- the reference on the device ---------------------------------------------------------
def device_interpret(graph: Graph, feeds: Mapping, xp, rounded_again: bool = False) -> dict:
    """Run the bound `graph` node by node with the executor's kernels on `xp`, each value
    freed after its last reader; feeds (host arrays) are copied to the device at their step.
    Returns the outputs as device arrays. `rounded_again`: each value that rounds is rounded
    once more, as `rlxir.interpreter.interpret_rounded_again` does."""
    releases = _release_plan(graph)
    values: dict = {}
    with np.errstate(all="ignore"):
        for name in graph.schedule():
            value = _device_value(xp, graph, name, values, feeds)
            if rounded_again:
                value = _as_dtype(xp, rounded_again_value(xp, graph, name, value), graph.type(name).dtype)
            values[name] = value
            for finished in releases.get(name, ()):
                del values[finished]
    return {name: values[name] for name in graph.outputs}


def _device_value(xp, graph: Graph, name: str, values: dict, feeds: Mapping):
    kind, dtype = graph.kind(name), graph.type(name).dtype
    if kind in ("input", "param"):
        return xp.asarray(np.asarray(feeds[name], dtype.numpy))
    if kind == "const":
        return xp.asarray(const_array(graph, name))
    op, attributes = graph.op(name), graph.full_attrs(name)
    args = [values[operand] for operand in graph.operands(name)]
    kernel = KERNELS.get(op)
    result = kernel(xp, args, attributes, None, None) if kernel is not None else None
    if result is None:
        opdef = graph.opdef(name)
        if opdef is None or opdef.reference is None:
            raise RlxError(f"%{name} = {op}: the op has neither a kernel nor a NumPy reference", graph.location(name))
        result = xp.asarray(run_reference(xp, opdef, args, attributes, dtype))
    return _as_dtype(xp, result, dtype)


def _release(xp) -> None:
    """Give CuPy's cached blocks back to the device, so the next allocation can use them."""
    if xp is not np:
        xp.get_default_memory_pool().free_all_blocks()


# --- the check ----------------------------------------------------------------------------
def check_on_device(reference: Graph, unbound: Graph | None, bindings: Mapping, result, plan: DeviceCheckPlan,
                    inputs: Mapping, params: Mapping, seed: int = 0, device: str = "gpu") -> ExecutionCheck:
    """Run `result` in its arena on `device` and compare with the reference as `plan` says.
    `reference` is the bound graph the compiled one computes, `unbound` the graph before
    `bindings` bound it (needed for ``rows``); `inputs` / `params` the user's arrays (the rest
    are filled from `seed` as the interpreter fills them)."""
    xp = array_module(device)
    step = compiled_step(result)
    filled_inputs, filled_params = random_feeds(reference, None, seed)
    filled_inputs.update({key.removeprefix("%"): value for key, value in inputs.items()})
    filled_params.update({key.removeprefix("%"): value for key, value in params.items()})
    compiled = step.graph
    known = set(compiled.inputs()) | set(compiled.params())
    run = run_in_arena(result, {k: v for k, v in filled_inputs.items() if k in known},
                       {k: v for k, v in filled_params.items() if k in known}, seed, device,
                       to_host=plan.how == "host")
    precisions = output_precisions(reference, step.target)
    pairs = list(zip(reference.outputs, compiled.outputs))
    if plan.how == "rows":
        expected, actual = _rows_reference(reference, unbound, plan, filled_inputs, filled_params, run, pairs, xp,
                                           bindings)
    else:
        outputs = {name: (xp.copy(value) if plan.how == "device" else value) for name, value in run.outputs.items()}
        run = attrs.evolve(run, outputs=outputs)
        _release(xp)
        expected = device_interpret(reference, {**filled_inputs, **filled_params}, xp)
        actual = {name: outputs[compiled_name] for name, compiled_name in pairs}
    checks = tuple(compare_output(name, compiled_name, reference.type(name).dtype, precisions[name], expected[name],
                                  actual[name]) for name, compiled_name in pairs)
    if needs_sensitivity(checks) and not run.poisoned_reads:
        moved = (_interpret_rows(unbound, bindings, plan.batch_symbol, list(plan.rows), filled_inputs, filled_params,
                                 rounded_again=True)
                 if plan.how == "rows" else device_interpret(reference, {**filled_inputs, **filled_params}, xp,
                                                             rounded_again=True))
        checks = with_sensitivity(checks, expected, moved)
    return ExecutionCheck(run, expected, checks, plan.scope())


def _rows_reference(reference: Graph, unbound: Graph, plan: DeviceCheckPlan, inputs: dict, params: dict, run, pairs,
                    xp, bindings: Mapping) -> tuple[dict, dict]:
    """(expected, actual) on the sampled rows: the NumPy interpreter on those rows, and the
    same rows of the device outputs copied to the host."""
    symbol, rows = plan.batch_symbol, list(plan.rows)
    actual = {}
    for name, compiled_name in pairs:
        axis = batch_axis(unbound, name, symbol)
        output = run.outputs[compiled_name]
        # a row at a time, each a view of the arena copied to the host: nothing new on a full card
        picked = [output[(slice(None),) * axis + (row,)] for row in rows]
        actual[name] = np.stack([row if xp is np else xp.asnumpy(row) for row in picked], axis=axis)
    expected = _interpret_rows(unbound, bindings, symbol, rows, inputs, params)
    alone = _interpret_rows(unbound, bindings, symbol, rows[-1:], inputs, params)
    for name in reference.outputs:
        axis = batch_axis(unbound, name, symbol)
        last = np.take(expected[name], [len(rows) - 1], axis=axis)
        if not _rows_agree(alone[name], last):
            raise DeviceCheckError(f"%{name}: row {rows[-1]} computed alone differs from the same row computed with "
                                   f"rows {', '.join(map(str, rows[:-1]))}: the graph mixes batch rows, so a sample "
                                   f"of rows cannot check it ({plan.figures})", reference.location(name),
                                   expected="a smaller batch, or --no-check to run the arena without the reference")
    return expected, actual


def _rows_agree(alone: np.ndarray, within: np.ndarray) -> bool:
    """A row computed alone and within the sample agree up to the summation order a batch of
    another size may take (a relative 1e-3 of the row's scale)."""
    if alone.shape != within.shape:
        return False
    if not np.issubdtype(alone.dtype, np.floating):
        return bool(np.array_equal(alone, within))
    scale = max(float(np.max(np.abs(alone), where=np.isfinite(alone), initial=0.0)), 1.0)
    finite = np.isfinite(alone) & np.isfinite(within)
    same_nonfinite = bool(np.all(finite | (alone == within) | (np.isnan(alone) & np.isnan(within))))
    return same_nonfinite and float(np.max(np.abs(alone[finite] - within[finite]), initial=0.0)) <= 1e-3 * scale


def _interpret_rows(unbound: Graph, bindings: Mapping, symbol: str, rows: list[int], inputs: dict,
                    params: dict, rounded_again: bool = False) -> dict:
    """The NumPy interpreter on the original graph bound to a batch of len(rows), fed those
    rows (`rounded_again`: `interpret_rounded_again`)."""
    sampled = bind_for_run(unbound, {**bindings, symbol: len(rows)})
    feeds = {}
    for name, array in inputs.items():
        axis = batch_axis(unbound, name, symbol)
        feeds[name] = array if axis is None else np.take(array, rows, axis=axis)
    return (interpret_rounded_again if rounded_again else interpret)(sampled, feeds, params)
