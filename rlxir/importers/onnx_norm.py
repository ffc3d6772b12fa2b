"""ONNX op -> core ops: the normalisations over trailing axes or groups, and Hardmax.

- LayerNormalization -> ``layernorm`` (its Mean and InvStdDev outputs, when read, from the
  decomposition mean / variance / ``rsqrt`` that also gives Y);
- RMSNormalization -> ``rmsnorm``;
- GroupNormalization -> ``layernorm`` over [N, G, C/G * spatial], then the per-channel
  (opset 21) or per-group (opset 18) scale and bias;
- MeanVarianceNormalization -> ``(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)`` (ONNX's body);
- LpNormalization -> x over its L1 or L2 norm along an axis, 0 where the norm is 0;
- Hardmax -> 1 at the first maximum along an axis: ``eq`` with ``reduce_max``, the first of
  the ties kept by a running count (``cumsum``).

``stash_type`` names the precision of the statistics: an input of another float type is
cast to it for the normalisation (its scale and bias with it) and the result cast back.
"""

from __future__ import annotations

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, shortest_float
from rlxir.importers.onnx_context import onnx_dtype
from rlxir.importers.onnx_ops import hint, operand, optional_input, product, unused
from rlxir.importers.onnx_registry import register
from rlxir.ops import normalize_axis
from rlxir.types import TensorType

MVN_EPSILON = 1e-9
"""MeanVarianceNormalization's function body adds this to the standard deviation."""


def _stash_dtype(attrs, dtype: DType) -> DType:
    """The precision of the statistics: ``stash_type`` (default f32) for float inputs."""
    if not dtype.is_float:
        raise UnsupportedModel(f"a normalisation of {dtype.value} data", expected="a float input")
    stash = onnx_dtype(int(attrs.get("stash_type", 1)), "stash_type")
    if not stash.is_float:
        raise UnsupportedModel(f"stash_type {stash.value}", expected="a float element type")
    return stash


def cast_to(ctx, value: str, dtype: DType, name: str) -> str:
    """`value` as `dtype` (itself when it has that dtype)."""
    if ctx.builder.type(value).dtype is dtype:
        return value
    return ctx.builder.op("cast", [value], {"to": dtype}, hint=name)


def _param(ctx, onnx_name: str | None, dtype: DType, shape: tuple, fill: float, name: str) -> str:
    """A scale or bias as a `shape` tensor of `dtype` (broadcast when ONNX gives fewer dims;
    a splat of `fill` when absent)."""
    if onnx_name is None:
        return ctx.builder.splat(name, fill, TensorType(dtype, shape))
    value = operand(ctx, onnx_name, dtype)
    given = ctx.builder.type(value).shape
    if given == tuple(shape):
        return value
    extra = len(given) - len(shape)
    if extra > 0:  # broadcastable to x but written with leading unit dims: [1, 1, C] for [C]
        if any(dim != 1 for dim in given[:extra]):
            raise UnsupportedModel(f"a normalisation parameter of shape {ctx.builder.type(value)} for the normalised "
                                   f"dims {list(shape)}", expected="a parameter that broadcasts to the normalised dims")
        value = ctx.builder.op("reshape", [value], {"shape": tuple(given[extra:])}, hint=f"{name}.trimmed")
        if given[extra:] == tuple(shape):
            return value
    return ctx.builder.op("expand", [value], {"shape": tuple(shape)}, hint=name)


# --- LayerNormalization and RMSNormalization -------------------------------------------
def convert_layernorm(ctx, node, attrs):
    """Y = (x - mean) / sqrt(var + eps) * scale + bias over the axes from `axis` on."""
    x, axis, eps, stash = _norm_operand(ctx, node, attrs)
    if unused(ctx, node, 1) and unused(ctx, node, 2):
        return [_fused_norm(ctx, node, "layernorm", x, axis, eps, stash), None, None]
    return _layernorm_with_statistics(ctx, node, x, axis, eps, stash)


def convert_rmsnorm(ctx, node, attrs):
    """Y = x / sqrt(mean(x^2) + eps) * scale over the axes from `axis` on."""
    x, axis, eps, stash = _norm_operand(ctx, node, attrs)
    return [_fused_norm(ctx, node, "rmsnorm", x, axis, eps, stash)]


