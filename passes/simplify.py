"""simplify: algebraic identities as rewrite rules."""

from __future__ import annotations

import attrs

from rlxir.dtypes import DType
from rlxir.ir.graph import Graph
from rlxir.ir.inference import infer_result
from rlxir.ir.interface import can_take_output_name
from rlxir.pass_machinery.pass_base import Pass, PassContext, register_pass
from rlxir.pass_machinery.rewriter import Rule, rewrite_greedy


# --- reading consts ---------------------------------------------------------------------
def _is_const_equal(graph: Graph, value: str, number) -> bool:
    """`value` is a const whose every element equals `number` (bools as 0 and 1, the way
    bool add and mul compute: or and and)."""
    if graph.kind(value) != "const":
        return False
    literal = graph.attrs(value)["value"]
    items = literal if isinstance(literal, tuple) else (literal,)
    return all(item == number for item in items)


def _is_splat(graph: Graph, value: str, number) -> bool:
    return graph.kind(value) == "const" and not isinstance(graph.attrs(value)["value"], tuple) \
        and _is_const_equal(graph, value, number)


def _zero_of(dtype: DType):
    if dtype is DType.bool:
        return False
    return 0 if dtype.is_integer else 0.0


# --- rewriting --------------------------------------------------------------------------
def _forward(graph: Graph, node: str, value: str) -> list[str] | None:
    """Replace `node` by `value` when their types are equal; returns what to revisit."""
    if graph.type(value) != graph.type(node):
        return None
    if node in graph.outputs and not can_take_output_name(graph, value):
        return None  # the output keeps its own node: an input, param or other output holds `value`'s name
    graph.replace_all_uses(node, value)
    graph.erase(node)
    return [value]


def _erase_if_dead(graph: Graph, value: str) -> None:
    if graph.kind(value) == "op" and not graph.user_count(value) and value not in graph.outputs:
        graph.erase(value)


def _reroot(graph: Graph, node: str, inner: str, attrs: dict) -> list[str] | None:
    """Make `node` read `inner`'s operands directly, with `attrs`, when that infers `node`'s
    own type; `inner` goes if nothing else reads it."""
    operand_types = tuple(graph.type(operand) for operand in graph.operands(inner))
    if infer_result(graph.opdef(node), operand_types, attrs)[1] != graph.type(node):
        return None
    graph.set_attrs(node, attrs)
    graph.set_operands(node, graph.operands(inner))
    _erase_if_dead(graph, inner)
    return [node]


# --- the identities ---------------------------------------------------------------------
def _identity_operand(graph: Graph, node: str, number, sides: tuple[int, ...]) -> list[str] | None:
    """`op(x, c)` (or `op(c, x)` for side 0) where c is all `number`: becomes x."""
    operands = graph.operands(node)
    for side in sides:
        if _is_const_equal(graph, operands[side], number):
            result = _forward(graph, node, operands[1 - side])
            if result is not None:
                return result
    return None


def add_zero(graph: Graph, node: str):
    return _identity_operand(graph, node, 0, (1, 0))


def sub_zero(graph: Graph, node: str):
    return _identity_operand(graph, node, 0, (1,))


def mul_one(graph: Graph, node: str):
    return _identity_operand(graph, node, 1, (1, 0))


def div_one(graph: Graph, node: str):
    return _identity_operand(graph, node, 1, (1,))


def mul_zero(graph: Graph, node: str):
    """`x * 0` is a zero splat of x's type (when the product has x's type)."""
    operands = graph.operands(node)
    type_ = graph.type(node)
    for side in (1, 0):
        if _is_splat(graph, operands[side], 0) and graph.type(operands[1 - side]) == type_:
            zero = graph.add_const(graph.fresh_name(node), type_, _zero_of(type_.dtype), loc=graph.location(node),
                                   provenance=graph.provenance(node), before=node)
            graph.replace_all_uses(node, zero)
            graph.erase(node)
            return [zero]
    return None


def neg_neg(graph: Graph, node: str):
    inner = graph.operands(node)[0]
    if graph.op(inner) != "neg":
        return None
    result = _forward(graph, node, graph.operands(inner)[0])
    if result is not None:
        _erase_if_dead(graph, inner)
    return result


def same_type(graph: Graph, node: str):
    """A reshape, cast or expand whose result type is its operand's does nothing."""
    return _forward(graph, node, graph.operands(node)[0])


def reshape_reshape(graph: Graph, node: str):
    inner = graph.operands(node)[0]
    if graph.op(inner) != "reshape":
        return None
    return _reroot(graph, node, inner, graph.attrs(node))


def transpose_compose(graph: Graph, node: str):
    """An identity perm goes; a transpose of a transpose is one transpose (or none)."""
    perm = graph.attr(node, "perm")
    if list(perm) == list(range(len(perm))):
        return _forward(graph, node, graph.operands(node)[0])
    inner = graph.operands(node)[0]
    if graph.op(inner) != "transpose":
        return None
    inner_perm = graph.attr(inner, "perm")
    return _reroot(graph, node, inner, {**graph.attrs(node), "perm": tuple(inner_perm[axis] for axis in perm)})


def full_slice(graph: Graph, node: str):
    if graph.attr(node, "start") != 0:
        return None
    return _forward(graph, node, graph.operands(node)[0])


def single_concat(graph: Graph, node: str):
    operands = graph.operands(node)
    return _forward(graph, node, operands[0]) if len(operands) == 1 else None


RULES = (
    Rule("add-zero", "add", add_zero),
    Rule("sub-zero", "sub", sub_zero),
    Rule("mul-one", "mul", mul_one),
    Rule("mul-zero", "mul", mul_zero),
    Rule("div-one", "div", div_one),
    Rule("neg-neg", "neg", neg_neg),
    Rule("same-type", ("reshape", "cast", "expand"), same_type),
    Rule("reshape-reshape", "reshape", reshape_reshape),
    Rule("transpose-compose", "transpose", transpose_compose),
    Rule("full-slice", "slice", full_slice),
    Rule("single-concat", "concat", single_concat),
)


@register_pass
@attrs.frozen
class Simplify(Pass):
    """Apply algebraic identities until none applies.

    x+0, 0+x, x-0, x*1, 1*x, x/1 become x; x*0 becomes a zero splat const (the zero must be a
    splat const); neg(neg x) becomes x; a reshape of a reshape reads the inner operand; a
    reshape, cast or expand to the operand's own type goes; a transpose of a transpose
    composes the perms, and an identity perm goes; a slice of the whole axis and a concat
    of one operand go. A rewrite happens only where the result type stays exactly the
    same (a constant that broadcasts x to a bigger shape or another dtype is kept).
    """

    name = "simplify"

    def run(self, graph: Graph, ctx: PassContext) -> bool:
        return rewrite_greedy(graph, RULES) > 0
