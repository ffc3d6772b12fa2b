"""ONNX op -> core ops: shared helpers and the ops that map onto core ops directly
(elementwise, Clip and the simple activations, Where, Cast, Softmax, MatMul).

A converter is ``convert(ctx, node, attrs) -> [result per output]``; a result is an rlx
value name, a NumPy array (the output is static: shape arithmetic evaluated while
importing, possibly holding symbolic dims), or None (an optional output nobody reads).
The other converter modules each hold one family (their names say which: `onnx_shape`,
`onnx_nn`, `onnx_pool`, `onnx_resize`, `onnx_attention`, `onnx_recurrent`, ...);
`rlxir.importers.onnx` imports them all, and each registers its op types in
`rlxir.importers.onnx_registry`.

Shared here: `Arith` (elementwise expressions of one dtype), `counter` (0..n-1 without a
stored array), `dim_value` and `dims_tensor` (symbolic dims as run-time tensors),
`wrapped_index` (ONNX's negative indices)."""

from __future__ import annotations


import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_context import concrete, onnx_dtype
from rlxir.ops import normalize_axis
from rlxir.ops.reference import erf
from rlxir.symbolic import Expr, format_dim, mul, never_negative, sub
from rlxir.types import TensorType

FOLD_LIMIT = 1 << 20
"""Ops on static tensors are evaluated while importing when no input is larger than this."""

INT64_MAX = 2**63 - 1


# --- helpers ---------------------------------------------------------------------------
def present(node) -> list[str]:
    return [name for name in node.input if name]


def optional_input(node, index: int) -> str | None:
    return node.input[index] if len(node.input) > index and node.input[index] else None


def static_input(ctx, node, index: int, what: str) -> np.ndarray:
    """Input `index` as a static array (symbolic elements allowed), or an error."""
    name = optional_input(node, index)
    if name is None or not ctx.is_static(name):
        raise UnsupportedModel(f"its {what} (input {index}) must be known while importing, but it is computed at run "
                               "time", expected=f"a {what} that comes from constants or shape arithmetic")
    return ctx.static(name)


def static_ints(ctx, node, index: int, what: str) -> list:
    """A static 1-D (or scalar) integer input as a list of Python ints and dims."""
    return [_dim(item) for item in np.asarray(static_input(ctx, node, index, what)).reshape(-1)]


def _dim(item):
    return item if isinstance(item, Expr) else int(item)


def foldable(ctx, node) -> bool:
    """Every input is static and small enough to evaluate while importing."""
    names = present(node)
    return bool(names) and all(ctx.is_static(name) and ctx.static(name).size <= FOLD_LIMIT for name in names)


def hint(node, index: int = 0) -> str:
    return node.output[index] if len(node.output) > index and node.output[index] else node.op_type.lower()


def operand(ctx, name: str, dtype: DType | None = None) -> str:
    """ONNX value `name` as an rlx value, cast to `dtype` when given (a static scalar is
    made directly as a literal of that dtype)."""
    if dtype is not None and ctx.is_static(name) and ctx.static(name).size == 1 and name not in ctx.values:
        array = concrete(ctx.static(name), f"ONNX value {name!r}")
        if array.ndim == 0:
            return ctx.builder.scalar(array.item(), dtype)
    value = ctx.value(name)
    if dtype is not None and ctx.builder.type(value).dtype is not dtype:
        return ctx.builder.op("cast", [value], {"to": dtype}, hint=f"{name}.{dtype.value}")
    return value


def first_dtype(ctx, names) -> DType:
    """The dtype of the first built (not static) operand, else of the first one."""
    for name in names:
        if name in ctx.values:
            return ctx.type(name).dtype
    return ctx.type(names[0]).dtype


def unused(ctx, node, index: int) -> bool:
    name = node.output[index] if len(node.output) > index else ""
    return not name or (not ctx.consumers.get(name) and name not in ctx.graph_outputs)


def refuse_used_outputs(ctx, node, first: int, what: str) -> None:
    for index in range(first, len(node.output)):
        if not unused(ctx, node, index):
            raise UnsupportedModel(f"its output {index} ({what}) is read, which the importer does not support",
                                   expected=f"a model that reads only output 0 of {node.op_type}")


def axes_argument(ctx, node, attrs, index: int, since: int) -> list[int] | None:
    """`axes` as an attribute before opset `since`, as input `index` from it on."""
    if ctx.opset < since:
        axes = attrs.get("axes")
        return None if axes is None else [int(axis) for axis in axes]
    if optional_input(node, index) is None:
        return None
    return [int(axis) for axis in static_ints(ctx, node, index, "axes")]


