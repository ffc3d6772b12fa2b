"""unfuse-regions: fused elementwise regions back into their primitive chains."""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.ops.chain import parse_chain
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass


def inline_region(graph: Graph, node: str) -> str:
    """Replace `fused_elementwise` node `node` by one op per chain step, in chain order,
    right where it was; returns `node`, which the last step rewrites in place (its name,
    type and readers stay).

    Steps are inlined as written: a gelu step stays a gelu (a target that runs regions as
    primitives runs gelu natively), unlike the full decomposition `unfuse` uses. A step
    that is itself a region is inlined too.
    """
    operands = graph.operands(node)
    steps = parse_chain(graph.attr(node, "chain"))
    results: list[str] = []
    for position, step in enumerate(steps, 1):
        arguments = [operands[ref] if kind == "$" else results[ref] for kind, ref in step.args]
        if position == len(steps):
            value = graph.rewrite_in_place(node, step.op, arguments, dict(step.attrs))
        else:
            name = graph.fresh_name(f"{node}.{step.op}")
            value = graph.add_op(step.op, arguments, dict(step.attrs), name=name, before=node, origin=node)
        results.append(inline_region(graph, value) if step.op == "fused_elementwise" else value)
    return results[-1]


@register_pass
@attrs.frozen
class UnfuseRegions(Pass):
    """Inline every `fused_elementwise` region as the chain of primitive ops it holds.

    For targets that run regions as primitives (cpu): each step becomes one op, in chain
    order, at the region's place in the schedule; ops in a step (gelu included) are kept
    as they are written.
    """

    name = "unfuse-regions"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        regions = [node for node in graph.schedule() if graph.op(node) == "fused_elementwise"]
        for node in regions:
            inline_region(graph, node)
        return bool(regions)
