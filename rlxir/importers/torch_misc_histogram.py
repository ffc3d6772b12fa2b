"""Histograms -> core ops: ``histc``, ``histogram`` (a bin count, or bin edges given as a
tensor) and ``histogramdd`` (``_histogramdd_bin_edges``, ``_histogramdd_from_bin_cts``,
``_histogramdd_from_bin_tensors``).

PyTorch puts an element x in bin ``upper_bound(edges, x) - 1`` (the number of edges at or
below x, less one), the last bin closed on its right edge, and skips elements outside
``[first edge, last edge]`` (NaN among them). Here that count is a comparison of every
element with every edge summed over the edges, and the bins are filled by a
``scatter_elements`` that adds each element's weight (zero for a skipped one) at its bin.

Edges from a bin count are ``linspace(low, high, bins + 1)`` in the input's dtype. Static
bounds make them constants (PyTorch's own ``linspace``); bounds read from the data (histc with
min == max, histogram without a range) are the data's minimum and maximum, widened when they
are equal (by 1 for histc, by 0.5 for histogram, as PyTorch), and the edges follow
``linspace``'s formula in the graph: ``low + step i`` for the first half, ``high - step
(bins - i)`` for the rest.
"""

from __future__ import annotations

import torch

from rlxir.dtypes import DType
from rlxir.importers.torch_ops import op, operand, refuse, reshape, result_dtype, shape_of, static_dim
from rlxir.importers.torch_registry import RLX_TO_TORCH, Static, converter
from rlxir.types import TensorType

COMPARISON_LIMIT = 1 << 26
"""Most element-edge comparisons one histogram may build (its elements times its edges)."""


@converter("aten.histc")
def handle_histc(ctx, node, args, kwargs):
    """histc(x, bins=100, min=0, max=0): bounds read from x when min == max."""
    bins = args[1] if len(args) > 1 else kwargs.get("bins", 100)
    low = args[2] if len(args) > 2 else kwargs.get("min", 0)
    high = args[3] if len(args) > 3 else kwargs.get("max", 0)
    dtype = result_dtype(node)
    column = _column(ctx, node, args[0], dtype, 1)
    edges = _edges_from_count(ctx, node, column, 0, bins, (low, high) if low != high else None, widen=1.0)
    return _filled_bins(ctx, node, column, [edges], None, density=False)


@converter("aten.histogram")
def handle_histogram(ctx, node, args, kwargs):
    """histogram(x, bins, *, range, weight, density) -> (hist, bin_edges); `bins` a count or
    a tensor of edges."""
    bins = args[1] if len(args) > 1 else kwargs.get("bins", 100)
    dtype = result_dtype(node)
    column = _column(ctx, node, args[0], dtype, 1)
    if isinstance(bins, int):
        edges = _edges_from_count(ctx, node, column, 0, bins, kwargs.get("range"), widen=0.5)
    else:
        edges = operand(ctx, bins, dtype, f"{node.name}.edges")
    weight = _weight(ctx, node, kwargs.get("weight"), dtype)
    hist = _filled_bins(ctx, node, column, [edges], weight, kwargs.get("density", False))
    return [hist, edges]


@converter("aten._histogramdd_bin_edges")
def handle_histogramdd_bin_edges(ctx, node, args, kwargs):
    """The edges of each of the D dims of x [..., D], from a bin count per dim."""
    dtype = result_dtype(node)
    column = _column(ctx, node, args[0], dtype, None)
    return _dd_edges(ctx, node, column, list(args[1]), kwargs.get("range"))


@converter("aten._histogramdd_from_bin_cts", "aten._histogramdd_from_bin_tensors")
def handle_histogramdd(ctx, node, args, kwargs):
    """The D-dimensional histogram of x [..., D]: bins a count or an edge tensor per dim."""
    dtype = result_dtype(node)
    column = _column(ctx, node, args[0], dtype, None)
    bins = list(args[1])
    if all(isinstance(count, int) for count in bins):
        edges = _dd_edges(ctx, node, column, bins, kwargs.get("range"))
    else:
        edges = [operand(ctx, item, dtype, f"{node.name}.edges{axis}") for axis, item in enumerate(bins)]
    weight = _weight(ctx, node, kwargs.get("weight"), dtype)
    return _filled_bins(ctx, node, column, edges, weight, kwargs.get("density", False))


# --- edges -------------------------------------------------------------------------------
def _column(ctx, node, item, dtype: DType, dims: int | None) -> str:
    """x as [elements, D]: D = 1 (histc, histogram), or x's last dim (``dims`` None, histogramdd)."""
    x = operand(ctx, item, dtype, f"{node.name}.x")
    shape = shape_of(ctx, x)
    width, leading = (1, shape) if dims is not None else (static_dim(shape[-1], "a histogramdd"), shape[:-1])
    count = 1
    for size in leading:
        count *= static_dim(size, "a histogram")
    return reshape(ctx, x, (count, width), f"{node.name}.column")