def nd_index_depth(ctx, node, data: str, indices: str) -> tuple:
    """(data's shape, the indices' shape, k) for GatherND/ScatterND, whose indices address
    the first k axes of `data` with their last axis: k must be static and 1..rank(data)."""
    shape, index_shape = ctx.shape(data), ctx.shape(indices)
    depth = index_shape[-1] if index_shape else None
    if not isinstance(depth, int) or not 1 <= depth <= len(shape):
        raise UnsupportedModel(f"{node.op_type} indices of shape {list(index_shape)}",
                               expected=f"a static last axis of 1..{len(shape)} (the rank of data)")
    return shape, index_shape, depth


def wrapped_index(ctx, index: str, dim, name: str) -> str:
    """`index` with negative entries counted from the end of `dim` (ONNX allows them); a
    symbolic dim's size is counted at run time (`dim_value`)."""
    dtype = ctx.builder.type(index).dtype
    size = ctx.builder.scalar(dim, dtype) if isinstance(dim, int) else dim_value(ctx.builder, dim, dtype, name)
    negative = ctx.builder.op("lt", [index, ctx.builder.scalar(0, dtype)], hint=f"{name}.negative")
    wrapped = ctx.builder.op("add", [index, size], hint=f"{name}.wrapped")
    return ctx.builder.op("where", [negative, wrapped, index], hint=f"{name}.idx")


def dim_value(builder, dim, dtype: DType, name: str) -> str:
    """A symbolic `dim` as a rank-0 tensor of `dtype` at run time: the sum of `dim` ones
    (the IR holds symbols in shapes, not as data)."""
    ones = builder.splat(f"{name}.ones", 1, TensorType(dtype, (dim,)))
    return builder.op("reduce_sum", [ones], {"axes": (0,), "keepdims": False}, hint=f"{name}.size")


def counter(builder, count, shape: tuple, name: str, dtype: DType = DType.i64) -> str:
    """``0, 1, ..., count - 1`` as a tensor of `shape` (`count` elements, so unit dims
    elsewhere place it along one axis): an exclusive ``cumsum`` of ones, no stored array,
    so `count` may be a symbolic dim."""
    ones = builder.splat(f"{name}.ones", 1, TensorType(dtype, (count,)))
    counted = builder.op("cumsum", [ones], {"axis": 0, "exclusive": True}, hint=f"{name}.count")
    if tuple(shape) == (count,):
        return counted
    return builder.op("reshape", [counted], {"shape": tuple(shape)}, hint=name)


def along(rank: int, axis: int, dim) -> tuple:
    """The shape of rank `rank` that is `dim` on `axis` and 1 elsewhere."""
    return tuple(dim if index == axis else 1 for index in range(rank))


def dims_tensor(builder, array: np.ndarray, name: str) -> str:
    """A static i64 array that holds symbolic dims, as a tensor computed at run time: its
    static elements a literal, each symbolic one `dim_value`, joined in row-major order."""
    flat = array.reshape(-1)
    if flat.size == 0 or all(not isinstance(item, Expr) for item in flat):
        return builder.literal(name, concrete(array, "a shape").astype(np.int64))
    pieces = []
    for index, item in enumerate(flat):
        if isinstance(item, Expr):
            size = dim_value(builder, item, DType.i64, f"{name}.{index}")
            pieces.append(builder.op("reshape", [size], {"shape": (1,)}, hint=f"{name}.{index}.dim"))
        else:
            pieces.append(builder.literal(f"{name}.{index}.dim", np.array([int(item)], np.int64)))
    joined = pieces[0] if len(pieces) == 1 else builder.op("concat", pieces, {"axis": 0}, hint=f"{name}.flat")
    return builder.op("reshape", [joined], {"shape": array.shape}, hint=name)


class Arith:
    """Elementwise expressions of one dtype on the import's builder.

    ``arith("add", x, 1.0)`` adds the op ``add(x, c)``: an operand is a value name or a
    Python number (made the shared scalar const of `dtype`); a result is named
    ``{name}.{tag}`` (``tag`` defaults to the op), or `name` itself with ``final=True``.
    """

    def __init__(self, ctx, dtype: DType, name: str):
        self.builder, self.dtype, self.name = ctx.builder, dtype, name

    def const(self, value) -> str:
        return self.builder.scalar(value, self.dtype)

    def __call__(self, op: str, *operands, attrs=None, tag: str | None = None, final: bool = False) -> str:
        values = [self.const(item) if isinstance(item, (int, float, np.number)) else item for item in operands]
        name = self.name if final else f"{self.name}.{tag or op}"
        return self.builder.op(op, values, attrs, hint=name)


