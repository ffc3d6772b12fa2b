"""ONNX op -> core ops: ops that move image cells around without arithmetic on them.

- **DepthToSpace** / **SpaceToDepth**: a ``reshape`` to six dims, a ``transpose``, a
  ``reshape`` back (DCR or CRD order of the block and channel dims).
- **CenterCropPad**: per axis, a centred ``slice`` (crop) or zeros concatenated on both
  sides (pad), the odd cell at the end.
- **Col2Im**: the columns of an im2col summed back into the image: a ``scatter_elements``
  with add of every (block offset, column) entry at its static image cell; entries that
  fall in the padding go to one spare cell, sliced off.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from rlxir.importers.builder import UnsupportedModel, pad_axis
from rlxir.importers.onnx_ops import hint, product, static_ints
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_resize import same_size
from rlxir.types import TensorType


# --- DepthToSpace, SpaceToDepth -------------------------------------------------------
def _blocks(ctx, node, attrs) -> tuple[str, tuple, int, str]:
    x = ctx.value(node.input[0])
    shape = tuple(ctx.builder.type(x).shape)
    block = int(attrs["blocksize"])
    mode = attrs.get("mode", "DCR")
    if len(shape) != 4 or mode not in ("DCR", "CRD") or block < 1:
        raise UnsupportedModel(f"{node.op_type} of a rank-{len(shape)} input in mode {mode!r} with blocksize {block}",
                               expected="[N, C, H, W] input, mode DCR or CRD, blocksize >= 1")
    return x, shape, block, mode


def convert_depth_to_space(ctx, node, attrs):
    x, (batch, channels, height, width), block, mode = _blocks(ctx, node, attrs)
    if not isinstance(channels, int) or channels % (block * block):
        raise UnsupportedModel(f"DepthToSpace of {channels} channels by blocks of {block}",
                               expected="channels a multiple of blocksize squared")
    depth = channels // (block * block)
    name, b = hint(node), ctx.builder
    if mode == "DCR":
        split, perm = (batch, block, block, depth, height, width), (0, 3, 4, 1, 5, 2)
    else:
        split, perm = (batch, depth, block, block, height, width), (0, 1, 4, 2, 5, 3)
    blocks = b.op("reshape", [x], {"shape": split}, hint=f"{name}.blocks")
    moved = b.op("transpose", [blocks], {"perm": perm}, hint=f"{name}.moved")
    return [b.op("reshape", [moved], {"shape": (batch, depth, height * block, width * block)}, hint=name)]


def convert_space_to_depth(ctx, node, attrs):
    x, (batch, channels, height, width), block, mode = _blocks(ctx, node, attrs)
    if any(not isinstance(size, int) or size % block for size in (height, width)):
        raise UnsupportedModel(f"SpaceToDepth of a {height}x{width} image by blocks of {block}",
                               expected="static height and width, multiples of blocksize")
    name, b = hint(node), ctx.builder
    split = (batch, channels, height // block, block, width // block, block)
    perm = (0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4)
    blocks = b.op("reshape", [x], {"shape": split}, hint=f"{name}.blocks")
    moved = b.op("transpose", [blocks], {"perm": perm}, hint=f"{name}.moved")
    return [b.op("reshape", [moved], {"shape": (batch, product((channels, block * block)), height // block,
                                                 width // block)}, hint=name)]


# --- CenterCropPad --------------------------------------------------------------------
def convert_center_crop_pad(ctx, node, attrs):
    x = ctx.value(node.input[0])
    rank = ctx.builder.type(x).rank
    axes = [axis % rank for axis in attrs.get("axes", range(rank))]
    targets = static_ints(ctx, node, 1, "shape")
    if len(targets) != len(axes):
        raise UnsupportedModel(f"CenterCropPad to {targets} over axes {axes}", expected="a size per axis")
    name, b = hint(node), ctx.builder
    for axis, target in zip(axes, targets):
        size = b.type(x).shape[axis]
        if same_size(ctx, size, target):
            continue
        if same_size(ctx, size, ctx.static_batch):  # the batch symbol stands for the model's static batch
            size = ctx.static_batch
        if not isinstance(size, int) or not isinstance(target, int):
            raise UnsupportedModel(f"CenterCropPad of axis {axis} from {size} to {target}",
                                   expected="static sizes on the cropped or padded axes")
        if target < size:
            x = b.op("slice", [x], {"axis": axis, "start": (size - target) // 2, "len": target}, hint=name)
        else:
            x = pad_axis(b, x, axis, (target - size) // 2, target - size - (target - size) // 2, 0, name)
    return [x]


# --- Col2Im ---------------------------------------------------------------------------
def col2im_cells(image: list[int], block: list[int], strides, dilations, pads) -> tuple[np.ndarray, int]:
    """(the image cell of every (block offset, column) entry, block-offset-major, with
    ``prod(image)`` for an entry in the padding; the number of columns)."""
    count = len(image)
    outs = []
    for axis in range(count):
        span = dilations[axis] * (block[axis] - 1) + 1
        outs.append((image[axis] + pads[axis] + pads[count + axis] - span) // strides[axis] + 1)
    cells = []
    for offsets in itertools.product(*(range(size) for size in block)):
        for column in itertools.product(*(range(size) for size in outs)):
            position = [column[axis] * strides[axis] - pads[axis] + offsets[axis] * dilations[axis]
                        for axis in range(count)]
            inside = all(0 <= position[axis] < image[axis] for axis in range(count))
            cells.append(int(np.ravel_multi_index(position, image)) if inside else math.prod(image))
    return np.array(cells, np.int64), math.prod(outs)


def convert_col2im(ctx, node, attrs):
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    image = static_ints(ctx, node, 1, "image_shape")
    block = static_ints(ctx, node, 2, "block_shape")
    count = len(image)
    if any(not isinstance(size, int) for size in image + block) or len(block) != count:
        raise UnsupportedModel(f"Col2Im of image {image} and block {block}", expected="static shapes of one rank")
    strides = [int(s) for s in attrs.get("strides", [1] * count)]
    dilations = [int(d) for d in attrs.get("dilations", [1] * count)]
    pads = [int(p) for p in attrs.get("pads", [0] * (2 * count))]
    cells, columns = col2im_cells(image, block, strides, dilations, pads)
    batch, stacked, length = type_.shape
    kernel = math.prod(block)
    if not isinstance(stacked, int) or stacked % kernel or length != columns:
        raise UnsupportedModel(f"Col2Im input {list(type_.shape)} for blocks {block} over {columns} columns",
                               expected=f"[N, C * {kernel}, {columns}]")
    channels = stacked // kernel
    name, b = hint(node), ctx.builder
    entries = b.op("reshape", [x], {"shape": (batch, channels, kernel * length)}, hint=f"{name}.entries")
    where = b.literal(f"{name}.cells", cells.reshape(1, 1, -1))
    spread = b.op("expand", [where], {"shape": (batch, channels, kernel * length)}, hint=f"{name}.where")
    room = math.prod(image) + 1  # the last cell takes what falls in the padding
    zeros = b.splat(f"{name}.zeros", 0, TensorType(type_.dtype, (batch, channels, room)))
    summed = b.op("scatter_elements", [zeros, spread, entries], {"axis": 2, "reduction": "add"},
                  hint=f"{name}.summed")
    inside = b.op("slice", [summed], {"axis": 2, "start": 0, "len": room - 1}, hint=f"{name}.inside")
    return [b.op("reshape", [inside], {"shape": (batch, channels, *image)}, hint=name)]


register({"DepthToSpace": convert_depth_to_space, "SpaceToDepth": convert_space_to_depth,
          "CenterCropPad": convert_center_crop_pad, "Col2Im": convert_col2im})