def _dd_edges(ctx, node, column: str, counts: list, bounds) -> list[str]:
    pairs = [None] * len(counts) if bounds is None else [tuple(bounds[2 * axis:2 * axis + 2])
                                                          for axis in range(len(counts))]
    return [_edges_from_count(ctx, node, column, axis, count, pair, widen=0.5)
            for axis, (count, pair) in enumerate(zip(counts, pairs))]


def _edges_from_count(ctx, node, column: str, axis: int, bins: int, bounds, widen: float) -> str:
    """The `bins` + 1 edges of dim `axis`: between static `bounds`, or the data's extremes."""
    if bins <= 0:
        refuse(f"a histogram of {bins} bins", "a positive bin count")
    dtype = ctx.builder.type(column).dtype
    rows = shape_of(ctx, column)[0]
    if bounds is None and rows == 0:
        bounds = (0.0, 0.0)
    if bounds is not None:
        low, high = (float(value) for value in bounds)
        if low == high:
            low, high = low - widen, high + widen
        edges = torch.linspace(low, high, bins + 1, dtype=RLX_TO_TORCH[dtype])
        return ctx.value(Static(f"{node.name}.edges{axis}", edges, False))
    return _data_edges(ctx, node, column, axis, bins, widen)


def _data_edges(ctx, node, column: str, axis: int, bins: int, widen: float) -> str:
    """Edges between the minimum and maximum of dim `axis` of the data, widened when equal."""
    dtype = ctx.builder.type(column).dtype
    rows = shape_of(ctx, column)[0]
    values = reshape(ctx, op(ctx, "slice", [column], {"axis": 1, "start": axis, "len": 1}, hint=f"{node.name}.dim"),
                     (rows,), f"{node.name}.values{axis}")
    low = op(ctx, "reduce_min", [values], {"axes": (0,), "keepdims": False}, hint=f"{node.name}.low")
    high = op(ctx, "reduce_max", [values], {"axes": (0,), "keepdims": False}, hint=f"{node.name}.high")
    same = op(ctx, "eq", [low, high], hint=f"{node.name}.same")
    low = op(ctx, "where", [same, op(ctx, "sub", [low, ctx.builder.scalar(widen, dtype)], hint=f"{node.name}.lower"),
                            low], hint=f"{node.name}.low_edge")
    high = op(ctx, "where", [same, op(ctx, "add", [high, ctx.builder.scalar(widen, dtype)], hint=f"{node.name}.upper"),
                             high], hint=f"{node.name}.high_edge")
    return _linspace(ctx, node, low, high, bins, dtype)


def _linspace(ctx, node, low: str, high: str, bins: int, dtype: DType) -> str:
    """linspace(low, high, bins + 1) of two run-time scalars, by PyTorch's formula."""
    step = op(ctx, "div", [op(ctx, "sub", [high, low], hint=f"{node.name}.span"), ctx.builder.scalar(bins, dtype)],
              hint=f"{node.name}.step")
    halfway = (bins + 1) // 2
    torch_dtype = RLX_TO_TORCH[dtype]
    rising = ctx.value(Static(f"{node.name}.rising", torch.arange(halfway, dtype=torch_dtype), False))
    falling = ctx.value(Static(f"{node.name}.falling", torch.arange(bins - halfway, -1, -1, dtype=torch_dtype), False))
    first = op(ctx, "add", [low, op(ctx, "mul", [step, rising], hint=f"{node.name}.up")], hint=f"{node.name}.first")
    last = op(ctx, "sub", [high, op(ctx, "mul", [step, falling], hint=f"{node.name}.down")], hint=f"{node.name}.last")
    return op(ctx, "concat", [first, last], {"axis": 0}, hint=f"{node.name}.edges")


# --- counting ------------------------------------------------------------------------------
def _weight(ctx, node, item, dtype: DType) -> str | None:
    if item is None:
        return None
    weight = operand(ctx, item, dtype, f"{node.name}.weight")
    count = 1
    for size in shape_of(ctx, weight):
        count *= static_dim(size, "a histogram weight")
    return reshape(ctx, weight, (count,), f"{node.name}.weights")