# --- static evaluation -----------------------------------------------------------------
def _numeric(values: np.ndarray) -> np.ndarray:
    return concrete(values, "a static tensor")


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype == object or b.dtype == object:
        return np.floor_divide(a, b)
    if np.issubdtype(a.dtype, np.integer):
        quotient = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -quotient, quotient).astype(a.dtype)
    return (a / b).astype(a.dtype)


_FOLD_BINARY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": _divide,
    "Pow": lambda a, b: np.power(_numeric(a), _numeric(b)).astype(a.dtype),
    "Equal": np.equal, "Less": np.less, "LessOrEqual": np.less_equal, "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal, "And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
}
_FOLD_UNARY = {
    "Neg": np.negative, "Abs": np.abs, "Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log, "Tanh": np.tanh,
    "Relu": lambda x: np.maximum(x, 0).astype(x.dtype), "Sigmoid": lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype),
    "Erf": erf, "Sin": np.sin, "Cos": np.cos, "Not": np.logical_not, "Reciprocal": lambda x: (1 / x).astype(x.dtype),
    "Floor": np.floor, "Ceil": np.ceil, "IsNaN": np.isnan,
}


# --- elementwise -----------------------------------------------------------------------
UNARY = {"Relu": "relu", "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Neg": "neg", "Abs": "abs", "Tanh": "tanh",
         "Sigmoid": "sigmoid", "Erf": "erf", "Sin": "sin", "Cos": "cos", "Floor": "floor", "Ceil": "ceil"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Equal": "eq", "Less": "lt",
          "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge", "And": "minimum", "Or": "maximum", "Xor": "ne"}


def convert_unary(ctx, node, attrs):
    x = node.input[0]
    if foldable(ctx, node) and node.op_type in _FOLD_UNARY:
        return [_FOLD_UNARY[node.op_type](_numeric(ctx.static(x)))]
    return [ctx.builder.op(UNARY[node.op_type], [ctx.value(x)], hint=hint(node))]


def convert_binary(ctx, node, attrs):
    left, right = node.input[0], node.input[1]
    if foldable(ctx, node) and node.op_type in _FOLD_BINARY:
        return [_FOLD_BINARY[node.op_type](ctx.static(left), ctx.static(right))]
    if node.op_type == "Pow":
        return [_power(ctx, node, left, right)]
    dtype = first_dtype(ctx, [left, right])
    operands = [operand(ctx, left, dtype), operand(ctx, right, dtype)]
    return [ctx.builder.op(BINARY[node.op_type], operands, hint=hint(node))]


def _power(ctx, node, base: str, exponent: str) -> str:
    """Pow has the base's type: a float base reads the exponent in its own type; an integer
    base with a float exponent is raised in f64 and truncated back (as ONNX's reference
    casts its float result)."""
    dtype = ctx.type(base).dtype
    if dtype.is_float or not ctx.type(exponent).dtype.is_float:
        return ctx.builder.op("pow", [operand(ctx, base, dtype), operand(ctx, exponent, dtype)], hint=hint(node))
    raised = ctx.builder.op("pow", [operand(ctx, base, DType.f64), operand(ctx, exponent, DType.f64)],
                            hint=f"{hint(node)}.f64")
    return ctx.builder.op("cast", [raised], {"to": dtype}, hint=hint(node))


def convert_mod(ctx, node, attrs):
    """Mod: fmod=0 takes the divisor's sign (``mod``; on floats from opset 28, which
    defines it), fmod=1 the dividend's (``fmod``)."""
    truncated = bool(attrs.get("fmod", 0))
    left, right = node.input[0], node.input[1]
    if foldable(ctx, node):
        a, b = ctx.static(left), ctx.static(right)
        return [np.fmod(_numeric(a), _numeric(b)) if truncated else np.mod(a, b)]
    dtype = first_dtype(ctx, [left, right])
    if dtype.is_float and not truncated and ctx.opset < 28:
        raise UnsupportedModel(f"Mod with fmod=0 on floats at opset {ctx.opset}",
                               expected="fmod=1 for float operands before opset 28 (which defines the floored one)")
    operands = [operand(ctx, left, dtype), operand(ctx, right, dtype)]
    return [ctx.builder.op("fmod" if truncated else "mod", operands, hint=hint(node))]


