"""ATen op -> core ops: the helpers converters share, and the elementwise, shape and
constant ops (network ops: `rlxir.importers.torch_nn`; the converter contract and table:
`rlxir.importers.torch_registry`).

Dtypes follow what ``torch.export`` recorded for the node, so PyTorch's type promotion is
respected by casting operands to the recorded result dtype.
"""

from __future__ import annotations

import operator

import torch

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.strided import HUGE, slice_any
from rlxir.importers.torch_registry import Static, converter, op_key, register, torch_dtype
from rlxir.ops import broadcast_shapes, normalize_axis
from rlxir.symbolic import Expr, mul
from rlxir.types import TensorType


# --- helpers ---------------------------------------------------------------------------
def result_dtype(node) -> DType:
    meta = node.meta.get("val")
    if isinstance(meta, (list, tuple)):
        meta = meta[0]
    return torch_dtype(meta.dtype)


def promoted(node) -> DType:
    """The dtype PyTorch computes a comparison of the first two arguments in."""
    metas = [arg.meta["val"] if isinstance(arg, torch.fx.Node) else arg for arg in node.args[:2]]
    return torch_dtype(torch.result_type(*metas))


def operand(ctx, item, dtype: DType | None, hint: str) -> str:
    """`item` as an rlx value of `dtype` (cast when it differs)."""
    value = ctx.value(item, hint, dtype)
    if dtype is not None and ctx.builder.type(value).dtype is not dtype:
        value = ctx.builder.op("cast", [value], {"to": dtype}, hint=f"{hint}.{dtype.value}")
    return value


def shape_of(ctx, item) -> tuple:
    return tuple(ctx.type(item).shape)


def op(ctx, name: str, operands, attrs=None, hint: str = "t") -> str:
    return ctx.builder.op(name, operands, attrs, hint=hint)


def reshape(ctx, value: str, shape, hint: str) -> str:
    if tuple(shape) == shape_of(ctx, value):
        return value
    return op(ctx, "reshape", [value], {"shape": tuple(shape)}, hint)


def read_results(node) -> set[int]:
    """Which results of a node with several the program reads (by position)."""
    return {user.args[1] for user in node.users if user.target is operator.getitem}


def refuse(what: str, expected: str | None = None):
    raise UnsupportedModel(what, expected=expected)


# --- elementwise -----------------------------------------------------------------------
def unary(name: str):
    def handle(ctx, node, args, kwargs):
        return op(ctx, name, [operand(ctx, args[0], result_dtype(node), node.name)], hint=node.name)

    return handle


def binary(name: str, compare: bool = False):
    def handle(ctx, node, args, kwargs):
        dtype = promoted(node) if compare else result_dtype(node)
        left = operand(ctx, args[0], dtype, node.name)
        right = operand(ctx, args[1], dtype, node.name)
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            right = op(ctx, "mul", [right, ctx.builder.scalar(alpha, dtype)], hint=f"{node.name}.alpha")
        return op(ctx, name, [left, right], hint=node.name)

    return handle


@converter("aten.div", "aten.floor_divide")
def handle_div(ctx, node, args, kwargs):
    """True division; rounding_mode "trunc" / "floor" (and floor_divide) round the quotient.
    The IR's integer division truncates; a floored one first subtracts the floored remainder
    (the difference is then a multiple of the divisor, so truncating it floors it)."""
    mode = "floor" if op_key(node.target) == "aten.floor_divide" else kwargs.get("rounding_mode")
    if mode is None:
        return binary("div")(ctx, node, args, kwargs)
    dtype = result_dtype(node)
    left, right = (operand(ctx, item, dtype, node.name) for item in args[:2])
    if dtype.is_integer:
        if mode == "floor":
            remainder = op(ctx, "mod", [left, right], hint=f"{node.name}.mod")
            left = op(ctx, "sub", [left, remainder], hint=f"{node.name}.exact")
        return op(ctx, "div", [left, right], hint=node.name)
    quotient = op(ctx, "div", [left, right], hint=f"{node.name}.quotient")
    if mode == "floor":
        return op(ctx, "floor", [quotient], hint=node.name)
    negative = op(ctx, "lt", [quotient, ctx.builder.scalar(0, dtype)], hint=f"{node.name}.negative")
    return op(ctx, "where", [negative, op(ctx, "ceil", [quotient], hint=f"{node.name}.up"),
                             op(ctx, "floor", [quotient], hint=f"{node.name}.down")], hint=node.name)


