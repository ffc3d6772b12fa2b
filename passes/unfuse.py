"""unfuse: fused ops into primitives, through their decompositions."""

from __future__ import annotations

import attrs

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.ops import get_op
from rlxir.ops.decompositions import unfuse_node
from rlxir.pass_machinery.pass_base import Pass, PassContext, PassError, option, register_pass


def unfuse_or_refuse(graph: Graph, node: str, pass_name: str) -> str:
    """`unfuse_node`, with a refusal (a static size it needs, no decomposition) turned into a
    `PassError` at the node."""
    try:
        return unfuse_node(graph, node)
    except PassError:
        raise
    except RlxError as error:
        raise PassError(f"{pass_name}: {error.message}", error.loc or graph.location(node), error.expected) from None


@register_pass
@attrs.frozen
class Unfuse(Pass):
    """Replace fused ops by the primitives of their decompositions.

    Fused ops are those with the trait "fused": gelu, softmax, linear, the norms,
    attention, selective_scan, the fused kernels and elementwise regions.
    `ops` limits it to some fused ops, `keep` leaves some out (both colon-separated, e.g.
    ``unfuse{ops=attention:softmax}``). A decomposition never leaves a fused op behind, so
    a gelu inside a region or a bias-activation kernel is expanded even when kept. A node
    that cannot be unfused (a selective_scan whose sequence length is symbolic, an attention
    without a scale whose head dim is) is a `PassError` naming the symbol, at the node.
    """

    name = "unfuse"
    ops: tuple[str, ...] = option((), "fused ops to unfuse, colon-separated (empty: every fused op)")
    keep: tuple[str, ...] = option((), "fused ops to leave as they are, colon-separated")

    def __attrs_post_init__(self) -> None:
        for option_name, names in (("ops", self.ops), ("keep", self.keep)):
            for op in names:
                opdef = get_op(op)
                if opdef is None or not opdef.has("fused"):
                    raise ValueError(f"{option_name}: {op!r} is not a fused op")

    def selects(self, op: str) -> bool:
        opdef = get_op(op)
        if opdef is None or not opdef.has("fused") or op in self.keep:
            return False
        return not self.ops or op in self.ops

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        chosen = [node for node in graph.schedule() if graph.kind(node) == "op" and self.selects(graph.op(node))]
        for node in chosen:
            unfuse_or_refuse(graph, node, self.name)
        return bool(chosen)
