"""backend-unfuse: the broadcast prologue of the GPU elementwise kernels."""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.pass_machinery.pass_base import Pass, PassContext, option, register_pass
from rlxir.passes.legalize_broadcast import expand_all


def _never(operand_shape: tuple, shape: tuple) -> bool:
    return False


@register_pass
@attrs.frozen
class BackendUnfuse(Pass):
    """Expand broadcast operands of elementwise ops to the full result shape (GPU kernels).

    Every operand of a binary op, comparison or `where` whose shape differs from the
    result's is read through an `expand` to the result's shape, scalars included. The GPU elementwise kernels take same-shape operands only, so each expand is a
    full-size extra buffer (what makes bump-planned arenas large). With `scan-kernel`
    (rocm), each `selective_scan` is also marked ``scan_kernel = true``: the scan kernel
    that saves its state trajectory (`lower` gives it a B*S*H*N workspace). Idempotent.
    """

    name = "backend-unfuse"
    scan_kernel: bool = option(False, "mark selective_scan nodes as trajectory-saving scan kernels (rocm)")

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        return expand_all(graph, _never, self._mark_scan if self.scan_kernel else None)

    def _mark_scan(self, graph: Graph, node: str) -> bool:
        if graph.op(node) == "selective_scan" and not graph.attr(node, "scan_kernel"):
            graph.set_attrs(node, {**graph.attrs(node), "scan_kernel": True})
            return True
        return False
