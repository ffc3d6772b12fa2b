"""ONNX op -> core ops: GridSample and AffineGrid (sampling an image at run-time positions).

- **AffineGrid** is theta times the homogeneous positions of an evenly spaced grid:
  the positions ``[(x, y[, z]), 1]`` over the static `size` are a literal, the product a
  ``matmul``.
- **GridSample** reads the input at positions that arrive at run time, so its taps are
  computed by the graph: per spatial dim, the grid's normalised coordinate is scaled to
  the input (align_corners), rounded half to even (nearest), brought back inside by
  padding_mode (border: clamped; reflection: folded at the borders), and split into taps
  (1 for nearest, 2 for linear, 4 for cubic) with their weights. Every combination of the
  dims' taps is one ``gather_elements`` of the input flattened over its spatial dims,
  weighted (zeros padding: a tap outside the input weighs 0) and summed.

Both work over 2 or 3 spatial dims (any number, in fact); the input's spatial dims must be
static.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel, round_half_even
from rlxir.importers.onnx_ops import hint, operand, product, static_ints
from rlxir.importers.onnx_registry import register

CUBIC_A = -0.75
"""The cubic convolution coefficient GridSample uses (Keys; PyTorch's value)."""


# --- AffineGrid -----------------------------------------------------------------------
def base_positions(sizes: list[int], align_corners: bool) -> np.ndarray:
    """[prod(sizes), rank + 1]: each grid cell's normalised ``(x, y, ..., 1)`` (x along the
    last dim), row-major over `sizes`."""
    axes = []
    for size in sizes:
        if align_corners:  # a single cell sits at -1, as in ONNX's reference
            axes.append(np.linspace(-1.0, 1.0, size))
        else:
            axes.append((2 * np.arange(size) + 1) / size - 1)
    mesh = np.meshgrid(*axes, indexing="ij")
    columns = [coordinate.reshape(-1) for coordinate in reversed(mesh)]
    return np.stack(columns + [np.ones(math.prod(sizes))], axis=1)


def convert_affine_grid(ctx, node, attrs):
    theta = ctx.value(node.input[0])
    type_ = ctx.builder.type(theta)
    size = static_ints(ctx, node, 1, "size")
    sizes = size[2:]
    if len(sizes) not in (2, 3) or any(not isinstance(dim, int) for dim in sizes):
        raise UnsupportedModel(f"AffineGrid to the size {size}", expected="static [N, C, H, W] or [N, C, D, H, W]")
    if type_.rank != 3 or tuple(type_.shape[1:]) != (len(sizes), len(sizes) + 1):
        raise UnsupportedModel(f"AffineGrid of a theta shaped {list(type_.shape)}",
                               expected=f"[N, {len(sizes)}, {len(sizes) + 1}]")
    name, b = hint(node), ctx.builder
    positions = base_positions(sizes, bool(attrs.get("align_corners", 0)))
    columns = b.literal(f"{name}.positions", np.ascontiguousarray(positions.T), type_.dtype)
    moved = b.op("matmul", [theta, columns], hint=f"{name}.moved")  # [N, rank, cells]
    rows = b.op("transpose", [moved], {"perm": (0, 2, 1)}, hint=f"{name}.rows")
    return [b.op("reshape", [rows], {"shape": (type_.shape[0], *sizes, len(sizes))}, hint=name)]


# --- GridSample -----------------------------------------------------------------------
MODES = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "cubic": "cubic", "bicubic": "cubic"}
PADDINGS = ("zeros", "border", "reflection")


