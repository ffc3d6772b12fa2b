"""scan-unroll: unroll short selective scans into their time loop."""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.pass_machinery.pass_base import Pass, PassContext, option, register_pass
from rlxir.passes.unfuse import unfuse_or_refuse


@register_pass
@attrs.frozen
class ScanUnroll(Pass):
    """Unroll selective scans of static length at most `max-steps` into their time steps.

    Each step becomes primitives (the decomposition `unfuse` uses). Longer scans, and scans whose sequence length is symbolic, stay as scan kernels; a
    graph with none to unroll is left unchanged.
    """

    name = "scan-unroll"
    max_steps: int = option(8, "longest static sequence length that is unrolled")

    def unrolls(self, graph: Graph, node: str) -> bool:
        if graph.op(node) != "selective_scan":
            return False
        steps = graph.type(graph.operands(node)[0]).shape[1]
        return isinstance(steps, int) and steps <= self.max_steps

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        scans = [node for node in graph.values_with_op(("selective_scan",)) if self.unrolls(graph, node)]
        for node in scans:
            unfuse_or_refuse(graph, node, self.name)
        return bool(scans)
