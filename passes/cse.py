"""cse: merge ops that compute the same value."""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass


def _key(graph: Graph, node: str):
    data = graph.data(node)
    if data.op == "const":
        value = data.attrs["value"]
        return ("const", data.type, value if not isinstance(value, float) or value == value else "nan")
    attrs_key = tuple(sorted((key, repr(value)) for key, value in data.attrs.items()))
    operands = data.operands
    opdef = graph.opdef(node)
    if opdef is not None and opdef.has("commutative"):
        operands = tuple(sorted(operands))
    return (data.op, operands, attrs_key, data.type)


@register_pass
@attrs.frozen
class CommonSubexpressionElimination(Pass):
    """Replace an op (or const) by an earlier identical one: same op, operands (in any
    order for commutative ops), attributes and type. Inputs and params are never merged."""

    name = "cse"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        seen: dict = {}
        changed = False
        for node in graph.schedule():
            if graph.kind(node) in ("input", "param"):
                continue
            key = _key(graph, node)
            original = seen.get(key)
            if original is None:
                seen[key] = node
                continue
            graph.replace_all_uses(node, original)
            graph.erase(node)
            changed = True
        return changed
