"""Vector-Jacobian products of the core ops, as data: `VJP_RULES` maps an op name to its rule.

A rule is ``rule(vjp: VJP) -> dict[int, str | SlicePart]``: given one forward node and
the gradient of its result (`vjp.grad`, a value of exactly the result's type), it appends
backward nodes to the graph and returns, for every operand position it is asked for
(`vjp.wants[i]`), the value holding the gradient of that operand — of exactly the
operand's type (broadcasts are undone with `VJP.unbroadcast`: a reduce_sum over the
broadcast axes and a reshape) — or, for `slice`, a `SlicePart`: the gradient of one range
of the operand, which the accumulation in `rlxir.autodiff.backward` places (several slices of one
value become one concat, not one zero-padded copy each).
Rules read forward values (operands, the node's own result) freely: the backward graph
is the forward graph followed by the backward nodes, so those stay alive as long as a
backward node reads them.

Ops that are not here: comparisons, which have no gradient (an error when one lies on a
gradient path, `rlxir.autodiff.backward`), and fused ops whose gradient is taken through their
decomposition (attention, the fused_* kernels; `rlxir.autodiff.backward` unfuses them first).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from rlxir.autodiff.vjp import VJP, SlicePart
from rlxir.ops.core import normalize_axis
from rlxir.ops.reference import GELU_TANH_COEFFICIENT, SQRT_2_OVER_PI
from rlxir.symbolic import format_dim


Rule = Callable[[VJP], dict]


def _axes(vjp: VJP, operand: str) -> tuple[int, ...]:
    rank = vjp.type(operand).rank
    return tuple(normalize_axis(axis, rank) for axis in vjp.attr("axes"))


# --- unary -------------------------------------------------------------------------------
def _scaled(derivative: Callable[[VJP, str], str]) -> Rule:
    """The rule g * f'(x), with f'(x) built by `derivative(vjp, x)`."""
    def rule(vjp: VJP) -> dict:
        return {0: vjp.emit("mul", [vjp.grad, derivative(vjp, vjp.operands[0])])}

    return rule


def vjp_neg(vjp: VJP) -> dict:
    return {0: vjp.emit("neg", [vjp.grad])}


def vjp_abs(vjp: VJP) -> dict:
    x = vjp.operands[0]
    negative = vjp.emit("lt", [x, vjp.scalar(0.0)])
    return {0: vjp.emit("where", [negative, vjp.emit("neg", [vjp.grad]), vjp.grad])}


def vjp_relu(vjp: VJP) -> dict:
    positive = vjp.emit("gt", [vjp.operands[0], vjp.scalar(0.0)])
    return {0: vjp.emit("where", [positive, vjp.grad, vjp.scalar(0.0)])}


def vjp_log(vjp: VJP) -> dict:
    return {0: vjp.emit("div", [vjp.grad, vjp.operands[0]])}


def vjp_sqrt(vjp: VJP) -> dict:
    return {0: vjp.times(vjp.emit("div", [vjp.grad, vjp.node]), 0.5)}


def vjp_cos(vjp: VJP) -> dict:
    return {0: vjp.emit("neg", [vjp.emit("mul", [vjp.grad, vjp.emit("sin", [vjp.operands[0]])])])}


def _one_minus(vjp: VJP, value: str) -> str:
    return vjp.emit("sub", [vjp.scalar(1.0), value])


def d_rsqrt(vjp: VJP, x: str) -> str:
    y = vjp.node
    return vjp.times(vjp.mul(y, y, y), -0.5)


def d_tanh(vjp: VJP, x: str) -> str:
    return _one_minus(vjp, vjp.mul(vjp.node, vjp.node))


def d_sigmoid(vjp: VJP, x: str) -> str:
    return vjp.mul(vjp.node, _one_minus(vjp, vjp.node))


def d_silu(vjp: VJP, x: str) -> str:
    """silu' = s + y (1 - s) with s = sigmoid(x), y = x s."""
    s = vjp.emit("sigmoid", [x])
    return vjp.emit("add", [s, vjp.mul(vjp.node, _one_minus(vjp, s))])


def d_erf(vjp: VJP, x: str) -> str:
    return vjp.times(vjp.emit("exp", [vjp.emit("neg", [vjp.mul(x, x)])]), 2.0 / math.sqrt(math.pi))


