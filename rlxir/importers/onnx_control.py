"""ONNX If and the Optional ops, and the subgraph runner that Loop and Scan
(`rlxir.importers.onnx_loop`) unroll with. The IR has no control flow, so:

- **If** whose condition is known while importing: the taken branch's nodes are converted
  in place of the If (exporters write such Ifs around shape checks, e.g.
  ``if x.size(0) == 1``); the branch not taken is never looked at.
- **If** whose condition is computed at run time: both branches are converted (ONNX ops
  have no side effects) and each output is ``where(cond, then, else)``; an output whose
  two branches differ in dtype or shape is refused naming both types.
- **Optional** of a tensor is that tensor; an Optional with no input is *absent* (a static
  marker no tensor op reads; a sequence, `StaticSequence`, is held the same way).
  **OptionalHasElement** is a static True or False, and **OptionalGetElement** of a present
  optional (or of a plain tensor) is the tensor; of an absent one, an error.

A branch or body reads outer values by name, as ONNX scoping allows, and its outputs are
static or built as they come out. An op type a subgraph has and the importer lacks is
refused listing each.
"""

from __future__ import annotations

from collections import Counter

import attrs
import numpy as np
import onnx

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import concrete, initializer_array, op_key
from rlxir.importers.onnx_ops import hint, operand, optional_input
from rlxir.importers.onnx_registry import CONVERTERS, register

ABSENT = np.array(None, dtype=object)
"""The static value of an absent optional (``Optional()`` without an input)."""


@attrs.frozen(eq=False)
class StaticSequence:
    """A sequence known while importing (`rlxir.importers.onnx_sequence`): its tensors, each
    an rlx value or a static array."""

    items: tuple


def holding(sequence: StaticSequence) -> np.ndarray:
    """The static value that stands for `sequence` in the import (a 0-d object array)."""
    holder = np.empty((), dtype=object)
    holder[()] = sequence
    return holder


# --- subgraphs -------------------------------------------------------------------------
def refuse_missing_ops(graph: onnx.GraphProto, what: str) -> None:
    """An error listing every op type of `graph`'s nodes without a converter (a nested
    subgraph is checked when its node is converted: a branch not taken may hold anything)."""
    missing = Counter(op_key(inner) for inner in graph.node if op_key(inner) not in CONVERTERS)
    if missing:
        listed = ", ".join(f"{op} x{count}" for op, count in sorted(missing.items()))
        raise UnsupportedModel(f"its {what} {graph.name!r} has ops with no rlx mapping: {listed}")


def _nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attribute.g)


def run_subgraph(ctx, graph: onnx.GraphProto, bound=()) -> list:
    """Convert `graph`'s nodes with its inputs bound to `bound` (rlx value names or static
    arrays, in input order) and its own initializers as static arrays, and return its
    outputs the same way. Every name the subgraph defines is forgotten first, so a loop body
    runs once per iteration."""
    defined = [info.name for info in graph.input] + [name for inner in _nodes(graph) for name in inner.output]
    for name in defined:
        ctx.values.pop(name, None)
        ctx.statics.pop(name, None)
    for tensor in graph.initializer:  # a body's constants (scikit-learn's Scan bodies hold theirs there)
        ctx.values.pop(tensor.name, None)
        ctx.define_static(tensor.name, initializer_array(tensor))
    for info, value in zip(graph.input, bound):
        if isinstance(value, str):
            ctx.define(info.name, value)
        else:
            ctx.define_static(info.name, value)
    for inner in graph.node:
        ctx.convert(inner, CONVERTERS)
    return [result(ctx, output.name) for output in graph.output]


def result(ctx, name: str):
    """ONNX value `name` as it is: a static array or an rlx value."""
    if ctx.is_static(name):
        return ctx.static(name)
    return ctx.value(name)


