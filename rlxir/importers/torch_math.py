"""Core ATen math -> core ops: the elementwise functions the IR has no op for, built from
the ones it has, and the reductions beyond sum / mean / max / min.

Exactness: trigonometric and hyperbolic functions are compositions of ``exp``, ``log``,
``sqrt`` and one polynomial (`_atan`, Cephes-style range reduction to ``|x| <= tan(pi/8)``
and a degree-9 odd polynomial, about 1e-7 relative error in float32), so they agree with
PyTorch to a few float32 ulps, not bit for bit; ``expm1`` and ``log1p`` are ``exp(x) - 1``
and ``log(1 + x)`` (absolute error about 1e-7 near 0). Rounding, sign, NaN and infinity
tests, the boolean ops and the reductions are exact up to the order of their sums.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, reshape, result_dtype, shape_of, slice_axis, static_dim
from rlxir.importers.torch_registry import converter
from rlxir.ops import normalize_axis
from rlxir.types import TensorType


def _x(ctx, node, args, index: int = 0) -> str:
    """Operand `index` in the node's result dtype (a float for a float function of ints)."""
    return operand(ctx, args[index], result_dtype(node), node.name)


def _scalar(ctx, value, like: str) -> str:
    return ctx.builder.scalar(value, ctx.builder.type(like).dtype)


def _mul(ctx, a: str, b, hint: str) -> str:
    return op(ctx, "mul", [a, b if isinstance(b, str) else _scalar(ctx, b, a)], hint=hint)


def _add(ctx, a: str, b, hint: str) -> str:
    return op(ctx, "add", [a, b if isinstance(b, str) else _scalar(ctx, b, a)], hint=hint)


# --- exponentials and logarithms -------------------------------------------------------
@converter("aten.expm1")
def handle_expm1(ctx, node, args, kwargs):
    """exp(x) - 1."""
    return _add(ctx, op(ctx, "exp", [_x(ctx, node, args)], hint=f"{node.name}.exp"), -1, node.name)


@converter("aten.log1p")
def handle_log1p(ctx, node, args, kwargs):
    """log(1 + x)."""
    return op(ctx, "log", [_add(ctx, _x(ctx, node, args), 1, f"{node.name}.plus1")], hint=node.name)


@converter("aten.log2", "aten.log10")
def handle_log_base(ctx, node, args, kwargs):
    """log(x) / log(base), as a product by the reciprocal."""
    base = 2.0 if str(node.target).startswith("aten.log2") else 10.0
    log = op(ctx, "log", [_x(ctx, node, args)], hint=f"{node.name}.ln")
    return _mul(ctx, log, 1.0 / math.log(base), node.name)


# --- hyperbolic --------------------------------------------------------------------------
def _exp_pair(ctx, node, x: str) -> tuple[str, str]:
    return (op(ctx, "exp", [x], hint=f"{node.name}.exp"),
            op(ctx, "exp", [op(ctx, "neg", [x], hint=f"{node.name}.neg")], hint=f"{node.name}.exp_neg"))


@converter("aten.sinh")
def handle_sinh(ctx, node, args, kwargs):
    """(exp(x) - exp(-x)) / 2."""
    up, down = _exp_pair(ctx, node, _x(ctx, node, args))
    return _mul(ctx, op(ctx, "sub", [up, down], hint=f"{node.name}.diff"), 0.5, node.name)


@converter("aten.cosh")
def handle_cosh(ctx, node, args, kwargs):
    """(exp(x) + exp(-x)) / 2."""
    up, down = _exp_pair(ctx, node, _x(ctx, node, args))
    return _mul(ctx, op(ctx, "add", [up, down], hint=f"{node.name}.sum"), 0.5, node.name)


@converter("aten.asinh")
def handle_asinh(ctx, node, args, kwargs):
    """sign(x) log(|x| + sqrt(x^2 + 1)) (odd, so negative x loses no precision)."""
    x = _x(ctx, node, args)
    size = op(ctx, "abs", [x], hint=f"{node.name}.abs")
    root = op(ctx, "sqrt", [_add(ctx, op(ctx, "mul", [size, size], hint=f"{node.name}.sq"), 1, f"{node.name}.sq1")],
              hint=f"{node.name}.root")
    magnitude = op(ctx, "log", [op(ctx, "add", [size, root], hint=f"{node.name}.sum")], hint=f"{node.name}.log")
    negative = op(ctx, "lt", [x, _scalar(ctx, 0, x)], hint=f"{node.name}.negative")
    return op(ctx, "where", [negative, op(ctx, "neg", [magnitude], hint=f"{node.name}.neg"), magnitude],
              hint=node.name)


