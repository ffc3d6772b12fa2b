"""ONNX op -> core ops: convolution, normalisation, Gemm, LRN and Pad (pooling is in
`rlxir.importers.onnx_pool`).

Padding: ONNX writes 2-D pads as ``[x1_begin, x2_begin, x1_end, x2_end]``, which for NCHW
is ``[top, left, bottom, right]``, the order of the IR's ``padding``. A constant zero Pad
whose only reader is a Conv (or an AveragePool that counts padding; for MaxPool, a Pad
of -inf) is folded into that op's padding instead of materialising the padded tensor.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.importers.builder import UnsupportedModel, pad_axis
from rlxir.importers.onnx_conv_nd import conv3d
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_ops import (hint, operand, optional_input, product, refuse_used_outputs, static_input,
                                     static_ints, unused)
from rlxir.types import TensorType


# --- padding ---------------------------------------------------------------------------
def resolve_pads(attrs, spatial, kernel, strides, dilations) -> list[int]:
    """``[begin..., end...]`` per spatial dim, from ``pads`` or ``auto_pad``."""
    count = len(kernel)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    if auto_pad in ("NOTSET", ""):
        return [int(pad) for pad in attrs.get("pads", [0] * (2 * count))]
    if auto_pad == "VALID":
        return [0] * (2 * count)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedModel(f"auto_pad {auto_pad!r}", expected="NOTSET, VALID, SAME_UPPER or SAME_LOWER")
    begins, ends = [], []
    for size, window, stride, dilation in zip(spatial, kernel, strides, dilations):
        if not isinstance(size, int):
            raise UnsupportedModel(f"auto_pad {auto_pad} over the symbolic dim {size}", expected="static spatial dims")
        out = -(-size // stride)
        total = max((out - 1) * stride + (window - 1) * dilation + 1 - size, 0)
        small = total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else total - small)
        ends.append(total - begins[-1])
    return begins + ends


def take_pending_pad(ctx, name: str) -> tuple[str, list[int] | None]:
    """(the value to read, spatial pads folded from a Pad that produced `name`, if any)."""
    pending = ctx.pending_pads.pop(name, None)
    if pending is None:
        return name, None
    return pending


def _spatial_pads(pads: list[int], rank: int) -> list[int] | None:
    """The spatial half of a full ``[begin x rank, end x rank]`` pad list, or None when
    batch or channel dims are padded too."""
    begins, ends = pads[:rank], pads[rank:]
    if any(begins[:2]) or any(ends[:2]):
        return None
    return begins[2:] + ends[2:]


def _combined(pads: list[int], extra: list[int] | None) -> list[int]:
    return pads if extra is None else [a + b for a, b in zip(pads, extra)]


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def convert_pad(ctx, node, attrs):
    """Pad: constant pads are concatenated splats (or folded into the reading Conv / pool);
    reflect, edge and wrap are a ``gather`` per padded axis of a static index list (the
    source cell of each output cell); negative pads (constant mode) crop with a ``slice``."""
    mode = attrs.get("mode", "constant")
    if mode not in PAD_MODES:
        raise UnsupportedModel(f"Pad in mode {mode!r}", expected="one of " + ", ".join(PAD_MODES))
    x = node.input[0]
    rank = len(ctx.shape(x))
    pads, fill = _pad_arguments(ctx, node, attrs, rank)
    if any(not isinstance(pad, int) for pad in pads):
        raise UnsupportedModel(f"Pad with pads {pads}", expected="static pads")
    if mode != "constant" and any(pad < 0 for pad in pads):
        raise UnsupportedModel(f"Pad in mode {mode!r} with negative pads {pads}",
                               expected="negative pads (a crop) in constant mode only")
    if min(pads, default=0) >= 0 and _foldable_pad(ctx, node, rank, pads, fill):
        ctx.pending_pads[node.output[0]] = (x, _spatial_pads(pads, rank))
        return [None]
    if mode == "constant":
        return [_pad_with_concat(ctx, node, ctx.value(x), pads, fill)]
    return [_pad_with_gathers(ctx, node, ctx.value(x), pads, mode)]


def _pad_arguments(ctx, node, attrs, rank: int) -> tuple[list, float]:
    """(pads ``[begin x rank, end x rank]``, the constant) from attributes (before opset 11)
    or inputs (with axes from opset 18)."""
    if ctx.opset < 11:
        return [int(pad) for pad in attrs.get("pads", attrs.get("paddings", []))], float(attrs.get("value", 0.0))
    pads = static_ints(ctx, node, 1, "pads")
    fill = float(np.asarray(static_input(ctx, node, 2, "constant_value")).reshape(())) \
        if optional_input(node, 2) else 0.0
    if not optional_input(node, 3):
        return pads, fill
    axes = [axis % rank for axis in static_ints(ctx, node, 3, "axes")]
    full = [0] * (2 * rank)
    for index, axis in enumerate(axes):
        full[axis], full[rank + axis] = pads[index], pads[len(axes) + index]
    return full, fill


def pad_source_indices(size: int, begin: int, end: int, mode: str) -> np.ndarray:
    """The input cell each of the ``begin + size + end`` output cells reads (NumPy's pad
    modes, which ONNX follows: reflect without repeating the edge, edge, wrap)."""
    cells = np.arange(-begin, size + end)
    if mode == "edge":
        return np.clip(cells, 0, size - 1)
    if mode == "wrap":
        return np.mod(cells, size)
    if size == 1:
        return np.zeros_like(cells)
    period = 2 * (size - 1)
    folded = np.mod(cells, period)
    return np.where(folded < size, folded, period - folded)


def _pad_with_gathers(ctx, node, value: str, pads: list[int], mode: str) -> str:
    rank = len(pads) // 2
    for axis in range(rank):
        begin, end = pads[axis], pads[rank + axis]
        if not begin and not end:
            continue
        size = ctx.builder.type(value).shape[axis]
        if not isinstance(size, int):
            raise UnsupportedModel(f"Pad in mode {mode!r} of the symbolic dim {size}", expected="static padded dims")
        rows = ctx.builder.literal(f"{hint(node)}.rows{axis}", pad_source_indices(size, begin, end, mode))
        value = ctx.builder.op("gather", [value, rows], {"axis": axis}, hint=hint(node))
    return value


def _foldable_pad(ctx, node, rank: int, pads: list[int], fill: float) -> bool:
    readers = ctx.consumers.get(node.output[0], [])
    if rank not in (3, 4) or len(readers) != 1 or node.output[0] in ctx.graph_outputs:
        return False
    if _spatial_pads(pads, rank) is None or readers[0].input[0] != node.output[0]:
        return False
    reader = readers[0]
    if reader.op_type == "Conv":
        return fill == 0.0
    if reader.op_type == "AveragePool" and rank == 4:
        return fill == 0.0 and any(attribute.name == "count_include_pad" and attribute.i == 1
                                   for attribute in reader.attribute)
    # MaxPool's Indices number the cells of the padded tensor: a Pad under them stays.
    return reader.op_type == "MaxPool" and rank == 4 and fill == -math.inf and unused(ctx, reader, 1)


def _pad_with_concat(ctx, node, value: str, pads: list[int], fill: float) -> str:
    """Splats of `fill` concatenated per axis (a negative pad crops)."""
    rank = len(pads) // 2
    for axis in range(rank):
        value = pad_axis(ctx.builder, value, axis, pads[axis], pads[rank + axis], fill, hint(node))
    return value


# --- convolution -----------------------------------------------------------------------
def convert_conv(ctx, node, attrs):
    source, extra = take_pending_pad(ctx, node.input[0])
    x = ctx.value(source)
    dtype = ctx.builder.type(x).dtype
    static = ctx.static(node.input[1]) if node.input[1] not in ctx.values else None
    if len(ctx.shape(node.input[1])) == 5 and static is not None and static.dtype != object:
        weight = np.asarray(static)  # a 3-D conv rearranges its weight: once, while importing
    else:
        weight = operand(ctx, node.input[1], dtype)
    bias = operand(ctx, node.input[2], dtype) if optional_input(node, 2) else None
    return [convolve(ctx, node, attrs, x, weight, bias, extra, hint(node))]


def convolve(ctx, node, attrs, x: str, weight, bias: str | None, extra, name: str) -> str:
    """Conv over 1, 2 or 3 spatial dims of `x` by `weight` (a value, or a static array),
    with the node's attributes (`extra`: spatial pads folded from a Pad, or None)."""
    x_type = ctx.builder.type(x)
    w_shape = weight.shape if isinstance(weight, np.ndarray) else ctx.builder.type(weight).shape
    spatial = len(w_shape) - 2
    if x_type.rank != spatial + 2 or spatial not in (1, 2, 3):
        raise UnsupportedModel(f"a {spatial}-D {node.op_type}", expected=f"{node.op_type} over 1, 2 or 3 spatial dims")
    kernel = [int(k) for k in attrs.get("kernel_shape", w_shape[2:])]
    strides = [int(s) for s in attrs.get("strides", [1] * spatial)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * spatial)]
    pads = _combined(resolve_pads(attrs, x_type.shape[2:], kernel, strides, dilations), extra)
    groups = int(attrs.get("group", 1))
    if spatial == 3:
        return conv3d(ctx, name, x, weight, bias, strides, pads, dilations, groups)
    if isinstance(weight, np.ndarray):
        weight = ctx.builder.tensor(f"{name}.weight", weight, weight=True, dtype=x_type.dtype)
    if spatial == 2:
        attributes = {"stride": tuple(strides), "padding": tuple(pads), "dilation": tuple(dilations), "groups": groups}
        return ctx.builder.op("conv2d", [x, weight] + ([bias] if bias else []), attributes, hint=name)
    return _conv1d(ctx, name, x, weight, bias, strides[0], pads, dilations[0], groups)