def d_gelu(vjp: VJP, x: str) -> str:
    """Exact: Phi(x) + x phi(x). Tanh form: 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 k x^2)
    with t = tanh(c (x + k x^3)), c = sqrt(2/pi), k = 0.044715."""
    square = vjp.mul(x, x)
    if vjp.attr("approximate"):
        inner = vjp.emit("add", [x, vjp.times(vjp.mul(square, x), GELU_TANH_COEFFICIENT)])
        curve = vjp.emit("tanh", [vjp.times(inner, SQRT_2_OVER_PI)])
        left = vjp.times(vjp.emit("add", [curve, vjp.scalar(1.0)]), 0.5)
        slope = vjp.times(vjp.emit("add", [vjp.times(square, 3 * GELU_TANH_COEFFICIENT), vjp.scalar(1.0)]),
                          SQRT_2_OVER_PI)
        right = vjp.mul(vjp.times(x, 0.5), _one_minus(vjp, vjp.mul(curve, curve)), slope)
        return vjp.emit("add", [left, right])
    cdf = vjp.times(vjp.emit("add", [vjp.emit("erf", [vjp.times(x, 1 / math.sqrt(2.0))]), vjp.scalar(1.0)]), 0.5)
    density = vjp.times(vjp.emit("exp", [vjp.times(square, -0.5)]), 1 / math.sqrt(2 * math.pi))
    return vjp.emit("add", [cdf, vjp.mul(x, density)])


def vjp_cast(vjp: VJP) -> dict:
    return {0: vjp.emit("cast", [vjp.grad], to=vjp.type(vjp.operands[0]).dtype)}


# --- binary and select -------------------------------------------------------------------
def _binary(left: Callable[[VJP], str] | None, right: Callable[[VJP], str] | None) -> Rule:
    """A broadcasting binary op's rule from its two partial products (each result-shaped)."""
    def rule(vjp: VJP) -> dict:
        grads = {}
        for index, partial in enumerate((left, right)):
            if vjp.wants[index]:
                grads[index] = vjp.unbroadcast(partial(vjp), vjp.shape(vjp.operands[index]))
        return grads

    return rule


def _grad(vjp: VJP) -> str:
    return vjp.grad


def _neg_grad(vjp: VJP) -> str:
    return vjp.emit("neg", [vjp.grad])


def _times_other(index: int) -> Callable[[VJP], str]:
    return lambda vjp: vjp.emit("mul", [vjp.grad, vjp.operands[1 - index]])


def _div_left(vjp: VJP) -> str:
    return vjp.emit("div", [vjp.grad, vjp.operands[1]])


def _div_right(vjp: VJP) -> str:
    """d(a/b)/db = -(a/b)/b."""
    return vjp.emit("neg", [vjp.emit("div", [vjp.emit("mul", [vjp.grad, vjp.node]), vjp.operands[1]])])


def _pow_base(vjp: VJP) -> str:
    base, exponent = vjp.operands
    lowered = vjp.emit("pow", [base, vjp.emit("sub", [exponent, vjp.scalar(1.0)])])
    return vjp.mul(vjp.grad, exponent, lowered)


def _pow_exponent(vjp: VJP) -> str:
    return vjp.mul(vjp.grad, vjp.node, vjp.emit("log", [vjp.operands[0]]))


def _select(compare: str) -> Callable[[VJP], str]:
    """g where `compare`(a, b) holds, else 0 (maximum/minimum; ties go to the left operand)."""
    def partial(vjp: VJP) -> str:
        chosen = vjp.emit(compare, list(vjp.operands))
        return vjp.emit("where", [chosen, vjp.grad, vjp.scalar(0.0)])

    return partial


def vjp_where(vjp: VJP) -> dict:
    condition, zero = vjp.operands[0], vjp.scalar(0.0)
    grads = {}
    if vjp.wants[1]:
        grads[1] = vjp.unbroadcast(vjp.emit("where", [condition, vjp.grad, zero]), vjp.shape(vjp.operands[1]))
    if vjp.wants[2]:
        grads[2] = vjp.unbroadcast(vjp.emit("where", [condition, zero, vjp.grad]), vjp.shape(vjp.operands[2]))
    return grads


