"""`fused_elementwise`: a region of elementwise ops run as one kernel.

Its ``chain`` attribute is a small program over the op's operands: steps separated by
``;``, each ``OP(ARG, ...)`` with an optional ``{attrs}`` block, where an ARG is ``$i``
(operand i of the fused op) or ``%j`` (the result of step j). The last step is the result.
Example: ``"mul($0, $1); gelu(%0) {approximate = true}; add(%1, $2)"``.
The text is parsed by the rlx grammar (start symbol ``chain``), so it reads like the IR.
"""

from __future__ import annotations

from functools import lru_cache

import attrs

from rlxir.ops.registry import AttrSpec, OpDef, ShapeError, check_attributes, format_attr_value, get_op, register_op
from rlxir.types import TensorType


@attrs.frozen(slots=True)
class ChainStep:
    op: str
    args: tuple  # ("$", i) or ("%", j)
    attrs: tuple  # ((key, value), ...) in written order

    def text(self) -> str:
        args = ", ".join(f"{kind}{index}" for kind, index in self.args)
        block = ""
        if self.attrs:
            block = " {" + ", ".join(f"{key} = {format_attr_value(value)}" for key, value in self.attrs) + "}"
        return f"{self.op}({args}){block}"


def format_chain(steps) -> str:
    return "; ".join(step.text() for step in steps)


@lru_cache(maxsize=4096)
def parse_chain(text: str) -> tuple[ChainStep, ...]:
    """Parse and check a chain's text (cached: regions repeat)."""
    from rlxir.parser import parse_chain_text

    steps = parse_chain_text(text)
    if not steps:
        raise ShapeError("a fused_elementwise chain needs at least one step")
    for index, step in enumerate(steps):
        opdef = get_op(step.op)
        if opdef is None or not opdef.has("elementwise"):
            raise ShapeError(f"chain step {index} uses {step.op!r}, which is not an elementwise op")
        for kind, ref in step.args:
            if kind == "%" and ref >= index:
                raise ShapeError(f"chain step {index} reads %{ref} before it is computed")
    return steps


def chain_types(steps, operand_types) -> list[TensorType]:
    """The type of each step's result on the given operand types."""
    results: list[TensorType] = []
    for index, step in enumerate(steps):
        opdef = get_op(step.op)
        types = []
        for kind, ref in step.args:
            if kind == "$" and ref >= len(operand_types):
                raise ShapeError(f"chain step {index} reads ${ref}, but the op has {len(operand_types)} operands")
            types.append(operand_types[ref] if kind == "$" else results[ref])
        if not opdef.accepts_arity(len(types)):
            raise ShapeError(f"chain step {index}: {step.op} takes {opdef.arity_text()}")
        _, full = check_attributes(opdef, dict(step.attrs))
        results.append(opdef.shape_rule(tuple(types), full))
    return results


def fused_elementwise_rule(types, attrs) -> TensorType:
    steps = parse_chain(attrs["chain"])
    return chain_types(steps, types)[-1]


register_op(OpDef(
    "fused_elementwise", 1, None, fused_elementwise_rule,
    {"chain": AttrSpec("str", doc="the region's steps, e.g. \"mul($0, $1); gelu(%0)\"")},
    frozenset({"fused", "elementwise", "region"}), (),
    "an elementwise region run as one kernel, made by fuse",
))
