"""ONNX op -> core ops: MaxPool, AveragePool, LpPool over 1, 2 or 3 spatial dims, their
global forms, MaxPool's Indices output and MaxUnpool.

The IR pools are 2-D (``max_pool2d``, ``avg_pool2d``: floor-mode windows, the average over
the whole kernel); every ONNX pool is expressed through them (`pool_nd`):

- a 1-D pool is a 2-D one over a unit height;
- a 3-D pool is a 2-D pool over (H, W) of ``[N, C*D, H, W]``, then a 2-D pool with a
  ``[kD, 1]`` kernel over ``[N, C, D, OH*OW]``: max, sum and ONNX's average are all
  separable over the axes of a box window (an average's cell count is the product of the
  counts per axis);
- ceil_mode is extra end padding (`rlxir.importers.pooling`), dilations are separable
  strided slices (`rlxir.importers.onnx_pool_dilated`), and an average that does not
  count every padded cell is corrected by static factors;
- LpPool is ``(sum |x|^p)^(1/p)``: the sum is the IR's average times the kernel's area.

MaxPool's Indices (read only when a model reads output 1) come from windows gathered with
static index lists (`max_pool_with_indices`): the first maximum of each window in scan
order, as ONNX numbers it (row-major over N, C and the spatial dims, or column-major over
the spatial dims with storage_order=1).
"""

from __future__ import annotations

import math

import attrs
import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, pad_axis
from rlxir.importers.onnx_nn import resolve_pads, take_pending_pad
from rlxir.importers.onnx_ops import hint, optional_input, product, static_ints, unused
from rlxir.importers.onnx_pool_dilated import convert_dilated_pool, pooled_size
from rlxir.importers.onnx_registry import register
from rlxir.importers.pooling import ceil_mode_padding
from rlxir.types import TensorType

KINDS = {"MaxPool": "max", "AveragePool": "average", "LpPool": "sum"}


@attrs.frozen
class Window:
    """A pool's windows over the spatial dims: per-dim lists, `pads` as ``[begin..., end...]``
    (the declared padding plus a folded Pad's)."""

    kernel: list
    strides: list
    dilations: list
    pads: list
    ceil_mode: bool = False
    include_pad: bool = False

    @property
    def rank(self) -> int:
        return len(self.kernel)

    def select(self, axes: list[int], trailing_unit: bool = False, leading_unit: bool = False) -> Window:
        """The window over some of the dims, with a unit dim (kernel 1, no padding) added."""
        count = self.rank

        def pick(values, unit):
            chosen = [values[axis] for axis in axes]
            return ([unit] if leading_unit else []) + chosen + ([unit] if trailing_unit else [])

        begins = pick(self.pads[:count], 0)
        ends = pick(self.pads[count:], 0)
        return attrs.evolve(self, kernel=pick(self.kernel, 1), strides=pick(self.strides, 1),
                            dilations=pick(self.dilations, 1), pads=begins + ends)


def pool_window(ctx, node, attrs_, shape, extra) -> Window:
    """The node's windows from its attributes (auto_pad resolved, a folded Pad added)."""
    spatial = len(shape) - 2
    kernel = [int(k) for k in attrs_["kernel_shape"]]
    if len(kernel) != spatial:
        raise UnsupportedModel(f"a kernel_shape {kernel} for {spatial} spatial dims", expected="a size per dim")
    strides = [int(s) for s in attrs_.get("strides", [1] * spatial)]
    dilations = [int(d) for d in attrs_.get("dilations", [1] * spatial)]
    pads = resolve_pads(attrs_, shape[2:], kernel, strides, dilations)
    if extra is not None:
        pads = [a + b for a, b in zip(pads, extra)]
    return Window(kernel, strides, dilations, pads, bool(attrs_.get("ceil_mode", 0)),
                  bool(attrs_.get("count_include_pad", 0)))


# --- converters -----------------------------------------------------------------------
def convert_pool(ctx, node, attrs_):
    source, extra = take_pending_pad(ctx, node.input[0])
    x = ctx.value(source)
    shape = ctx.builder.type(x).shape
    if len(shape) not in (3, 4, 5):
        raise UnsupportedModel(f"a {len(shape) - 2}-D {node.op_type}", expected="pooling over 1, 2 or 3 spatial dims")
    window = pool_window(ctx, node, attrs_, shape, extra)
    name = hint(node)
    if node.op_type == "MaxPool" and not unused(ctx, node, 1):
        storage_order = int(attrs_.get("storage_order", 0))
        return list(max_pool_with_indices(ctx, x, window, storage_order, name, hint(node, 1)))
    if node.op_type != "LpPool":
        return [pool_nd(ctx, x, KINDS[node.op_type], window, name)]
    p = _norm_order(attrs_)
    powered = _abs_power(ctx, x, p, f"{name}.powered")
    return [_root(ctx, pool_nd(ctx, powered, "sum", window, f"{name}.sum"), p, name)]