@converter("aten.acosh")
def handle_acosh(ctx, node, args, kwargs):
    """log(x + sqrt((x - 1)(x + 1))): NaN below 1, as PyTorch."""
    x = _x(ctx, node, args)
    product = op(ctx, "mul", [_add(ctx, x, -1, f"{node.name}.minus1"), _add(ctx, x, 1, f"{node.name}.plus1")],
                 hint=f"{node.name}.product")
    return op(ctx, "log", [op(ctx, "add", [x, op(ctx, "sqrt", [product], hint=f"{node.name}.root")],
                              hint=f"{node.name}.sum")], hint=node.name)


@converter("aten.atanh")
def handle_atanh(ctx, node, args, kwargs):
    """log((1 + x) / (1 - x)) / 2."""
    x = _x(ctx, node, args)
    one = _scalar(ctx, 1, x)
    ratio = op(ctx, "div", [op(ctx, "add", [one, x], hint=f"{node.name}.up"),
                            op(ctx, "sub", [one, x], hint=f"{node.name}.down")], hint=f"{node.name}.ratio")
    return _mul(ctx, op(ctx, "log", [ratio], hint=f"{node.name}.log"), 0.5, node.name)


# --- trigonometric -----------------------------------------------------------------------
@converter("aten.tan")
def handle_tan(ctx, node, args, kwargs):
    """sin(x) / cos(x)."""
    x = _x(ctx, node, args)
    return op(ctx, "div", [op(ctx, "sin", [x], hint=f"{node.name}.sin"), op(ctx, "cos", [x], hint=f"{node.name}.cos")],
              hint=node.name)


ATAN_POLYNOMIAL = (8.05374449538e-2, -1.38776856032e-1, 1.99777106478e-1, -3.33329491539e-1)
"""atan(u) = u + u^3 P(u^2) on |u| <= tan(pi/8), P's coefficients highest first."""


def _atan(ctx, x: str, hint: str) -> str:
    """atan(x) for every float x: |x| above tan(3 pi / 8) through pi/2 - atan(1/|x|), above
    tan(pi / 8) through pi/4 + atan((|x| - 1) / (|x| + 1)), then the polynomial; the sign
    restored at the end (NaN stays NaN, +-inf gives +-pi/2)."""
    size = op(ctx, "abs", [x], hint=f"{hint}.abs")
    large = op(ctx, "gt", [size, _scalar(ctx, 2.414213562373095, x)], hint=f"{hint}.large")
    middle = op(ctx, "gt", [size, _scalar(ctx, 0.4142135623730950, x)], hint=f"{hint}.middle")
    inverse = op(ctx, "neg", [op(ctx, "div", [_scalar(ctx, 1, x), size], hint=f"{hint}.inv")], hint=f"{hint}.ninv")
    shifted = op(ctx, "div", [_add(ctx, size, -1, f"{hint}.m1"), _add(ctx, size, 1, f"{hint}.p1")],
                 hint=f"{hint}.shift")
    u = op(ctx, "where", [large, inverse, op(ctx, "where", [middle, shifted, size], hint=f"{hint}.u0")],
           hint=f"{hint}.u")
    base = op(ctx, "where", [large, _scalar(ctx, math.pi / 2, x),
                             op(ctx, "where", [middle, _scalar(ctx, math.pi / 4, x), _scalar(ctx, 0, x)],
                                hint=f"{hint}.base0")], hint=f"{hint}.base")
    z = op(ctx, "mul", [u, u], hint=f"{hint}.z")
    poly = _scalar(ctx, ATAN_POLYNOMIAL[0], x)
    for coefficient in ATAN_POLYNOMIAL[1:]:
        poly = _add(ctx, op(ctx, "mul", [poly, z], hint=f"{hint}.horner"), coefficient, f"{hint}.horner")
    tail = op(ctx, "mul", [op(ctx, "mul", [poly, z], hint=f"{hint}.pz"), u], hint=f"{hint}.tail")
    magnitude = op(ctx, "add", [base, op(ctx, "add", [tail, u], hint=f"{hint}.series")], hint=f"{hint}.magnitude")
    negative = op(ctx, "lt", [x, _scalar(ctx, 0, x)], hint=f"{hint}.negative")
    return op(ctx, "where", [negative, op(ctx, "neg", [magnitude], hint=f"{hint}.neg"), magnitude], hint=hint)


