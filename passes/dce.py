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
        nodes = graph.data_by_name()
        for node in reversed(graph.schedule()):
            data = nodes[node]
            if node in live or data.op in ("input", "param") or graph.user_count(node):
                live.update(data.operands)
                continue
            graph.erase(node)
            removed = True
        return removed
