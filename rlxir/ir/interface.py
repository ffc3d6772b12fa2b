"""A graph's interface: its inputs, params and outputs, by name, order and type.

The interface is the contract a caller holds: feeds are bound to input and param names,
results are read by output name or position. No pass may change it. `Interface.of` takes
a snapshot; `differences` says what changed between two snapshots (the `VerifyEach`
instrument reports them); `keep_output_names` is what the pass runner does after every
pass so that a rewrite that replaced an output's producer hands its name to the new value.
"""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.types import TensorType

RENAMABLE_KINDS = ("op", "const")
"""Kinds of value a pass may rename; inputs and params are named by the interface."""

Signature = tuple[tuple[str, TensorType], ...]


@attrs.frozen
class Interface:
    """Names and types of a graph's inputs, params and outputs, each in order."""

    inputs: Signature
    params: Signature
    outputs: Signature

    @classmethod
    def of(cls, graph: Graph) -> Interface:
        inputs, params = graph.interface_leaves()
        return cls(inputs, params, tuple([(name, graph.type(name)) for name in graph.outputs]))

    def differences(self, after: Interface) -> list[str]:
        """One line per part that differs from `after` (empty when the interface is kept)."""
        return [line for kind in ("inputs", "params", "outputs")
                for line in _signature_changes(kind, getattr(self, kind), getattr(after, kind))]


def _signature_changes(kind: str, before: Signature, after: Signature) -> list[str]:
    if before == after:
        return []
    names_before = [name for name, _ in before]
    names_after = [name for name, _ in after]
    if names_before != names_after:
        return [f"{kind} were {_names(names_before)}, now {_names(names_after)}"]
    return [f"{kind[:-1]} %{name} was {old}, now {new}"
            for (name, old), (_, new) in zip(before, after) if old != new]


def _names(names: list[str]) -> str:
    return "(" + ", ".join("%" + name for name in names) + ")" if names else "none"


def keep_output_names(graph: Graph, names: list[str]) -> bool:
    """Give graph output `i` the name ``names[i]`` again where a rewrite replaced it.

    A pass that replaces an output's producer makes the outputs read a new value (``%p``
    becomes ``%p.div``). The new value takes the old name; when the old name is still held
    by some other value (the replaced node, not yet removed), that value is renamed first.
    A new value that cannot take the name (an input or a param, or one read at two output
    positions) is given it through a same-shape reshape, which plans as a view: one the
    graph already holds (a non-output op reading the value) takes the name, else a new one
    is added — so no two identical reshapes are left for cse to find on the next run.
    Returns whether anything was renamed or added. Callers must hold no value names
    across this call.
    """
    if len(names) != len(graph.outputs):
        return False  # a pass dropped or added outputs: not repairable, `VerifyEach` reports it
    changed = False
    renamed: list[tuple[str, str]] = []  # lowered views follow them once, at the end

    def rename(old: str, new: str) -> None:
        graph.rename(old, new, views=False)
        renamed.append((old, new))

    for position, name in enumerate(names):
        current = graph.outputs[position]
        if current == name:
            continue
        if name in graph and graph.kind(name) in ("input", "param"):
            continue  # never rename the interface's own leaves
        if name in graph:
            rename(name, graph.fresh_name(name))
        # An output name may be listed twice; every position it held moves together.
        held = ({position} if graph.outputs.count(current) == 1 else
                {index for index, value in enumerate(graph.outputs) if value == current})
        ours = {index for index in held if names[index] == name}
        if held == ours and graph.kind(current) in RENAMABLE_KINDS:
            rename(current, name)
        else:
            alias = _same_shape_reshape(graph, current)
            if alias is None:
                alias = graph.add_op("reshape", [current], {"shape": graph.type(current).shape}, name=name,
                                     after=current, origin=current)
            else:
                rename(alias, name)
                alias = name
            for index in ours:
                graph.outputs[index] = alias
        changed = True
    graph.rename_view_roots(renamed)
    return changed


def _same_shape_reshape(graph: Graph, value: str) -> str | None:
    """A reshape of `value` to its own shape that is no graph output, if the graph has one."""
    for user in graph.users(value):
        if graph.op(user) == "reshape" and user not in graph.outputs and graph.type(user) == graph.type(value):
            return user
    return None


def can_take_output_name(graph: Graph, value: str) -> bool:
    """Whether `value` may replace an output's producer and take the output's name: not an
    input or a param (their names are the interface too) and not already an output."""
    return graph.kind(value) in RENAMABLE_KINDS and value not in graph.outputs
