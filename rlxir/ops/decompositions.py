"""Decompositions of the fused ops into primitives (what `unfuse` runs).

Each decomposition is ``decompose(graph, name) -> str``: it inserts primitive ops computing
fused node `name` immediately before it (each new node inherits the node's location and
provenance, and is named ``<name>.<op>``) and returns the value that replaces it. Either it
leaves `name` and its users alone, and the caller rewires with
``graph.replace_all_uses(name, new)`` and removes it with ``graph.erase(name)``; or it makes
its last op by rewriting `name` in place (`_Emitter.result`: the name, type and readers
stay) and returns `name`, leaving nothing to rewire. `unfuse_node` handles both.
The result never holds a fused op (gelu inside a region or a bias-activation is expanded
too), and it computes what the op's NumPy reference computes (`rlxir.ops.reference`).

Needs of a static size are refused with an `RlxError` at the node: `selective_scan` unrolls
its time loop, so it needs the sequence length S bound; `attention` without a `scale` needs
a bound head dim D for its default 1/sqrt(D). The causal mask needs neither: its row and
column indices are built with ``expand`` + exclusive ``cumsum`` (an iota), which works on
symbolic lengths and avoids an S x S literal in the text.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.ops.chain import parse_chain
from rlxir.ops.reference import GELU_TANH_COEFFICIENT, SQRT_2_OVER_PI
from rlxir.ops.registry import attach_each, get_op
from rlxir.symbolic import format_dim
from rlxir.types import TensorType


# Graphs inside `sharing_constants`: key -> (name, its node dict, a snapshot of that dict)
# of a value that reads no operand, made by an earlier decomposition (`_Emitter.shared`).
_SHARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextmanager
def sharing_constants(graph) -> Iterator[None]:
    """Decompositions inside share the values that read none of their node's operands.

    Scalar constants, the causal mask and its iotas are then made once per graph and reused
    by every later decomposition placed after them, exactly as `cse` would merge them: a
    stack of a thousand attention layers holds one causal mask instead of a thousand copies
    for a later pass to build and merge. A shared value keeps the location and provenance of
    the node it was first made for. Outside, every decomposition makes its own."""
    _SHARED[graph] = {}
    try:
        yield
    finally:
        _SHARED.pop(graph, None)


class _Emitter:
    """Adds nodes right before the node being decomposed (the anchor), in call order."""

    def __init__(self, graph, anchor: str):
        self.graph = graph
        self.anchor = anchor

    def shared(self, key: tuple, build) -> str:
        """The value `build()` makes, reused when a decomposition made it for `key` before.

        Only inside `sharing_constants`, and only while that value is unchanged (same node,
        op, operands, attributes and type) and defined before the anchor; otherwise it is
        built here."""
        graph = self.graph
        cache = _SHARED.get(graph)
        if cache is None:
            return build()
        entry = cache.get(key)
        if entry is not None:
            name, data, snapshot = entry
            if (graph.data_by_name().get(name) is data and _snapshot(data) == snapshot
                    and graph.comes_before(name, self.anchor)):
                return name
        name = build()
        data = graph.data(name)
        cache[key] = (name, data, _snapshot(data))
        return name

    def op(self, op: str, operands, **attrs) -> str:
        name = self.graph.fresh_name(f"{self.anchor}.{op}")
        return self.graph.add_op(op, operands, _hashable(attrs), name=name, before=self.anchor, origin=self.anchor)

    def result(self, op: str, operands, **attrs) -> str:
        """The decomposition's last op, made by rewriting the anchor in place: its name,
        type, place and readers stay, and the anchor is returned."""
        return self.graph.rewrite_in_place(self.anchor, op, operands, _hashable(attrs))

    def last(self, result: bool):
        """`result` where a helper's last op is the decomposition's result, else `op`."""
        return self.result if result else self.op

    def scalar(self, value, dtype: DType) -> str:
        """A scalar const of `dtype` (broadcasts against any operand), shared per graph."""
        literal = _literal(value, dtype)
        # Keyed by type and exact bits: 0.0 and -0.0, or True and 1, are different constants.
        key = ("scalar", dtype, type(literal), literal.hex() if isinstance(literal, float) else literal)
        return self.shared(key, lambda: self._new_scalar(literal, dtype))

    def _new_scalar(self, literal, dtype: DType) -> str:
        graph = self.graph
        name = graph.fresh_name(f"{self.anchor}.c")
        return graph.add_const(name, TensorType(dtype, ()), literal, loc=graph.location(self.anchor),
                               provenance=graph.provenance(self.anchor), before=self.anchor)

    def type(self, value: str) -> TensorType:
        return self.graph.type(value)

    def refuse(self, message: str, expected: str) -> RlxError:
        return RlxError(f"cannot unfuse %{self.anchor} = {self.graph.op(self.anchor)}: {message}",
                        self.graph.location(self.anchor), expected)


def _hashable(attrs: dict) -> dict:
    # Tuples, not lists: attribute values must be hashable to hit the type-inference cache.
    return {key: tuple(value) if isinstance(value, list) else value for key, value in attrs.items()}


def shared_values(graph) -> set[str]:
    """Names of the values decompositions made to share in `graph` so far (`_Emitter.shared`):
    a caller that walks back from a decomposition's result stops there too."""
    return {name for name, _, _ in _SHARED.get(graph, {}).values()}


