"""Check a graph's invariants; every failure is a `VerifyError` at the node's location.

Checked: the schedule lists every value once; operands are defined before use in the
schedule (SSA, no cycles); edges mirror operands; every attribute is valid for its op;
every result type equals the type its op's rule infers; every symbol a type mentions is
declared by the graph (so the printed graph parses again; a core op's dims attributes
reach its result type, so their symbols are checked there); outputs exist and are defined.
"""

from __future__ import annotations

from collections.abc import Mapping

from rlxir.errors import RlxError, VerifyError
from rlxir.ir.graph import Graph
from rlxir.ir.inference import infer_result
from rlxir.ir.graph_reading import SharedAttrs, ValueNode
from rlxir.ops import LEAF_KINDS, get_op
from rlxir.types import TensorType


def find_errors(graph: Graph, limit: int | None = None) -> list[VerifyError]:
    """All invariant violations found (at most `limit`), in schedule order."""
    errors: list[VerifyError] = []
    schedule = graph.schedule()
    if len(schedule) != len(graph) or set(schedule) != graph.data_by_name().keys():
        errors.append(VerifyError(f"graph {graph.name}: the schedule does not list every value exactly once", graph.loc))
        return errors
    seen: set[str] = set()
    nodes = graph.data_by_name()
    undeclared = _UndeclaredSymbols(graph)
    symbols_of, edge_sources = undeclared.by_type, graph.edge_sources
    inferred: dict = {}
    for name in schedule:
        data = nodes[name]
        # The common case in one test: an op node like one already checked (its shared
        # attribute record and its operand types gave this very result type), its operands
        # seen, its edges its operands, its type's symbols declared. Anything else, and the
        # full check below finds and words the error, or confirms the node.
        attrs, operands, type_ = data.attrs, data.operands, data.type
        if (type(attrs) is SharedAttrs and seen.issuperset(operands)
                and inferred.get((data.op, id(attrs), tuple([nodes[operand].type for operand in operands]))) is type_
                and symbols_of.get(type_) == _NONE and edge_sources(name) == set(operands)):
            seen.add(name)
            continue
        error = _check_node(graph, name, data, seen, inferred, nodes) or undeclared.check(name, data)
        if error is not None:
            errors.append(error)
            if limit is not None and len(errors) >= limit:
                return errors
        seen.add(name)
    # No separate cycle search: every operand was seen earlier in the schedule and the edges
    # are exactly the operands, so the schedule is a topological order of the edges.
    errors.extend(_check_outputs(graph))
    return errors[:limit] if limit is not None else errors


def verify(graph: Graph) -> None:
    """Raise the first `VerifyError` of `graph`, if any."""
    errors = find_errors(graph, limit=1)
    if errors:
        raise errors[0]


def _check_node(graph: Graph, name: str, data: ValueNode, seen: set[str], inferred: dict,
                nodes: Mapping[str, ValueNode]) -> VerifyError | None:
    """The first invariant `name` breaks, if any. `inferred` memoises result types for this
    walk by (op name, shared attribute record, operand types): a `SharedAttrs` cannot
    change and every node holding it keeps it alive, so its identity stands for its
    contents here (and the op registry does not change during a walk)."""
    loc, op, operands = data.loc, data.op, data.operands
    for operand in operands:
        if operand not in seen:
            if operand not in graph:
                return VerifyError(f"%{name} reads undefined value %{operand}", loc)
            return VerifyError(f"%{name} reads %{operand} before its definition in the schedule", loc)
    if graph.edge_sources(name) != set(operands):
        return VerifyError(f"%{name}: graph edges disagree with its operands", loc)
    if op in LEAF_KINDS:
        return _check_leaf(graph, name, data)
    opdef = get_op(op)
    if opdef is None:
        return VerifyError(f"%{name} uses unknown op {op!r}", loc)
    if not opdef.accepts_arity(len(operands)):
        return VerifyError(f"%{name}: {op} takes {opdef.arity_text()}, got {len(operands)}", loc)
    attrs = data.attrs
    types = tuple([nodes[operand].type for operand in operands])  # all seen, so all present
    key = (op, id(attrs), types) if type(attrs) is SharedAttrs else None
    result = inferred.get(key) if key is not None else None
    if result is None:
        try:
            _, result = infer_result(opdef, types, attrs)
        except RlxError as error:
            return VerifyError(f"%{name} = {op}: {error.message}", loc, error.expected)
        if key is not None:
            inferred[key] = result
    if result is not data.type and result != data.type:
        return VerifyError(f"%{name} = {op} has type {data.type}, but its operands give {result}", loc,
                           str(result))
    return None


_NONE: frozenset = frozenset()


class _UndeclaredSymbols:
    """Finds symbols a node's type mentions that its graph does not declare (memoised by
    type: big graphs share a handful of type objects)."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.declared = frozenset(graph.symbols)
        self.by_type: dict[TensorType, frozenset] = {}

    def check(self, name: str, data: ValueNode) -> VerifyError | None:
        type_ = data.type
        unknown = self.by_type.get(type_)
        if unknown is None:
            unknown = self.by_type[type_] = type_.symbols - self.declared
        if not unknown:
            return None
        declared = ", ".join(self.graph.symbols) or "none"
        return VerifyError(f"%{name}: type {type_} mentions undeclared symbol {', '.join(sorted(unknown))}",
                           data.loc, f"a symbol of graph {self.graph.name} ({declared})")


def _check_leaf(graph: Graph, name: str, data: ValueNode) -> VerifyError | None:
    if data.operands:
        return VerifyError(f"{data.op} %{name} cannot have operands", data.loc)
    if data.op != "const":
        return None
    value = data.attrs.get("value")
    numel = data.type.numel
    if isinstance(value, tuple) and isinstance(numel, int) and len(value) != numel:
        return VerifyError(f"const %{name} has {len(value)} elements for {numel}", data.loc)
    if value is None:
        return VerifyError(f"const %{name} has no value", data.loc)
    return None


def _check_outputs(graph: Graph) -> list[VerifyError]:
    where = graph.output_loc or graph.loc
    if not graph.outputs:
        return [VerifyError(f"graph {graph.name} has no outputs", where, "output %VALUE, ...")]
    return [VerifyError(f"output %{value} is not defined", where) for value in graph.outputs if value not in graph]