def _conv1d(ctx, name: str, x, w, bias, stride, pads, dilation, groups) -> str:
    """A 1-D conv as a 2-D one over a unit height: [N, C, L] -> [N, C, 1, L]."""
    batch, channels, length = ctx.builder.type(x).shape
    out_channels, per_group, width = ctx.builder.type(w).shape
    x4 = ctx.builder.op("reshape", [x], {"shape": (batch, channels, 1, length)}, hint=f"{name}.x2d")
    w4 = ctx.builder.op("reshape", [w], {"shape": (out_channels, per_group, 1, width)}, hint=f"{name}.w2d")
    attributes = {"stride": (1, stride), "padding": (0, pads[0], 0, pads[1]), "dilation": (1, dilation),
                  "groups": groups}
    y4 = ctx.builder.op("conv2d", [x4, w4] + ([bias] if bias else []), attributes, hint=f"{name}.2d")
    _, _, _, out_length = ctx.builder.type(y4).shape
    return ctx.builder.op("reshape", [y4], {"shape": (batch, out_channels, out_length)}, hint=name)


# --- normalisation ---------------------------------------------------------------------
def convert_batchnorm(ctx, node, attrs):
    """``batchnorm`` on the stored statistics; in training mode (opset 14 on) on the batch's
    own mean and population variance over every axis but the channels, with the running
    statistics updated as ``running * momentum + batch * (1 - momentum)`` (outputs 1 and 2)."""
    x = ctx.value(node.input[0])
    dtype = ctx.builder.type(x).dtype
    operands = [x] + [operand(ctx, name, dtype) for name in node.input[1:5]]
    eps = {"eps": _float(attrs.get("epsilon", 1e-5))}
    if not attrs.get("training_mode", 0):
        refuse_used_outputs(ctx, node, 1, "running statistics")
        return [ctx.builder.op("batchnorm", operands, eps, hint=hint(node))]
    if ctx.opset < 14:
        raise UnsupportedModel("BatchNormalization in training mode before opset 14", expected="opset 14 or later")
    mean, variance = _batch_statistics(ctx, node, x)
    y = ctx.builder.op("batchnorm", operands[:3] + [mean, variance], eps, hint=hint(node))
    momentum = ctx.builder.scalar(_float(attrs.get("momentum", 0.9)), dtype)
    rest = ctx.builder.scalar(1.0 - _float(attrs.get("momentum", 0.9)), dtype)
    running = []
    for index, (stored, batch) in enumerate(((operands[3], mean), (operands[4], variance)), start=1):
        kept = ctx.builder.op("mul", [stored, momentum], hint=f"{hint(node, index)}.kept")
        fresh = ctx.builder.op("mul", [batch, rest], hint=f"{hint(node, index)}.fresh")
        running.append(ctx.builder.op("add", [kept, fresh], hint=hint(node, index)))
    return [y, *running]