def _norm_operand(ctx, node, attrs) -> tuple[str, int, float, DType]:
    """(x, the first normalised axis, epsilon, the stash dtype) of a Layer/RMS normalisation."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    axis = normalize_axis(int(attrs.get("axis", -1)), type_.rank)
    return x, axis, shortest_float(float(attrs.get("epsilon", 1e-5))), _stash_dtype(attrs, type_.dtype)


def _fused_norm(ctx, node, op: str, x: str, axis: int, eps: float, stash: DType) -> str:
    """``layernorm`` / ``rmsnorm`` in the stash precision, its scale (and bias) broadcast to
    the normalised dims."""
    name, dtype = hint(node), ctx.builder.type(x).dtype
    normalized = ctx.builder.type(x).shape[axis:]
    operands = [cast_to(ctx, x, stash, f"{name}.stashed"),
                _param(ctx, node.input[1], stash, normalized, 1, f"{name}.scale")]
    if op == "layernorm":
        operands.append(_param(ctx, optional_input(node, 2), stash, normalized, 0, f"{name}.bias"))
    result = ctx.builder.op(op, operands, {"axis": axis, "eps": eps},
                            hint=name if stash is dtype else f"{name}.{stash.value}")
    return cast_to(ctx, result, dtype, name)


def _layernorm_with_statistics(ctx, node, x: str, axis: int, eps: float, stash: DType) -> list:
    """[Y, Mean, InvStdDev], the statistics in the stash precision, kept dims of size 1."""
    builder, name = ctx.builder, hint(node)
    type_ = builder.type(x)
    axes = tuple(range(axis, type_.rank))
    stashed = cast_to(ctx, x, stash, f"{name}.stashed")
    mean = builder.op("reduce_mean", [stashed], {"axes": axes, "keepdims": True}, hint=hint(node, 1))
    centered = builder.op("sub", [stashed, mean], hint=f"{name}.centered")
    squared = builder.op("mul", [centered, centered], hint=f"{name}.squared")
    variance = builder.op("reduce_mean", [squared], {"axes": axes, "keepdims": True}, hint=f"{name}.variance")
    shifted = builder.op("add", [variance, builder.scalar(eps, stash)], hint=f"{name}.variance_eps")
    inverse = builder.op("rsqrt", [shifted], hint=hint(node, 2))
    normalized = builder.op("mul", [centered, inverse], hint=f"{name}.normalized")
    normalized = cast_to(ctx, normalized, type_.dtype, f"{name}.normalized_{type_.dtype.value}")
    dims = type_.shape[axis:]
    scaled = builder.op("mul", [normalized, _param(ctx, node.input[1], type_.dtype, dims, 1, f"{name}.scale")],
                        hint=f"{name}.scaled" if optional_input(node, 2) else name)
    if optional_input(node, 2):
        bias = _param(ctx, node.input[2], type_.dtype, dims, 0, f"{name}.bias")
        scaled = builder.op("add", [scaled, bias], hint=name)
    return [scaled, mean, inverse]


# --- GroupNormalization and MeanVarianceNormalization ----------------------------------
def convert_group_norm(ctx, node, attrs):
    """x [N, C, ...] normalised per (sample, group of C/G channels), then scaled per channel
    (opset 21; per group before it)."""
    builder, name = ctx.builder, hint(node)
    x = ctx.value(node.input[0])
    type_ = builder.type(x)
    if type_.rank < 2:
        raise UnsupportedModel(f"GroupNormalization of a rank-{type_.rank} input", expected="[N, C, ...]")
    groups = int(attrs["num_groups"])
    batch, channels = type_.shape[:2]
    if not isinstance(channels, int) or groups < 1 or channels % groups:
        raise UnsupportedModel(f"{channels} channels in {groups} groups",
                               expected="a static channel count that is a multiple of num_groups")
    stash = _stash_dtype(attrs, type_.dtype)
    cells = product(type_.shape[2:]) * (channels // groups)
    grouped = builder.op("reshape", [cast_to(ctx, x, stash, f"{name}.stashed")], {"shape": (batch, groups, cells)},
                         hint=f"{name}.grouped")
    unit = builder.splat(f"{name}.unit_scale", 1, TensorType(stash, (cells,)))
    zero = builder.splat(f"{name}.zero_bias", 0, TensorType(stash, (cells,)))
    eps = shortest_float(float(attrs.get("epsilon", 1e-5)))
    normalized = builder.op("layernorm", [grouped, unit, zero], {"axis": -1, "eps": eps}, hint=f"{name}.normalized")
    normalized = cast_to(ctx, normalized, type_.dtype, f"{name}.normalized_{type_.dtype.value}")
    if ctx.opset < 21:  # scale and bias per group: [G, 1] against [N, G, cells]
        normalized = _affine(ctx, node, normalized, (groups, 1), f"{name}.affine")
        return [builder.op("reshape", [normalized], {"shape": tuple(type_.shape)}, hint=name)]
    normalized = builder.op("reshape", [normalized], {"shape": tuple(type_.shape)}, hint=f"{name}.unflat")
    return [_affine(ctx, node, normalized, (channels,) + (1,) * (type_.rank - 2), name)]


def _affine(ctx, node, value: str, column: tuple, name: str) -> str:
    """value * scale + bias, each reshaped to `column`."""
    builder = ctx.builder
    dtype = builder.type(value).dtype
    scale = builder.op("reshape", [operand(ctx, node.input[1], dtype)], {"shape": column}, hint=f"{name}.scale")
    bias = builder.op("reshape", [operand(ctx, node.input[2], dtype)], {"shape": column}, hint=f"{name}.bias")
    scaled = builder.op("mul", [value, scale], hint=f"{name}.scaled")
    return builder.op("add", [scaled, bias], hint=name)


def convert_mvn(ctx, node, attrs):
    """(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes` (default [0, 2, 3])."""
    builder, name = ctx.builder, hint(node)
    x = ctx.value(node.input[0])
    type_ = builder.type(x)
    axes = tuple(normalize_axis(int(axis), type_.rank) for axis in attrs.get("axes", (0, 2, 3)))
    reduce = {"axes": axes, "keepdims": True}
    mean = builder.op("reduce_mean", [x], reduce, hint=f"{name}.mean")
    mean_square = builder.op("reduce_mean", [builder.op("mul", [x, x], hint=f"{name}.square")], reduce,
                             hint=f"{name}.mean_square")
    variance = builder.op("sub", [mean_square, builder.op("mul", [mean, mean], hint=f"{name}.mean_squared")],
                          hint=f"{name}.variance")
    deviation = builder.op("add", [builder.op("sqrt", [variance], hint=f"{name}.std"),
                                   builder.scalar(MVN_EPSILON, type_.dtype)], hint=f"{name}.std_eps")
    centered = builder.op("sub", [x, mean], hint=f"{name}.centered")
    return [builder.op("div", [centered, deviation], hint=name)]


# --- LpNormalization and Hardmax -------------------------------------------------------
def convert_lp_norm(ctx, node, attrs):
    """x / ||x||_p along `axis` for p = 1 or 2; 0 where the norm is 0."""
    builder, name = ctx.builder, hint(node)
    x = ctx.value(node.input[0])
    type_ = builder.type(x)
    axis = normalize_axis(int(attrs.get("axis", -1)), type_.rank)
    p = int(attrs.get("p", 2))
    if p not in (1, 2):
        raise UnsupportedModel(f"LpNormalization with p={p}", expected="p = 1 or 2 (the values ONNX defines)")
    reduce = {"axes": (axis,), "keepdims": True}
    if p == 1:
        norm = builder.op("reduce_sum", [builder.op("abs", [x], hint=f"{name}.abs")], reduce, hint=f"{name}.norm")
    else:
        total = builder.op("reduce_sum", [builder.op("mul", [x, x], hint=f"{name}.square")], reduce,
                           hint=f"{name}.sum_squares")
        norm = builder.op("sqrt", [total], hint=f"{name}.norm")
    zero = builder.scalar(0, type_.dtype)
    vanishing = builder.op("eq", [norm, zero], hint=f"{name}.zero_norm")
    quotient = builder.op("div", [x, norm], hint=f"{name}.quotient")
    return [builder.op("where", [vanishing, zero, quotient], hint=name)]


def convert_hardmax(ctx, node, attrs):
    """1 at the first maximum along `axis` (opset 13; before it, over all axes from `axis`
    on, flattened), 0 elsewhere."""
    builder, name = ctx.builder, hint(node)
    x = ctx.value(node.input[0])
    type_ = builder.type(x)
    if ctx.opset >= 13:
        return [_hardmax_along(ctx, x, normalize_axis(int(attrs.get("axis", -1)), type_.rank), name)]
    axis = normalize_axis(int(attrs.get("axis", 1)), type_.rank)
    rows, columns = product(type_.shape[:axis]), product(type_.shape[axis:])
    flat = builder.op("reshape", [x], {"shape": (rows, columns)}, hint=f"{name}.flat")
    picked = _hardmax_along(ctx, flat, 1, f"{name}.rows")
    return [builder.op("reshape", [picked], {"shape": tuple(type_.shape)}, hint=name)]


def _hardmax_along(ctx, x: str, axis: int, name: str) -> str:
    builder = ctx.builder
    dtype = builder.type(x).dtype
    best = builder.op("reduce_max", [x], {"axes": (axis,), "keepdims": True}, hint=f"{name}.max")
    is_best = builder.op("eq", [x, best], hint=f"{name}.is_max")
    count = builder.op("cumsum", [builder.op("cast", [is_best], {"to": DType.i32}, hint=f"{name}.is_max_i32")],
                       {"axis": axis}, hint=f"{name}.max_count")
    first = builder.op("eq", [count, builder.scalar(1, DType.i32)], hint=f"{name}.first_count")
    chosen = builder.op("minimum", [is_best, first], hint=f"{name}.first_max")  # logical and
    return builder.op("cast", [chosen], {"to": dtype}, hint=name)


register({
    "LayerNormalization": convert_layernorm, "RMSNormalization": convert_rmsnorm,
    "GroupNormalization": convert_group_norm, "MeanVarianceNormalization": convert_mvn,
    "LpNormalization": convert_lp_norm, "Hardmax": convert_hardmax,
})
