"""legalize-broadcast: explicit expands for operands that broadcast in a non-trivial way."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from rlxir.ir.graph import Graph
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass


def broadcasts(graph: Graph, node: str) -> bool:
    """`node` is a broadcasting binary op, comparison or `where`."""
    opdef = graph.opdef(node)
    return opdef is not None and (opdef.has("binary") or opdef.has("compare") or opdef.name == "where")


def expand_operands(graph: Graph, node: str, keeps: Callable[[tuple, tuple], bool]) -> bool:
    """Read every operand of `node` whose shape differs from the result's through an
    ``expand`` to the result's shape, unless ``keeps(operand_shape, result_shape)``.
    The expands go right before `node` (one per distinct operand). Returns whether any did."""
    shape = graph.type(node).shape
    expanded: dict[str, str] = {}
    for operand in graph.operands(node):
        operand_shape = graph.type(operand).shape
        if operand in expanded or operand_shape == shape or keeps(operand_shape, shape):
            continue
        expanded[operand] = graph.add_op("expand", [operand], {"shape": tuple(shape)}, before=node, origin=node)
    if expanded:
        graph.set_operands(node, [expanded.get(operand, operand) for operand in graph.operands(node)])
    return bool(expanded)


def expand_all(graph: Graph, keeps: Callable[[tuple, tuple], bool], others: Callable[[Graph, str], bool] | None = None
               ) -> bool:
    """`expand_operands` on every node that `broadcasts`, in schedule order, and `others`
    (when given) on every node that does not; returns whether any changed the graph.
    Whether an op broadcasts is asked once per op, and a node whose operands all have its
    shape (which `expand_operands` leaves alone) is passed over from its record."""
    nodes = graph.data_by_name()
    broadcasting: dict[str, bool] = {}
    changed = False
    for node in graph.schedule():
        data = nodes[node]
        op = data.op
        hit = broadcasting.get(op)
        if hit is None:
            hit = broadcasting[op] = broadcasts(graph, node)
        if not hit:
            if others is not None:
                changed |= bool(others(graph, node))
            continue
        shape = data.type.shape
        if all(nodes[operand].type.shape == shape for operand in data.operands):
            continue
        changed |= expand_operands(graph, node, keeps)
    return changed


def runs_without_expand(operand_shape: tuple, shape: tuple) -> bool:
    """A scalar (rank 0 or every dim 1), or a clean trailing match (a bias [N] against
    [B, S, N]): the cases a broadcasting kernel handles itself."""
    if all(dim == 1 for dim in operand_shape):
        return True
    rank = len(operand_shape)
    return rank < len(shape) and tuple(shape[len(shape) - rank:]) == tuple(operand_shape)


@register_pass
@attrs.frozen
class LegalizeBroadcast(Pass):
    """Expand the broadcast operands that a broadcasting kernel cannot take as they are.

    Each binary op, comparison and `where` gets an explicit `expand` for every operand
    that neither has the result's shape, nor is a scalar (rank 0 or all dims 1), nor
    matches the result's trailing dims (a bias [N] against [B, S, N]).

    Idempotent: the expanded operands then have the result's shape.
    """

    name = "legalize-broadcast"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        return expand_all(graph, runs_without_expand)
