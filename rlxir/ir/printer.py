"""Print graphs as canonical rlx text.

The output is deterministic (no hash order, no object ids), always writes result types,
and reads back to an equal graph: ``parse(print_graph(g))`` equals ``g`` and printing it
again gives the same bytes.
"""

from __future__ import annotations

from rlxir.ir.graph import Graph, Module
from rlxir.ops import get_op
from rlxir.ops.registry import format_attr_value, format_float
from rlxir.symbolic import format_dim
from rlxir.types import TensorType


def _header(graph: Graph) -> str:
    if not graph.symbols:
        return f"graph {graph.name} {{"
    symbols = ", ".join(name if default is None else f"{name}={default}" for name, default in graph.symbols.items())
    return f"graph {graph.name}({symbols}) {{"


def _literal(value: object) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value)
    return str(value)


def _ordered_attrs(op: str, attrs: dict) -> list:
    """Schema order first, then stage annotations by name: one canonical order."""
    opdef = get_op(op)
    schema = list(opdef.attributes) if opdef else []
    known = [key for key in schema if key in attrs]
    extra = sorted(key for key in attrs if key not in opdef.attributes) if opdef else sorted(attrs)
    return [(key, attrs[key]) for key in known + extra]


def format_attrs(op: str, attrs: dict) -> str:
    if not attrs:
        return ""
    body = ", ".join(f"{key} = {format_attr_value(value)}" for key, value in _ordered_attrs(op, attrs))
    return f" {{{body}}}"


def print_graph(graph: Graph) -> str:
    """The canonical text of one graph, ending with a newline."""
    type_text: dict = {}

    def typed(type_: TensorType) -> str:
        text = type_text.get(type_)
        if text is None:
            text = type_text[type_] = f"{type_.dtype.value}[{', '.join(format_dim(d) for d in type_.shape)}]"
        return text

    lines = [_header(graph)]
    nodes = graph.data_by_name()
    for name in graph.schedule():
        data = nodes[name]
        op = data.op
        if op == "input" or op == "param":
            facts = format_attrs(op, data.attrs) if data.attrs else ""
            lines.append(f"  {op} %{name} : {typed(data.type)}{facts}")
        elif op == "const":
            lines.append(f"  const %{name} : {typed(data.type)} = {_literal(data.attrs['value'])}")
        else:
            operands = ", ".join("%" + operand for operand in data.operands)
            attrs = format_attrs(op, data.attrs) if data.attrs else ""
            lines.append(f"  %{name} = {op}({operands}){attrs} : {typed(data.type)}")
    if graph.outputs:
        lines.append("  output " + ", ".join("%" + value for value in graph.outputs))
    lines.append("}")
    return "\n".join(lines) + "\n"


def print_module(module: Module) -> str:
    """Every graph of a module, in order, separated by a blank line."""
    return "\n".join(print_graph(graph) for graph in module)