def _static_extreme(a: np.ndarray, b: np.ndarray, larger: bool) -> np.ndarray:
    """Elementwise max (or min) of static values that may hold symbolic dims: decided where
    the difference has one sign for every value of the symbols, else an error."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != object and b.dtype != object:
        return np.maximum(a, b) if larger else np.minimum(a, b)

    def pick(left, right):
        if never_negative(sub(left, right)):
            return left if larger else right
        if never_negative(sub(right, left)):
            return right if larger else left
        raise UnsupportedModel(f"the {'max' if larger else 'min'} of {format_dim(left)} and {format_dim(right)} "
                               "depends on the values of the symbols", expected="static dims (import with "
                               "--batch-size N)")

    return np.frompyfunc(pick, 2, 1)(a, b)


def _static_maximum(a, b):
    return _static_extreme(a, b, True)


def _static_minimum(a, b):
    return _static_extreme(a, b, False)


def convert_variadic(ctx, node, attrs):
    """Sum, Mean, Max, Min: a left fold of the binary op (Mean divides by the count)."""
    names = present(node)
    if foldable(ctx, node):
        function = {"Sum": np.add, "Mean": np.add, "Max": _static_maximum, "Min": _static_minimum}[node.op_type]
        total = ctx.static(names[0])
        for name in names[1:]:
            total = function(total, ctx.static(name))
        return [total / len(names) if node.op_type == "Mean" else total]
    op = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum"}[node.op_type]
    dtype = first_dtype(ctx, names)
    result = operand(ctx, names[0], dtype)
    for index, name in enumerate(names[1:], start=1):
        last = index == len(names) - 1 and node.op_type != "Mean"
        name_hint = hint(node) if last else f"{hint(node)}.{index}"
        result = ctx.builder.op(op, [result, operand(ctx, name, dtype)], hint=name_hint)
    if node.op_type == "Mean":
        result = ctx.builder.op("div", [result, ctx.builder.scalar(len(names), dtype)], hint=hint(node))
    return [result]


def convert_not(ctx, node, attrs):
    if foldable(ctx, node):
        return [np.logical_not(ctx.static(node.input[0]))]
    false = ctx.builder.scalar(False, DType.bool)
    return [ctx.builder.op("eq", [ctx.value(node.input[0]), false], hint=hint(node))]


def convert_isnan(ctx, node, attrs):
    if foldable(ctx, node):
        return [np.isnan(_numeric(ctx.static(node.input[0])))]
    x = ctx.value(node.input[0])
    return [ctx.builder.op("ne", [x, x], hint=hint(node))]  # only NaN differs from itself (never an integer)


def convert_reciprocal(ctx, node, attrs):
    if foldable(ctx, node):
        return [_FOLD_UNARY["Reciprocal"](_numeric(ctx.static(node.input[0])))]
    x = ctx.value(node.input[0])
    one = ctx.builder.scalar(1, ctx.builder.type(x).dtype)
    return [ctx.builder.op("div", [one, x], hint=hint(node))]


def convert_clip(ctx, node, attrs):
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    if ctx.opset < 11:
        low, high = attrs.get("min"), attrs.get("max")
        low = None if low is None else ctx.builder.scalar(low, dtype)
        high = None if high is None else ctx.builder.scalar(high, dtype)
    else:
        low = operand(ctx, optional_input(node, 1), dtype) if optional_input(node, 1) else None
        high = operand(ctx, optional_input(node, 2), dtype) if optional_input(node, 2) else None
    result = x
    if low is not None:
        result = ctx.builder.op("maximum", [result, low], hint=f"{hint(node)}.low" if high else hint(node))
    if high is not None:
        result = ctx.builder.op("minimum", [result, high], hint=hint(node))
    return [result]


def convert_leaky_relu(ctx, node, attrs):
    alpha = attrs.get("alpha", 0.01)
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    scaled = ctx.builder.op("mul", [x, ctx.builder.scalar(alpha, dtype)], hint=f"{hint(node)}.scaled")
    if 0 <= alpha <= 1:  # max(x, a x) is leaky relu exactly when 0 <= a <= 1
        return [ctx.builder.op("maximum", [x, scaled], hint=hint(node))]
    positive = ctx.builder.op("gt", [x, ctx.builder.scalar(0, dtype)], hint=f"{hint(node)}.positive")
    return [ctx.builder.op("where", [positive, x, scaled], hint=hint(node))]


def convert_hard_sigmoid(ctx, node, attrs, alpha: float | None = None, beta: float | None = None, name=None):
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    alpha = attrs.get("alpha", 0.2) if alpha is None else alpha
    beta = attrs.get("beta", 0.5) if beta is None else beta
    out = name or hint(node)
    line = ctx.builder.op("mul", [x, ctx.builder.scalar(alpha, dtype)], hint=f"{out}.scaled")
    line = ctx.builder.op("add", [line, ctx.builder.scalar(beta, dtype)], hint=f"{out}.shifted")
    line = ctx.builder.op("maximum", [line, ctx.builder.scalar(0, dtype)], hint=f"{out}.low")
    return [ctx.builder.op("minimum", [line, ctx.builder.scalar(1, dtype)], hint=out)]


def convert_hard_swish(ctx, node, attrs):
    gate = convert_hard_sigmoid(ctx, node, attrs, 1 / 6, 0.5, name=f"{hint(node)}.gate")[0]
    return [ctx.builder.op("mul", [ctx.value(node.input[0]), gate], hint=hint(node))]


def convert_prelu(ctx, node, attrs):
    """PRelu: x where x >= 0, slope * x elsewhere. Before opset 7 a 1-D slope of C values
    is per channel (axis 1), not broadcast from the last axis."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    dtype = type_.dtype
    slope = operand(ctx, node.input[1], dtype)
    slope_shape = ctx.builder.type(slope).shape
    if ctx.opset < 7 and type_.rank > 2 and len(slope_shape) == 1 and slope_shape[0] != 1:
        slope = ctx.builder.op("reshape", [slope], {"shape": (slope_shape[0],) + (1,) * (type_.rank - 2)},
                               hint=f"{hint(node)}.per_channel")
    scaled = ctx.builder.op("mul", [x, slope], hint=f"{hint(node)}.scaled")
    positive = ctx.builder.op("ge", [x, ctx.builder.scalar(0, dtype)], hint=f"{hint(node)}.positive")
    return [ctx.builder.op("where", [positive, x, scaled], hint=hint(node))]


