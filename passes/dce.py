"""dce: remove values nothing reads."""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass


@register_pass
@attrs.frozen
class DeadCodeElimination(Pass):
    """Remove ops and consts whose results no op and no output reads.

    Inputs and params stay: they are the graph's interface, even when unused.
    """

    name = "dce"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        live = set(graph.outputs)
        removed = False
        for node in reversed(graph.schedule()):
            if node in live or graph.kind(node) in ("input", "param"):
                live.update(graph.operands(node))
                continue
            if graph.user_count(node):
                live.update(graph.operands(node))
                continue
            graph.erase(node)
            removed = True
        return removed
