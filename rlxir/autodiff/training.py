"""Compile a training step for a target: the forward plan fixes the weights, the backward
graph (`rlxir.grad`) is planned around them.

One code path, `plan_training` (both graphs through the target's own `prepare_exec_graph`
and `plan_exec_graph`), serves `compile_training` (which adds the ceiling refusal) and
`plan_training_arena_bytes` (the fit driver's probe), so the two cannot drift:

1. The forward graph (its output: the loss) compiles with inference options; its plan's
   `weight_layout()` gives every param's offset.
2. The backward graph — the forward computation followed by the backward one — compiles
   with ``backward_activations_only``: each param is bound to the forward offset of the
   param of the same name, live for the whole step, and every activation is placed clear
   of those weight ranges (the planner's validator checks it).
3. A param the backward exec graph lacks (a pipeline removed or renamed it) is added back
   as an unread param, so its weight range stays reserved; a param the forward layout
   lacks is placed after the forward arena (aligned) and reported in `appended_weights`.

With an optimizer (`rlxir.autodiff.optimizers`, AdamW unless told otherwise) the step also updates
the weights: the backward graph is followed by the update, its state params (``opt.*``) are
placed after the forward arena like any param the forward layout lacks (they are reported in
`optimizer_state`, not among `appended_weights`), and `breakdown` splits the arena into
weights, gradients, optimizer state, activations and workspace (`rlxir.autodiff.arena_breakdown`).
The update is written in place, as frameworks do it: an updated weight or state value
(``next.<p>``) whose op is elementwise and runs after every other reader of ``<p>`` takes
``<p>``'s bytes (the `in_place_of` annotation, `update_in_place`), so the arena holds each
weight and each state tensor once.

What a training step needs, `TrainingResult.arena_bytes`, is the backward plan's arena:
it holds the weights at their forward offsets and everything the step computes, so one
buffer of that size runs the step. The forward arena is reported for reference (it is the
inference step's buffer, not an extra one); `total_bytes` adds the side buffers that live
outside the arena (BLAS/DNN workspaces, gpu's f16 shadow), which is what the device holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from rlxir.autodiff.arena_breakdown import arena_breakdown
from rlxir.autodiff.backward import grad
from rlxir.compiler.compile import (ArenaTooLarge, CompileOptions, CompileResult, ExecGraph, exceeds_ceiling,
                            plan_exec_graph, prepare_exec_graph)
from rlxir.ir.graph import Graph
from rlxir.compiler.lifetimes import last_reads, value_bytes, view_roots
from rlxir.compiler.memory_plan import MemoryPlan
from rlxir.autodiff.optimizers import (DEFAULT_OPTIMIZER, STATE_PREFIX, UPDATED_PREFIX, Optimizer, add_optimizer_update,
                              optimizer_from)
from rlxir.planning import aligned_size
from rlxir.targets.target import Target, get_target


@attrs.frozen
class TrainingResult:
    """Both compiles of one training step, and the numbers that size it."""

    target: Target
    forward: CompileResult
    backward: CompileResult
    appended: Mapping[str, int]
    optimizer: Optimizer | None = None

    @property
    def appended_weights(self) -> dict[str, int]:
        """Model params the forward layout lacks, placed after the forward arena: offsets."""
        return {name: offset for name, offset in self.appended.items() if not name.startswith(STATE_PREFIX)}

    @property
    def optimizer_state(self) -> dict[str, int]:
        """The optimizer's state params, placed after the forward arena: offsets."""
        return {name: offset for name, offset in self.appended.items() if name.startswith(STATE_PREFIX)}

    @property
    def breakdown(self) -> dict[str, int]:
        """The training arena by part: weights, optimizer state, gradients, activations,
        workspace and unused bytes; they add up to `arena_bytes` (`rlxir.autodiff.arena_breakdown`)."""
        return arena_breakdown(self.backward.graph, self.backward.plan)

    @property
    def arena_bytes(self) -> int:
        """What the training step needs: the backward plan's arena (weights included)."""
        return self.backward.arena_bytes

    @property
    def forward_arena_bytes(self) -> int:
        return self.forward.arena_bytes

    @property
    def weight_bytes(self) -> int:
        """The model's params in the step's plan (the optimizer's state params not included)."""
        return sum(buffer.size for buffer in self.backward.plan.buffers
                   if buffer.kind == "param" and not buffer.value.startswith(STATE_PREFIX))

    @property
    def side_buffers(self) -> Mapping[str, int]:
        return self.backward.side_buffers

    @property
    def verdict_arena_bytes(self) -> int:
        """The arena a fit verdict judges: the training arena, or the larger of the two
        arenas when either is past the target's ceiling (the ABI refuses the step then)."""
        arenas = (self.arena_bytes, self.forward_arena_bytes)
        if any(exceeds_ceiling(self.target, arena) for arena in arenas):
            return max(arenas)
        return self.arena_bytes

    @property
    def total_bytes(self) -> int:
        """The training arena plus the side buffers outside it."""
        return self.arena_bytes + sum(self.side_buffers.values())

    def summary(self) -> dict:
        return {
            "target": self.target.name, "bindings": dict(self.backward.bindings),
            "forward_nodes": len(self.forward.graph), "backward_nodes": len(self.backward.graph),
            "forward_arena_bytes": self.forward_arena_bytes, "arena_bytes": self.arena_bytes,
            "lower_bound_bytes": self.backward.lower_bound_bytes, "weight_bytes": self.weight_bytes,
            "side_buffers": dict(self.side_buffers), "total_bytes": self.total_bytes,
            "appended_weights": self.appended_weights,
            "optimizer": self.optimizer.to_json() if self.optimizer else {"optimizer": "none"},
            "breakdown": self.breakdown,
        }


