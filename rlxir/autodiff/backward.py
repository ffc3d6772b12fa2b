"""Reverse-mode automatic differentiation: `grad(graph, wrt)` builds the training graph.

Contract of `grad`:

- Before: `graph` has exactly one output, a floating-point scalar (the loss); `wrt` names
  floating-point inputs or params (default: every floating-point param, in schedule order).
- After: a new graph (`graph` itself is not changed), named ``<name>.grad``, that holds the
  forward computation in its own schedule followed by the backward computation, so a
  planner sees which forward activations the backward pass keeps alive. Its outputs are
  the loss, then one gradient per `wrt` value, named ``grad.<value>`` and typed as that
  value, in `wrt` order (a value the loss does not depend on gets a zero constant).
- The backward nodes are core ops plus the gradient kernels of `rlxir.autodiff.backward_ops`, one
  rule per op (`rlxir.autodiff.rules.VJP_RULES`). Contributions to one value are summed;
  broadcasts are undone by reductions; the gradients of slices of one value are joined by
  one concat (zero-filled where no slice reads), never padded one by one. A fused op with
  no rule of its own (attention, the fused_* kernels) is replaced by its decomposition
  first, wherever a gradient flows through it.
- Gradients flow through floating-point values only, and never through a `where`
  condition or `gather`'s indices. An op on the way from a `wrt` value to the loss that has
  no gradient (a comparison, a cast to an integer type, an op without a rule) is an
  `RlxError` at that op's location, naming the op and the `wrt` value it depends on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from rlxir.autodiff.rules import NO_GRADIENT_POSITIONS, VJP_RULES
from rlxir.autodiff.vjp import VJP, Emitter, SlicePart
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.ops.decompositions import unfuse_node
from rlxir.symbolic import Dim, sub
from rlxir.types import TensorType

import rlxir.autodiff.backward_ops  # noqa: F401  (registers the gradient kernels the rules emit)


def grad(graph: Graph, wrt: Iterable[str] | None = None) -> Graph:
    """The training graph of `graph`: its loss and the gradients of `wrt` (see the module
    docstring for the contract). Raises `RlxError` for a graph without a scalar float loss,
    an unknown or non-float `wrt` name, or an op without a gradient on a gradient path."""
    loss_of(graph)
    result = graph.copy()
    result.name = f"{graph.name}.grad"
    names = _wrt_values(result, wrt)
    active, source = _unfuse_gradient_paths(result, names)
    loss = result.outputs[0]
    _check_differentiable(result, active, source, loss)
    emitter = Emitter(result)
    adjoints = _backpropagate(result, loss, active, emitter)
    gradients = [_gradient_output(result, name, adjoints.get(name, []), emitter) for name in names]
    result.set_outputs([loss, *gradients])
    return result


def loss_of(graph: Graph) -> str:
    """The graph's loss: its one output, which must be a floating-point scalar."""
    if len(graph.outputs) != 1:
        raise RlxError(f"graph {graph.name} has {len(graph.outputs)} outputs; differentiating it needs exactly one, "
                       "the loss", graph.output_loc, "output %loss, a floating-point scalar")
    loss = graph.outputs[0]
    type_ = graph.type(loss)
    if type_.rank != 0 or not type_.dtype.is_float:
        raise RlxError(f"the loss %{loss} is {type_}, not a floating-point scalar", graph.location(loss),
                       "a scalar such as f32[] (a reduce_mean or reduce_sum over every axis; "
                       "examples/mamba_lm.rlx ends in one, %loss)")
    return loss


def _wrt_values(graph: Graph, wrt: Iterable[str] | None) -> list[str]:
    if wrt is None:
        return [name for name in graph.params() if graph.type(name).dtype.is_float]
    names = [name.removeprefix("%") for name in wrt]
    for name in names:
        if name not in graph or graph.kind(name) not in ("input", "param"):
            known = ", ".join("%" + param for param in graph.params()) or "none"
            raise RlxError(f"graph {graph.name} has no input or param %{name} to differentiate with respect to",
                           graph.loc, f"one of its params: {known}")
        if not graph.type(name).dtype.is_float:
            raise RlxError(f"%{name} is {graph.type(name)}: only floating-point values have gradients",
                           graph.location(name), "a floating-point input or param")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise RlxError(f"%{repeated[0]} is named twice among the values to differentiate with respect to")
    return names


