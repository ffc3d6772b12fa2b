"""3-D convolutions in terms of the IR's ``conv2d`` (which is 2-D only).

- **Conv3d** (`conv3d`): output depth slice ``od`` is the sum over kernel depths ``kd`` of
  2-D convolutions of input depth slice ``od * stride + kd * dilation``. All of them are one
  ``conv2d``: the input's depth windows are gathered (static rows) and stacked into the
  channels, ``[N * OD, groups * KD * C / groups, H, W]``, and the weight's kernel depth
  moves into its input channels the same way, ``[O, KD * C / groups, KH, KW]`` (group-major,
  so ``groups`` keeps each group's channels together).
- **ConvTranspose 3-D** (`conv_transpose_nd`): the convolution, at stride 1, of the input
  with ``stride - 1`` zeros inserted between cells and ``dilation * (k - 1) - pad`` cells
  of zero padding (``+ output_padding`` at the end; a negative amount crops), by the
  weight flipped in every spatial dim with its in and out channels swapped per group.
"""

from __future__ import annotations

import numpy as np

from rlxir.importers.builder import UnsupportedModel, pad_axis
from rlxir.importers.onnx_ops import product
from rlxir.types import TensorType


def conv3d(ctx, name: str, x: str, weight: str | np.ndarray, bias: str | None, strides, pads, dilations,
           groups: int) -> str:
    """Conv over [N, C, D, H, W] with `weight` [O, C / groups, KD, KH, KW] (a value, or an
    array when static: then the rearranged weight is a param); `pads` is
    ``[begin x 3, end x 3]``."""
    b = ctx.builder
    batch, channels, depth, height, width = b.type(x).shape
    out_channels, per_group, kd, kh, kw = weight.shape if isinstance(weight, np.ndarray) else b.type(weight).shape
    if not isinstance(depth, int) or not all(isinstance(dim, int) for dim in (channels, kd)):
        raise UnsupportedModel("a 3-D Conv over a symbolic depth or channel count", expected="static D, C and kernel")
    padded = pad_axis(ctx.builder, x, 2, pads[0], pads[3], 0, f"{name}.depth_padded")
    room = depth + pads[0] + pads[3] - dilations[0] * (kd - 1) - 1
    if room < 0:
        raise UnsupportedModel(f"a 3-D Conv kernel of depth {kd} over {depth + pads[0] + pads[3]} padded slices",
                               expected="a kernel no deeper than the padded input")
    out_depth = room // strides[0] + 1
    rows = (np.arange(out_depth)[:, None] * strides[0] + np.arange(kd)[None, :] * dilations[0]).reshape(-1)
    windows = b.op("gather", [padded, b.literal(f"{name}.depth_rows", rows)], {"axis": 2}, hint=f"{name}.windows")
    split = b.op("reshape", [windows], {"shape": (batch, groups, channels // groups, out_depth, kd, height, width)},
                 hint=f"{name}.split")
    moved = b.op("transpose", [split], {"perm": (0, 3, 1, 4, 2, 5, 6)}, hint=f"{name}.moved")
    stacked = b.op("reshape", [moved], {"shape": (product((batch, out_depth)), channels * kd, height, width)},
                   hint=f"{name}.stacked")
    flat_weight = _stacked_weight(ctx, name, weight, (out_channels, per_group, kd, kh, kw), b.type(x).dtype)
    attributes = {"stride": tuple(strides[1:]), "padding": (pads[1], pads[2], pads[4], pads[5]),
                  "dilation": tuple(dilations[1:]), "groups": groups}
    planes = b.op("conv2d", [stacked, flat_weight] + ([bias] if bias else []), attributes, hint=f"{name}.planes")
    out_h, out_w = b.type(planes).shape[2:]
    unstacked = b.op("reshape", [planes], {"shape": (batch, out_depth, out_channels, out_h, out_w)},
                     hint=f"{name}.unstacked")
    return b.op("transpose", [unstacked], {"perm": (0, 2, 1, 3, 4)}, hint=name)


def _stacked_weight(ctx, name: str, weight, shape: tuple, dtype) -> str:
    """[O, C/g, KD, KH, KW] -> [O, KD * C/g, KH, KW] (kernel depth outside the channels)."""
    out_channels, per_group, kd, kh, kw = shape
    target = (out_channels, kd * per_group, kh, kw)
    if isinstance(weight, np.ndarray):
        moved = np.ascontiguousarray(weight.transpose(0, 2, 1, 3, 4)).reshape(target)
        return ctx.builder.tensor(f"{name}.weight2d", moved.astype(dtype.numpy), weight=True, dtype=dtype)
    if ctx.builder.type(weight).dtype is not dtype:
        weight = ctx.builder.op("cast", [weight], {"to": dtype}, hint=f"{name}.weight_cast")
    moved = ctx.builder.op("transpose", [weight], {"perm": (0, 2, 1, 3, 4)}, hint=f"{name}.weight_moved")
    return ctx.builder.op("reshape", [moved], {"shape": target}, hint=f"{name}.weight2d")


def _spread(ctx, x: str, axis: int, stride: int, name: str) -> str:
    """`x` with ``stride - 1`` zeros between neighbouring cells along `axis`."""
    if stride == 1:
        return x
    b = ctx.builder
    type_ = b.type(x)
    shape = tuple(type_.shape)
    size = shape[axis]
    column = b.op("reshape", [x], {"shape": shape[:axis + 1] + (1,) + shape[axis + 1:]}, hint=f"{name}.column")
    zeros = b.splat(f"{name}.gaps", 0, TensorType(type_.dtype, shape[:axis + 1] + (stride - 1,) + shape[axis + 1:]))
    paired = b.op("concat", [column, zeros], {"axis": axis + 1}, hint=f"{name}.paired")
    flat = b.op("reshape", [paired], {"shape": shape[:axis] + (size * stride,) + shape[axis + 1:]}, hint=f"{name}.flat")
    return b.op("slice", [flat], {"axis": axis, "start": 0, "len": (size - 1) * stride + 1}, hint=name)


def transposed_weight(weight: np.ndarray, groups: int) -> np.ndarray:
    """ConvTranspose's [C_in, C_out / g, K...] as the equivalent Conv's [C_out, C_in / g, K...],
    flipped in every spatial dim."""
    c_in, per_group_out, *kernel = weight.shape
    grouped = weight.reshape(groups, c_in // groups, per_group_out, *kernel).swapaxes(1, 2)
    flipped = grouped[(slice(None),) * 3 + (slice(None, None, -1),) * len(kernel)]
    return np.ascontiguousarray(flipped).reshape(groups * per_group_out, c_in // groups, *kernel)


def transposed_weight_value(ctx, name: str, w: str, groups: int) -> str:
    """`transposed_weight` of a run-time weight: reshape, transpose, a reversing gather per
    spatial dim, reshape."""
    b = ctx.builder
    c_in, per_group_out, *kernel = b.type(w).shape
    if not isinstance(c_in, int):
        raise UnsupportedModel(f"a ConvTranspose weight of symbolic input channels {c_in}",
                               expected="a weight of static shape")
    rank = len(kernel)
    grouped = b.op("reshape", [w], {"shape": (groups, c_in // groups, per_group_out, *kernel)},
                   hint=f"{name}.grouped")
    value = b.op("transpose", [grouped], {"perm": (0, 2, 1, *range(3, 3 + rank))}, hint=f"{name}.swapped")
    for axis, size in enumerate(kernel):
        reverse = b.literal(f"{name}.reverse{axis}", np.arange(size - 1, -1, -1, dtype=np.int64))
        value = b.op("gather", [value, reverse], {"axis": 3 + axis}, hint=f"{name}.flipped{axis}")
    return b.op("reshape", [value], {"shape": (groups * per_group_out, c_in // groups, *kernel)},
                hint=f"{name}.conv_weight")


def conv_transpose_nd(ctx, name: str, x: str, weight: str | np.ndarray, bias: str | None, strides, dilations,
                      pads, output_padding, groups: int) -> str:
    """A 3-D ConvTranspose as the stride-1 conv of the spread-out input (`weight` a value,
    or an array when static)."""
    count = len(strides)
    if isinstance(weight, np.ndarray):
        weight = transposed_weight(weight, groups)
        kernel = weight.shape[2:]
    else:
        weight = transposed_weight_value(ctx, name, weight, groups)
        kernel = ctx.builder.type(weight).shape[2:]
    spread = x
    for axis in range(count):
        spread = _spread(ctx, spread, 2 + axis, strides[axis], f"{name}.spread{axis}")
    conv_pads = [dilations[axis] * (kernel[axis] - 1) - pads[axis] for axis in range(count)] + \
                [dilations[axis] * (kernel[axis] - 1) - pads[count + axis] + output_padding[axis] for axis in range(count)]
    for axis in range(count):  # negative amounts crop the spread input first
        begin, end = conv_pads[axis], conv_pads[count + axis]
        if begin < 0 or end < 0:
            spread = pad_axis(ctx.builder, spread, 2 + axis, min(begin, 0), min(end, 0), 0, f"{name}.cropped")
            conv_pads[axis], conv_pads[count + axis] = max(begin, 0), max(end, 0)
    return conv3d(ctx, name, spread, weight, bias, [1] * count, conv_pads, dilations, groups)