def convert_grid_sample(ctx, node, attrs):
    mode = MODES.get(attrs.get("mode", "linear" if ctx.opset >= 20 else "bilinear"))
    padding = attrs.get("padding_mode", "zeros")
    if mode is None or padding not in PADDINGS:
        raise UnsupportedModel(f"GridSample with mode {attrs.get('mode')!r} and padding_mode {padding!r}",
                               expected="mode nearest, linear or cubic (bilinear, bicubic); padding_mode "
                                        + ", ".join(PADDINGS))
    x = ctx.value(node.input[0])
    x_type = ctx.builder.type(x)
    if not x_type.dtype.is_float:
        raise UnsupportedModel(f"GridSample of {x_type.dtype.value} data", expected="float data")
    grid = operand(ctx, node.input[1], x_type.dtype)
    batch, channels, *spatial = x_type.shape
    if any(not isinstance(size, int) for size in spatial):
        raise UnsupportedModel("GridSample of an input with symbolic spatial dims", expected="static spatial dims")
    grid_shape = ctx.builder.type(grid).shape
    if len(grid_shape) != len(spatial) + 2 or grid_shape[-1] != len(spatial):
        raise UnsupportedModel(f"GridSample grid {list(grid_shape)} for {len(spatial)} spatial dims",
                               expected=f"[N, *out, {len(spatial)}]")
    name = hint(node)
    align = bool(attrs.get("align_corners", 0))
    taps = [_dim_taps(ctx, grid, axis, size, mode, padding, align, f"{name}.d{axis}")
            for axis, size in enumerate(spatial)]
    return [_sum_of_taps(ctx, x, taps, grid_shape[1:-1], name)]


def _component(ctx, grid: str, axis: int, count: int, name: str) -> str:
    """The grid's coordinate for spatial dim `axis` (the grid lists x, the last dim, first)."""
    shape = ctx.builder.type(grid).shape
    one = ctx.builder.op("slice", [grid], {"axis": len(shape) - 1, "start": count - 1 - axis, "len": 1},
                         hint=f"{name}.normalized1")
    return ctx.builder.op("reshape", [one], {"shape": tuple(shape[:-1])}, hint=f"{name}.normalized")


def _dim_taps(ctx, grid: str, axis: int, size: int, mode: str, padding: str, align: bool, name: str) -> list:
    """[(index i64, weight or None, inside-the-input mask or None)] of one spatial dim."""
    b = ctx.builder
    dtype = b.type(grid).dtype
    count = b.type(grid).shape[-1]
    normalized = _component(ctx, grid, axis, count, name)

    def scalar(value):
        return b.scalar(value, dtype)

    shifted = b.op("add", [normalized, scalar(1.0)], hint=f"{name}.shifted")
    if align:
        position = b.op("mul", [shifted, scalar((size - 1) / 2)], hint=f"{name}.position")
    else:
        scaled = b.op("mul", [shifted, scalar(size / 2)], hint=f"{name}.scaled")
        position = b.op("sub", [scaled, scalar(0.5)], hint=f"{name}.position")
    if mode == "nearest":
        position = round_half_even(ctx.builder, position, f"{name}.rounded")
    low, high = (0.0, size - 1.0) if align else (-0.5, size - 0.5)
    position = _bring_inside(ctx, position, padding, low, high, size, f"{name}.inside")
    if mode == "nearest":
        return [_tap(ctx, position, None, padding, low, high, size, f"{name}.tap0")]
    base = b.op("floor", [position], hint=f"{name}.floor")
    fraction = b.op("sub", [position, base], hint=f"{name}.fraction")
    offsets = (0, 1) if mode == "linear" else (-1, 0, 1, 2)
    weights = _linear_weights(ctx, fraction, name) if mode == "linear" else _cubic_weights(ctx, fraction, name)
    taps = []
    for offset, weight in zip(offsets, weights):
        index = base if offset == 0 else b.op("add", [base, scalar(float(offset))], hint=f"{name}.at{offset}")
        taps.append(_tap(ctx, index, weight, padding, low, high, size, f"{name}.tap{offset}"))
    return taps


def _bring_inside(ctx, x: str, padding: str, low: float, high: float, size: int, name: str) -> str:
    """Positions past [low, high] clamped (border) or reflected (reflection); as they are
    for zeros."""
    if padding == "zeros":
        return x
    if padding == "border":  # only positions past the borders move, onto the edge cells
        b = ctx.builder
        dtype = b.type(x).dtype
        outside = b.op("ne", [b.op("lt", [x, b.scalar(low, dtype)], hint=f"{name}.below"),
                              b.op("gt", [x, b.scalar(high, dtype)], hint=f"{name}.above")], hint=f"{name}.outside")
        return b.op("where", [outside, _clamp(ctx, x, 0.0, size - 1.0, f"{name}.clamped"), x], hint=name)
    return _reflect(ctx, x, low, high, name)


