"""Patterns that `graphs(motifs=...)` plants among random ops.

Random ops rarely line up into what one pass rewrites: two identical ops for cse, an op
over consts for const-fold, a matmul feeding an add of a bias for fuse. A motif builds such
a pattern from the values already drawn (or from new leaves) and returns its result, which
a later op reads or the graph outputs. Values the pattern needs read exactly once (the
product inside a bias-activation chain) are hidden from later ops; a dead op is hidden
from everything, outputs included.

A motif is a function of the graph under construction (`b`, as in the op builders of
`rlxir.testing.strategies`) returning its result, or None when it leaves nothing to read.
Some motifs also draw the variants a pass must refuse (a bias that broadcasts, the tanh
gelu, a residual stream read again), so a strategy tests both sides of the pattern.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.types import TensorType

if TYPE_CHECKING:
    from rlxir.testing.drawing import GraphDrawing

_UNARY_ANY = ("neg", "abs", "relu")
_UNARY_FLOAT = _UNARY_ANY + ("exp", "tanh", "sigmoid", "silu", "gelu")
_BINARY = ("add", "sub", "mul", "maximum", "minimum")
_REDUCE_ANY = ("reduce_sum", "reduce_max", "reduce_min")


def _unary_ops(dtype: DType) -> tuple[str, ...]:
    return _UNARY_FLOAT if dtype.is_float else _UNARY_ANY


def _either_order(b: GraphDrawing, first: str, second: str) -> list[str]:
    return [first, second] if b.draw(st.booleans()) else [second, first]


def _number(dtype: DType, value: int):
    return float(value) if dtype.is_float else value


def _not_one(b: GraphDrawing):
    dim = b.dim()
    return 2 if dim == 1 else dim


# --- cse, dce, const-fold -------------------------------------------------------------------
def duplicate(b: GraphDrawing) -> str:
    """An op or const drawn again, with the same operands (swapped, for a commutative op)
    and attributes: what `cse` merges."""
    graph = b.graph
    candidates = [name for name in b.values(lambda type_: True) if graph.kind(name) in ("op", "const")]
    original = b.draw(st.sampled_from(candidates)) if candidates else b.build(b.draw(st.sampled_from(b.config.ops)))
    if graph.kind(original) == "const":
        return b.leaf(graph.type(original), "const", value=graph.attrs(original)["value"])
    operands = list(graph.operands(original))
    if graph.opdef(original).has("commutative") and b.draw(st.booleans()):
        operands.reverse()
    return b.add(graph.op(original), operands, dict(graph.attrs(original)))


def dead(b: GraphDrawing) -> None:
    """An op that nothing reads, hidden from later ops and the outputs: what `dce` removes."""
    b.hide(b.build(b.draw(st.sampled_from(b.config.ops))))


def const_expression(b: GraphDrawing) -> str:
    """One or two elementwise ops whose operands are all consts, on small static shapes:
    what `const-fold` evaluates."""
    dtype = b.dtype()
    shape = tuple(b.dim(static=True) for _ in range(b.draw(st.integers(0, 2))))
    value = b.leaf(TensorType(dtype, shape), "const")
    for _ in range(b.draw(st.integers(1, 2))):
        if b.draw(st.booleans()):
            value = b.add(b.draw(st.sampled_from(_unary_ops(dtype))), [value])
            continue
        kept = b.draw(st.integers(0, len(shape)))  # a suffix of the shape broadcasts into it
        other = b.leaf(TensorType(dtype, shape[len(shape) - kept:]), "const")
        value = b.add(b.draw(st.sampled_from(_BINARY)), _either_order(b, value, other))
    return value


# --- simplify -------------------------------------------------------------------------------
_IDENTITIES = ("add-zero", "sub-zero", "mul-one", "mul-zero", "div-one", "neg-neg", "same-type", "reshape-reshape",
               "transpose-identity", "transpose-transpose", "full-slice", "single-concat")


def identity(b: GraphDrawing) -> str:
    """An op that gives back its operand (x + 0, x * 1, x / 1, neg(neg x), a reshape, cast
    or expand to the operand's own type, composed transposes, a whole-axis slice, a
    one-operand concat) or x * 0: what `simplify` rewrites. Three times in four one more
    op reads it: an identity that is a graph output stays when its operand is an input
    (the output keeps its name), which the fourth case still draws."""
    result = _identity(b, b.operand())
    if b.draw(st.integers(0, 3)) == 0:
        return result
    b.hide(result)
    return b.add(b.draw(st.sampled_from(_unary_ops(b.type(result).dtype))), [result])


def _identity(b: GraphDrawing, x: str) -> str:
    type_ = b.type(x)
    form = b.draw(st.sampled_from(_IDENTITIES))
    if form in ("add-zero", "sub-zero", "mul-one", "mul-zero", "div-one"):
        return _with_constant(b, x, form)
    if form == "neg-neg":
        inner = b.add("neg", [x])
        b.hide(inner)
        return b.add("neg", [inner])
    if form == "reshape-reshape":
        inner = b.add("reshape", [x], {"shape": [type_.numel]})
        b.hide(inner)
        return b.add("reshape", [inner], {"shape": list(type_.shape)})
    if form in ("transpose-identity", "transpose-transpose"):
        return _transposes(b, x, form)
    static_axes = [axis for axis, dim in enumerate(type_.shape) if isinstance(dim, int)]
    if form == "full-slice" and static_axes:
        axis = b.draw(st.sampled_from(static_axes))
        return b.add("slice", [x], {"axis": axis, "start": 0, "len": type_.shape[axis]})
    if form == "single-concat" and type_.rank:
        return b.add("concat", [x], {"axis": b.draw(st.integers(0, type_.rank - 1))})
    op = b.draw(st.sampled_from(("reshape", "cast", "expand")))
    attributes = {"reshape": {"shape": list(type_.shape)}, "cast": {"to": type_.dtype},
                  "expand": {"shape": list(type_.shape)}}[op]
    return b.add(op, [x], attributes)


def _with_constant(b: GraphDrawing, x: str, form: str) -> str:
    """x op c, with c all zeros or all ones, a scalar or a splat of x's shape."""
    type_ = b.type(x)
    if form == "div-one" and not type_.dtype.is_float:
        form = "mul-one"
    op, number = {"add-zero": ("add", 0), "sub-zero": ("sub", 0), "mul-one": ("mul", 1), "mul-zero": ("mul", 0),
                  "div-one": ("div", 1)}[form]
    shape = type_.shape if b.draw(st.booleans()) else ()
    constant = b.leaf(TensorType(type_.dtype, shape), "const", value=_number(type_.dtype, number))
    if op in ("sub", "div"):
        return b.add(op, [x, constant])
    return b.add(op, _either_order(b, x, constant))