@converter("aten.atan")
def handle_atan(ctx, node, args, kwargs):
    return _atan(ctx, _x(ctx, node, args), node.name)


@converter("aten.asin")
def handle_asin(ctx, node, args, kwargs):
    """atan(x / sqrt((1 - x)(1 + x))): +-pi/2 at +-1, NaN beyond."""
    x = _x(ctx, node, args)
    one = _scalar(ctx, 1, x)
    cosine = op(ctx, "sqrt", [op(ctx, "mul", [op(ctx, "sub", [one, x], hint=f"{node.name}.down"),
                                               op(ctx, "add", [one, x], hint=f"{node.name}.up")],
                                 hint=f"{node.name}.product")], hint=f"{node.name}.cos")
    return _atan(ctx, op(ctx, "div", [x, cosine], hint=f"{node.name}.tan"), node.name)


@converter("aten.acos")
def handle_acos(ctx, node, args, kwargs):
    """2 atan(sqrt((1 - x) / (1 + x))): accurate near 1, pi at -1, NaN beyond."""
    x = _x(ctx, node, args)
    one = _scalar(ctx, 1, x)
    ratio = op(ctx, "div", [op(ctx, "sub", [one, x], hint=f"{node.name}.down"),
                            op(ctx, "add", [one, x], hint=f"{node.name}.up")], hint=f"{node.name}.ratio")
    half = _atan(ctx, op(ctx, "sqrt", [ratio], hint=f"{node.name}.root"), f"{node.name}.half")
    return _mul(ctx, half, 2, node.name)


@converter("aten.atan2")
def handle_atan2(ctx, node, args, kwargs):
    """atan(y / x), plus or minus pi where x < 0 (by y's sign), and 0 where both are 0."""
    y, x = _x(ctx, node, args, 0), _x(ctx, node, args, 1)
    name, zero = node.name, _scalar(ctx, 0, x)
    angle = _atan(ctx, op(ctx, "div", [y, x], hint=f"{name}.ratio"), f"{name}.atan")
    turn = op(ctx, "where", [op(ctx, "lt", [y, zero], hint=f"{name}.below"), _scalar(ctx, -math.pi, x),
                             _scalar(ctx, math.pi, x)], hint=f"{name}.turn")
    behind = op(ctx, "lt", [x, zero], hint=f"{name}.behind")
    angle = op(ctx, "where", [behind, op(ctx, "add", [angle, turn], hint=f"{name}.turned"), angle],
               hint=f"{name}.angle")
    origin = op(ctx, "minimum", [op(ctx, "eq", [x, zero], hint=f"{name}.x0"),
                                 op(ctx, "eq", [y, zero], hint=f"{name}.y0")], hint=f"{name}.origin")
    return op(ctx, "where", [origin, zero, angle], hint=name)


# --- rounding, sign, classification ------------------------------------------------------
@converter("aten.trunc")
def handle_trunc(ctx, node, args, kwargs):
    """ceil below 0, floor from 0 up."""
    x = _x(ctx, node, args)
    if ctx.builder.type(x).dtype.is_integer:
        return x
    negative = op(ctx, "lt", [x, _scalar(ctx, 0, x)], hint=f"{node.name}.negative")
    return op(ctx, "where", [negative, op(ctx, "ceil", [x], hint=f"{node.name}.up"),
                             op(ctx, "floor", [x], hint=f"{node.name}.down")], hint=node.name)