def _snapshot(data) -> tuple:  # a graph's node record (`rlxir.ir.graph_reading.ValueNode`)
    return data.op, data.operands, data.type, dict(data.attrs)


def _literal(value, dtype: DType):
    if dtype is DType.bool:
        return bool(value)
    if dtype.is_integer:
        return int(value)
    return float(value)


# --- building blocks (shared by several decompositions) --------------------------------
def emit_gelu(emit: _Emitter, x: str, approximate: bool, result: bool = False) -> str:
    """0.5 x (1 + erf(x / sqrt 2)), or the tanh form when `approximate`; with `result`, the
    last op rewrites the anchor (`_Emitter.result`), as do the other helpers'."""
    dtype = emit.type(x).dtype
    if approximate:
        cube = emit.op("mul", [emit.op("mul", [x, x]), x])
        inner = emit.op("add", [x, emit.op("mul", [cube, emit.scalar(GELU_TANH_COEFFICIENT, dtype)])])
        curve = emit.op("tanh", [emit.op("mul", [inner, emit.scalar(SQRT_2_OVER_PI, dtype)])])
    else:
        curve = emit.op("erf", [emit.op("mul", [x, emit.scalar(1 / math.sqrt(2.0), dtype)])])
    half_x = emit.op("mul", [x, emit.scalar(0.5, dtype)])
    return emit.last(result)("mul", [half_x, emit.op("add", [curve, emit.scalar(1.0, dtype)])])


def emit_softmax(emit: _Emitter, x: str, axis: int, result: bool = False) -> str:
    """exp(x - max) / sum(exp(x - max)) along `axis`, with keepdims reductions."""
    peak = emit.op("reduce_max", [x], axes=[axis], keepdims=True)
    exponent = emit.op("exp", [emit.op("sub", [x, peak])])
    total = emit.op("reduce_sum", [exponent], axes=[axis], keepdims=True)
    return emit.last(result)("div", [exponent, total])


def _trailing_axes(emit: _Emitter, x: str, axis: int) -> list[int]:
    rank = emit.type(x).rank
    return list(range(axis % rank, rank))


def emit_layernorm(emit: _Emitter, x: str, gamma: str, beta: str, axis: int, eps: float,
                   result: bool = False) -> str:
    axes = _trailing_axes(emit, x, axis)
    mean = emit.op("reduce_mean", [x], axes=axes, keepdims=True)
    centered = emit.op("sub", [x, mean])
    variance = emit.op("reduce_mean", [emit.op("mul", [centered, centered])], axes=axes, keepdims=True)
    inverse = emit.op("rsqrt", [emit.op("add", [variance, emit.scalar(eps, emit.type(x).dtype)])])
    return emit.last(result)("add", [emit.op("mul", [emit.op("mul", [centered, inverse]), gamma]), beta])


def emit_rmsnorm(emit: _Emitter, x: str, gamma: str, axis: int, eps: float, result: bool = False) -> str:
    axes = _trailing_axes(emit, x, axis)
    mean_square = emit.op("reduce_mean", [emit.op("mul", [x, x])], axes=axes, keepdims=True)
    inverse = emit.op("rsqrt", [emit.op("add", [mean_square, emit.scalar(eps, emit.type(x).dtype)])])
    return emit.last(result)("mul", [emit.op("mul", [x, inverse]), gamma])


def emit_iota(emit: _Emitter, length) -> str:
    """i32 [length] holding 0, 1, ..., length - 1 (an exclusive running sum of ones), shared."""
    def build() -> str:
        ones = emit.op("expand", [emit.scalar(1, DType.i32)], shape=[length])
        return emit.op("cumsum", [ones], axis=0, exclusive=True)

    return emit.shared(("iota", length), build)


def emit_causal_keep(emit: _Emitter, queries, keys) -> str:
    """bool [queries, keys]: true where key j <= query i (shared per graph)."""
    def build() -> str:
        rows = emit.op("reshape", [emit_iota(emit, queries)], shape=[queries, 1])
        cols = emit.op("reshape", [emit_iota(emit, keys)], shape=[1, keys])
        return emit.op("ge", [rows, cols])

    return emit.shared(("causal", queries, keys), build)


