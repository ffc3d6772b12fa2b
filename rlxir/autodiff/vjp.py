"""What a gradient rule works with: `VJP` (one forward node, its result's gradient, and
helpers that append backward nodes), the `Emitter` they share, and `SlicePart`.

Backward nodes go at the end of the graph's schedule, after the forward computation (the
graph `rlxir.grad` returns is the forward graph followed by the backward one). Nodes made
for forward node ``%h`` are named ``%h.vjp``, ``%h.vjp.1``, ... and carry its location.
"""

from __future__ import annotations

import attrs

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.symbolic import mul
from rlxir.types import TensorType


@attrs.frozen
class SlicePart:
    """The gradient `value` of one slice of an operand: it covers ``[start, start + n)``
    along `axis`, n being `value`'s size there; `rlxir.autodiff.backward` places it."""

    value: str
    axis: int
    start: int


class Emitter:
    """Appends backward nodes to the end of the graph (shared by every rule of one `grad`).

    Nodes made for forward node ``%h`` are named ``%h.vjp``, ``%h.vjp.1``, ... and carry
    ``%h``'s location and provenance; scalar constants are made once per value and dtype.
    """

    def __init__(self, graph: Graph):
        self.graph = graph
        self.constants: dict = {}

    def op(self, origin: str, op: str, operands, **attrs) -> str:
        attrs = {key: tuple(value) if isinstance(value, (list, range)) else value for key, value in attrs.items()}
        name = self.graph.fresh_name(f"{origin}.vjp")
        return self.graph.add_op(op, operands, attrs, name=name, origin=origin)

    def scalar(self, origin: str, value: float, dtype) -> str:
        key = (float(value).hex(), dtype)
        if key not in self.constants:
            name = self.graph.fresh_name("vjp.const")
            self.constants[key] = self.graph.add_const(name, TensorType(dtype, ()), float(value),
                                                       loc=self.graph.location(origin), provenance=(origin,))
        return self.constants[key]


class VJP:
    """One forward node as a rule sees it, with helpers that append backward nodes."""

    def __init__(self, emitter: Emitter, node: str, grad: str, wants: tuple[bool, ...]):
        self.emitter = emitter
        self.graph = emitter.graph
        self.node = node
        self.grad = grad
        self.wants = wants
        self.operands = self.graph.operands(node)

    # --- reading the forward node -----------------------------------------------------
    def type(self, value: str | None = None) -> TensorType:
        return self.graph.type(self.node if value is None else value)

    def shape(self, value: str | None = None) -> tuple:
        return self.type(value).shape

    def attr(self, key: str):
        return self.graph.attr(self.node, key)

    def refuse(self, message: str, expected: str) -> RlxError:
        return RlxError(f"cannot differentiate %{self.node} = {self.graph.op(self.node)}: {message}",
                        self.graph.location(self.node), expected)

    # --- building ---------------------------------------------------------------------
    def emit(self, op: str, operands, **attrs) -> str:
        return self.emitter.op(self.node, op, operands, **attrs)

    def scalar(self, value: float) -> str:
        """A scalar constant of the node's dtype (broadcasts against anything)."""
        return self.emitter.scalar(self.node, value, self.type().dtype)

    def mul(self, *values: str) -> str:
        result = values[0]
        for value in values[1:]:
            result = self.emit("mul", [result, value])
        return result

    def times(self, value: str, factor: float) -> str:
        return self.emit("mul", [value, self.scalar(factor)])

    def unbroadcast(self, value: str, shape) -> str:
        """`value` summed back to `shape`, which broadcasts to its shape: a reduce_sum over
        the leading and the stretched axes, then a reshape (both only when needed)."""
        shape = tuple(shape)
        source = self.shape(value)
        if source == shape:
            return value
        lead = len(source) - len(shape)
        axes = list(range(lead)) + [lead + index for index, dim in enumerate(shape)
                                    if dim == 1 and source[lead + index] != 1]
        if axes:
            value = self.emit("reduce_sum", [value], axes=axes)
        if self.shape(value) != shape:
            value = self.emit("reshape", [value], shape=shape)
        return value

    def keep_dims(self, value: str, source_shape, axes) -> str:
        """A reduction's result (or its gradient) reshaped with the reduced axes as 1s."""
        shape = tuple(1 if index in axes else dim for index, dim in enumerate(source_shape))
        return value if self.shape(value) == shape else self.emit("reshape", [value], shape=shape)

    def divide_by_count(self, value: str, dims) -> str:
        """`value` / (product of `dims`); a count with symbols is computed in the graph
        (a reduce_sum of ones over those dims), so symbolic graphs differentiate."""
        count = 1
        for dim in dims:
            count = mul(count, dim)
        if isinstance(count, int):
            return self.times(value, 1.0 / count if count else 0.0)
        ones = self.emit("expand", [self.scalar(1.0)], shape=list(dims))
        total = self.emit("reduce_sum", [ones], axes=list(range(len(dims))))
        return self.emit("div", [value, total])