def training_graph(graph: Graph, wrt: Iterable[str] | None = None,
                   optimizer: str | Optimizer | None = DEFAULT_OPTIMIZER) -> Graph:
    """The step a training compile plans: `rlxir.grad(graph, wrt)` followed by `optimizer`'s
    update (`rlxir.autodiff.optimizers.add_optimizer_update`); ``None`` or ``"none"`` stops at the
    gradients (the loss and grad.<p> outputs)."""
    backward = grad(graph, wrt)
    chosen = optimizer_from(optimizer)
    return add_optimizer_update(backward, chosen) if chosen else backward


def plan_training(graph: Graph, target: str | Target, bindings: Mapping[str, int] | None = None,
                  options: CompileOptions | None = None, backward: Graph | None = None,
                  optimizer: str | Optimizer | None = DEFAULT_OPTIMIZER) -> TrainingResult:
    """Compile and plan both graphs of a training step (no ceiling check). `backward` is
    `training_graph(graph, optimizer=optimizer)` when already made (the fit driver makes it
    once for all batches); `optimizer` is what the report names (none when a given
    `backward` ends at the gradients)."""
    target = get_target(target)
    options = options or CompileOptions()
    chosen = optimizer_from(optimizer)
    if backward is None:
        backward = training_graph(graph, optimizer=chosen)
    elif not any(output.startswith(UPDATED_PREFIX) for output in backward.outputs):
        chosen = None  # a given step that ends at the gradients has no optimizer to report
    forward_options = attrs.evolve(options, mode="inference", weight_layout=None)
    forward_exec = prepare_exec_graph(graph, target, bindings, forward_options)
    forward_plan = plan_exec_graph(forward_exec, target, forward_options)
    backward_exec = prepare_exec_graph(backward, target, bindings, options)
    update_in_place(backward_exec.graph, "bump" if (options.planner or target.planner) == "bump" else "lir")
    layout, appended = _weight_layout(forward_exec, forward_plan, backward_exec, target, options)
    backward_options = attrs.evolve(options, mode="backward_activations_only", weight_layout=layout)
    backward_plan = plan_exec_graph(backward_exec, target, backward_options)
    return TrainingResult(
        target,
        CompileResult(target, forward_exec.graph, forward_plan, forward_exec.stages, dict(forward_exec.bindings)),
        CompileResult(target, backward_exec.graph, backward_plan, backward_exec.stages, dict(backward_exec.bindings)),
        appended, chosen,
    )