@converter("aten.rsub")
def handle_rsub(ctx, node, args, kwargs):
    return binary("sub")(ctx, node, [args[1], args[0]], kwargs)


@converter("aten.reciprocal")
def handle_reciprocal(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    return op(ctx, "div", [ctx.builder.scalar(1, dtype), operand(ctx, args[0], dtype, node.name)], hint=node.name)


@converter("aten.gelu")
def handle_gelu(ctx, node, args, kwargs):
    approximate = kwargs.get("approximate", args[1] if len(args) > 1 else "none") == "tanh"
    return op(ctx, "gelu", [ctx.value(args[0])], {"approximate": approximate}, hint=node.name)


@converter("aten.softplus")
def handle_softplus(ctx, node, args, kwargs):
    """log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (as PyTorch)."""
    beta = args[1] if len(args) > 1 else kwargs.get("beta", 1)
    threshold = args[2] if len(args) > 2 else kwargs.get("threshold", 20)
    x = ctx.value(args[0])
    dtype, name, builder = ctx.builder.type(x).dtype, node.name, ctx.builder
    scaled = op(ctx, "mul", [x, builder.scalar(beta, dtype)], hint=f"{name}.scaled") if beta != 1 else x
    exp = op(ctx, "exp", [scaled], hint=f"{name}.exp")
    log = op(ctx, "log", [op(ctx, "add", [exp, builder.scalar(1, dtype)], hint=f"{name}.plus1")], hint=f"{name}.log")
    smooth = op(ctx, "div", [log, builder.scalar(beta, dtype)], hint=f"{name}.smooth") if beta != 1 else log
    linear = op(ctx, "gt", [scaled, builder.scalar(threshold, dtype)], hint=f"{name}.linear")
    return op(ctx, "where", [linear, x, smooth], hint=name)


@converter("aten.clamp")
def handle_clamp(ctx, node, args, kwargs):
    low = args[1] if len(args) > 1 else kwargs.get("min")
    high = args[2] if len(args) > 2 else kwargs.get("max")
    dtype = result_dtype(node)
    result = operand(ctx, args[0], dtype, node.name)
    if low is not None:
        result = op(ctx, "maximum", [result, operand(ctx, low, dtype, node.name)], hint=f"{node.name}.low")
    if high is not None:
        result = op(ctx, "minimum", [result, operand(ctx, high, dtype, node.name)], hint=node.name)
    return result


@converter("aten.hardtanh")
def handle_hardtanh(ctx, node, args, kwargs):
    """clamp(x, min_val, max_val); ReLU6 is hardtanh(0, 6)."""
    low = args[1] if len(args) > 1 else kwargs.get("min_val", -1.0)
    high = args[2] if len(args) > 2 else kwargs.get("max_val", 1.0)
    return handle_clamp(ctx, node, (args[0], low, high), {})


def _hard_sigmoid(ctx, node, x: str) -> str:
    """relu6(x + 3) / 6, as PyTorch's hardsigmoid."""
    builder, name = ctx.builder, node.name
    dtype = builder.type(x).dtype
    shifted = op(ctx, "add", [x, builder.scalar(3, dtype)], hint=f"{name}.plus3")
    clamped = op(ctx, "minimum", [op(ctx, "maximum", [shifted, builder.scalar(0, dtype)], hint=f"{name}.low"),
                                  builder.scalar(6, dtype)], hint=f"{name}.high")
    return op(ctx, "div", [clamped, builder.scalar(6, dtype)], hint=name)


@converter("aten.hardsigmoid")
def handle_hardsigmoid(ctx, node, args, kwargs):
    return _hard_sigmoid(ctx, node, ctx.value(args[0]))


@converter("aten.hardswish")
def handle_hardswish(ctx, node, args, kwargs):
    """x * hardsigmoid(x)."""
    x = ctx.value(args[0])
    gate = _hard_sigmoid(ctx, node, x)
    return op(ctx, "mul", [x, gate], hint=node.name)


@converter("aten.dropout")
def handle_dropout(ctx, node, args, kwargs):
    """Inference: the operand itself (a module in eval mode, or train=False)."""
    train = args[2] if len(args) > 2 else kwargs.get("train", False)
    if train:
        raise UnsupportedModel(f"node {node.name}: aten.dropout in training mode",
                               expected="the module in eval mode (module.eval())")
    return ctx.value(args[0])


@converter("aten.where")
def handle_where(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    condition = operand(ctx, args[0], DType.bool, node.name)
    chosen = [operand(ctx, args[1], dtype, node.name), operand(ctx, args[2], dtype, node.name)]
    return op(ctx, "where", [condition] + chosen, hint=node.name)


@converter("aten.masked_fill")
def handle_masked_fill(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    return op(ctx, "where", [operand(ctx, args[1], DType.bool, node.name), operand(ctx, args[2], dtype, node.name),
                             operand(ctx, args[0], dtype, node.name)], hint=node.name)


@converter("aten.logical_not")
def handle_logical_not(ctx, node, args, kwargs):
    return op(ctx, "eq", [operand(ctx, args[0], DType.bool, node.name), ctx.builder.scalar(False, DType.bool)],
              hint=node.name)


# --- shape ops -------------------------------------------------------------------------
def handle_identity(ctx, node, args, kwargs):
    return args[0]


def handle_skip(ctx, node, args, kwargs):
    return None


@converter("aten.to", "aten._to_copy", "aten.type_as")
def handle_to(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    if isinstance(args[0], Static) and ctx.type(args[0]).dtype is dtype:
        return args[0]
    value = ctx.value(args[0])
    if ctx.builder.type(value).dtype is dtype:
        return value
    return op(ctx, "cast", [value], {"to": dtype}, hint=node.name)


@converter("aten.view", "aten.reshape", "aten._unsafe_view")
def handle_view(ctx, node, args, kwargs):
    return reshape(ctx, ctx.value(args[0]), tuple(args[1]), node.name)


@converter("aten.flatten")
def handle_flatten(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    if not shape:
        return reshape(ctx, x, (1,), node.name)
    start = normalize_axis(args[1] if len(args) > 1 else 0, len(shape))
    end = normalize_axis(args[2] if len(args) > 2 else -1, len(shape))
    merged = 1
    for dim in shape[start:end + 1]:
        merged = mul(merged, dim)
    return reshape(ctx, x, shape[:start] + (merged,) + shape[end + 1:], node.name)


@converter("aten.unflatten")
def handle_unflatten(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[1], len(shape))
    return reshape(ctx, x, shape[:axis] + tuple(args[2]) + shape[axis + 1:], node.name)


@converter("aten.permute")
def handle_permute(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    rank = ctx.builder.type(x).rank
    perm = tuple(normalize_axis(axis, rank) for axis in args[1])
    return x if perm == tuple(range(rank)) else op(ctx, "transpose", [x], {"perm": perm}, hint=node.name)


@converter("aten.transpose", "aten.t")
def handle_transpose(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    rank = ctx.builder.type(x).rank
    if rank < 2:
        return x
    first, second = (normalize_axis(args[1], rank), normalize_axis(args[2], rank)) if len(args) > 1 else (0, 1)
    perm = list(range(rank))
    perm[first], perm[second] = perm[second], perm[first]
    return handle_permute(ctx, node, [x, perm], kwargs)


@converter("aten.unsqueeze")
def handle_unsqueeze(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = list(shape_of(ctx, x))
    shape.insert(normalize_axis(args[1], len(shape) + 1), 1)
    return reshape(ctx, x, shape, node.name)


@converter("aten.squeeze")
def handle_squeeze(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    if len(args) < 2:
        axes = [index for index, dim in enumerate(shape) if dim == 1]
    else:
        axes = [args[1]] if isinstance(args[1], int) else list(args[1])
        axes = [normalize_axis(axis, len(shape)) for axis in axes if shape and shape[axis] == 1]
    return reshape(ctx, x, tuple(dim for index, dim in enumerate(shape) if index not in axes), node.name)


@converter("aten.expand")
def handle_expand(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    sizes = list(args[1])
    offset = len(sizes) - len(shape)
    target = tuple(shape[index - offset] if size == -1 else size for index, size in enumerate(sizes))
    if target == shape:
        return x
    broadcast_shapes(shape, target)
    return op(ctx, "expand", [x], {"shape": target}, hint=node.name)


@converter("aten.cat", "aten.concat")
def handle_cat(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    pieces = [operand(ctx, item, dtype, node.name) for item in args[0]]
    pieces = [piece for piece in pieces if 0 not in shape_of(ctx, piece)]
    axis = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    return pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": axis}, hint=node.name)


@converter("aten.stack")
def handle_stack(ctx, node, args, kwargs):
    dtype = result_dtype(node)
    axis = args[1] if len(args) > 1 else kwargs.get("dim", 0)
    pieces = []
    for index, item in enumerate(args[0]):
        value = operand(ctx, item, dtype, node.name)
        shape = list(shape_of(ctx, value))
        shape.insert(normalize_axis(axis, len(shape) + 1), 1)
        pieces.append(reshape(ctx, value, shape, f"{node.name}.{index}"))
    axis = normalize_axis(axis, len(shape_of(ctx, pieces[0])))
    return pieces[0] if len(pieces) == 1 else op(ctx, "concat", pieces, {"axis": axis}, hint=node.name)


def slice_axis(ctx, value: str, axis: int, start: int, length: int, hint: str) -> str:
    dim = shape_of(ctx, value)[axis]
    if start == 0 and length == dim:
        return value
    return op(ctx, "slice", [value], {"axis": axis, "start": start, "len": length}, hint=hint)


def _split(ctx, node, value: str, sizes, axis: int) -> list[str]:
    results, start = [], 0
    for index, size in enumerate(sizes):
        results.append(slice_axis(ctx, value, axis, start, size, f"{node.name}.{index}"))
        start += size
    return results


def static_dim(dim, what: str) -> int:
    if not isinstance(dim, int):
        refuse(f"{what} of the symbolic dim {dim}", "static dims")
    return dim


@converter("aten.split", "aten.split_with_sizes")
def handle_split(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[2] if len(args) > 2 else kwargs.get("dim", 0), len(shape))
    sizes = args[1]
    if isinstance(sizes, int):
        dim = static_dim(shape[axis], "a split")
        sizes = [min(sizes, dim - start) for start in range(0, dim, sizes)]
    return _split(ctx, node, x, sizes, axis)


@converter("aten.chunk")
def handle_chunk(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[2] if len(args) > 2 else kwargs.get("dim", 0), len(shape))
    dim = static_dim(shape[axis], "a chunk")
    size = -(-dim // args[1])
    return _split(ctx, node, x, [min(size, dim - start) for start in range(0, dim, size)], axis)


@converter("aten.unbind")
def handle_unbind(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[1] if len(args) > 1 else kwargs.get("dim", 0), len(shape))
    count = static_dim(shape[axis], "unbind")
    rest = shape[:axis] + shape[axis + 1:]
    return [reshape(ctx, slice_axis(ctx, x, axis, index, 1, f"{node.name}.{index}.slice"), rest,
                    f"{node.name}.{index}")
            for index in range(count)]


def slice_bounds(dim, start, end, what: str = "a slice") -> tuple[int, int] | None:
    """``[start, end)`` of a PyTorch slice of a dim of size `dim`, negatives counted from the
    end and clamped as PyTorch clamps; None when the slice is the whole dim (of any size)."""
    start = 0 if start is None else start
    whole = end is None or isinstance(end, int) and end >= 2**62 or end == dim
    if start == 0 and whole:
        return None
    dim = static_dim(dim, what)
    end = dim if whole else end
    start, end = (value + dim if value < 0 else value for value in (start, end))
    start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    return start, max(end, start)


@converter("aten.slice")
def handle_slice(ctx, node, args, kwargs):
    """slice(x, dim, start, end, step): any step, on static and symbolic dims
    (`rlxir.importers.strided`)."""
    x = ctx.value(args[0])
    axis = normalize_axis(args[1] if len(args) > 1 else 0, ctx.builder.type(x).rank)
    start = args[2] if len(args) > 2 and args[2] is not None else 0
    end = args[3] if len(args) > 3 and args[3] is not None else HUGE
    step = args[4] if len(args) > 4 else 1
    return slice_any(ctx.builder, x, axis, start, end, step, node.name)


@converter("aten.flip")
def handle_flip(ctx, node, args, kwargs):
    """flip(x, dims): each dim read backwards, a slice with step -1."""
    x = ctx.value(args[0])
    rank = ctx.builder.type(x).rank
    axes = list(args[1])
    for index, axis in enumerate(axes):
        name = node.name if index == len(axes) - 1 else f"{node.name}.{index}"
        x = slice_any(ctx.builder, x, normalize_axis(axis, rank), -1, -HUGE, -1, name)
    return x


@converter("aten.select")
def handle_select(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    shape = shape_of(ctx, x)
    axis = normalize_axis(args[1], len(shape))
    index = args[2]
    if index < 0:
        index += static_dim(shape[axis], "a negative select")
    picked = slice_axis(ctx, x, axis, index, 1, f"{node.name}.slice")
    return reshape(ctx, picked, shape[:axis] + shape[axis + 1:], node.name)


@converter("aten.narrow")
def handle_narrow(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    axis = normalize_axis(args[1], ctx.builder.type(x).rank)
    return slice_axis(ctx, x, axis, args[2], args[3], node.name)


@converter("aten.index_select")
def handle_index_select(ctx, node, args, kwargs):
    """A ``gather`` along dim; a 0-d x (whose one index can only be 0) is x in the result's shape."""
    x = ctx.value(args[0])
    if not shape_of(ctx, x):
        return reshape(ctx, x, tuple(node.meta["val"].shape), node.name)
    return op(ctx, "gather", [x, ctx.value(args[2])], {"axis": args[1]}, hint=node.name)


@converter("operator.getitem", fold=False)
def handle_getitem(ctx, node, args, kwargs):
    return args[0][args[1]]


@converter("aten.sym_size", fold=False)
def handle_sym_size(ctx, node, args, kwargs):
    return shape_of(ctx, args[0])[args[1]]


def python_operator(function):
    def handle(ctx, node, args, kwargs):
        return function(*args)

    return handle


def _floordiv(left, right):
    from rlxir.symbolic import floordiv

    return floordiv(left, right) if isinstance(left, Expr) or isinstance(right, Expr) else left // right


# --- constants -------------------------------------------------------------------------
def filled(ctx, node, shape, fill):
    """A tensor of `fill`: static when the shape is, else a symbolic splat const."""
    dtype = result_dtype(node)
    if all(isinstance(dim, int) for dim in shape):
        return Static(node.name, torch.full(tuple(shape), fill, dtype=node.meta["val"].dtype), False)
    return ctx.builder.splat(node.name, fill, TensorType(dtype, tuple(shape)))


def handle_full(ctx, node, args, kwargs):
    key = op_key(node.target)
    fill = {"aten.zeros": 0, "aten.ones": 1, "aten.new_zeros": 0, "aten.new_ones": 1, "aten.zeros_like": 0,
            "aten.ones_like": 1}.get(key)
    if key in ("aten.zeros", "aten.ones", "aten.empty"):
        shape = args[0]
    elif key in ("aten.new_zeros", "aten.new_ones", "aten.new_empty"):
        shape = args[1]
    elif key == "aten.full":
        shape, fill = args[0], args[1]
    elif key == "aten.new_full":
        shape, fill = args[1], args[2]
    elif key == "aten.full_like":
        shape, fill = shape_of(ctx, args[0]), args[1]
    else:  # zeros_like, ones_like, empty_like
        shape = shape_of(ctx, args[0])
    return filled(ctx, node, list(shape), 0 if fill is None else fill)


@converter("aten.scalar_tensor")
def handle_scalar_tensor(ctx, node, args, kwargs):
    return filled(ctx, node, [], args[0])


@converter("aten.arange")
def handle_arange(ctx, node, args, kwargs):
    """arange(end) / arange(start, end[, step]); a symbolic length is an exclusive running
    sum of ones (the IR has no iota op)."""
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], args[2] if len(args) > 2 else 1)
    meta_dtype = node.meta["val"].dtype
    if not any(isinstance(value, Expr) for value in (start, end, step)):
        return Static(node.name, torch.arange(start, end, step, dtype=meta_dtype), False)
    if step != 1 or not isinstance(start, int):
        refuse(f"arange({start}, {end}, {step}) over a symbolic dim", "step 1")
    dtype = result_dtype(node)
    ones = ctx.builder.splat(f"{node.name}.ones", 1, TensorType(dtype, (end - start,)))
    name = node.name if start == 0 else f"{node.name}.steps"
    steps = op(ctx, "cumsum", [ones], {"axis": 0, "exclusive": True}, hint=name)
    return steps if start == 0 else op(ctx, "add", [steps, ctx.builder.scalar(start, dtype)], hint=node.name)


@converter("aten.gather")
def handle_gather(ctx, node, args, kwargs):
    """torch.gather(x, dim, index) is the IR's gather_elements along `dim`."""
    x = ctx.value(args[0])
    axis = normalize_axis(args[1], len(shape_of(ctx, x)))
    index = operand(ctx, args[2], DType.i64, node.name)
    return op(ctx, "gather_elements", [x, index], {"axis": axis}, hint=node.name)


def handle_static_only(ctx, node, args, kwargs):
    refuse(f"{op_key(node.target)} on values computed at run time",
           "an op on constants (it is evaluated while importing)")


UNARY = {"neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "tanh": "tanh",
         "sigmoid": "sigmoid", "relu": "relu", "silu": "silu", "sin": "sin", "cos": "cos", "erf": "erf",
         "floor": "floor", "ceil": "ceil"}
BINARY = {"add": "add", "sub": "sub", "mul": "mul", "pow": "pow", "maximum": "maximum", "minimum": "minimum",
          "__and__": "minimum", "logical_and": "minimum", "__or__": "maximum", "logical_or": "maximum",
          "remainder": "mod", "fmod": "fmod"}
COMPARE = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _register_tables() -> None:
    """The converters made from a table of names (elementwise ops, ops that pass their
    operand through, the fills)."""
    for name, rlx in UNARY.items():
        register(f"aten.{name}", unary(rlx))
    for name, rlx in BINARY.items():
        register(f"aten.{name}", binary(rlx))
    for name, rlx in COMPARE.items():
        register(f"aten.{name}", binary(rlx, compare=True))
    for name in ("contiguous", "clone", "alias", "detach", "lift_fresh_copy", "feature_dropout"):
        register(f"aten.{name}", handle_identity)
    for name in ("_assert_tensor_metadata", "_assert_scalar", "sym_constrain_range_for_size", "sym_constrain_range"):
        register(f"aten.{name}", handle_skip, fold=False)
    for name in ("zeros", "ones", "full", "empty", "new_zeros", "new_ones", "new_full", "new_empty", "zeros_like",
                 "ones_like", "full_like", "empty_like"):
        register(f"aten.{name}", handle_full)
    for name in ("tril", "triu"):
        register(f"aten.{name}", handle_static_only)
    register("operator.mul", python_operator(operator.mul))
    register("operator.add", python_operator(operator.add))
    register("operator.sub", python_operator(operator.sub))
    register("operator.floordiv", python_operator(_floordiv))
    register("operator.neg", python_operator(operator.neg))


_register_tables()