def _transposes(b: GraphDrawing, x: str, form: str) -> str:
    rank = b.type(x).rank
    if form == "transpose-identity":
        return b.add("transpose", [x], {"perm": list(range(rank))})
    inner = b.add("transpose", [x], {"perm": b.draw(st.permutations(range(rank)))})
    b.hide(inner)
    return b.add("transpose", [inner], {"perm": b.draw(st.permutations(range(rank)))})


# --- legalize-broadcast, backend-unfuse -----------------------------------------------------
def broadcast(b: GraphDrawing) -> str:
    """A binary op whose operand has a 1 where the result has another dim and is neither a
    scalar nor the result's trailing dims ([B, 1, N] against [B, S, N]): what
    `legalize-broadcast` and `backend-unfuse` expand."""
    def wide(type_: TensorType) -> bool:
        return type_.dtype in b.config.dtypes and sum(dim != 1 for dim in type_.shape) >= 2

    def make() -> str:
        rank = b.draw(st.integers(2, max(2, b.config.max_rank)))
        return b.leaf(TensorType(b.dtype(), tuple(_not_one(b) for _ in range(rank))))

    x = b.pick(wide, make)
    type_ = b.type(x)
    shape = list(type_.shape)
    shape[b.draw(st.sampled_from([axis for axis, dim in enumerate(shape) if dim != 1]))] = 1
    other = b.of_type(type_.with_shape(shape))
    return b.add(b.draw(st.sampled_from(_BINARY)), _either_order(b, x, other))


# --- fuse -----------------------------------------------------------------------------------
def bias_act(b: GraphDrawing) -> str:
    """matmul, an add of an [N] bias, then exact gelu, silu or nothing: what `fuse` makes a
    `fused_matmul_bias_act`. One in four adds an [M, N] bias instead, and one activation
    in four is the tanh gelu, which the fused kernel does not have."""
    x = b.operand(min_rank=1, float_only=True)
    x_type = b.type(x)
    columns = b.dim()
    weight = b.of_type(TensorType(x_type.dtype, (x_type.shape[-1], columns)), "param")
    product = b.add("matmul", [x, weight])
    bias_shape = b.type(product).shape[-2:] if b.draw(st.integers(0, 3)) == 0 else (columns,)
    total = b.add("add", _either_order(b, product, b.of_type(TensorType(x_type.dtype, bias_shape), "param")))
    b.hide(product)
    activation = b.draw(st.sampled_from(("none", "gelu", "gelu-tanh", "silu")))
    if activation == "none":
        return total
    b.hide(total)
    return b.add(activation.removesuffix("-tanh"), [total], {"approximate": True} if activation == "gelu-tanh" else {})