def update_in_place(graph: Graph, view_rule: str) -> list[str]:
    """Annotate each updated output ``next.<p>`` that can be written over its param ``<p>``
    with ``in_place_of = "%<p>"`` (so the plan gives it ``<p>``'s bytes); returns them.

    It can when: ``<p>`` is a param of the same type, not itself an output; ``next.<p>`` is
    computed by an elementwise op (so reading ``<p>`` and writing the result position by
    position is safe), not a view; and no op after it reads ``<p>`` or a view of ``<p>``."""
    roots = view_roots(graph, view_rule)
    schedule = graph.schedule()
    last_read = last_reads(list(map(graph.data_by_name().__getitem__, schedule)),
                           {view: root for view, (root, _) in roots.items()})
    step_of = {name: step for step, name in enumerate(schedule)}
    outputs = {roots.get(output, (output, 0))[0] for output in graph.outputs}
    params = set(graph.params())
    done = []
    for output in graph.outputs:
        param = output[len(UPDATED_PREFIX):] if output.startswith(UPDATED_PREFIX) else None
        opdef = graph.opdef(output) if output in step_of else None
        if (param not in params or param in outputs or output in roots or opdef is None
                or not opdef.has("elementwise") or graph.type(output) != graph.type(param)
                or last_read.get(param, -1) > step_of[output]):
            continue
        graph.set_attrs(output, {**graph.attrs(output), "in_place_of": f"%{param}"})
        done.append(output)
    return done


def _weight_layout(forward_exec: ExecGraph, forward_plan: MemoryPlan, backward_exec: ExecGraph, target: Target,
                   options: CompileOptions) -> tuple[dict[str, int], dict[str, int]]:
    """The forward offsets by param name, with the params only one side has reconciled
    (see the module docstring); returns (layout, appended params and their offsets)."""
    layout = forward_plan.weight_layout()
    graph = backward_exec.graph
    first = graph.schedule()[0] if len(graph) else None
    for name in layout:
        if name not in graph:
            graph.add_param(name, forward_exec.graph.type(name), forward_exec.graph.location(name), before=first)
    alignment = options.alignment or target.alignment
    sizing = options.sizing or target.sizing
    cursor = aligned_size(forward_plan.arena_bytes, alignment)
    appended = {}
    for name in graph.params():
        if name not in layout:
            appended[name] = cursor
            cursor += aligned_size(value_bytes(graph, name, sizing), alignment)
    return {**layout, **appended}, appended


def compile_training(graph: Graph, target: str | Target, bindings: Mapping[str, int] | None = None,
                     options: CompileOptions | None = None, backward: Graph | None = None,
                     optimizer: str | Optimizer | None = DEFAULT_OPTIMIZER) -> TrainingResult:
    """Compile `graph`'s training step (with `optimizer`'s update) for `target`; raises
    `ArenaTooLarge` when either arena (forward or training step) is past the target's ceiling."""
    result = plan_training(graph, target, bindings, options, backward, optimizer)
    if exceeds_ceiling(result.target, result.verdict_arena_bytes):
        raise ArenaTooLarge(result.target, result.verdict_arena_bytes)
    return result


def plan_training_arena_bytes(graph: Graph, target: str | Target, bindings: Mapping[str, int] | None = None,
                              options: CompileOptions | None = None, backward: Graph | None = None,
                              optimizer: str | Optimizer | None = DEFAULT_OPTIMIZER) -> int:
    """The training arena `compile_training` would plan, through the same path (no ceiling check)."""
    return plan_training(graph, target, bindings, options, backward, optimizer).arena_bytes