def convert_gelu(ctx, node, attrs):
    approximate = attrs.get("approximate", "none") == "tanh"
    return [ctx.builder.op("gelu", [ctx.value(node.input[0])], {"approximate": approximate}, hint=hint(node))]


def convert_where(ctx, node, attrs):
    if foldable(ctx, node):
        return [np.where(*(ctx.static(name) for name in node.input))]
    dtype = first_dtype(ctx, node.input[1:])
    operands = [operand(ctx, node.input[0], DType.bool), operand(ctx, node.input[1], dtype),
                operand(ctx, node.input[2], dtype)]
    return [ctx.builder.op("where", operands, hint=hint(node))]


def convert_cast(ctx, node, attrs):
    if node.op_type == "CastLike":
        dtype = ctx.type(node.input[1]).dtype
    else:
        dtype = onnx_dtype(attrs["to"], "Cast's target")
    x = node.input[0]
    if ctx.is_static(x):
        values = ctx.static(x)
        if values.dtype == object:  # shape arithmetic: dims stay dims under an integer cast
            return [values if dtype.is_integer else _numeric(values).astype(dtype.numpy)]
        return [values.astype(dtype.numpy)]
    value = ctx.value(x)
    if ctx.builder.type(value).dtype is dtype:
        return [value]
    return [ctx.builder.op("cast", [value], {"to": dtype}, hint=hint(node))]


def convert_identity(ctx, node, attrs):
    x = node.input[0]
    return [ctx.static(x) if ctx.is_static(x) else ctx.value(x)]


def convert_dropout(ctx, node, attrs):
    """Dropout at inference: the input, and a mask of all true (bool from opset 10, the
    input's type before). From opset 12 a ``training_mode`` input may ask for random
    dropping; that is refused unless it is a constant false (or the ratio a constant 0)."""
    if ctx.opset >= 12 and optional_input(node, 2) is not None and _training(ctx, node):
        raise UnsupportedModel("Dropout in training mode (it draws a random mask)",
                               expected="training_mode false, as at inference")
    x = node.input[0]
    result = ctx.static(x) if ctx.is_static(x) else ctx.value(x)
    if unused(ctx, node, 1):
        return [result, None]
    type_ = ctx.type(x)
    mask_type = TensorType(DType.bool if ctx.opset >= 10 else type_.dtype, type_.shape)
    return [result, ctx.builder.splat(hint(node, 1), 1, mask_type)]