def _bin_of(ctx, node, values: str, edges: str, axis: int) -> tuple[str, str]:
    """Each value's bin along one dim (clamped into range) and whether the value is counted."""
    rows = shape_of(ctx, values)[0]
    count = static_dim(shape_of(ctx, edges)[0], "histogram edges")
    if rows * count > COMPARISON_LIMIT:
        refuse(f"a histogram of {rows} elements and {count} edges ({rows * count} comparisons)",
               f"at most {COMPARISON_LIMIT} element-edge comparisons")
    name = f"{node.name}.d{axis}"
    column = reshape(ctx, values, (rows, 1), f"{name}.column")
    row = reshape(ctx, edges, (1, count), f"{name}.row")
    at_or_below = op(ctx, "cast", [op(ctx, "le", [row, column], hint=f"{name}.le")], {"to": DType.i64},
                     hint=f"{name}.counted")
    below = op(ctx, "reduce_sum", [at_or_below], {"axes": (1,), "keepdims": False}, hint=f"{name}.edges_below")
    index = op(ctx, "sub", [below, ctx.builder.scalar(1, DType.i64)], hint=f"{name}.bin")
    index = op(ctx, "minimum", [op(ctx, "maximum", [index, ctx.builder.scalar(0, DType.i64)], hint=f"{name}.low"),
                                ctx.builder.scalar(count - 2, DType.i64)], hint=f"{name}.clamped")
    first = reshape(ctx, op(ctx, "slice", [edges], {"axis": 0, "start": 0, "len": 1}, hint=f"{name}.e0"), (),
                    f"{name}.first")
    last = reshape(ctx, op(ctx, "slice", [edges], {"axis": 0, "start": count - 1, "len": 1}, hint=f"{name}.en"),
                   (), f"{name}.last")
    inside = op(ctx, "minimum", [op(ctx, "ge", [values, first], hint=f"{name}.ge"),
                                 op(ctx, "le", [values, last], hint=f"{name}.le_last")], hint=f"{name}.inside")
    return index, inside


def _filled_bins(ctx, node, column: str, edges: list[str], weight: str | None, density: bool) -> str:
    """The histogram [bins of dim 0, bins of dim 1, ...] of the rows of `column` [M, D]."""
    dtype = ctx.builder.type(column).dtype
    rows = shape_of(ctx, column)[0]
    sizes = [static_dim(shape_of(ctx, edge)[0], "histogram edges") - 1 for edge in edges]
    flat, counted, stride = None, None, 1
    for axis in range(len(edges) - 1, -1, -1):
        values = reshape(ctx, op(ctx, "slice", [column], {"axis": 1, "start": axis, "len": 1},
                                 hint=f"{node.name}.dim{axis}"), (rows,), f"{node.name}.values{axis}")
        index, inside = _bin_of(ctx, node, values, edges[axis], axis)
        if stride != 1:
            index = op(ctx, "mul", [index, ctx.builder.scalar(stride, DType.i64)], hint=f"{node.name}.strided{axis}")
        flat = index if flat is None else op(ctx, "add", [flat, index], hint=f"{node.name}.flat{axis}")
        counted = inside if counted is None else op(ctx, "minimum", [counted, inside], hint=f"{node.name}.in{axis}")
        stride *= sizes[axis]
    ones = weight if weight is not None else ctx.builder.scalar(1, dtype)
    amounts = op(ctx, "where", [counted, ones, ctx.builder.scalar(0, dtype)], hint=f"{node.name}.amounts")
    empty = ctx.builder.splat(f"{node.name}.zeros", 0, TensorType(dtype, (stride,)))
    hist = op(ctx, "scatter_elements", [empty, flat, amounts], {"axis": 0, "reduction": "add"},
              hint=f"{node.name}.flat_hist")
    hist = reshape(ctx, hist, tuple(sizes), f"{node.name}.hist")
    if density:
        hist = _densities(ctx, node, hist, edges, sizes)
    return hist


def _densities(ctx, node, hist: str, edges: list[str], sizes: list[int]) -> str:
    """hist / sum(hist) / the width of each bin along each dim (PyTorch's density)."""
    total = op(ctx, "reduce_sum", [hist], {"axes": tuple(range(len(sizes))), "keepdims": False},
               hint=f"{node.name}.total")
    hist = op(ctx, "div", [hist, total], hint=f"{node.name}.share")
    for axis, (edge, size) in enumerate(zip(edges, sizes)):
        upper = op(ctx, "slice", [edge], {"axis": 0, "start": 1, "len": size}, hint=f"{node.name}.upper{axis}")
        lower = op(ctx, "slice", [edge], {"axis": 0, "start": 0, "len": size}, hint=f"{node.name}.lower{axis}")
        width = op(ctx, "sub", [upper, lower], hint=f"{node.name}.width{axis}")
        shape = [1] * len(sizes)
        shape[axis] = size
        hist = op(ctx, "div", [hist, reshape(ctx, width, tuple(shape), f"{node.name}.widths{axis}")],
                  hint=f"{node.name}.density{axis}")
    return hist