def convert_global_pool(ctx, node, attrs_):
    x = ctx.value(node.input[0])
    axes = tuple(range(2, ctx.builder.type(x).rank))
    name = hint(node)
    if node.op_type == "GlobalLpPool":
        p = _norm_order(attrs_)
        powered = _abs_power(ctx, x, p, f"{name}.powered")
        total = ctx.builder.op("reduce_sum", [powered], {"axes": axes, "keepdims": True}, hint=f"{name}.sum")
        return [_root(ctx, total, p, name)]
    op = "reduce_mean" if node.op_type == "GlobalAveragePool" else "reduce_max"
    return [ctx.builder.op(op, [x], {"axes": axes, "keepdims": True}, hint=name)]


def _abs_power(ctx, x: str, p: float, name: str) -> str:
    if p == 2:
        return ctx.builder.op("mul", [x, x], hint=name)
    magnitude = ctx.builder.op("abs", [x], hint=f"{name}.abs" if p != 1 else name)
    if p == 1:
        return magnitude
    return ctx.builder.op("pow", [magnitude, ctx.builder.scalar(p, ctx.builder.type(x).dtype)], hint=name)


def _norm_order(attrs_) -> float:
    """LpPool's p: a positive order (0 would take the 1/p-th root)."""
    p = float(attrs_.get("p", 2))
    if not p > 0:
        raise UnsupportedModel(f"an Lp pool of order p = {p}", expected="p > 0")
    return p


def _root(ctx, total: str, p: float, name: str) -> str:
    if p == 1:
        return total
    if p == 2:
        return ctx.builder.op("sqrt", [total], hint=name)
    return ctx.builder.op("pow", [total, ctx.builder.scalar(1 / p, ctx.builder.type(total).dtype)], hint=name)


# --- windows through the 2-D pools ----------------------------------------------------
def pool_nd(ctx, x: str, kind: str, window: Window, name: str) -> str:
    """`kind` ("max", "average" as ONNX counts, or "sum") over the windows of the
    [N, C, *spatial] `x`, for 1 to 3 spatial dims."""
    shape = tuple(ctx.builder.type(x).shape)
    if window.rank == 2:
        return _pool2d(ctx, x, kind, window, name)
    if window.rank == 1:
        batch, channels, length = shape
        high = ctx.builder.op("reshape", [x], {"shape": (batch, channels, 1, length)}, hint=f"{name}.2d")
        pooled = _pool2d(ctx, high, kind, window.select([0], leading_unit=True), f"{name}.pooled2d")
        out = ctx.builder.type(pooled).shape[3]
        return ctx.builder.op("reshape", [pooled], {"shape": (batch, channels, out)}, hint=name)
    batch, channels, depth, height, width = shape
    planes = ctx.builder.op("reshape", [x], {"shape": (batch, product((channels, depth)), height, width)},
                            hint=f"{name}.planes")
    pooled = _pool2d(ctx, planes, kind, window.select([1, 2]), f"{name}.hw")
    out_h, out_w = ctx.builder.type(pooled).shape[2:]
    columns = ctx.builder.op("reshape", [pooled], {"shape": (batch, channels, depth, out_h * out_w)},
                             hint=f"{name}.columns")
    deep = _pool2d(ctx, columns, kind, window.select([0], trailing_unit=True), f"{name}.d")
    out_d = ctx.builder.type(deep).shape[2]
    return ctx.builder.op("reshape", [deep], {"shape": (batch, channels, out_d, out_h, out_w)}, hint=name)


def _pool2d(ctx, x: str, kind: str, window: Window, name: str) -> str:
    if window.dilations != [1, 1]:
        return convert_dilated_pool(ctx, name, x, kind, window.kernel, window.strides, window.dilations, window.pads,
                                    window.ceil_mode, window.include_pad)
    spatial = ctx.builder.type(x).shape[2:]
    pads = list(window.pads)
    if window.ceil_mode:
        pads = list(ceil_mode_padding(spatial, window.kernel, window.strides, pads, "ceil_mode"))
    attributes = {"kernel": tuple(window.kernel), "stride": tuple(window.strides), "padding": tuple(pads)}
    if kind == "max":
        return ctx.builder.op("max_pool2d", [x], attributes, hint=name)
    dtype = ctx.builder.type(x).dtype
    if kind == "sum":
        mean = ctx.builder.op("avg_pool2d", [x], attributes, hint=f"{name}.mean")
        area = ctx.builder.scalar(window.kernel[0] * window.kernel[1], dtype)
        return ctx.builder.op("mul", [mean, area], hint=name)
    factor = _average_correction(spatial, window.kernel, window.strides, pads, window.pads, window.include_pad)
    if factor is None:
        return ctx.builder.op("avg_pool2d", [x], attributes, hint=name)
    pooled = ctx.builder.op("avg_pool2d", [x], attributes, hint=f"{name}.padded_mean")
    correction = ctx.builder.literal(f"{name}.count_correction", factor.astype(np.float32), dtype)
    return ctx.builder.op("mul", [pooled, correction], hint=name)


