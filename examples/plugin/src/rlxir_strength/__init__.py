"""An example rlxir plugin: one pass, `mul-by-two-to-add`.

Load it with ``rlxir opt --plugin rlxir_strength ...`` or install the package
(``pip install examples/plugin``) so the ``rlxir.passes`` entry point registers it.
"""

from __future__ import annotations

import attrs

from rlxir import Graph, Pass, PassContext, Rule, option, register_pass, rewrite_greedy


def _constant_splat(graph: Graph, name: str):
    """The splat value of a const, or None."""
    if graph.kind(name) != "const":
        return None
    value = graph.attrs(name)["value"]
    return None if isinstance(value, tuple) else value


def _rewrite(graph: Graph, node: str, factor: float):
    left, right = graph.operands(node)
    for value, constant in ((left, right), (right, left)):
        if _constant_splat(graph, constant) == factor and graph.type(value) == graph.type(node):
            doubled = graph.add_op("add", (value, value), before=node, origin=node)
            graph.replace_all_uses(node, doubled)
            graph.erase(node)
            return [doubled]
    return None


@register_pass
@attrs.frozen
class MulByTwoToAdd(Pass):
    """Strength reduction: rewrite `mul(x, 2)` (either operand order) into `add(x, x)`.

    Only where the result type is x's own (no broadcasting by the constant).
    """

    name = "mul-by-two-to-add"
    factor: float = option(2.0, "the constant multiplier to replace (only 2.0 makes x + x exact)")

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        rule = Rule("mul-by-two", "mul", lambda graph, node: _rewrite(graph, node, self.factor))
        return rewrite_greedy(graph, [rule]) > 0