def _clamp(ctx, x: str, low: float, high: float, name: str) -> str:
    b = ctx.builder
    dtype = b.type(x).dtype
    raised = b.op("maximum", [x, b.scalar(low, dtype)], hint=f"{name}.low")
    return b.op("minimum", [raised, b.scalar(high, dtype)], hint=name)


def _reflect(ctx, x: str, low: float, high: float, name: str) -> str:
    """`x` folded back at `low` and `high` until it lies between them."""
    b = ctx.builder
    dtype = b.type(x).dtype

    def scalar(value):
        return b.scalar(value, dtype)

    span = high - low
    below = b.op("lt", [x, scalar(low)], hint=f"{name}.below")
    above = b.op("gt", [x, scalar(high)], hint=f"{name}.above")
    if span == 0:
        return b.op("where", [below, scalar(low), b.op("where", [above, scalar(high), x], hint=f"{name}.top")],
                    hint=name)
    past_low = b.op("sub", [scalar(low), x], hint=f"{name}.past_low")
    past_high = b.op("sub", [x, scalar(high)], hint=f"{name}.past_high")
    distance = b.op("where", [below, past_low, past_high], hint=f"{name}.distance")
    folds = b.op("floor", [b.op("div", [distance, scalar(span)], hint=f"{name}.spans")], hint=f"{name}.folds")
    rest = b.op("sub", [distance, b.op("mul", [folds, scalar(span)], hint=f"{name}.folded")], hint=f"{name}.rest")
    even = b.op("eq", [b.op("fmod", [folds, scalar(2.0)], hint=f"{name}.parity"), scalar(0.0)], hint=f"{name}.even")
    from_low = b.op("add", [rest, scalar(low)], hint=f"{name}.from_low")
    from_high = b.op("sub", [scalar(high), rest], hint=f"{name}.from_high")
    # Below: an even number of folds ends measured from low; above, from high.
    lower_side = b.op("where", [even, from_low, from_high], hint=f"{name}.lower_side")
    upper_side = b.op("where", [even, from_high, from_low], hint=f"{name}.upper_side")
    folded = b.op("where", [below, lower_side, upper_side], hint=f"{name}.reflected")
    outside = b.op("ne", [below, above], hint=f"{name}.outside")  # never both
    return b.op("where", [outside, folded, x], hint=name)


def _linear_weights(ctx, t: str, name: str) -> list[str]:
    b = ctx.builder
    dtype = b.type(t).dtype
    return [b.op("sub", [b.scalar(1.0, dtype), t], hint=f"{name}.w0"), t]


