"""ONNX op -> core ops: elementwise, shape and tensor ops, and the table of every converter.

A converter is ``convert(ctx, node, attrs) -> [result per output]``; a result is an rlx
value name, a NumPy array (the output is static: shape arithmetic evaluated while
importing, possibly holding symbolic dims), or None (an optional output nobody reads).
Network ops (conv, pooling, norms, Gemm, LRN, Pad) are in `rlxir.importers.onnx_nn`.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx import concrete, normalize_static, onnx_dtype
from rlxir.ops import broadcast_shapes, normalize_axis
from rlxir.ops.reference import erf
from rlxir.symbolic import Expr, mul

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


def fold_weight(ctx, node) -> bool:
    return any(name in ctx.weights for name in present(node))


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
    "Floor": np.floor, "Ceil": np.ceil,
}


# --- elementwise -----------------------------------------------------------------------
UNARY = {"Relu": "relu", "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Neg": "neg", "Abs": "abs", "Tanh": "tanh",
         "Sigmoid": "sigmoid", "Erf": "erf", "Sin": "sin", "Cos": "cos"}
BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Equal": "eq", "Less": "lt", "LessOrEqual": "le", "Greater": "gt", "GreaterOrEqual": "ge",
          "And": "minimum", "Or": "maximum", "Xor": "ne"}


def convert_unary(ctx, node, attrs):
    x = node.input[0]
    if foldable(ctx, node) and node.op_type in _FOLD_UNARY:
        return [_FOLD_UNARY[node.op_type](_numeric(ctx.static(x)))]
    return [ctx.builder.op(UNARY[node.op_type], [ctx.value(x)], hint=hint(node))]


def convert_binary(ctx, node, attrs):
    left, right = node.input[0], node.input[1]
    if foldable(ctx, node) and node.op_type in _FOLD_BINARY:
        return [_FOLD_BINARY[node.op_type](ctx.static(left), ctx.static(right))]
    dtype = ctx.type(left).dtype if node.op_type == "Pow" else first_dtype(ctx, [left, right])
    operands = [operand(ctx, left, dtype), operand(ctx, right, dtype)]
    return [ctx.builder.op(BINARY[node.op_type], operands, hint=hint(node))]


def convert_variadic(ctx, node, attrs):
    """Sum, Mean, Max, Min: a left fold of the binary op (Mean divides by the count)."""
    names = present(node)
    if foldable(ctx, node):
        function = {"Sum": np.add, "Mean": np.add, "Max": np.maximum, "Min": np.minimum}[node.op_type]
        total = ctx.static(names[0])
        for name in names[1:]:
            total = function(total, ctx.static(name))
        return [total / len(names) if node.op_type == "Mean" else total]
    op = {"Sum": "add", "Mean": "add", "Max": "maximum", "Min": "minimum"}[node.op_type]
    dtype = first_dtype(ctx, names)
    result = operand(ctx, names[0], dtype)
    for index, name in enumerate(names[1:], start=1):
        last = index == len(names) - 1 and node.op_type != "Mean"
        result = ctx.builder.op(op, [result, operand(ctx, name, dtype)], hint=hint(node) if last else f"{hint(node)}.{index}")
    if node.op_type == "Mean":
        result = ctx.builder.op("div", [result, ctx.builder.scalar(len(names), dtype)], hint=hint(node))
    return [result]


def convert_not(ctx, node, attrs):
    if foldable(ctx, node):
        return [np.logical_not(ctx.static(node.input[0]))]
    false = ctx.builder.scalar(False, DType.bool)
    return [ctx.builder.op("eq", [ctx.value(node.input[0]), false], hint=hint(node))]


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


def convert_softplus(ctx, node, attrs):
    x = ctx.value(node.input[0])
    exp = ctx.builder.op("exp", [x], hint=f"{hint(node)}.exp")
    shifted = ctx.builder.op("add", [exp, ctx.builder.scalar(1, ctx.builder.type(x).dtype)], hint=f"{hint(node)}.plus1")
    return [ctx.builder.op("log", [shifted], hint=hint(node))]


def convert_elu(ctx, node, attrs):
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    exp = ctx.builder.op("exp", [x], hint=f"{hint(node)}.exp")
    minus = ctx.builder.op("sub", [exp, ctx.builder.scalar(1, dtype)], hint=f"{hint(node)}.expm1")
    negative = ctx.builder.op("mul", [minus, ctx.builder.scalar(attrs.get("alpha", 1.0), dtype)], hint=f"{hint(node)}.neg")
    positive = ctx.builder.op("gt", [x, ctx.builder.scalar(0, dtype)], hint=f"{hint(node)}.positive")
    return [ctx.builder.op("where", [positive, x, negative], hint=hint(node))]


def convert_prelu(ctx, node, attrs):
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    slope = operand(ctx, node.input[1], dtype)
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
    if node.op_type == "Dropout":
        refuse_used_outputs(ctx, node, 1, "the dropout mask")
    x = node.input[0]
    return [ctx.static(x) if ctx.is_static(x) else ctx.value(x)]


# --- softmax and reductions ------------------------------------------------------------
def convert_softmax(ctx, node, attrs):
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    log = node.op_type == "LogSoftmax"
    if ctx.opset >= 13:
        result = ctx.builder.op("softmax", [x], {"axis": attrs.get("axis", -1)}, hint=f"{hint(node)}.softmax" if log else hint(node))
    else:
        result = _softmax_coerced(ctx, node, x, type_, normalize_axis(attrs.get("axis", 1), type_.rank), log)
    if log:
        result = ctx.builder.op("log", [result], hint=hint(node))
    return [result]


def _softmax_coerced(ctx, node, x, type_, axis, log):
    """Before opset 13, Softmax normalises over all dims from `axis` on, flattened."""
    name = f"{hint(node)}.softmax" if log else hint(node)
    if axis == type_.rank - 1:
        return ctx.builder.op("softmax", [x], {"axis": -1}, hint=name)
    rows, columns = product(type_.shape[:axis]), product(type_.shape[axis:])
    flat = ctx.builder.op("reshape", [x], {"shape": (rows, columns)}, hint=f"{hint(node)}.flat")
    normalized = ctx.builder.op("softmax", [flat], {"axis": -1}, hint=f"{hint(node)}.rows")
    return ctx.builder.op("reshape", [normalized], {"shape": tuple(type_.shape)}, hint=name)


def product(dims) -> object:
    total = 1
    for dim in dims:
        total = mul(total, dim)
    return total


REDUCTIONS = {"ReduceMean": ("reduce_mean", 18), "ReduceSum": ("reduce_sum", 13), "ReduceMax": ("reduce_max", 18),
              "ReduceMin": ("reduce_min", 18)}


def convert_reduce(ctx, node, attrs):
    op, since = REDUCTIONS[node.op_type]
    x = ctx.value(node.input[0])
    rank = ctx.builder.type(x).rank
    axes = axes_argument(ctx, node, attrs, 1, since)
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(rank))
    keepdims = bool(attrs.get("keepdims", 1))
    return [ctx.builder.op(op, [x], {"axes": tuple(axes), "keepdims": keepdims}, hint=hint(node))]


# --- matmul ----------------------------------------------------------------------------
def convert_matmul(ctx, node, attrs):
    dtype = first_dtype(ctx, node.input[:2])
    return [ctx.builder.op("matmul", [operand(ctx, node.input[0], dtype), operand(ctx, node.input[1], dtype)],
                           hint=hint(node))]


# --- shape ops -------------------------------------------------------------------------
def convert_shape(ctx, node, attrs):
    shape = list(ctx.shape(node.input[0]))
    start, end = attrs.get("start", 0), attrs.get("end")
    picked = shape[start:end] if end is not None else shape[start:]
    return [normalize_static(np.array(picked, dtype=object)) if picked else np.zeros((0,), np.int64)]


def convert_size(ctx, node, attrs):
    return [normalize_static(np.array(product(ctx.shape(node.input[0])), dtype=object))]


def convert_constant(ctx, node, attrs):
    from onnx import numpy_helper

    for key, convert in (("value", numpy_helper.to_array), ("value_float", lambda v: np.array(v, np.float32)),
                         ("value_floats", lambda v: np.array(v, np.float32)), ("value_int", lambda v: np.array(v, np.int64)),
                         ("value_ints", lambda v: np.array(v, np.int64))):
        if key in attrs:
            return [convert(attrs[key])]
    raise UnsupportedModel(f"Constant with attribute {', '.join(attrs) or 'none'}",
                           expected="value, value_float(s) or value_int(s)")


def convert_constant_of_shape(ctx, node, attrs):
    from onnx import numpy_helper

    fill = numpy_helper.to_array(attrs["value"]).reshape(-1) if "value" in attrs else np.zeros(1, np.float32)
    dims = static_ints(ctx, node, 0, "shape")
    if all(isinstance(dim, int) for dim in dims):
        # The onnx backend test models store every weight as a ConstantOfShape: a param.
        ctx.weights.add(node.output[0])
        return [np.broadcast_to(fill[0], tuple(dims))]
    from rlxir.importers.builder import dtype_of_array
    from rlxir.types import TensorType

    return [ctx.builder.splat(hint(node), fill[0].item(), TensorType(dtype_of_array(fill), dims))]


def reshape_target(ctx, x_shape, target, allow_zero: bool) -> tuple:
    """ONNX Reshape's target as a `reshape` shape attribute (0 copies the input dim)."""
    target = [x_shape[index] if dim == 0 and not allow_zero else dim for index, dim in enumerate(target)]
    batch = Expr.symbol(ctx.batch_dim)
    if ctx.static_batch is not None and target and x_shape and x_shape[0] == batch and target[0] == ctx.static_batch:
        target[0] = batch
    return tuple(target)