def as_value(ctx, item, name: str) -> str:
    """A subgraph result (an rlx value or a static array) as an rlx value."""
    if isinstance(item, str):
        return item
    if is_marker(item):
        raise UnsupportedModel(f"{name!r} is an absent optional or a sequence, which the IR has no tensor for",
                               expected="a tensor")
    return ctx.builder.tensor(name, concrete(item, f"ONNX value {name!r}"))


def is_marker(item) -> bool:
    """A static value that stands for no tensor: an absent optional or a sequence."""
    return (not isinstance(item, str) and item.dtype == object and item.shape == ()
            and (item.item() is None or isinstance(item.item(), StaticSequence)))


# --- If --------------------------------------------------------------------------------
def convert_if(ctx, node, attrs):
    name = node.input[0]
    if not ctx.is_static(name):
        return _if_at_run_time(ctx, node, attrs)
    condition = np.asarray(concrete(ctx.static(name), "If's condition"))
    if condition.size != 1:
        raise UnsupportedModel(f"an If condition of {condition.size} elements", expected="one boolean")
    branch = attrs["then_branch"] if bool(condition.reshape(())) else attrs["else_branch"]
    refuse_missing_ops(branch, "taken branch")
    return run_subgraph(ctx, branch)


def _if_at_run_time(ctx, node, attrs):
    """Both branches built, each output selected by the condition."""
    then_branch, else_branch = attrs["then_branch"], attrs["else_branch"]
    refuse_missing_ops(then_branch, "then branch")
    refuse_missing_ops(else_branch, "else branch")
    condition = operand(ctx, node.input[0])
    condition_type = ctx.builder.type(condition)
    if condition_type.dtype is not DType.bool or any(dim != 1 for dim in condition_type.shape):
        raise UnsupportedModel(f"an If condition of type {condition_type}", expected="one boolean")
    if condition_type.rank:
        condition = ctx.builder.op("reshape", [condition], {"shape": ()}, hint=f"{hint(node)}.cond")
    taken = run_subgraph(ctx, then_branch)
    other = run_subgraph(ctx, else_branch)
    return [_select(ctx, node, index, condition, first, second) for index, (first, second) in
            enumerate(zip(taken, other))]


def _select(ctx, node, index: int, condition: str, first, second):
    label = hint(node, index)
    if not isinstance(first, str) and not isinstance(second, str) and first.dtype != object:
        if first.dtype == second.dtype and first.shape == second.shape and np.array_equal(first, second):
            return first
    first, second = as_value(ctx, first, f"{label}.then"), as_value(ctx, second, f"{label}.else")
    first_type, second_type = ctx.builder.type(first), ctx.builder.type(second)
    if first_type != second_type:
        raise UnsupportedModel(f"its output {index} is {first_type} in the then branch and {second_type} in the else "
                               "branch, and the condition is computed at run time",
                               expected="branches whose outputs agree in dtype and shape (the IR selects between "
                                        "both with where)")
    return ctx.builder.op("where", [condition, first, second], hint=label)


# --- optionals -------------------------------------------------------------------------
def convert_optional(ctx, node, attrs):
    name = optional_input(node, 0)
    if name is not None:
        return [result(ctx, name)]
    if node.output[0] in ctx.graph_outputs:
        raise UnsupportedModel(f"the absent optional {node.output[0]!r} is a graph output, and the IR has no "
                               "optional type", expected="graph outputs that are tensors")
    return [ABSENT]


def is_absent(ctx, name: str | None) -> bool:
    return name is None or (ctx.is_static(name) and is_marker(ctx.static(name)) and ctx.static(name).item() is None)


def convert_optional_has_element(ctx, node, attrs):
    return [np.array(not is_absent(ctx, optional_input(node, 0)))]


def convert_optional_get_element(ctx, node, attrs):
    name = optional_input(node, 0)
    if is_absent(ctx, name):
        raise UnsupportedModel("OptionalGetElement of an absent optional", expected="an optional that holds a value")
    return [result(ctx, name)]


register({"If": convert_if, "Optional": convert_optional, "OptionalHasElement": convert_optional_has_element,
          "OptionalGetElement": convert_optional_get_element})