# --- which values carry a gradient -------------------------------------------------------
def _flows(graph: Graph, node: str) -> list[tuple[int, str]]:
    """(position, operand) pairs of `node` that a gradient can flow through."""
    stops = NO_GRADIENT_POSITIONS.get(graph.op(node), ())
    return [(index, operand) for index, operand in enumerate(graph.operands(node)) if index not in stops]


def _active(graph: Graph, wrt: list[str]) -> tuple[set[str], dict[str, str]]:
    """Values that depend on a `wrt` value and that the loss depends on (both through
    gradient-carrying operands), and for each value depending on one, that `wrt` value."""
    schedule = graph.schedule()
    source = {name: name for name in wrt}
    for node in schedule:
        if node in source:
            continue
        for _, operand in _flows(graph, node):
            if operand in source:
                source[node] = source[operand]
                break
    needed = {graph.outputs[0]}
    for node in reversed(schedule):
        if node in needed:
            needed.update(operand for _, operand in _flows(graph, node))
    return {name for name in needed if name in source}, source


UNFUSE_ROUNDS = 8
"""Rounds of unfusing before `grad` gives up (a decomposition that keeps producing
rule-less decomposable ops, such as a custom op that decomposes into itself)."""


def _unfuse_gradient_paths(graph: Graph, wrt: list[str]) -> tuple[set[str], dict[str, str]]:
    """Unfuse every op on a gradient path that has no rule but a decomposition, repeating
    while decompositions leave such ops (core decompositions never do: one round)."""
    rounds = 0
    while True:
        active, source = _active(graph, wrt)
        pending = [node for node in graph.schedule()
                   if node in active and graph.kind(node) == "op" and graph.op(node) not in VJP_RULES
                   and getattr(graph.opdef(node), "decompose", None) is not None]
        if not pending:
            return active, source
        if rounds == UNFUSE_ROUNDS:
            raise RlxError(f"decompositions still leave ops without a gradient rule after {UNFUSE_ROUNDS} rounds: "
                           + ", ".join(f"%{node} = {graph.op(node)}" for node in pending[:3]),
                           graph.location(pending[0]), "a decomposition into ops that have gradient rules")
        for node in pending:
            _unfuse(graph, node)
        rounds += 1


def _unfuse(graph: Graph, node: str) -> None:
    try:
        unfuse_node(graph, node)
    except RlxError as error:
        raise RlxError(f"cannot differentiate %{node} = {graph.op(node)} through its decomposition: "
                       f"{error.message}", error.loc or graph.location(node), error.expected) from None


def _check_differentiable(graph: Graph, active: set[str], source: dict[str, str], loss: str) -> None:
    for node in graph.schedule():
        if node not in active or graph.kind(node) != "op":
            continue
        op, type_ = graph.op(node), graph.type(node)
        if op in VJP_RULES and type_.dtype.is_float:
            continue
        why = f"{op} has no gradient" if op not in VJP_RULES else f"its result {type_} is not floating point"
        raise RlxError(f"cannot differentiate %{node} = {op}: {why}, and it lies on the path from %{source[node]} "
                       f"to the loss %{loss}", graph.location(node),
                       "differentiable ops between the weights and the loss (a comparison may only feed a "
                       "where condition)")


# --- the backward pass -------------------------------------------------------------------
Contribution = str | SlicePart


def _backpropagate(graph: Graph, loss: str, active: set[str], emitter: Emitter) -> dict[str, list[Contribution]]:
    """Walk the forward schedule backward, applying each active op's rule to the sum of the
    gradients its users contributed (every user comes later in the schedule, so it is
    complete when the op is reached). Returns the contributions left for the leaves."""
    seed = graph.add_const(graph.fresh_name(f"{loss}.grad"), TensorType(graph.type(loss).dtype, ()), 1.0,
                           loc=graph.location(loss), provenance=(loss,))
    contributions: dict[str, list[Contribution]] = {loss: [seed]}
    for node in reversed(graph.schedule()):
        if node not in active or graph.kind(node) != "op" or node not in contributions:
            continue
        total = _total(graph, node, contributions.pop(node), graph.fresh_name(f"{node}.grad"), emitter)
        flows = dict(_flows(graph, node))
        operands = graph.operands(node)
        wants = tuple(index in flows and operand in active for index, operand in enumerate(operands))
        for index, value in VJP_RULES[graph.op(node)](VJP(emitter, node, total, wants)).items():
            _check_contribution(graph, node, operands[index], value)
            contributions.setdefault(operands[index], []).append(value)
    return contributions