# --- one decomposition per fused op ----------------------------------------------------
def decompose_gelu(graph, name: str) -> str:
    return emit_gelu(_Emitter(graph, name), graph.operands(name)[0], graph.attr(name, "approximate"), result=True)


def decompose_softmax(graph, name: str) -> str:
    return emit_softmax(_Emitter(graph, name), graph.operands(name)[0], graph.attr(name, "axis"), result=True)


def decompose_linear(graph, name: str) -> str:
    emit = _Emitter(graph, name)
    x, w, *bias = graph.operands(name)
    if not bias:
        return emit.result("matmul", [x, w])
    return emit.result("add", [emit.op("matmul", [x, w]), bias[0]])


def decompose_layernorm(graph, name: str) -> str:
    x, gamma, beta = graph.operands(name)
    return emit_layernorm(_Emitter(graph, name), x, gamma, beta, graph.attr(name, "axis"), graph.attr(name, "eps"),
                          result=True)


def decompose_rmsnorm(graph, name: str) -> str:
    x, gamma = graph.operands(name)
    return emit_rmsnorm(_Emitter(graph, name), x, gamma, graph.attr(name, "axis"), graph.attr(name, "eps"),
                        result=True)


def decompose_batchnorm(graph, name: str) -> str:
    """x * factor + shift with factor = scale / sqrt(var + eps), shift = bias - mean * factor,
    both reshaped from [C] to [1, C, 1, 1] (as many trailing 1s as x has spatial dims)."""
    emit = _Emitter(graph, name)
    x, scale, bias, mean, variance = graph.operands(name)
    x_type = emit.type(x)
    inverse = emit.op("rsqrt", [emit.op("add", [variance, emit.scalar(graph.attr(name, "eps"), x_type.dtype)])])
    factor = emit.op("mul", [scale, inverse])
    shift = emit.op("sub", [bias, emit.op("mul", [mean, factor])])
    per_channel = [1, x_type.shape[1]] + [1] * (x_type.rank - 2)
    factor = emit.op("reshape", [factor], shape=per_channel)
    shift = emit.op("reshape", [shift], shape=per_channel)
    return emit.result("add", [emit.op("mul", [x, factor]), shift])


def _attention_scale(emit: _Emitter, head_dim) -> float:
    scale = emit.graph.attr(emit.anchor, "scale")
    if scale is not None:
        return scale
    if not isinstance(head_dim, int):
        raise emit.refuse(f"its default scale 1/sqrt(D) needs the head dim D = {format_dim(head_dim)} bound",
                          "bind the symbol with -D, or give the op a scale attribute")
    return 1.0 / math.sqrt(head_dim)


def decompose_attention(graph, name: str) -> str:
    """matmul(q, k^T) * scale, the mask (where for bool, add otherwise), the causal mask,
    softmax on the last axis, matmul with v."""
    emit = _Emitter(graph, name)
    q, k, v, *mask = graph.operands(name)
    q_type, dtype = emit.type(q), emit.type(q).dtype
    scores = emit.op("matmul", [q, k], transpose_b=True)
    scores = emit.op("mul", [scores, emit.scalar(_attention_scale(emit, q_type.shape[-1]), dtype)])
    if mask and emit.type(mask[0]).dtype is DType.bool:
        scores = emit.op("where", [mask[0], scores, emit.scalar(-math.inf, dtype)])
    elif mask:
        scores = emit.op("add", [scores, mask[0]])
    if graph.attr(name, "causal"):
        keep = emit_causal_keep(emit, q_type.shape[-2], emit.type(k).shape[-2])
        scores = emit.op("where", [keep, scores, emit.scalar(-math.inf, dtype)])
    return emit.result("matmul", [emit_softmax(emit, scores, -1), v])


def _scan_step_inputs(emit: _Emitter, operands, step: int, batch, hidden):
    """Step `step`'s x and delta as [B, H, 1], and Bm and C as [B, 1, N]."""
    x, delta, _, bm, c = operands

    def at_step(value):
        return emit.op("slice", [value], axis=1, start=step, len=1)

    x_t = emit.op("reshape", [at_step(x)], shape=[batch, hidden, 1])
    delta_t = emit.op("reshape", [at_step(delta)], shape=[batch, hidden, 1])
    return x_t, delta_t, at_step(bm), at_step(c)