def _average_correction(spatial, kernel, strides, pads, counted, include_pad) -> np.ndarray | None:
    """[OH, OW] factors turning avg_pool2d's mean over the whole kernel (padding included,
    the IR's semantics) into ONNX's: over the cells inside the input (count_include_pad=0)
    or inside the declared padding (=1). None when every factor is 1."""
    count = len(kernel)
    per_axis = []
    for index, (size, window, stride) in enumerate(zip(spatial, kernel, strides)):
        if not isinstance(size, int):
            raise UnsupportedModel(f"AveragePool over the symbolic dim {size}", expected="static spatial dims")
        begin, end = pads[index], pads[count + index]
        low, high = (-counted[index], size + counted[count + index]) if include_pad else (0, size)
        outputs = (size + begin + end - window) // stride + 1
        starts = np.arange(outputs) * stride - begin
        cells = np.minimum(starts + window, high) - np.maximum(starts, low)
        per_axis.append(window / np.maximum(cells, 1))
    factor = np.multiply.outer(per_axis[0], per_axis[1])
    return None if np.all(factor == 1.0) else factor


# --- MaxPool with Indices -------------------------------------------------------------
def window_taps(spatial: list[int], window: Window) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(flat row-major spatial index [P, K], inside-the-input mask [P, K], output sizes) of
    every window's K taps in scan order, P windows in row-major order."""
    count = window.rank
    outs, positions = [], []
    for axis, size in enumerate(spatial):
        begin, end = window.pads[axis], window.pads[count + axis]
        out = pooled_size(size, window.kernel[axis], window.strides[axis], window.dilations[axis], begin, end,
                          window.ceil_mode)
        outs.append(out)
        taps = (np.arange(out)[:, None] * window.strides[axis] - begin
                + np.arange(window.kernel[axis])[None, :] * window.dilations[axis])
        layout = [1] * (2 * count)
        layout[axis], layout[count + axis] = out, window.kernel[axis]
        positions.append(taps.reshape(layout))
    full = tuple(outs) + tuple(window.kernel)
    flat, inside = np.zeros(full, np.int64), np.ones(full, bool)
    for size, taps in zip(spatial, positions):
        flat = flat * size + taps
        inside = inside & (taps >= 0) & (taps < size)
    windows, taps_per_window = math.prod(outs), math.prod(window.kernel)
    return (np.where(inside, flat, 0).reshape(windows, taps_per_window), inside.reshape(windows, taps_per_window),
            outs)


def max_pool_with_indices(ctx, x: str, window: Window, storage_order: int, name: str,
                          index_name: str) -> tuple[str, str]:
    """(max, Indices): each window's taps gathered from the flattened input, masked outside
    it, reduced; the index is the smallest row-major position holding the maximum (the
    first in scan order), renumbered column-major for storage_order=1, plus the offset of
    its sample and channel."""
    type_ = ctx.builder.type(x)
    batch, channels, *spatial = type_.shape
    if any(not isinstance(size, int) for size in spatial):
        raise UnsupportedModel("MaxPool Indices over symbolic spatial dims", expected="static spatial dims")
    flat, inside, outs = window_taps(spatial, window)
    windows, taps = flat.shape
    cells = math.prod(spatial)
    b = ctx.builder
    rows = b.op("reshape", [x], {"shape": (batch, channels, cells)}, hint=f"{name}.cells")
    gathered = b.op("gather", [rows, b.literal(f"{name}.taps", flat.reshape(-1))], {"axis": 2}, hint=f"{name}.taken")
    grouped = b.op("reshape", [gathered], {"shape": (batch, channels, windows, taps)}, hint=f"{name}.windows")
    lowest = -math.inf if type_.dtype.is_float else int(np.iinfo(type_.dtype.numpy).min)
    masked = b.op("where", [b.literal(f"{name}.inside", inside), grouped, b.scalar(lowest, type_.dtype)],
                  hint=f"{name}.masked")
    peak = b.op("reduce_max", [masked], {"axes": (3,), "keepdims": True}, hint=f"{name}.peak")
    values = b.op("reshape", [peak], {"shape": (batch, channels, *outs)}, hint=name)
    hit = b.op("eq", [masked, peak], hint=f"{name}.hit")
    candidates = b.op("where", [hit, b.literal(f"{name}.positions", flat), b.scalar(cells, DType.i64)],
                      hint=f"{name}.candidates")
    first = b.op("reduce_min", [candidates], {"axes": (3,), "keepdims": False}, hint=f"{name}.first")
    if storage_order:
        column_major = np.arange(cells).reshape(spatial).transpose().reshape(-1)
        renumber = np.argsort(column_major)  # row-major position -> column-major position
        first = b.op("gather", [b.literal(f"{name}.column_major", renumber.astype(np.int64)), first], {"axis": 0},
                     hint=f"{name}.column_major_first")
    offsets = _sample_channel_offsets(ctx, batch, channels, cells, f"{index_name}.offset")
    numbered = b.op("add", [first, offsets], hint=f"{index_name}.flat")
    return values, b.op("reshape", [numbered], {"shape": (batch, channels, *outs)}, hint=index_name)