def convert_reshape(ctx, node, attrs):
    target = static_ints(ctx, node, 1, "shape") if ctx.opset >= 5 else [int(dim) for dim in attrs["shape"]]
    allow_zero = bool(attrs.get("allowzero", 0))
    x = node.input[0]
    if foldable(ctx, node) or ctx.is_static(x) and ctx.static(x).size <= FOLD_LIMIT and ctx.opset < 5:
        values = ctx.static(x)
        shape = [values.shape[index] if dim == 0 and not allow_zero else dim for index, dim in enumerate(target)]
        return [values.reshape(shape)]
    value = ctx.value(x)
    shape = reshape_target(ctx, ctx.builder.type(value).shape, target, allow_zero)
    return [_reshape(ctx, value, shape, hint(node))]


def _reshape(ctx, value: str, shape, name: str) -> str:
    if tuple(shape) == tuple(ctx.builder.type(value).shape):
        return value
    return ctx.builder.op("reshape", [value], {"shape": tuple(shape)}, hint=name)


def convert_flatten(ctx, node, attrs):
    x = node.input[0]
    shape = ctx.shape(x)
    axis = attrs.get("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    target = (product(shape[:axis]), product(shape[axis:]))
    if foldable(ctx, node):
        return [ctx.static(x).reshape(target)]
    return [_reshape(ctx, ctx.value(x), target, hint(node))]


def convert_squeeze(ctx, node, attrs):
    x = node.input[0]
    shape = ctx.shape(x)
    axes = axes_argument(ctx, node, attrs, 1, 13)
    axes = [index for index, dim in enumerate(shape) if dim == 1] if axes is None else [a % len(shape) for a in axes]
    target = tuple(dim for index, dim in enumerate(shape) if index not in axes)
    if foldable(ctx, node):
        return [ctx.static(x).reshape(target)]
    return [_reshape(ctx, ctx.value(x), target, hint(node))]


def convert_unsqueeze(ctx, node, attrs):
    x = node.input[0]
    shape = list(ctx.shape(x))
    axes = axes_argument(ctx, node, attrs, 1, 13) or []
    rank = len(shape) + len(axes)
    for axis in sorted(axis % rank for axis in axes):
        shape.insert(axis, 1)
    if foldable(ctx, node):
        return [ctx.static(x).reshape(shape)]
    return [_reshape(ctx, ctx.value(x), shape, hint(node))]


def convert_transpose(ctx, node, attrs):
    x = node.input[0]
    rank = len(ctx.shape(x))
    perm = tuple(attrs.get("perm", range(rank - 1, -1, -1)))
    if foldable(ctx, node):
        return [np.transpose(ctx.static(x), perm)]
    if perm == tuple(range(rank)):
        return [ctx.value(x)]
    return [ctx.builder.op("transpose", [ctx.value(x)], {"perm": perm}, hint=hint(node))]


def convert_concat(ctx, node, attrs):
    names = present(node)
    axis = attrs["axis"]
    if foldable(ctx, node):
        return [np.concatenate([ctx.static(name) for name in names], axis=axis)]
    dtype = first_dtype(ctx, names)
    names = [name for name in names if 0 not in ctx.shape(name)]  # ONNX allows empty pieces
    operands = [operand(ctx, name, dtype) for name in names]
    if len(operands) == 1:
        return operands
    return [ctx.builder.op("concat", operands, {"axis": axis}, hint=hint(node))]


def slice_arguments(ctx, node, attrs) -> tuple[list, list, list, list]:
    if ctx.opset < 10:
        starts, ends = list(attrs["starts"]), list(attrs["ends"])
        axes = list(attrs.get("axes", range(len(starts))))
        return starts, ends, axes, [1] * len(starts)
    starts = static_ints(ctx, node, 1, "starts")
    ends = static_ints(ctx, node, 2, "ends")
    axes = static_ints(ctx, node, 3, "axes") if optional_input(node, 3) else list(range(len(starts)))
    steps = static_ints(ctx, node, 4, "steps") if optional_input(node, 4) else [1] * len(starts)
    return starts, ends, axes, steps


def slice_bounds(start, end, step, dim) -> tuple[int, int] | None:
    """[start, end) clamped as ONNX does for a positive step, or None when it is the whole
    (possibly symbolic) dim."""
    if isinstance(start, int) and start == 0 and isinstance(end, int) and end >= INT64_MAX // 2:
        return None
    if not isinstance(dim, int):
        if start == 0 and end == dim:
            return None
        raise UnsupportedModel(f"a Slice of the symbolic dim {dim} from {start} to {end}",
                               expected="slices of static dims, or of the whole dim")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    return min(max(start, 0), dim), min(max(end, 0), dim)


def convert_slice(ctx, node, attrs):
    starts, ends, axes, steps = slice_arguments(ctx, node, attrs)
    x = node.input[0]
    if ctx.is_static(x) and ctx.static(x).size <= FOLD_LIMIT:
        values = ctx.static(x)
        index = [slice(None)] * values.ndim
        for start, end, axis, step in zip(starts, ends, axes, steps):
            index[axis % values.ndim] = slice(int(start), int(min(end, INT64_MAX)), int(step))
        return [values[tuple(index)]]
    result = ctx.value(x)
    shape = ctx.builder.type(result).shape
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step != 1:
            raise UnsupportedModel(f"a Slice with step {step}", expected="step 1 (the IR's slice is contiguous)")
        axis = normalize_axis(axis, len(shape))
        bounds = slice_bounds(start, end, step, shape[axis])
        if bounds is None or bounds == (0, shape[axis]):
            continue
        begin, stop = bounds
        result = ctx.builder.op("slice", [result], {"axis": axis, "start": begin, "len": max(stop - begin, 0)},
                                hint=hint(node))
    return [result]


def convert_split(ctx, node, attrs):
    x = node.input[0]
    shape = ctx.shape(x)
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    dim = shape[axis]
    outputs = len(node.output)
    if ctx.opset >= 13 and optional_input(node, 1):
        sizes = static_ints(ctx, node, 1, "split")
    elif ctx.opset < 13 and "split" in attrs:
        sizes = [int(size) for size in attrs["split"]]
    else:
        if not isinstance(dim, int):
            raise UnsupportedModel(f"a Split of the symbolic dim {dim}", expected="splits of static dims")
        count = attrs.get("num_outputs", outputs)
        chunk = -(-dim // count)
        sizes = [min(chunk, dim - index * chunk) for index in range(count)]
    value = ctx.static(x) if ctx.is_static(x) else ctx.value(x)
    results, start = [], 0
    for index, size in enumerate(sizes):
        if isinstance(value, np.ndarray):
            results.append(np.take(value, range(start, start + size), axis=axis))
        else:
            results.append(ctx.builder.op("slice", [value], {"axis": axis, "start": start, "len": size},
                                          hint=hint(node, index)))
        start += size
    return results


def convert_gather(ctx, node, attrs):
    table, indices = node.input[0], node.input[1]
    shape = ctx.shape(table)
    axis = normalize_axis(attrs.get("axis", 0), len(shape))
    if ctx.is_static(indices):
        index = np.asarray(concrete(ctx.static(indices), "Gather's indices"))
        dim = shape[axis]
        if isinstance(dim, int):
            index = np.where(index < 0, index + dim, index)
        elif np.any(index < 0):
            raise UnsupportedModel(f"Gather with negative indices into the symbolic dim {dim}")
        if ctx.is_static(table) and ctx.static(table).size <= FOLD_LIMIT:
            return [np.take(ctx.static(table), index, axis=axis)]
        index_value = ctx.builder.tensor(f"{hint(node)}.idx", index.astype(np.int64))
    else:
        index_value = ctx.value(indices)
    return [ctx.builder.op("gather", [ctx.value(table), index_value], {"axis": axis}, hint=hint(node))]


def convert_expand(ctx, node, attrs):
    x = node.input[0]
    target = static_ints(ctx, node, 1, "shape")
    if foldable(ctx, node):
        values = ctx.static(x)
        return [np.broadcast_to(values, np.broadcast_shapes(values.shape, tuple(int(d) for d in target)))]
    value = ctx.value(x)
    shape = tuple(ctx.builder.type(value).shape)
    result = broadcast_shapes(shape, tuple(target))
    if result == shape:
        return [value]
    return [ctx.builder.op("expand", [value], {"shape": result}, hint=hint(node))]


def convert_tile(ctx, node, attrs):
    x = node.input[0]
    repeats = static_ints(ctx, node, 1, "repeats")
    if foldable(ctx, node):
        return [np.tile(ctx.static(x), repeats)]
    result = ctx.value(x)
    for axis, count in enumerate(repeats):
        if count != 1:
            result = ctx.builder.op("concat", [result] * count, {"axis": axis}, hint=hint(node))
    return [result]


def convert_range(ctx, node, attrs):
    start, limit, delta = (static_input(ctx, node, index, what).reshape(()).item()
                           for index, what in enumerate(("start", "limit", "delta")))
    if not any(isinstance(value, Expr) for value in (start, limit, delta)):
        dtype = ctx.static(node.input[0]).dtype
        return [np.arange(start, limit, delta, dtype=dtype)]
    if delta != 1 or not isinstance(start, int):
        raise UnsupportedModel(f"Range({start}, {limit}, {delta}) over a symbolic dim", expected="a step of 1")
    # [start, limit) as an exclusive running sum of ones: the IR has no iota op.
    from rlxir.types import TensorType

    count = limit - start
    ones = ctx.builder.splat(f"{hint(node)}.ones", 1, TensorType(DType.i64, (count,)))
    steps = ctx.builder.op("cumsum", [ones], {"axis": 0, "exclusive": True}, hint=f"{hint(node)}.steps")
    if start == 0:
        return [steps]
    return [ctx.builder.op("add", [steps, ctx.builder.scalar(start, DType.i64)], hint=hint(node))]


def _converters() -> dict:
    from rlxir.importers import onnx_nn

    table = {op: convert_unary for op in UNARY}
    table.update({op: convert_binary for op in BINARY})
    table.update({op: convert_variadic for op in ("Sum", "Mean")})
    table.update({op: convert_reduce for op in REDUCTIONS})
    table.update({
        "Max": convert_variadic, "Min": convert_variadic, "Not": convert_not, "Reciprocal": convert_reciprocal,
        "Clip": convert_clip, "LeakyRelu": convert_leaky_relu, "HardSigmoid": convert_hard_sigmoid,
        "HardSwish": convert_hard_swish, "Softplus": convert_softplus, "Elu": convert_elu, "PRelu": convert_prelu,
        "Gelu": convert_gelu, "Where": convert_where, "Cast": convert_cast, "CastLike": convert_cast,
        "Identity": convert_identity, "Dropout": convert_identity, "Softmax": convert_softmax,
        "LogSoftmax": convert_softmax, "MatMul": convert_matmul, "Shape": convert_shape, "Size": convert_size,
        "Constant": convert_constant, "ConstantOfShape": convert_constant_of_shape, "Reshape": convert_reshape,
        "Flatten": convert_flatten, "Squeeze": convert_squeeze, "Unsqueeze": convert_unsqueeze,
        "Transpose": convert_transpose, "Concat": convert_concat, "Slice": convert_slice, "Split": convert_split,
        "Gather": convert_gather, "Expand": convert_expand, "Tile": convert_tile, "Range": convert_range,
    })
    table.update(onnx_nn.CONVERTERS)
    return table


CONVERTERS = _converters()
"""ONNX op type -> converter; every op type `import_onnx` accepts."""