def _check_contribution(graph: Graph, node: str, operand: str, value: Contribution) -> None:
    expected = graph.type(operand)
    if isinstance(value, SlicePart):
        given = graph.type(value.value)
        shape = list(given.shape)
        shape[value.axis] = expected.shape[value.axis]
        given = given.with_shape(shape)
    else:
        given = graph.type(value)
    if given != expected:
        raise RuntimeError(f"the {graph.op(node)} rule gave %{operand} a gradient of type {given}, not {expected}")


def _total(graph: Graph, value: str, contributions: list[Contribution], name: str, emitter: Emitter) -> str:
    """The gradient of `value`: its slice parts joined, then everything summed (see `_sum`)."""
    whole = [item for item in contributions if isinstance(item, str)]
    parts = [item for item in contributions if isinstance(item, SlicePart)]
    return _sum(graph, whole + _join_parts(graph, value, parts, emitter), name, value)


def _join_parts(graph: Graph, value: str, parts: list[SlicePart], emitter: Emitter) -> list[str]:
    """Full-size gradients of `value` from slice parts: parts along one axis that do not
    overlap share one concat, with zeros (an expanded scalar) in the gaps."""
    layers: list[list[SlicePart]] = []
    for part in sorted(parts, key=lambda part: (part.axis, part.start)):
        layer = next((layer for layer in layers
                      if layer[-1].axis == part.axis and _end(graph, layer[-1]) <= part.start), None)
        if layer is None:
            layers.append([part])
        else:
            layer.append(part)
    return [_concat_layer(graph, value, layer, emitter) for layer in layers]


def _end(graph: Graph, part: SlicePart) -> int:
    # a slice's `len` is an integer attribute, so its gradient's size along the axis is an int
    return part.start + cast(int, graph.type(part.value).shape[part.axis])


def _concat_layer(graph: Graph, value: str, layer: list[SlicePart], emitter: Emitter) -> str:
    shape = graph.type(value).shape
    axis = layer[0].axis
    pieces, cursor = [], 0
    for part in layer:
        if part.start > cursor:
            pieces.append(_zeros(graph, value, shape, axis, part.start - cursor, emitter))
        pieces.append(part.value)
        cursor = _end(graph, part)
    rest = sub(shape[axis], cursor)
    if rest != 0:
        pieces.append(_zeros(graph, value, shape, axis, rest, emitter))
    return pieces[0] if len(pieces) == 1 else emitter.op(value, "concat", pieces, axis=axis)


def _zeros(graph: Graph, value: str, shape: Sequence[Dim], axis: int, size: Dim, emitter: Emitter) -> str:
    gap = list(shape)
    gap[axis] = size
    zero = emitter.scalar(value, 0.0, graph.type(value).dtype)
    return emitter.op(value, "expand", [zero], shape=gap)


def _sum(graph: Graph, values: list[str], name: str, origin: str) -> str:
    """The sum of `values`; its last add is named `name` (a single value is returned as is)."""
    total = values[0]
    for index, value in enumerate(values[1:], start=2):
        step = name if index == len(values) else graph.fresh_name(f"{name}.sum")
        total = graph.add_op("add", [total, value], name=step, origin=origin)
    return total


def _gradient_output(graph: Graph, name: str, contributions: list[Contribution], emitter: Emitter) -> str:
    """``%grad.<name>``: the summed contributions (a reshape view of a single one, which
    costs no memory), or a zero constant when the loss does not depend on `name`."""
    out = graph.fresh_name(f"grad.{name}")
    type_ = graph.type(name)
    if not contributions:
        return graph.add_const(out, type_, 0.0, loc=graph.location(name), provenance=(name,))
    total = _total(graph, name, contributions, out, emitter)
    if total == out:
        return out
    return graph.add_op("reshape", [total], {"shape": type_.shape}, name=out, origin=name)
