"""cse: merge ops that compute the same value."""

from __future__ import annotations

import attrs

from rlxir.ir.graph import Graph
from rlxir.ir.graph_reading import SharedAttrs
from rlxir.ops import get_op
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass


class _Keys:
    """The merge key of a node: what `cse` compares (keys from one `_Keys` compare; its
    attributes part is a number it gives out). The attributes' part of the key is
    computed once per shared attributes object (`SharedAttrs`: one per distinct application
    in a big graph, read-only; kept here so its id stays its own), and whether an op is
    commutative once per op."""

    def __init__(self) -> None:
        self._attrs: dict[int, tuple] = {}
        self._numbers: dict[tuple, int] = {}  # attributes key -> a small int standing for it
        self._commutative: dict[str, bool] = {}

    def of(self, data, operands: tuple):
        """The key of `data` read as applied to `operands`."""
        op = data.op
        if op == "const":
            value = data.attrs["value"]
            return ("const", data.type, value if not isinstance(value, float) or value == value else "nan")
        attrs = data.attrs
        if type(attrs) is SharedAttrs:
            known = self._attrs.get(id(attrs))
            if known is None:
                # equal keys get one number, so the merge key hashes an int, not nested tuples
                number = self._numbers.setdefault(_attrs_key(attrs), len(self._numbers))
                known = self._attrs[id(attrs)] = (attrs, number)
            attrs_key = known[1]
        else:
            attrs_key = self._numbers.setdefault(_attrs_key(attrs), len(self._numbers))
        commutative = self._commutative.get(op)
        if commutative is None:
            opdef = get_op(op)
            commutative = self._commutative[op] = opdef is not None and opdef.has("commutative")
        if commutative:
            operands = tuple(sorted(operands))
        return (op, operands, attrs_key, data.type)


def _attrs_key(attrs: dict) -> tuple:
    return tuple(sorted((key, repr(value)) for key, value in attrs.items()))


@register_pass
@attrs.frozen
class CommonSubexpressionElimination(Pass):
    """Replace an op (or const) by an earlier identical one: same op, operands (in any
    order for commutative ops), attributes and type. Inputs and params are never merged."""

    name = "cse"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        seen: dict = {}
        merged: dict[str, str] = {}  # node -> the earlier identical one it becomes
        rereads: set[str] = set()  # nodes reading a merged one: keyed as reading its original
        nodes = graph.data_by_name()
        readers = graph.readers_by_name()
        keys = _Keys()
        for node in graph.schedule():
            data = nodes[node]
            if data.op in ("input", "param"):
                continue
            operands = data.operands
            if node in rereads:
                operands = tuple([merged.get(operand, operand) for operand in operands])
            key = keys.of(data, operands)
            original = seen.get(key)
            if original is None:
                seen[key] = node
                continue
            merged[node] = original
            rereads.update(readers[node])
        # All the merges at once: a reader of many merged values (a concat of thousands of
        # them) has its operands rewritten once, not once per merge.
        graph.replace_uses(merged)
        for node in merged:
            graph.erase(node)
        return bool(merged)
