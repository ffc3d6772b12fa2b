"""ONNX op -> core ops: DeformConv (2-D), a convolution whose taps move by run-time offsets.

Each kernel tap of each output cell reads the input at its regular position plus its
offset (per offset group), bilinearly, a tap outside the input reading zero (ONNX defines
it as GridSample with align_corners over the absolute positions). The sampled values,
times the optional mask, are the columns of an im2col, ``[N, C * K, OH * OW]``; the
convolution is then a ``matmul`` per group with the weight ``[O / g, C / g * K]``, plus the
bias. Positions and weights come from the offsets at run time: four ``gather_elements``
(the bilinear corners) of the input flattened over H * W, per offset group.
"""

from __future__ import annotations

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_grid import gather_cells
from rlxir.importers.onnx_ops import hint, operand, optional_input, product
from rlxir.importers.onnx_registry import register


def convert_deform_conv(ctx, node, attrs):
    x = ctx.value(node.input[0])
    x_type = ctx.builder.type(x)
    if x_type.rank != 4:
        raise UnsupportedModel(f"a {x_type.rank - 2}-D DeformConv", expected="DeformConv over 2 spatial dims")
    dtype = x_type.dtype
    w = operand(ctx, node.input[1], dtype)
    offset = operand(ctx, node.input[2], dtype)
    batch, channels, height, width = x_type.shape
    out_channels, per_group, *kernel = ctx.builder.type(w).shape
    kernel = [int(k) for k in attrs.get("kernel_shape", kernel)]
    strides = [int(s) for s in attrs.get("strides", [1, 1])]
    dilations = [int(d) for d in attrs.get("dilations", [1, 1])]
    pads = [int(p) for p in attrs.get("pads", [0, 0, 0, 0])]
    groups, offset_groups = int(attrs.get("group", 1)), int(attrs.get("offset_group", 1))
    if not all(isinstance(dim, int) for dim in (channels, height, width)) or channels % offset_groups:
        raise UnsupportedModel(f"DeformConv of a {list(x_type.shape)} input in {offset_groups} offset groups",
                               expected="static C, H, W, C a multiple of offset_group")
    out_h, out_w = ctx.builder.type(offset).shape[2:]
    expected = [(size + pads[axis] + pads[2 + axis] - dilations[axis] * (kernel[axis] - 1) - 1) // strides[axis] + 1
                for axis, size in enumerate((height, width))]
    if [out_h, out_w] != expected:
        raise UnsupportedModel(f"DeformConv offsets over {out_h}x{out_w} cells for an output of "
                               f"{expected[0]}x{expected[1]}", expected="offsets over the output's cells")
    name = hint(node)
    mask = operand(ctx, optional_input(node, 4), dtype) if optional_input(node, 4) else None
    columns = _sampled_columns(ctx, x, offset, mask, kernel, strides, dilations, pads, offset_groups, (out_h, out_w),
                               name)
    taps = kernel[0] * kernel[1]
    b = ctx.builder
    grouped_columns = b.op("reshape", [columns], {"shape": (batch, groups, channels // groups * taps, out_h * out_w)},
                           hint=f"{name}.group_columns")
    if not isinstance(out_channels, int) and groups != 1:
        raise UnsupportedModel(f"a grouped DeformConv of {out_channels} output channels",
                               expected="a static output channel count")
    per_group_out = out_channels // groups if groups != 1 else out_channels
    grouped_weight = b.op("reshape", [w], {"shape": (groups, per_group_out, per_group * taps)},
                          hint=f"{name}.group_weight")
    product_ = b.op("matmul", [grouped_weight, grouped_columns], hint=f"{name}.product")
    result = b.op("reshape", [product_], {"shape": (batch, out_channels, out_h, out_w)},
                  hint=name if not optional_input(node, 3) else f"{name}.unbiased")
    if optional_input(node, 3):
        bias = b.op("reshape", [operand(ctx, node.input[3], dtype)], {"shape": (out_channels, 1, 1)},
                    hint=f"{name}.bias")
        result = b.op("add", [result, bias], hint=name)
    return [result]


def _sampled_columns(ctx, x, offset, mask, kernel, strides, dilations, pads, offset_groups, out_sizes, name) -> str:
    """[N, C * K, P]: every channel sampled at every tap's moved position (K taps, P cells)."""
    b = ctx.builder
    dtype = b.type(x).dtype
    batch, channels, height, width = b.type(x).shape
    taps, cells = kernel[0] * kernel[1], out_sizes[0] * out_sizes[1]
    moves = b.op("reshape", [offset], {"shape": (batch, offset_groups, taps, 2, cells)}, hint=f"{name}.moves")
    positions = []
    for axis in range(2):  # 0: rows (h), 1: columns (w)
        rows = np.arange(out_sizes[axis]) * strides[axis] - pads[axis]
        along = np.arange(kernel[axis]) * dilations[axis]
        layout = [1, 1, 1, 1]  # [kH, kW, OH, OW]
        layout[axis], layout[2 + axis] = kernel[axis], out_sizes[axis]
        grid = (along[:, None] + rows[None, :]).reshape(layout)
        base = np.broadcast_to(grid, (kernel[0], kernel[1], out_sizes[0], out_sizes[1]))
        moved = b.op("slice", [moves], {"axis": 3, "start": axis, "len": 1}, hint=f"{name}.move{axis}")
        moved = b.op("reshape", [moved], {"shape": (batch, offset_groups, taps, cells)}, hint=f"{name}.move{axis}.flat")
        regular = b.literal(f"{name}.regular{axis}", base.reshape(taps, cells).astype(np.float64), dtype)
        positions.append(b.op("add", [moved, regular], hint=f"{name}.position{axis}"))
    corners = [_corner_taps(ctx, positions[axis], size, f"{name}.{'hw'[axis]}")
               for axis, size in enumerate((height, width))]
    per_group = channels // offset_groups
    planes = b.op("reshape", [x], {"shape": (batch, offset_groups, per_group, height * width)}, hint=f"{name}.planes")
    total = None
    for row_index, row_weight in corners[0]:
        for column_index, column_weight in corners[1]:
            label = f"{name}.corner{0 if total is None else 1}"
            index = b.op("add", [b.op("mul", [row_index, b.scalar(width, DType.i64)], hint=f"{label}.row"),
                                 column_index], hint=f"{label}.index")  # [N, G, K, P]
            weight = b.op("mul", [row_weight, column_weight], hint=f"{label}.w")
            term = gather_cells(ctx, planes, index, weight, label)
            total = term if total is None else b.op("add", [total, term], hint=f"{name}.sampled")
    if mask is not None:
        masks = b.op("reshape", [mask], {"shape": (batch, offset_groups, 1, taps * cells)}, hint=f"{name}.mask")
        total = b.op("mul", [total, masks], hint=f"{name}.masked")
    return b.op("reshape", [total], {"shape": (batch, product((channels, taps)), cells)}, hint=f"{name}.columns")


def _corner_taps(ctx, position: str, size: int, name: str) -> list[tuple[str, str]]:
    """The two bilinear taps along one axis: (index clamped into the input as i64, weight
    that is zero where the tap lies outside)."""
    b = ctx.builder
    dtype = b.type(position).dtype
    low = b.op("floor", [position], hint=f"{name}.low")
    fraction = b.op("sub", [position, low], hint=f"{name}.fraction")
    taps = []
    for step, weight in ((0, b.op("sub", [b.scalar(1.0, dtype), fraction], hint=f"{name}.w0")), (1, fraction)):
        at = low if step == 0 else b.op("add", [low, b.scalar(1.0, dtype)], hint=f"{name}.high")
        inside = b.op("ne", [b.op("lt", [at, b.scalar(0.0, dtype)], hint=f"{name}.before{step}"),
                             b.op("lt", [at, b.scalar(float(size), dtype)], hint=f"{name}.before_end{step}")],
                      hint=f"{name}.inside{step}")
        kept = b.op("mul", [weight, b.op("cast", [inside], {"to": dtype}, hint=f"{name}.keep{step}")],
                    hint=f"{name}.weight{step}")
        clamped = b.op("minimum", [b.op("maximum", [at, b.scalar(0.0, dtype)], hint=f"{name}.raised{step}"),
                                   b.scalar(size - 1.0, dtype)], hint=f"{name}.clamped{step}")
        taps.append((b.op("cast", [clamped], {"to": DType.i64}, hint=f"{name}.index{step}"), kept))
    return taps


register({"DeformConv": convert_deform_conv})