# --- reductions and scans ----------------------------------------------------------------
def vjp_reduce_sum(vjp: VJP) -> dict:
    x = vjp.operands[0]
    spread = vjp.keep_dims(vjp.grad, vjp.shape(x), _axes(vjp, x))
    return {0: vjp.emit("expand", [spread], shape=list(vjp.shape(x)))}


def vjp_reduce_mean(vjp: VJP) -> dict:
    x = vjp.operands[0]
    axes = _axes(vjp, x)
    spread = vjp.keep_dims(vjp.grad, vjp.shape(x), axes)
    scaled = vjp.divide_by_count(spread, [vjp.shape(x)[axis] for axis in axes])
    return {0: vjp.emit("expand", [scaled], shape=list(vjp.shape(x)))}


def vjp_reduce_extreme(vjp: VJP) -> dict:
    """The gradient goes to the positions holding the extreme, split evenly among ties (so
    a maximum over copies of one value passes the whole gradient to that value)."""
    x = vjp.operands[0]
    axes = _axes(vjp, x)
    peak = vjp.keep_dims(vjp.node, vjp.shape(x), axes)
    hits = vjp.emit("cast", [vjp.emit("eq", [x, peak])], to=vjp.type(x).dtype)
    count = vjp.emit("reduce_sum", [hits], axes=list(axes), keepdims=True)
    share = vjp.emit("div", [vjp.keep_dims(vjp.grad, vjp.shape(x), axes), count])
    return {0: vjp.emit("mul", [hits, share])}


def vjp_softmax(vjp: VJP) -> dict:
    y = vjp.node
    axis = vjp.attr("axis")
    weighted = vjp.emit("reduce_sum", [vjp.emit("mul", [vjp.grad, y])], axes=[axis], keepdims=True)
    return {0: vjp.emit("mul", [y, vjp.emit("sub", [vjp.grad, weighted])])}


def vjp_cumsum(vjp: VJP) -> dict:
    """A running sum from the end: the total minus the running sum from the start (one
    position further along for an inclusive forward scan)."""
    axis = vjp.attr("axis")
    total = vjp.emit("reduce_sum", [vjp.grad], axes=[axis], keepdims=True)
    before = vjp.emit("cumsum", [vjp.grad], axis=axis, exclusive=not vjp.attr("exclusive"))
    return {0: vjp.emit("sub", [total, before])}


# --- linear algebra ----------------------------------------------------------------------
def matmul_grads(vjp: VJP, a: str, b: str, transpose_a: bool, transpose_b: bool) -> tuple[str | None, str | None]:
    """Gradients of ``matmul(a, b)`` for the wanted operands among (a, b): rank-1 operands
    are read as [1, K] / [K, 1] (as the shape rule does), batch broadcasts are summed away.
    A rank-2 `b` under a batched `a` gets its gradient from one matmul over the flattened
    batch ([B*M, K]^T x [B*M, N]) rather than a batched product summed afterwards."""
    a_type, b_type = vjp.type(a), vjp.type(b)
    grad_shape = list(vjp.shape(vjp.grad))
    a_full, b_full = a, b
    if a_type.rank == 1:
        a_full = vjp.emit("reshape", [a], shape=[1, a_type.shape[0]])
        grad_shape.insert(len(grad_shape) - (0 if b_type.rank == 1 else 1), 1)
    if b_type.rank == 1:
        b_full = vjp.emit("reshape", [b], shape=[b_type.shape[0], 1])
        grad_shape.append(1)
    grad = vjp.grad if tuple(grad_shape) == vjp.shape(vjp.grad) else vjp.emit("reshape", [vjp.grad], shape=grad_shape)
    da = db = None
    if vjp.wants[0]:
        if transpose_a:
            da = vjp.emit("matmul", [b_full, grad], transpose_a=transpose_b, transpose_b=True)
        else:
            da = vjp.emit("matmul", [grad, b_full], transpose_b=not transpose_b)
        da = _reshaped(vjp, vjp.unbroadcast(da, vjp.shape(a_full)), a_type.shape)
    if vjp.wants[1]:
        left, right = a_full, grad
        if vjp.type(b_full).rank == 2 and vjp.type(a_full).rank > 2 and not transpose_a:
            left = vjp.emit("reshape", [a_full], shape=[-1, vjp.shape(a_full)[-1]])
            right = vjp.emit("reshape", [grad], shape=[-1, grad_shape[-1]])
        if transpose_b:
            db = vjp.emit("matmul", [right, left], transpose_a=True, transpose_b=transpose_a)
        else:
            db = vjp.emit("matmul", [left, right], transpose_a=not transpose_a)
        db = _reshaped(vjp, vjp.unbroadcast(db, vjp.shape(b_full)), b_type.shape)
    return da, db