def _cubic_weights(ctx, t: str, name: str) -> list[str]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 from the fraction `t`."""
    b = ctx.builder
    dtype = b.type(t).dtype
    a = CUBIC_A

    def scalar(value):
        return b.scalar(value, dtype)

    def polynomial(distance: str, coefficients: tuple, label: str) -> str:
        value = b.op("mul", [distance, scalar(coefficients[0])], hint=f"{label}.0")
        for index, coefficient in enumerate(coefficients[1:-1], start=1):
            value = b.op("mul", [b.op("add", [value, scalar(coefficient)], hint=f"{label}.{index}a"), distance],
                         hint=f"{label}.{index}")
        return b.op("add", [value, scalar(coefficients[-1])], hint=label)

    near = (a + 2, -(a + 3), 0.0, 1.0)       # |d| <= 1
    far = (a, -5 * a, 8 * a, -4 * a)         # 1 < |d| < 2
    one_minus = b.op("sub", [scalar(1.0), t], hint=f"{name}.one_minus")
    plus_one = b.op("add", [t, scalar(1.0)], hint=f"{name}.plus_one")
    two_minus = b.op("sub", [scalar(2.0), t], hint=f"{name}.two_minus")
    return [polynomial(plus_one, far, f"{name}.w_m1"), polynomial(t, near, f"{name}.w0"),
            polynomial(one_minus, near, f"{name}.w1"), polynomial(two_minus, far, f"{name}.w2")]


def _tap(ctx, position: str, weight: str | None, padding: str, low: float, high: float, size: int,
         name: str) -> tuple:
    """(index in 0..size-1 as i64, weight, inside mask or None) of one whole-number tap."""
    b = ctx.builder
    dtype = b.type(position).dtype
    inside = None
    if padding == "zeros":
        inside = b.op("ne", [b.op("lt", [position, b.scalar(0.0, dtype)], hint=f"{name}.before"),
                             b.op("lt", [position, b.scalar(float(size), dtype)], hint=f"{name}.before_end")],
                      hint=f"{name}.inside")
    elif padding == "reflection":
        position = b.op("floor", [_reflect(ctx, position, low, high, f"{name}.reflected")], hint=f"{name}.whole")
    index = _clamp(ctx, position, 0.0, size - 1.0, f"{name}.clamped")
    return b.op("cast", [index], {"to": DType.i64}, hint=f"{name}.index"), weight, inside


def _sum_of_taps(ctx, x: str, taps: list[list], out_sizes: list, name: str) -> str:
    b = ctx.builder
    x_type = b.type(x)
    batch, channels, *spatial = x_type.shape
    flat = b.op("reshape", [x], {"shape": (batch, channels, math.prod(spatial))}, hint=f"{name}.cells")
    strides = [math.prod(spatial[axis + 1:]) for axis in range(len(spatial))]
    total = None
    for number, combination in enumerate(itertools.product(*taps)):
        label = f"{name}.t{number}"
        index, weight = _combined(ctx, combination, strides, x_type.dtype, label)
        taken = gather_cells(ctx, flat, index, weight, label)
        total = taken if total is None else b.op("add", [total, taken], hint=f"{name}.sum")
    return b.op("reshape", [total], {"shape": (batch, channels, *out_sizes)}, hint=name)


def gather_cells(ctx, planes: str, index: str, weight: str | None, name: str) -> str:
    """``planes[..., c, index[...]] * weight[...]`` for every channel c: `planes` is
    ``[*lead, C, cells]``, `index` (i64) and `weight` hold ``*lead`` then any dims (P cells
    in all), read the same for every channel; the result is ``[*lead, C, P]``."""
    b = ctx.builder
    *lead, channels, _ = b.type(planes).shape
    points = product(b.type(index).shape[len(lead):])
    column = b.op("reshape", [index], {"shape": (*lead, 1, points)}, hint=f"{name}.column")
    spread = b.op("expand", [column], {"shape": (*lead, channels, points)}, hint=f"{name}.spread")
    taken = b.op("gather_elements", [planes, spread], {"axis": len(lead) + 1}, hint=f"{name}.taken")
    if weight is None:
        return taken
    weights = b.op("reshape", [weight], {"shape": (*lead, 1, points)}, hint=f"{name}.weight")
    return b.op("mul", [taken, weights], hint=f"{name}.weighted")


def _combined(ctx, combination, strides: list[int], dtype: DType, label: str) -> tuple[str, str | None]:
    """The flat index and the weight (the product over dims, times the inside masks as
    `dtype`) of one combination of per-dim taps."""
    b = ctx.builder
    index, weight = None, None
    for axis, (dim_index, dim_weight, inside) in enumerate(combination):
        term = dim_index if strides[axis] == 1 else b.op("mul", [dim_index, b.scalar(strides[axis], DType.i64)],
                                                          hint=f"{label}.s{axis}")
        index = term if index is None else b.op("add", [index, term], hint=f"{label}.index")
        if inside is not None:
            inside = b.op("cast", [inside], {"to": dtype}, hint=f"{label}.mask{axis}")
        for factor in (dim_weight, inside):
            if factor is not None:
                weight = factor if weight is None else b.op("mul", [weight, factor], hint=f"{label}.w")
    return index, weight


register({"GridSample": convert_grid_sample, "AffineGrid": convert_affine_grid})
