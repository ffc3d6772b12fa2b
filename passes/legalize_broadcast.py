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
        changed = False
        for node in graph.schedule():
            if broadcasts(graph, node):
                changed |= expand_operands(graph, node, runs_without_expand)
        return changed