def _sample_channel_offsets(ctx, batch, channels: int, cells: int, name: str) -> str:
    """``n * C * cells + c * cells`` as [N, C, 1] (N may be symbolic: a running count)."""
    b = ctx.builder
    ones = b.splat(f"{name}.ones", 1, TensorType(DType.i64, (batch, 1, 1)))
    samples = b.op("cumsum", [ones], {"axis": 0, "exclusive": True}, hint=f"{name}.sample")
    sample_offset = b.op("mul", [samples, b.scalar(channels * cells, DType.i64)], hint=f"{name}.samples")
    channel_offset = b.literal(f"{name}.channels", (np.arange(channels, dtype=np.int64) * cells).reshape(-1, 1))
    return b.op("add", [sample_offset, channel_offset], hint=name)

register({
    "MaxPool": convert_pool, "AveragePool": convert_pool, "LpPool": convert_pool,
    "GlobalAveragePool": convert_global_pool, "GlobalMaxPool": convert_global_pool,
    "GlobalLpPool": convert_global_pool,
})


# --- MaxUnpool ------------------------------------------------------------------------
def convert_max_unpool(ctx, node, attrs_):
    """The pooled values written at their Indices into zeros of the unpooled shape
    (``(in - 1) * stride + kernel - pads``): a ``scatter_elements`` over the flattened
    tensor. With output_shape, that tensor sits at the start of each larger dim, the rest
    zeros (as ONNX's reference places it)."""
    x = ctx.value(node.input[0])
    type_ = ctx.builder.type(x)
    batch, channels, *spatial = type_.shape
    count = len(spatial)
    kernel = [int(k) for k in attrs_["kernel_shape"]]
    strides = [int(s) for s in attrs_.get("strides", [1] * count)]
    pads = [int(p) for p in attrs_.get("pads", [0] * (2 * count))]
    if any(not isinstance(size, int) for size in spatial):
        raise UnsupportedModel("MaxUnpool over symbolic spatial dims", expected="static spatial dims")
    unpooled = [(size - 1) * stride - pads[axis] - pads[count + axis] + window
                for axis, (size, stride, window) in enumerate(zip(spatial, strides, kernel))]
    name, b = hint(node), ctx.builder
    elements = product((batch, channels, *unpooled))
    zeros = b.splat(f"{name}.zeros", 0, TensorType(type_.dtype, (elements,)))
    flat_shape = {"shape": (product((batch, channels, *spatial)),)}
    indices = b.op("reshape", [operand_i64(ctx, node.input[1])], flat_shape, hint=f"{name}.indices")
    values = b.op("reshape", [x], flat_shape, hint=f"{name}.values")
    written = b.op("scatter_elements", [zeros, indices, values], {"axis": 0}, hint=f"{name}.written")
    result = b.op("reshape", [written], {"shape": (batch, channels, *unpooled)},
                  hint=name if optional_input(node, 2) is None else f"{name}.unpooled")
    if optional_input(node, 2) is None:
        return [result]
    wanted = static_ints(ctx, node, 2, "output_shape")[2:]
    if len(wanted) != count or any(not isinstance(size, int) or size < have for size, have in zip(wanted, unpooled)):
        raise UnsupportedModel(f"MaxUnpool output_shape {wanted} for an unpooled {unpooled}",
                               expected="static sizes at least the unpooled ones")
    for axis, (size, have) in enumerate(zip(wanted, unpooled)):
        result = pad_axis(b, result, 2 + axis, 0, size - have, 0, name)
    return [result]


def operand_i64(ctx, onnx_name: str) -> str:
    value = ctx.value(onnx_name)
    if ctx.builder.type(value).dtype is DType.i64:
        return value
    return ctx.builder.op("cast", [value], {"to": DType.i64}, hint=f"{onnx_name}.i64")


register({"MaxUnpool": convert_max_unpool})