def round_half_even(ctx, x: str, hint: str) -> str:
    """Round to the nearest integer, a tie to the even one (PyTorch's round)."""
    low = op(ctx, "floor", [x], hint=f"{hint}.floor")
    fraction = op(ctx, "sub", [x, low], hint=f"{hint}.fraction")
    half = _scalar(ctx, 0.5, x)
    odd = op(ctx, "eq", [op(ctx, "mod", [low, _scalar(ctx, 2, x)], hint=f"{hint}.parity"), _scalar(ctx, 1, x)],
             hint=f"{hint}.odd")
    tie_up = op(ctx, "minimum", [op(ctx, "eq", [fraction, half], hint=f"{hint}.tie"), odd], hint=f"{hint}.tie_up")
    up = op(ctx, "maximum", [op(ctx, "gt", [fraction, half], hint=f"{hint}.above"), tie_up], hint=f"{hint}.up")
    return op(ctx, "where", [up, _add(ctx, low, 1, f"{hint}.next"), low], hint=hint)


@converter("aten.round")
def handle_round(ctx, node, args, kwargs):
    """round(x, decimals=0): half to even, at 10^-decimals (x scaled, rounded, scaled back)."""
    x = _x(ctx, node, args)
    if ctx.builder.type(x).dtype.is_integer:
        return x
    decimals = kwargs.get("decimals", args[1] if len(args) > 1 else 0)
    if not decimals:
        return round_half_even(ctx, x, node.name)
    scale = 10.0 ** abs(decimals)
    scaled = _mul(ctx, x, scale, f"{node.name}.scaled") if decimals > 0 else \
        op(ctx, "div", [x, _scalar(ctx, scale, x)], hint=f"{node.name}.scaled")
    rounded = round_half_even(ctx, scaled, f"{node.name}.rounded")
    return op(ctx, "div", [rounded, _scalar(ctx, scale, x)], hint=node.name) if decimals > 0 else \
        _mul(ctx, rounded, scale, node.name)


@converter("aten.sign")
def handle_sign(ctx, node, args, kwargs):
    """1 above 0, -1 below, 0 at 0 (and NaN stays NaN)."""
    x = _x(ctx, node, args)
    if ctx.builder.type(x).dtype is DType.bool:
        return x
    zero = _scalar(ctx, 0, x)
    positive = op(ctx, "cast", [op(ctx, "gt", [x, zero], hint=f"{node.name}.pos")], {"to": ctx.builder.type(x).dtype},
                  hint=f"{node.name}.up")
    negative = op(ctx, "cast", [op(ctx, "lt", [x, zero], hint=f"{node.name}.neg")], {"to": ctx.builder.type(x).dtype},
                  hint=f"{node.name}.down")
    sign = op(ctx, "sub", [positive, negative], hint=f"{node.name}.sign")
    if ctx.builder.type(x).dtype.is_integer:
        return sign
    nan = op(ctx, "ne", [x, x], hint=f"{node.name}.nan")
    return op(ctx, "where", [nan, x, sign], hint=node.name)