def _batch_statistics(ctx, node, x: str) -> tuple[str, str]:
    """The per-channel mean and population variance of `x` over every axis but 1 ([C] each)."""
    shape = ctx.builder.type(x).shape
    axes = tuple(axis for axis in range(len(shape)) if axis != 1)
    name = hint(node)
    kept = ctx.builder.op("reduce_mean", [x], {"axes": axes, "keepdims": True}, hint=f"{name}.mean_kept")
    centered = ctx.builder.op("sub", [x, kept], hint=f"{name}.centered")
    squared = ctx.builder.op("mul", [centered, centered], hint=f"{name}.squared")
    variance = ctx.builder.op("reduce_mean", [squared], {"axes": axes, "keepdims": False}, hint=f"{name}.var")
    mean = ctx.builder.op("reshape", [kept], {"shape": (shape[1],)}, hint=f"{name}.mean")
    return mean, variance


def convert_instance_norm(ctx, node, attrs):
    """InstanceNormalization normalises each (sample, channel) over its spatial cells: a
    ``layernorm`` over [N, C, H*W] with unit gamma and zero beta, then the per-channel scale
    and bias as [C, 1, ...] columns."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank < 3:
        raise UnsupportedModel(f"InstanceNormalization of a rank-{type_.rank} input", expected="[N, C, ...] of rank >= 3")
    name, dtype = hint(node), type_.dtype
    batch, channels = type_.shape[:2]
    cells = product(type_.shape[2:])
    flat = x if type_.rank == 3 else ctx.builder.op("reshape", [x], {"shape": (batch, channels, cells)},
                                                    hint=f"{name}.cells")
    one = ctx.builder.splat(f"{name}.unit_gamma", 1, TensorType(dtype, (cells,)))
    zero = ctx.builder.splat(f"{name}.zero_beta", 0, TensorType(dtype, (cells,)))
    eps = _float(attrs.get("epsilon", 1e-5))
    normalized = ctx.builder.op("layernorm", [flat, one, zero], {"axis": -1, "eps": eps}, hint=f"{name}.normalized")
    if type_.rank != 3:
        normalized = ctx.builder.op("reshape", [normalized], {"shape": tuple(type_.shape)}, hint=f"{name}.unflat")
    column = (channels,) + (1,) * (type_.rank - 2)
    scale = channel_column(ctx, node.input[1], dtype, column, f"{name}.scale")
    bias = channel_column(ctx, node.input[2], dtype, column, f"{name}.bias")
    scaled = ctx.builder.op("mul", [normalized, scale], hint=f"{name}.scaled")
    return [ctx.builder.op("add", [scaled, bias], hint=name)]


def channel_column(ctx, onnx_name: str, dtype, column: tuple, name: str) -> str:
    """A per-channel [C] vector as a [C, 1, ...] column (reshaped while importing when static)."""
    if ctx.is_static(onnx_name) and onnx_name not in ctx.values:
        return ctx.builder.tensor(onnx_name, np.asarray(ctx.static(onnx_name)).reshape(column), weight=True,
                                  dtype=dtype)
    return ctx.builder.op("reshape", [operand(ctx, onnx_name, dtype)], {"shape": column}, hint=name)


def convert_lrn(ctx, node, attrs):
    """y = x / (bias + alpha/size * sum of x^2 over `size` channels around c) ^ beta.

    The channel-window sum is an avg_pool2d over [N, 1, C, H*W] with a [size, 1] kernel and
    zero padding (ONNX's window: floor((size-1)/2) before, ceil((size-1)/2) after), which
    divides by `size`: exactly the alpha/size factor.
    """
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    if type_.rank < 3:
        raise UnsupportedModel(f"LRN over a rank-{type_.rank} input", expected="[N, C, ...] of rank >= 3")
    size = int(attrs["size"])
    alpha, beta, bias = attrs.get("alpha", 1e-4), attrs.get("beta", 0.75), attrs.get("bias", 1.0)
    name, dtype = hint(node), type_.dtype
    batch, channels = type_.shape[:2]
    squared = ctx.builder.op("mul", [x, x], hint=f"{name}.square")
    rows = ctx.builder.op("reshape", [squared], {"shape": (batch, 1, channels, product(type_.shape[2:]))},
                          hint=f"{name}.channels")
    padding = ((size - 1) // 2, 0, size - 1 - (size - 1) // 2, 0)
    window = ctx.builder.op("avg_pool2d", [rows], {"kernel": (size, 1), "stride": (1, 1), "padding": padding},
                            hint=f"{name}.window_mean")
    back = ctx.builder.op("reshape", [window], {"shape": tuple(type_.shape)}, hint=f"{name}.window")
    scaled = ctx.builder.op("mul", [back, ctx.builder.scalar(alpha, dtype)], hint=f"{name}.scaled")
    base = ctx.builder.op("add", [scaled, ctx.builder.scalar(bias, dtype)], hint=f"{name}.base")
    denominator = ctx.builder.op("pow", [base, ctx.builder.scalar(beta, dtype)], hint=f"{name}.denominator")
    return [ctx.builder.op("div", [x, denominator], hint=name)]


def _float(value) -> float:
    from rlxir.importers.builder import shortest_float

    return shortest_float(float(value))


# --- Gemm ------------------------------------------------------------------------------
def convert_gemm(ctx, node, attrs):
    """Y = alpha op(A) op(B) + beta C. With a static B, no transA and alpha = beta = 1 it is
    ``linear`` (the weight stored [K, N], transposed from ONNX's [N, K] under transB), the
    form the fuse pass matches; otherwise matmul, scale and add."""
    a_name, b_name, c_name = node.input[0], node.input[1], optional_input(node, 2)
    trans_a, trans_b = bool(attrs.get("transA", 0)), bool(attrs.get("transB", 0))
    alpha, beta = float(attrs.get("alpha", 1.0)), float(attrs.get("beta", 1.0))
    a = ctx.value(a_name)
    dtype = ctx.builder.type(a).dtype
    if ctx.is_static(b_name) and not trans_a and alpha == 1.0 and (c_name is None or beta == 1.0):
        weight = ctx.static(b_name)
        w = ctx.builder.tensor(b_name, weight.T if trans_b else weight, weight=True)
        bias = [operand(ctx, c_name, dtype)] if c_name else []
        return [ctx.builder.op("linear", [a, w] + bias, hint=hint(node))]
    b = operand(ctx, b_name, dtype)
    result = ctx.builder.op("matmul", [a, b], {"transpose_a": trans_a, "transpose_b": trans_b},
                            hint=f"{hint(node)}.product" if c_name or alpha != 1.0 else hint(node))
    if alpha != 1.0:
        result = ctx.builder.op("mul", [result, ctx.builder.scalar(alpha, dtype)],
                                hint=f"{hint(node)}.scaled" if c_name else hint(node))
    if c_name and beta != 0.0:
        c = operand(ctx, c_name, dtype)
        if beta != 1.0:
            c = ctx.builder.op("mul", [c, ctx.builder.scalar(beta, dtype)], hint=f"{hint(node)}.bias")
        result = ctx.builder.op("add", [result, c], hint=hint(node))
    return [result]


register({
    "Conv": convert_conv, "BatchNormalization": convert_batchnorm, "LRN": convert_lrn,
    "Gemm": convert_gemm, "Pad": convert_pad, "InstanceNormalization": convert_instance_norm,
})