def decompose_selective_scan(graph, name: str) -> str:
    """The time loop unrolled: per step, slices of x/delta/Bm/C, the [B, H, N] state update
    ``state = exp(delta * A) * state + (delta * x) * Bm`` (the first step starts from zero,
    so it is just the second term), ``y_t = sum_n state * C`` reshaped to [B, 1, H]; the
    steps' outputs are concatenated along axis 1."""
    emit = _Emitter(graph, name)
    operands = graph.operands(name)
    batch, steps, hidden = emit.type(operands[0]).shape
    if not isinstance(steps, int):
        raise emit.refuse(f"unrolling the scan needs its sequence length {format_dim(steps)} bound",
                          f"bind it with -D {format_dim(steps)}=VALUE")
    a = operands[2]
    state, outputs = None, []
    for step in range(steps):
        x_t, delta_t, bm_t, c_t = _scan_step_inputs(emit, operands, step, batch, hidden)
        update = emit.op("mul", [emit.op("mul", [delta_t, x_t]), bm_t])
        if state is None:
            state = update
        else:
            decay = emit.op("exp", [emit.op("mul", [delta_t, a])])
            state = emit.op("add", [emit.op("mul", [decay, state]), update])
        y_t = emit.op("reduce_sum", [emit.op("mul", [state, c_t])], axes=[2])
        outputs.append(emit.op("reshape", [y_t], shape=[batch, 1, hidden]))
    return emit.result("concat", outputs, axis=1)


def decompose_fused_matmul_bias_act(graph, name: str) -> str:
    """matmul, expand(bias) to the product's shape, add, then the activation."""
    emit = _Emitter(graph, name)
    x, w, bias = graph.operands(name)
    product = emit.op("matmul", [x, w])
    terms = [product, emit.op("expand", [bias], shape=list(emit.type(product).shape))]
    activation = graph.attr(name, "activation")
    if activation == "gelu":
        return emit_gelu(emit, emit.op("add", terms), approximate=False, result=True)
    if activation == "silu":
        return emit.result("silu", [emit.op("add", terms)])
    return emit.result("add", terms)


def decompose_fused_residual_layernorm(graph, name: str) -> str:
    emit = _Emitter(graph, name)
    x, residual, gamma, beta = graph.operands(name)
    return emit_layernorm(emit, emit.op("add", [x, residual]), gamma, beta, -1, graph.attr(name, "eps"), result=True)


def decompose_fused_residual_rmsnorm(graph, name: str) -> str:
    emit = _Emitter(graph, name)
    x, residual, gamma = graph.operands(name)
    return emit_rmsnorm(emit, emit.op("add", [x, residual]), gamma, -1, graph.attr(name, "eps"), result=True)


def decompose_fused_elementwise(graph, name: str) -> str:
    """The chain inlined: one node per step ($i = operand i, %j = step j's node); a step
    that is itself fused (gelu) is unfused in place."""
    emit = _Emitter(graph, name)
    operands = graph.operands(name)
    results: list[str] = []
    for step in parse_chain(graph.attr(name, "chain")):
        arguments = [operands[ref] if kind == "$" else results[ref] for kind, ref in step.args]
        value = emit.op(step.op, arguments, **dict(step.attrs))
        if _has_decomposition(get_op(step.op)):
            value = unfuse_node(graph, value)
        results.append(value)
    return results[-1]


# --- whole-node rewrites ---------------------------------------------------------------
def unfuse_node(graph, name: str) -> str:
    """Replace fused node `name` by its decomposition: every use (outputs included) reads the
    returned value, and `name` is erased, unless the decomposition's last op rewrote `name`
    in place (then `name` is returned, its readers untouched). Raises `RlxError` when the op
    has no decomposition."""
    opdef = graph.opdef(name)
    if opdef is None or opdef.decompose is None:
        raise RlxError(f"%{name} = {graph.op(name)} has no decomposition", graph.location(name),
                       "a fused op with a registered decomposition")
    replacement = opdef.decompose(graph, name)
    if replacement == name:  # its last op rewrote it in place: nothing to rewire
        return name
    graph.replace_all_uses(name, replacement)
    graph.erase(name)
    return replacement


def unfuse_all(graph) -> int:
    """Unfuse every node whose op has a decomposition; returns how many were replaced."""
    fused = [name for name in graph.schedule() if graph.kind(name) == "op" and _has_decomposition(graph.opdef(name))]
    for name in fused:
        unfuse_node(graph, name)
    return len(fused)


def _has_decomposition(opdef) -> bool:
    return opdef is not None and opdef.decompose is not None


DECOMPOSITIONS = {
    "gelu": decompose_gelu,
    "softmax": decompose_softmax,
    "linear": decompose_linear,
    "layernorm": decompose_layernorm,
    "rmsnorm": decompose_rmsnorm,
    "batchnorm": decompose_batchnorm,
    "attention": decompose_attention,
    "selective_scan": decompose_selective_scan,
    "fused_matmul_bias_act": decompose_fused_matmul_bias_act,
    "fused_residual_layernorm": decompose_fused_residual_layernorm,
    "fused_residual_rmsnorm": decompose_fused_residual_rmsnorm,
    "fused_elementwise": decompose_fused_elementwise,
}

attach_each("decompose", DECOMPOSITIONS)