def _reshaped(vjp: VJP, value: str, shape) -> str:
    return value if vjp.shape(value) == tuple(shape) else vjp.emit("reshape", [value], shape=list(shape))


def _present(grads: tuple) -> dict:
    return {index: value for index, value in enumerate(grads) if value is not None}


def vjp_matmul(vjp: VJP) -> dict:
    a, b = vjp.operands
    return _present(matmul_grads(vjp, a, b, vjp.attr("transpose_a"), vjp.attr("transpose_b")))


def vjp_linear(vjp: VJP) -> dict:
    x, w, *bias = vjp.operands
    grads = _present(matmul_grads(vjp, x, w, False, False))
    if bias and vjp.wants[2]:
        grads[2] = vjp.unbroadcast(vjp.grad, vjp.shape(bias[0]))
    return grads


# --- normalisation -----------------------------------------------------------------------
def _norm_axes(vjp: VJP, x: str) -> list[int]:
    rank = vjp.type(x).rank
    return list(range(normalize_axis(vjp.attr("axis"), rank), rank))


def _rms_normalized(vjp: VJP, values: str, axes: list[int]) -> tuple[str, str]:
    """r = rsqrt(mean(values^2 over axes) + eps), and values r: what both norms divide by."""
    mean_square = vjp.emit("reduce_mean", [vjp.mul(values, values)], axes=axes, keepdims=True)
    inverse = vjp.emit("rsqrt", [vjp.emit("add", [mean_square, vjp.scalar(vjp.attr("eps"))])])
    return inverse, vjp.mul(values, inverse)


def vjp_layernorm(vjp: VJP) -> dict:
    """With xhat = (x - mean) r, r = rsqrt(var + eps): dgamma = sum g xhat, dbeta = sum g,
    dx = r (dxhat - mean(dxhat) - xhat mean(dxhat xhat)) where dxhat = g gamma."""
    x, gamma, beta = vjp.operands
    axes = _norm_axes(vjp, x)
    centered = vjp.emit("sub", [x, vjp.emit("reduce_mean", [x], axes=axes, keepdims=True)])
    inverse, normalized = _rms_normalized(vjp, centered, axes)  # the mean of centered^2 is the variance
    grads = {}
    if vjp.wants[1]:
        grads[1] = vjp.unbroadcast(vjp.mul(vjp.grad, normalized), vjp.shape(gamma))
    if vjp.wants[2]:
        grads[2] = vjp.unbroadcast(vjp.grad, vjp.shape(beta))
    if vjp.wants[0]:
        dxhat = vjp.mul(vjp.grad, gamma)
        mean_dxhat = vjp.emit("reduce_mean", [dxhat], axes=axes, keepdims=True)
        projection = vjp.emit("reduce_mean", [vjp.mul(dxhat, normalized)], axes=axes, keepdims=True)
        inner = vjp.emit("sub", [vjp.emit("sub", [dxhat, mean_dxhat]), vjp.mul(normalized, projection)])
        grads[0] = vjp.mul(inverse, inner)
    return grads


def vjp_rmsnorm(vjp: VJP) -> dict:
    """With xhat = x r, r = rsqrt(mean(x^2) + eps): dgamma = sum g xhat,
    dx = r (dxhat - xhat mean(dxhat xhat)) where dxhat = g gamma."""
    x, gamma = vjp.operands
    axes = _norm_axes(vjp, x)
    inverse, normalized = _rms_normalized(vjp, x, axes)
    grads = {}
    if vjp.wants[1]:
        grads[1] = vjp.unbroadcast(vjp.mul(vjp.grad, normalized), vjp.shape(gamma))
    if vjp.wants[0]:
        dxhat = vjp.mul(vjp.grad, gamma)
        projection = vjp.emit("reduce_mean", [vjp.mul(dxhat, normalized)], axes=axes, keepdims=True)
        grads[0] = vjp.mul(inverse, vjp.emit("sub", [dxhat, vjp.mul(normalized, projection)]))
    return grads