def residual_norm(b: GraphDrawing) -> str:
    """add(x, residual) normalized over the last axis by layernorm or rmsnorm: what `fuse`
    makes a fused residual norm. One in four keeps the sum readable (a residual stream read
    again, which stays unfused)."""
    x = b.operand(min_rank=1, float_only=True)
    x_type = b.type(x)
    total = b.add("add", [x, b.of_type(x_type)])
    norm = b.draw(st.sampled_from(("layernorm", "rmsnorm")))
    gains = [b.of_type(TensorType(x_type.dtype, x_type.shape[-1:]), "param")
             for _ in range(2 if norm == "layernorm" else 1)]
    result = b.add(norm, [total, *gains], {"axis": -1, "eps": b.draw(st.sampled_from((1e-5, 1e-6)))})
    if b.draw(st.integers(0, 3)):
        b.hide(total)
    return result


def shared_input(b: GraphDrawing) -> str:
    """Two or three matmuls of one value by [K, N] params, summed: what `fuse` turns into one
    matmul on the concatenated weights."""
    x = b.operand(min_rank=1)
    x_type = b.type(x)
    weight_type = TensorType(x_type.dtype, (x_type.shape[-1], b.dim(static=True)))
    products = [b.add("matmul", [x, b.leaf(weight_type, "param")]) for _ in range(b.draw(st.integers(2, 3)))]
    total = products[0]
    for product in products[1:]:
        total = b.add("add", [total, product])
    return total


def swiglu(b: GraphDrawing) -> str:
    """mul(silu(gate), up), in either order: a SwiGLU `fuse` makes a two-step region."""
    gate = b.operand(float_only=True)
    activated = b.add("silu", [gate])
    b.hide(activated)
    return b.add("mul", _either_order(b, activated, b.of_type(b.type(gate))))


def elementwise_chain(b: GraphDrawing) -> str:
    """Two to four elementwise ops, each read only by the next: a region `fuse` makes one
    `fused_elementwise`."""
    value = b.operand()
    for step in range(b.draw(st.integers(2, 4))):
        if step:
            b.hide(value)
        type_ = b.type(value)
        if b.draw(st.booleans()):
            value = b.add(b.draw(st.sampled_from(_unary_ops(type_.dtype))), [value])
        else:
            other = b.partner(type_.dtype, type_.shape)
            value = b.add(b.draw(st.sampled_from(_BINARY)), _either_order(b, value, other))
    return value


# --- scan-unroll ----------------------------------------------------------------------------
def scan(b: GraphDrawing) -> str:
    """A selective_scan: `scan-unroll` unrolls it when its sequence length is static and
    short (draw static shapes for that)."""
    return b.build("selective_scan")


# --- legalize-or-rewrite --------------------------------------------------------------------
def unclaimed(b: GraphDrawing) -> str:
    """An op some targets do not run and `legalize-or-rewrite` rewrites: linear and batchnorm
    (no target runs them), attention (not rocm, gpu or vulkan), or a reduction, softmax
    or cumsum over an axis other than the last (every target but cpu)."""
    form = b.draw(st.sampled_from(("linear", "batchnorm", "attention", "reduce", "softmax", "cumsum")))
    if form in ("linear", "batchnorm", "attention"):
        return b.build(form)
    x = b.operand(min_rank=2, float_only=form == "softmax")
    type_ = b.type(x)
    axis = b.draw(st.integers(0, type_.rank - 2))
    if form == "softmax":
        return b.add("softmax", [x], {"axis": axis})
    if form == "cumsum":
        return b.add("cumsum", [x], {"axis": axis, "exclusive": b.draw(st.booleans())})
    reductions = _REDUCE_ANY + (("reduce_mean",) if type_.dtype.is_float else ())
    return b.add(b.draw(st.sampled_from(reductions)), [x], {"axes": [axis], "keepdims": b.draw(st.booleans())})


MOTIFS: dict[str, Callable[[GraphDrawing], str | None]] = {
    "duplicate": duplicate, "dead": dead, "const_expression": const_expression, "identity": identity,
    "broadcast": broadcast, "bias_act": bias_act, "residual_norm": residual_norm, "shared_input": shared_input,
    "swiglu": swiglu, "elementwise_chain": elementwise_chain, "scan": scan, "unclaimed": unclaimed,
}
"""Every motif by name (pass a subset as ``graphs(motifs=...)``)."""

FLOAT_MOTIFS = frozenset(("bias_act", "residual_norm", "swiglu", "scan", "unclaimed"))
"""Motifs that need a floating-point dtype among `graphs`' dtypes."""

FUSE_MOTIFS = ("bias_act", "residual_norm", "shared_input", "swiglu", "elementwise_chain")
"""The patterns `fuse` rewrites, one motif each."""