def _training(ctx, node) -> bool:
    """Whether Dropout's training_mode (input 2) holds: constant true with a ratio that is
    not a constant 0; an input computed at run time is refused."""
    mode = static_input(ctx, node, 2, "training_mode")
    if not bool(concrete(mode, "Dropout's training_mode").reshape(-1)[0]):
        return False
    ratio = optional_input(node, 1)
    if ratio is None:
        return True
    ratio_value = static_input(ctx, node, 1, "ratio")
    return float(concrete(ratio_value, "Dropout's ratio").reshape(-1)[0]) != 0.0


# --- softmax ---------------------------------------------------------------------------
def convert_softmax(ctx, node, attrs):
    """Softmax onto ``softmax``; LogSoftmax as the max-shifted `log_softmax` (a log of the
    softmax would round tiny probabilities to log 0 = -inf). Before opset 13 both
    normalise over all dims from `axis` on, flattened."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    name = hint(node)
    normalize = log_softmax if node.op_type == "LogSoftmax" else _softmax
    if ctx.opset >= 13:
        return [normalize(ctx, x, normalize_axis(attrs.get("axis", -1), type_.rank), name)]
    axis = normalize_axis(attrs.get("axis", 1), type_.rank)
    if axis == type_.rank - 1:
        return [normalize(ctx, x, axis, name)]
    rows, columns = product(type_.shape[:axis]), product(type_.shape[axis:])
    flat = ctx.builder.op("reshape", [x], {"shape": (rows, columns)}, hint=f"{name}.flat")
    normalized = normalize(ctx, flat, 1, f"{name}.rows")
    return [ctx.builder.op("reshape", [normalized], {"shape": tuple(type_.shape)}, hint=name)]


def _softmax(ctx, x: str, axis: int, name: str) -> str:
    # the last axis is written as the op's default -1, the canonical text
    last = axis == ctx.builder.type(x).rank - 1
    return ctx.builder.op("softmax", [x], {"axis": -1 if last else axis}, hint=name)


def log_softmax(ctx, x: str, axis: int, name: str) -> str:
    """x - m - log(sum(exp(x - m))) over `axis`, m the max there (no log of a rounded 0)."""
    type_ = ctx.builder.type(x)
    if not type_.dtype.is_float:
        raise UnsupportedModel(f"a log-softmax of a {type_.dtype} tensor", expected="a float tensor")
    f = Arith(ctx, type_.dtype, name)
    spec = {"axes": (axis,), "keepdims": True}
    shifted = f("sub", x, f("reduce_max", x, attrs=spec, tag="max"), tag="shifted")
    total = f("log", f("reduce_sum", f("exp", shifted), attrs=spec, tag="sum"), tag="log_sum")
    return f("sub", shifted, total, final=True)


def product(dims) -> object:
    total = 1
    for dim in dims:
        total = mul(total, dim)
    return total


# --- matmul ----------------------------------------------------------------------------
def convert_matmul(ctx, node, attrs):
    dtype = first_dtype(ctx, node.input[:2])
    return [ctx.builder.op("matmul", [operand(ctx, node.input[0], dtype), operand(ctx, node.input[1], dtype)],
                           hint=hint(node))]


def _converters() -> dict:
    table = {op: convert_unary for op in UNARY}
    table.update({op: convert_binary for op in BINARY})
    table.update({op: convert_variadic for op in ("Sum", "Mean")})
    table.update({
        "Mod": convert_mod, "Max": convert_variadic, "Min": convert_variadic, "Not": convert_not, "IsNaN": convert_isnan, "Reciprocal": convert_reciprocal,
        "Clip": convert_clip, "LeakyRelu": convert_leaky_relu, "HardSigmoid": convert_hard_sigmoid,
        "HardSwish": convert_hard_swish, "PRelu": convert_prelu,
        "Gelu": convert_gelu, "Where": convert_where, "Cast": convert_cast, "CastLike": convert_cast,
        "Identity": convert_identity, "Dropout": convert_dropout, "Softmax": convert_softmax,
        "LogSoftmax": convert_softmax, "MatMul": convert_matmul,
    })
    return table


register(_converters())