def vjp_batchnorm(vjp: VJP) -> dict:
    """y = (x - mean) r scale + bias per channel (axis 1), r = rsqrt(var + eps)."""
    x, scale, bias, mean, variance = vjp.operands
    shape = vjp.shape(x)
    per_channel = [1, shape[1]] + [1] * (len(shape) - 2)
    others = [0] + list(range(2, len(shape)))
    inverse = vjp.emit("rsqrt", [vjp.emit("add", [variance, vjp.scalar(vjp.attr("eps"))])])

    def channel(value: str) -> str:
        return vjp.emit("reshape", [value], shape=per_channel)

    def summed(value: str) -> str:
        return vjp.emit("reduce_sum", [value], axes=others)

    grads = {}
    if vjp.wants[0]:
        grads[0] = vjp.emit("mul", [vjp.grad, channel(vjp.mul(inverse, scale))])
    grad_sum = summed(vjp.grad) if vjp.wants[2] or vjp.wants[3] else None
    if vjp.wants[2]:
        grads[2] = grad_sum
    if vjp.wants[3]:
        grads[3] = vjp.emit("neg", [vjp.mul(grad_sum, inverse, scale)])
    if vjp.wants[1] or vjp.wants[4]:
        along = summed(vjp.mul(vjp.grad, vjp.emit("sub", [x, channel(mean)])))
        if vjp.wants[1]:
            grads[1] = vjp.mul(along, inverse)
        if vjp.wants[4]:
            grads[4] = vjp.times(vjp.mul(along, scale, inverse, inverse, inverse), -0.5)
    return grads


# --- shape ops ---------------------------------------------------------------------------
def vjp_reshape(vjp: VJP) -> dict:
    return {0: vjp.emit("reshape", [vjp.grad], shape=list(vjp.shape(vjp.operands[0])))}


def vjp_transpose(vjp: VJP) -> dict:
    perm = vjp.attr("perm")
    inverse = [0] * len(perm)
    for position, axis in enumerate(perm):
        inverse[axis] = position
    return {0: vjp.emit("transpose", [vjp.grad], perm=inverse)}


def vjp_expand(vjp: VJP) -> dict:
    return {0: vjp.unbroadcast(vjp.grad, vjp.shape(vjp.operands[0]))}


def vjp_concat(vjp: VJP) -> dict:
    axis = normalize_axis(vjp.attr("axis"), vjp.type().rank)
    grads, start = {}, 0
    for index, operand in enumerate(vjp.operands):
        size = vjp.shape(operand)[axis]
        if not isinstance(size, int) or not isinstance(start, int):
            raise vjp.refuse(f"its operands' sizes along axis {axis} ({format_dim(size)}) must be numbers to "
                             "slice the gradient", "bind the symbols first (rlxir grad -D SYM=VALUE)")
        if vjp.wants[index]:
            grads[index] = vjp.emit("slice", [vjp.grad], axis=axis, start=start, len=size)
        start += size
    return grads


def vjp_slice(vjp: VJP) -> dict:
    axis = normalize_axis(vjp.attr("axis"), vjp.type(vjp.operands[0]).rank)
    return {0: SlicePart(vjp.grad, axis, vjp.attr("start"))}


def vjp_gather(vjp: VJP) -> dict:
    table, indices = vjp.operands
    return {0: vjp.emit("gather_grad", [vjp.grad, indices], axis=vjp.attr("axis"), shape=list(vjp.shape(table)))}


def vjp_gather_elements(vjp: VJP) -> dict:
    """The picked elements' gradients added back where they were picked (an index picked
    twice gets both), into zeros of the table's shape."""
    table, indices = vjp.operands
    zeros = vjp.emit("expand", [vjp.scalar(0.0)], shape=list(vjp.shape(table)))
    return {0: vjp.emit("scatter_elements", [zeros, indices, vjp.grad], axis=vjp.attr("axis"), reduction="add")}


