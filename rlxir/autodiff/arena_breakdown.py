"""What a training step's arena holds: weights, gradients, optimizer state, activations,
workspace — defined from the plan's buffers so that the parts add up to the arena.

A buffer of the step's plan is, by the value it holds (the value a view aliases, for a view):

- **weights**: a param of the model (not optimizer state), or an updated weight
  ``next.<p>`` (an output of the step);
- **optimizer state**: a state param ``opt.*`` (`rlxir.autodiff.optimizers`: master copies,
  momentum buffers, Adam's moments, the step count) or its update ``next.opt.*``;
- **gradients**: a value the backward pass computes that the optimizer's update reads (the
  gradient of a weight, as the pipeline left it: cast, fused or renamed), or, in a step
  without an optimizer, a gradient output ``grad.<p>``;
- **workspace**: a kernel's scratch slot (a plan buffer of kind ``workspace``);
- **activations**: everything else: the inputs, constants, the forward values the backward
  pass keeps, the backward pass's own intermediates, the loss and the update's temporaries.

A plan reuses bytes: one address range holds an activation early in the step and a gradient
later. So the arena is split by address: each byte of ``[0, arena)`` counts once, for the
first holder in this order that ever holds it: weight params, state params, gradients,
updated weights, updated state, activations, workspace (what the update reads before what
it writes, so an updated weight placed where a gradient was still shows the gradient), and
**unused** counts the bytes no buffer ever holds (gaps the planner left). The six parts add
up to the arena exactly. Side buffers lie outside the arena and are not parts.
"""

from __future__ import annotations

from collections.abc import Iterable

from rlxir.ir.graph import Graph
from rlxir.compiler.memory_plan import MemoryPlan
from rlxir.autodiff.optimizers import GRADIENT_PREFIX, STATE_PREFIX, UPDATED_PREFIX

PARTS = ("weights", "optimizer_state", "gradients", "activations", "workspace")
"""The parts a report shows (and `unused`, the rest of the arena)."""

HOLDERS = (("param", "weights"), ("param", "optimizer_state"), ("computed", "gradients"),
           ("computed", "weights"), ("computed", "optimizer_state"), ("computed", "activations"),
           ("computed", "workspace"))
"""(param or computed, part) in the order that claims a byte several buffers hold."""

LEAVES = ("input", "param", "const")


def arena_breakdown(graph: Graph, plan: MemoryPlan) -> dict[str, int]:
    """Bytes of `plan`'s arena per part (module docstring), `graph` being the lowered step
    the plan placed; the values add up to ``plan.arena_bytes``."""
    placed = {buffer.value for buffer in plan.buffers if buffer.kind != "workspace"}
    gradients = {_buffer_of(graph, name, placed) for name in _gradient_values(graph)}
    events = []
    for buffer in plan.buffers:
        holder = ("param" if buffer.kind == "param" else "computed", _part(graph, buffer.value, buffer.kind, gradients))
        rank = HOLDERS.index(holder)
        events += [(buffer.offset, 1, rank), (buffer.end_offset, -1, rank)]
    parts = dict.fromkeys(PARTS, 0)
    holding = [0] * len(HOLDERS)  # buffers of each holder that hold the bytes at the sweep's position
    position = 0
    for offset, change, rank in sorted(events):
        owner = next((index for index, count in enumerate(holding) if count), None)
        if owner is not None:
            parts[HOLDERS[owner][1]] += offset - position
        holding[rank] += change
        position = offset
    parts["unused"] = plan.arena_bytes - sum(parts.values())
    return parts


def _part(graph: Graph, value: str, kind: str, gradients: set[str]) -> str:
    if kind == "workspace":
        return "workspace"
    if value.startswith(STATE_PREFIX) and kind == "param":
        return "optimizer_state"
    if value.startswith(UPDATED_PREFIX + STATE_PREFIX) and value in graph.outputs:
        return "optimizer_state"
    if kind == "param" or (value.startswith(UPDATED_PREFIX) and value in graph.outputs):
        return "weights"
    return "gradients" if value in gradients else "activations"


def _gradient_values(graph: Graph) -> Iterable[str]:
    """The values the backward pass hands to the update: operands of update nodes (made by
    `rlxir.autodiff.optimizers`, so named from their provenance) that are computed by a node that is
    not part of the update; without an update, the gradient outputs."""
    update = {name for name in graph if _is_update_node(graph, name)}
    if not update:
        return [output for output in graph.outputs if output.startswith(GRADIENT_PREFIX)]
    return {operand for node in update for operand in graph.operands(node)
            if operand not in update and graph.kind(operand) not in LEAVES}


def _is_update_node(graph: Graph, name: str) -> bool:
    if graph.kind(name) in LEAVES:
        return False
    provenance = graph.provenance(name) or (name,)
    return all(origin.startswith((STATE_PREFIX, UPDATED_PREFIX)) for origin in provenance)


def _buffer_of(graph: Graph, value: str, placed: set[str]) -> str:
    """The planned buffer that holds `value`: itself, or the value a view of it aliases."""
    while value not in placed and graph.operands(value):
        value = graph.operands(value)[0]
    return value