@converter("aten.isnan")
def handle_isnan(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    if not ctx.builder.type(x).dtype.is_float:
        return ctx.builder.splat(node.name, False, TensorType(DType.bool, shape_of(ctx, x)))
    return op(ctx, "ne", [x, x], hint=node.name)


@converter("aten.isinf")
def handle_isinf(ctx, node, args, kwargs):
    x = ctx.value(args[0])
    if not ctx.builder.type(x).dtype.is_float:
        return ctx.builder.splat(node.name, False, TensorType(DType.bool, shape_of(ctx, x)))
    return op(ctx, "eq", [op(ctx, "abs", [x], hint=f"{node.name}.abs"), _scalar(ctx, math.inf, x)], hint=node.name)


# --- activations -------------------------------------------------------------------------
@converter("aten.elu")
def handle_elu(ctx, node, args, kwargs):
    """elu(x, alpha=1, scale=1, input_scale=1): scale x above 0, alpha scale (exp(input_scale x) - 1) else."""
    names = ("alpha", "scale", "input_scale")
    given = {"alpha": 1.0, "scale": 1.0, "input_scale": 1.0, **dict(zip(names, args[1:])), **kwargs}
    x = _x(ctx, node, args)
    inner = _mul(ctx, x, float(given["input_scale"]), f"{node.name}.inner")
    below = _mul(ctx, _add(ctx, op(ctx, "exp", [inner], hint=f"{node.name}.exp"), -1, f"{node.name}.expm1"),
                 float(given["alpha"]) * float(given["scale"]), f"{node.name}.below")
    above = _mul(ctx, x, float(given["scale"]), f"{node.name}.above")
    return op(ctx, "where", [op(ctx, "gt", [x, _scalar(ctx, 0, x)], hint=f"{node.name}.positive"), above, below],
              hint=node.name)


@converter("aten.leaky_relu")
def handle_leaky_relu(ctx, node, args, kwargs):
    """x above 0, negative_slope x else."""
    slope = kwargs.get("negative_slope", args[1] if len(args) > 1 else 0.01)
    x = _x(ctx, node, args)
    return op(ctx, "where", [op(ctx, "gt", [x, _scalar(ctx, 0, x)], hint=f"{node.name}.positive"), x,
                             _mul(ctx, x, float(slope), f"{node.name}.scaled")], hint=node.name)


# --- booleans ------------------------------------------------------------------------------
def _bools(ctx, node, args) -> list[str]:
    return [operand(ctx, item, DType.bool, node.name) for item in args[:2]]


def _integer_refusal(ctx, node, args, what: str) -> None:
    dtypes = {ctx.type(item).dtype for item in args[:2]}
    if dtypes - {DType.bool}:
        refuse(f"{what} on {', '.join(sorted(dtype.value for dtype in dtypes))} values",
               "bool operands (the IR has no bitwise integer ops)")


@converter("aten.logical_xor")
def handle_logical_xor(ctx, node, args, kwargs):
    return _as_result(ctx, node, op(ctx, "ne", _bools(ctx, node, args), hint=node.name))


def _as_result(ctx, node, value: str) -> str:
    dtype = result_dtype(node)
    return value if ctx.builder.type(value).dtype is dtype else op(ctx, "cast", [value], {"to": dtype},
                                                                   hint=f"{node.name}.{dtype.value}")


@converter("aten.bitwise_and", "aten.bitwise_or", "aten.bitwise_xor")
def handle_bitwise(ctx, node, args, kwargs):
    """On bools: minimum, maximum, ne; integers are refused (no bitwise op in the IR)."""
    kind = str(node.target).split(".")[1].removeprefix("bitwise_")
    _integer_refusal(ctx, node, args, f"bitwise_{kind}")
    return op(ctx, {"and": "minimum", "or": "maximum", "xor": "ne"}[kind], _bools(ctx, node, args), hint=node.name)


@converter("aten.bitwise_not")
def handle_bitwise_not(ctx, node, args, kwargs):
    """not x on bools; on integers -x - 1 (two's complement), 255 - x on u8."""
    x = ctx.value(args[0])
    dtype = ctx.builder.type(x).dtype
    if dtype is DType.bool:
        return op(ctx, "eq", [x, ctx.builder.scalar(False, DType.bool)], hint=node.name)
    if dtype is DType.u8:
        return op(ctx, "sub", [_scalar(ctx, 255, x), x], hint=node.name)
    if not dtype.is_integer:
        refuse(f"bitwise_not on {dtype.value}", "bool or integer values")
    return _add(ctx, op(ctx, "neg", [x], hint=f"{node.name}.neg"), -1, node.name)


# --- reductions ----------------------------------------------------------------------------
def _axes(ctx, value: str, dims) -> list[int]:
    rank = ctx.builder.type(value).rank
    if dims is None or dims == []:
        return list(range(rank))
    dims = [dims] if isinstance(dims, int) else list(dims)
    return sorted({normalize_axis(dim, max(rank, 1)) for dim in dims})


def _count(ctx, value: str, axes) -> int:
    shape = shape_of(ctx, value)
    count = 1
    for axis in axes:
        count *= static_dim(shape[axis], "a reduction's element count")
    return count


@converter("aten.any")
def handle_any(ctx, node, args, kwargs):
    """any(x, dim=None, keepdim=False): some element is not 0 (NaN counts), as reduce_max of 0/1."""
    x = ctx.value(args[0])
    dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
    keepdim = kwargs.get("keepdim", args[2] if len(args) > 2 else False)
    if ctx.builder.type(x).rank == 0:
        return operand(ctx, x, DType.bool, node.name)
    nonzero = operand(ctx, x, DType.bool, f"{node.name}.nonzero")
    counted = op(ctx, "cast", [nonzero], {"to": DType.i32}, hint=f"{node.name}.i32")
    axes = _axes(ctx, x, dims)
    if 0 in [shape_of(ctx, x)[axis] for axis in axes]:
        shape = [1 if axis in axes else dim for axis, dim in enumerate(shape_of(ctx, x))
                 if keepdim or axis not in axes]
        return ctx.builder.splat(node.name, False, TensorType(DType.bool, tuple(shape)))
    most = op(ctx, "reduce_max", [counted], {"axes": tuple(axes), "keepdims": bool(keepdim)}, hint=f"{node.name}.max")
    return op(ctx, "gt", [most, ctx.builder.scalar(0, DType.i32)], hint=node.name)


@converter("aten.var")
def handle_var(ctx, node, args, kwargs):
    """var(x, dim, correction=1, keepdim=False): the mean squared deviation, divided by
    max(n - correction, 0) instead of n."""
    x = _x(ctx, node, args)
    dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
    correction = kwargs.get("correction", args[2] if len(args) > 2 else None)
    correction = 1 if correction is None else correction
    keepdim = kwargs.get("keepdim", args[3] if len(args) > 3 else False)
    if ctx.builder.type(x).rank == 0:
        x = reshape(ctx, x, (1,), f"{node.name}.1d")
        dims = None
    axes = _axes(ctx, x, dims)
    return variance(ctx, x, axes, correction, bool(keepdim), node.name)


@converter("aten.var_mean", "aten.std_mean")
def handle_var_mean(ctx, node, args, kwargs):
    """var_mean / std_mean(x, dim, correction=1, keepdim=False) -> (var or std, mean)."""
    x = _x(ctx, node, args)
    dims = kwargs.get("dim", args[1] if len(args) > 1 else None)
    correction = kwargs.get("correction", args[2] if len(args) > 2 else None)
    keepdim = bool(kwargs.get("keepdim", args[3] if len(args) > 3 else False))
    if ctx.builder.type(x).rank == 0:
        x, dims = reshape(ctx, x, (1,), f"{node.name}.1d"), None
    axes = _axes(ctx, x, dims)
    spread = variance(ctx, x, axes, 1 if correction is None else correction, keepdim, f"{node.name}.var")
    if str(node.target).startswith("aten.std_mean"):
        spread = op(ctx, "sqrt", [spread], hint=f"{node.name}.std")
    mean = op(ctx, "reduce_mean", [x], {"axes": tuple(axes), "keepdims": keepdim}, hint=f"{node.name}.mean")
    if not keepdim and not shape_of(ctx, mean) == shape_of(ctx, spread):
        mean = reshape(ctx, mean, shape_of(ctx, spread), f"{node.name}.mean_shape")
    return [spread, mean]


def variance(ctx, x: str, axes, correction, keepdim: bool, hint: str) -> str:
    """Σ (x - mean)² / max(n - correction, 0) over `axes` (PyTorch's var)."""
    mean = op(ctx, "reduce_mean", [x], {"axes": tuple(axes), "keepdims": True}, hint=f"{hint}.mean")
    deviation = op(ctx, "sub", [x, mean], hint=f"{hint}.dev")
    squares = op(ctx, "mul", [deviation, deviation], hint=f"{hint}.sq")
    total = op(ctx, "reduce_sum", [squares], {"axes": tuple(axes), "keepdims": keepdim}, hint=f"{hint}.sum")
    divisor = max(_count(ctx, x, axes) - correction, 0)
    return op(ctx, "div", [total, _scalar(ctx, divisor, total)], hint=hint)


def _pairwise_product(ctx, x: str, axis: int, hint: str) -> str:
    """The product along a static `axis`, kept as size 1: halves multiplied pairwise until one
    row is left (log2(n) steps); an empty axis gives 1."""
    length = static_dim(shape_of(ctx, x)[axis], "a product")
    if length == 0:
        shape = list(shape_of(ctx, x))
        shape[axis] = 1
        return ctx.builder.splat(f"{hint}.one", 1, TensorType(ctx.builder.type(x).dtype, tuple(shape)))
    step = 0
    while length > 1:
        half = length // 2
        paired = op(ctx, "mul", [slice_axis(ctx, x, axis, 0, half, f"{hint}.a{step}"),
                                 slice_axis(ctx, x, axis, half, half, f"{hint}.b{step}")], hint=f"{hint}.p{step}")
        if length % 2:
            paired = op(ctx, "concat", [paired, slice_axis(ctx, x, axis, 2 * half, 1, f"{hint}.odd{step}")],
                        {"axis": axis}, hint=f"{hint}.c{step}")
        x, length, step = paired, half + length % 2, step + 1
    return x


@converter("aten.prod")
def handle_prod(ctx, node, args, kwargs):
    """prod(x[, dim, keepdim], dtype=): pairwise products along each reduced axis."""
    x = _x(ctx, node, args)
    shape = shape_of(ctx, x)
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    keepdim = bool(kwargs.get("keepdim", args[2] if len(args) > 2 else False))
    if not shape:
        return x
    axes = _axes(ctx, x, dim)
    for axis in axes:
        x = _pairwise_product(ctx, x, axis, f"{node.name}.d{axis}")
    kept = [1 if axis in axes else size for axis, size in enumerate(shape)]
    return reshape(ctx, x, kept if keepdim else [size for axis, size in enumerate(shape) if axis not in axes],
                   node.name)


@converter("aten.cumprod")
def handle_cumprod(ctx, node, args, kwargs):
    """cumprod(x, dim): a log-depth scan over the static axis (each step multiplies by the
    running products `shift` rows back, ones shifted in)."""
    x = _x(ctx, node, args)
    shape = shape_of(ctx, x)
    if not shape:
        return x
    axis = normalize_axis(kwargs.get("dim", args[1] if len(args) > 1 else 0), len(shape))
    length = static_dim(shape[axis], "a cumprod")
    shift = 1
    while shift < length:
        ones_shape = list(shape)
        ones_shape[axis] = shift
        ones = ctx.builder.splat(f"{node.name}.ones", 1, TensorType(ctx.builder.type(x).dtype, tuple(ones_shape)))
        earlier = op(ctx, "concat", [ones, slice_axis(ctx, x, axis, 0, length - shift, f"{node.name}.head")],
                     {"axis": axis}, hint=f"{node.name}.shifted")
        x = op(ctx, "mul", [x, earlier], hint=f"{node.name}.s{shift}" if shift * 2 < length else node.name)
        shift *= 2
    return x


__all__ = ["round_half_even", "variance"]


@converter("aten.cummax", "aten.cummin")
def handle_cumulative_extreme(ctx, node, args, kwargs):
    """cummax / cummin(x, dim) -> (values, indices): a log-depth scan of (value, index)
    pairs in which the later one wins when it is NaN or at least as large (small): PyTorch's
    last index among equal values, and a NaN kept from where it appears."""
    x = _x(ctx, node, args)
    shape = shape_of(ctx, x)
    if not shape:
        return [x, ctx.builder.splat(f"{node.name}.index", 0, TensorType(DType.i64, ()))]
    largest = str(node.target).startswith("aten.cummax")
    axis = normalize_axis(kwargs.get("dim", args[1] if len(args) > 1 else 0), len(shape))
    length = static_dim(shape[axis], "a cumulative extreme")
    positions = np.arange(length, dtype=np.int64).reshape([length if index == axis else 1
                                                           for index in range(len(shape))])
    indices = op(ctx, "expand", [ctx.builder.tensor(f"{node.name}.positions", positions)], {"shape": shape},
                 hint=f"{node.name}.positions_spread")
    dtype = ctx.builder.type(x).dtype
    worst = (-math.inf if largest else math.inf) if dtype.is_float else \
        int(np.iinfo(dtype.numpy()).min if largest else np.iinfo(dtype.numpy()).max)
    values, shift = x, 1
    while shift < length:
        earlier = [_shifted(ctx, item, axis, shift, fill, f"{node.name}.s{shift}")
                   for item, fill in ((values, worst), (indices, -1))]
        wins = op(ctx, "ge" if largest else "le", [values, earlier[0]], hint=f"{node.name}.wins{shift}")
        wins = op(ctx, "maximum", [wins, op(ctx, "ne", [values, values], hint=f"{node.name}.nan{shift}")],
                  hint=f"{node.name}.later{shift}")
        values = op(ctx, "where", [wins, values, earlier[0]], hint=f"{node.name}.values{shift}")
        indices = op(ctx, "where", [wins, indices, earlier[1]], hint=f"{node.name}.indices{shift}")
        shift *= 2
    return [values, indices]


def _shifted(ctx, value: str, axis: int, shift: int, fill, hint: str) -> str:
    """`value` moved `shift` rows later along `axis`, `fill` shifted in."""
    shape = list(shape_of(ctx, value))
    length = shape[axis]
    shape[axis] = shift
    head = ctx.builder.splat(f"{hint}.fill", fill, TensorType(ctx.builder.type(value).dtype, tuple(shape)))
    return op(ctx, "concat", [head, slice_axis(ctx, value, axis, 0, length - shift, f"{hint}.head")], {"axis": axis},
              hint=hint)


@converter("aten.cumsum")
def handle_cumsum(ctx, node, args, kwargs):
    x = operand(ctx, args[0], result_dtype(node), node.name)
    if not shape_of(ctx, x):  # a 0-d tensor's running sum is itself
        return x
    return op(ctx, "cumsum", [x], {"axis": args[1]}, hint=node.name)


@converter("aten.diff")
def handle_diff(ctx, node, args, kwargs):
    """x[1:] - x[:-1] along `dim`, n times (`ne` for bools, as torch), after joining
    `prepend` and `append` to x along that dim."""
    n = args[1] if len(args) > 1 else kwargs.get("n", 1)
    dim = args[2] if len(args) > 2 else kwargs.get("dim", -1)
    prepend, append = (args[i] if len(args) > i else kwargs.get(key) for i, key in ((3, "prepend"), (4, "append")))
    dtype = result_dtype(node)
    result = operand(ctx, args[0], dtype, node.name)
    axis = normalize_axis(dim, len(shape_of(ctx, result)))
    parts = [operand(ctx, prepend, dtype, node.name)] if prepend is not None else []
    parts += [result] + ([operand(ctx, append, dtype, node.name)] if append is not None else [])
    if len(parts) > 1:
        result = op(ctx, "concat", parts, {"axis": axis}, hint=f"{node.name}.joined")
    for _ in range(n):
        length = static_dim(shape_of(ctx, result)[axis], "a diff") - 1
        later = slice_axis(ctx, result, axis, 1, length, f"{node.name}.later")
        earlier = slice_axis(ctx, result, axis, 0, length, f"{node.name}.earlier")
        kind = "ne" if ctx.builder.type(result).dtype == DType.bool else "sub"
        result = op(ctx, kind, [later, earlier], hint=node.name)
    return result


@converter("aten.logcumsumexp")
def handle_logcumsumexp(ctx, node, args, kwargs):
    """log of the running sum of exp along dim, in f64 after subtracting the dim's largest
    value (a row of -inf stays -inf)."""
    dtype = result_dtype(node)
    x = operand(ctx, args[0], DType.f64, f"{node.name}.f64")
    shape = shape_of(ctx, x)
    if not shape:
        return operand(ctx, args[0], dtype, node.name)
    axis = normalize_axis(kwargs.get("dim", args[1] if len(args) > 1 else 0), len(shape))
    most = op(ctx, "reduce_max", [x], {"axes": (axis,), "keepdims": True}, hint=f"{node.name}.max")
    infinite = op(ctx, "eq", [op(ctx, "abs", [most], hint=f"{node.name}.abs"), _scalar(ctx, math.inf, most)],
                  hint=f"{node.name}.inf")
    most = op(ctx, "where", [infinite, _scalar(ctx, 0, most), most], hint=f"{node.name}.shift")
    running = op(ctx, "cumsum", [op(ctx, "exp", [op(ctx, "sub", [x, most], hint=f"{node.name}.centered")],
                                    hint=f"{node.name}.exp")], {"axis": axis}, hint=f"{node.name}.running")
    result = op(ctx, "add", [op(ctx, "log", [running], hint=f"{node.name}.log"), most], hint=f"{node.name}.f64_out")
    return op(ctx, "cast", [result], {"to": dtype}, hint=node.name)