# --- convolution, pooling, scans ---------------------------------------------------------
def _conv_attrs(vjp: VJP) -> dict:
    return {key: vjp.attr(key) for key in ("stride", "padding", "dilation", "groups")}


def vjp_conv2d(vjp: VJP) -> dict:
    x, w, *bias = vjp.operands
    grads = {}
    if vjp.wants[0]:
        grads[0] = vjp.emit("conv2d_grad_input", [vjp.grad, w], input_shape=list(vjp.shape(x)), **_conv_attrs(vjp))
    if vjp.wants[1]:
        grads[1] = vjp.emit("conv2d_grad_weight", [x, vjp.grad], kernel=list(vjp.shape(w)[2:]), **_conv_attrs(vjp))
    if bias and vjp.wants[2]:
        grads[2] = vjp.emit("reduce_sum", [vjp.grad], axes=[0, 2, 3])
    return grads


def _pool_attrs(vjp: VJP) -> dict:
    return {key: vjp.attr(key) for key in ("kernel", "stride", "padding")}


def vjp_max_pool2d(vjp: VJP) -> dict:
    return {0: vjp.emit("max_pool2d_grad", [vjp.operands[0], vjp.grad], **_pool_attrs(vjp))}


def vjp_avg_pool2d(vjp: VJP) -> dict:
    shape = list(vjp.shape(vjp.operands[0]))
    return {0: vjp.emit("avg_pool2d_grad", [vjp.grad], input_shape=shape, **_pool_attrs(vjp))}


def vjp_selective_scan(vjp: VJP) -> dict:
    operands = list(vjp.operands) + [vjp.grad]
    state = vjp.attr("state_size")
    return {index: vjp.emit("selective_scan_grad", operands, state_size=state, operand=index)
            for index in range(5) if vjp.wants[index]}


VJP_RULES: dict[str, Rule] = {
    "neg": vjp_neg,
    "abs": vjp_abs,
    "exp": _scaled(lambda vjp, x: vjp.node),
    "log": vjp_log,
    "sqrt": vjp_sqrt,
    "rsqrt": _scaled(d_rsqrt),
    "tanh": _scaled(d_tanh),
    "sigmoid": _scaled(d_sigmoid),
    "relu": vjp_relu,
    "silu": _scaled(d_silu),
    "sin": _scaled(lambda vjp, x: vjp.emit("cos", [x])),
    "cos": vjp_cos,
    "erf": _scaled(d_erf),
    "gelu": _scaled(d_gelu),
    "cast": vjp_cast,
    "add": _binary(_grad, _grad),
    "sub": _binary(_grad, _neg_grad),
    "mul": _binary(_times_other(0), _times_other(1)),
    "div": _binary(_div_left, _div_right),
    "pow": _binary(_pow_base, _pow_exponent),
    "maximum": _binary(_select("ge"), _select("lt")),
    "minimum": _binary(_select("le"), _select("gt")),
    "where": vjp_where,
    "reduce_sum": vjp_reduce_sum,
    "reduce_mean": vjp_reduce_mean,
    "reduce_max": vjp_reduce_extreme,
    "reduce_min": vjp_reduce_extreme,
    "softmax": vjp_softmax,
    "cumsum": vjp_cumsum,
    "matmul": vjp_matmul,
    "linear": vjp_linear,
    "layernorm": vjp_layernorm,
    "rmsnorm": vjp_rmsnorm,
    "batchnorm": vjp_batchnorm,
    "reshape": vjp_reshape,
    "transpose": vjp_transpose,
    "expand": vjp_expand,
    "concat": vjp_concat,
    "slice": vjp_slice,
    "gather": vjp_gather,
    "gather_elements": vjp_gather_elements,
    "conv2d": vjp_conv2d,
    "max_pool2d": vjp_max_pool2d,
    "avg_pool2d": vjp_avg_pool2d,
    "selective_scan": vjp_selective_scan,
}
"""op name -> its vector-Jacobian product rule."""

NO_GRADIENT_POSITIONS: dict[str, tuple[int, ...]] = {"where": (0,), "gather": (1,), "gather_elements": (1,)}
"""Operand positions through which no gradient flows: a condition, integer indices."""
