"""f32-exec: run f16/bf16 computation in f32 (rocm)."""

from __future__ import annotations

import attrs

from rlxir.dtypes import DType
from rlxir.ir.graph import Graph
from rlxir.ir.inference import infer_result
from rlxir.ops import get_op
from rlxir.ops.chain import format_chain, parse_chain
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass
from rlxir.types import TensorType


def _low(graph: Graph, value: str) -> bool:
    return graph.type(value).dtype.is_low_precision


def _keeps_low_precision(graph: Graph, node: str) -> bool:
    """A pure layout op (or view) whose operands are all f16/bf16: it moves data, no math."""
    opdef = graph.opdef(node)
    operands = graph.operands(node)
    return (opdef.has("layout") or opdef.has("view")) and all(_low(graph, operand) for operand in operands)


def _casts_back(graph: Graph, node: str, declared: dict) -> bool:
    """A cast to f16/bf16 read by nothing but the graph outputs: it gives an output its
    declared type, as the cast this pass would add does (so a second run changes nothing)."""
    return (node in declared and graph.op(node) == "cast" and graph.attrs(node)["to"].is_low_precision
            and not graph.user_count(node))


def _has_low_precision(graph: Graph) -> bool:
    """Whether any value is f16/bf16 or any op casts to them (a region's chain included).
    One read of every node's dict: the common all-f32 graph costs no more than that."""
    low_names = tuple(dtype.value for dtype in DType if dtype.is_low_precision)
    for data in graph.data_by_name().values():
        if data.type.dtype.is_low_precision:
            return True
        op = data.op
        if op == "cast" and data.attrs["to"].is_low_precision:
            return True
        if op == "fused_elementwise" and any(name in data.attrs["chain"] for name in low_names):
            return True
    return False


def _type_if_unchanged(graph: Graph, node: str, opdef, operand_types: tuple) -> TensorType | None:
    """The type `F32Exec._retype` gives `node` when it neither widens an operand nor changes
    an attribute (None when it does one of those)."""
    attrs_ = graph.attrs(node)
    if not _keeps_low_precision(graph, node):
        if _widened_attrs(graph, node) != attrs_:
            return None
        if graph.op(node) != "cast" and any(type_.dtype.is_low_precision for type_ in operand_types):
            return None
    return infer_result(opdef, operand_types, attrs_)[1]


def _widened_attrs(graph: Graph, node: str) -> dict:
    """The node's attributes with every cast to f16/bf16 (in a region's chain too) made f32."""
    attrs_ = dict(graph.attrs(node))
    op = graph.op(node)
    if op == "cast" and attrs_["to"].is_low_precision:
        attrs_["to"] = DType.f32
    if op == "fused_elementwise":
        steps = [attrs.evolve(step, attrs=tuple(_widened_step_attr(item) for item in step.attrs)) if step.op == "cast"
                 else step for step in parse_chain(attrs_["chain"])]
        attrs_["chain"] = format_chain(steps)
    return attrs_


def _widened_step_attr(item: tuple) -> tuple:
    key, value = item
    return (key, DType.f32) if key == "to" and value.is_low_precision else item


@register_pass
@attrs.frozen
class F32Exec(Pass):
    """Compute in f32 where the graph says f16 or bf16 (rocm runs its kernels in f32).

    Inputs, params and consts keep their types, and so do pure layout ops (traits layout
    or view) whose operands are all f16/bf16. Every other op becomes f32: an op that
    computes reads each f16/bf16 operand through one shared ``cast{to=f32}`` (placed before
    its first reader), a ``cast{to=f16|bf16}`` (also inside a region's chain) becomes
    ``cast{to=f32}``, and the result type follows. A graph output whose type changed is
    cast back to its declared dtype at the end, so the graph's interface is unchanged; a
    cast to f16/bf16 that only outputs read is such a cast already and stays (which
    makes the pass idempotent).
    Every op's type is its inferred type afterwards (each is inferred again, in order).
    A graph with no f16/bf16 value and no cast to them (in a region's chain either) has
    nothing to widen and is left as it is, without that walk.
    """

    name = "f32-exec"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        if not _has_low_precision(graph):
            return False
        declared = {value: graph.type(value) for value in graph.outputs}
        widened: dict[str, str] = {}
        nodes = graph.data_by_name()
        # (op, attributes object, operand types) -> (that object, the type the node keeps
        # when nothing of it changes, else None): most ops of a mixed graph are left as they
        # are, and are told so once per distinct application instead of once per node.
        kept_types: dict[tuple, tuple] = {}
        changed = False
        for node in graph.schedule():
            data = nodes[node]
            opdef = get_op(data.op)
            if opdef is None or _casts_back(graph, node, declared):
                continue
            operand_types = tuple(nodes[operand].type for operand in data.operands)
            key = (data.op, id(data.attrs), operand_types)
            known = kept_types.get(key)
            if known is None:  # the value holds the attributes object: its id stays its own
                known = kept_types[key] = (data.attrs, _type_if_unchanged(graph, node, opdef, operand_types))
            if known[1] is not None and known[1] == data.type:
                continue
            changed |= self._retype(graph, node, widened)
        cast_back = {value: self._cast_back(graph, value, declared[value]) for value in dict.fromkeys(graph.outputs)}
        outputs = [cast_back[value] for value in graph.outputs]
        if outputs != graph.outputs:
            graph.set_outputs(outputs)
            changed = True
        return changed

    def _retype(self, graph: Graph, node: str, widened: dict[str, str]) -> bool:
        """Widen `node` (unless it keeps low precision) and infer its type again."""
        operands, attrs_ = graph.operands(node), graph.attrs(node)
        if not _keeps_low_precision(graph, node):
            attrs_ = _widened_attrs(graph, node)
            if graph.op(node) != "cast":  # a cast converts its operand itself
                operands = tuple(self._widen(graph, operand, node, widened) if _low(graph, operand) else operand
                                 for operand in operands)
        type_ = infer_result(graph.opdef(node), tuple(graph.type(operand) for operand in operands), attrs_)[1]
        if (operands, attrs_, type_) == (graph.operands(node), graph.attrs(node), graph.type(node)):
            return False
        graph.set_attrs(node, attrs_)
        graph.set_operands(node, operands)
        graph.set_type(node, type_)
        return True

    @staticmethod
    def _widen(graph: Graph, value: str, reader: str, widened: dict[str, str]) -> str:
        """`value` cast to f32, made once, right before its first reader."""
        if value not in widened:
            widened[value] = graph.add_op("cast", [value], {"to": DType.f32}, name=graph.fresh_name(f"{value}.f32"),
                                          before=reader, origin=value)
        return widened[value]

    @staticmethod
    def _cast_back(graph: Graph, value: str, declared) -> str:
        if graph.type(value) == declared:
            return value
        return graph.add_op("cast", [value], {"to": declared.dtype}, origin=value)
