"""Hypothesis strategies that draw random *valid* rlx graphs.

    from hypothesis import given
    from rlxir.testing.strategies import bindings_for, graphs, modules

    @given(graphs(max_ops=12, symbols=("B", "S")))
    def test_my_pass_keeps_the_graph_valid(graph): ...

    @given(graphs(max_ops=8, motifs=("duplicate",)))  # repeated subexpressions are likely
    def test_cse_keeps_what_the_graph_computes(graph): ...

Graphs are built through the public `Graph` API only (`add_input`, `add_param`,
`add_const`, `add_op`, `set_outputs`) and verified before they are returned, so every
drawn graph is one the parser would accept from its printed text. Each op is built from
the values already in the graph when a suitable one exists, otherwise from fresh leaves
whose shapes are drawn to fit the op (broadcasting included); symbolic dims are kept such
that every check that needs numbers (slice bounds, reshape counts, pooling windows) also
passes once the symbols are bound to any values `bindings_for` draws.

Random ops rarely form the pattern a given pass rewrites (two identical ops for cse, an
op over consts for const-fold); `motifs` plants such patterns among the ops (see
`rlxir.testing.motifs`), and `rlxir.testing.pass_graphs` names the strategy for each
built-in pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs
from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.ir.fills import annotate_fills
from rlxir.ir.graph import Graph, Module
from rlxir.symbolic import Dim, exact_div, floordiv, mul
from rlxir.testing.drawing import DrawConfig, GraphDrawing, broadcasts
from rlxir.testing.motifs import FLOAT_MOTIFS, MOTIFS
from rlxir.types import TensorType
from rlxir.ir.verifier import verify

UNARY = ("neg", "abs", "relu", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "sin", "cos", "erf", "gelu")
BINARY = ("add", "sub", "mul", "maximum", "minimum", "div", "pow")
COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
REDUCE = ("reduce_sum", "reduce_max", "reduce_min", "reduce_mean")
SHAPE = ("reshape", "transpose", "expand", "concat", "slice", "gather")
NORM = ("layernorm", "rmsnorm", "batchnorm")
FUSED = ("fused_matmul_bias_act", "fused_residual_layernorm", "fused_residual_rmsnorm", "fused_elementwise")
OTHER = ("cast", "where", "softmax", "cumsum", "matmul", "linear", "attention", "conv2d", "max_pool2d",
         "avg_pool2d", "selective_scan")

SUPPORTED_OPS = UNARY + BINARY + COMPARE + REDUCE + SHAPE + NORM + FUSED + OTHER
"""Every op `graphs` can draw (pass a subset as ``ops=``)."""

# Ops that only make sense on floating-point data.
_FLOAT_OPS = frozenset(
    ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "sin", "cos", "erf", "gelu", "div", "pow",
     "reduce_mean", "softmax", "attention", "avg_pool2d", "selective_scan") + NORM + FUSED
)
# Ops whose result or operands are not floating point, left out by float_only.
_NON_FLOAT_OPS = frozenset(COMPARE + ("where", "gather"))
_CHAIN_UNARY = ("neg", "abs", "relu", "exp", "tanh", "sigmoid", "silu", "gelu")
_CHAIN_BINARY = ("add", "sub", "mul", "maximum", "minimum")
_GRAPH_NAMES = ("g", "main", "mlp", "block.0", "_f")


def graphs(
    min_ops: int = 1,
    max_ops: int = 20,
    dtypes: Sequence[DType] = (DType.f32,),
    symbols: bool | Sequence[str] = False,
    ops: Iterable[str] | None = None,
    float_only: bool = False,
    max_rank: int = 4,
    max_dim: int = 6,
    name: str | None = None,
    leaves_first: bool | None = None,
    special_floats: bool = False,
    motifs: Sequence[str] = (),
) -> st.SearchStrategy[Graph]:
    """A strategy for valid, verified graphs.

    - `min_ops`, `max_ops`: how many op statements (leaves not counted).
    - `dtypes`: element types of the data (leaves and op results); ``bool`` values still
      appear as comparison results and `where` conditions unless `float_only`.
    - `symbols`: False for static shapes, or symbol names (``("B", "S")``) for graphs whose
      header declares them (some with a default) and whose dims use them: ``B``,
      ``2*B``, ``B + 1``, ``(B + 1)//2``.
    - `ops`: restrict the op choices to these names (a subset of `SUPPORTED_OPS`); ops
      that cannot apply under `dtypes`/`float_only` are dropped, and none left is an error.
    - `float_only`: every value is floating point (no comparisons, `where`, `gather`,
      integer casts) — graphs a differentiating pass can take whole.
    - `max_rank`, `max_dim`: bounds for drawn shapes (ops that need rank 4, such as
      `conv2d` or `attention`, make rank-4 leaves regardless).
    - `name`: the graph's name (drawn when None).
    - `leaves_first`: put every input/param/const before the first op (True), where it is
      first needed (False), or draw either (None). Both are valid schedules.
    - `special_floats`: float consts may hold ``inf`` and ``-inf`` (never ``nan``, which is
      not equal to itself); by default they are small finite numbers.
    - `motifs`: names from `rlxir.testing.motifs.MOTIFS`. Each op statement is then, one
      time in three, one of these patterns instead (a repeated subexpression, a dead op,
      an op over consts, ...); a motif's result is read later or is an output.

    The last op drawn (a dead motif's aside) is always an output; a few other values may be
    too. Graphs may hold unused leaves and dead ops (as real pass inputs do). Only shapes
    and dtypes are constrained, not data: `log` or `sqrt` of an input may be NaN when it runs.
    """
    config = _config(dtypes, symbols, ops, float_only, max_rank, max_dim, leaves_first, special_floats)
    config = attrs.evolve(config, motifs=_motifs(motifs, config.dtypes))
    if not 0 <= min_ops <= max_ops:
        raise ValueError(f"need 0 <= min_ops <= max_ops, got {min_ops} and {max_ops}")
    return _graphs(config, min_ops, max_ops, name)


def modules(min_graphs: int = 1, max_graphs: int = 3, **graph_options) -> st.SearchStrategy[Module]:
    """A strategy for modules of `min_graphs`..`max_graphs` graphs with distinct names;
    `graph_options` go to `graphs` (except `name`)."""
    graph_options.pop("name", None)

    @st.composite
    def draw_module(draw) -> Module:
        count = draw(st.integers(min_graphs, max_graphs))
        names = draw(st.lists(st.sampled_from(_GRAPH_NAMES), min_size=count, max_size=count, unique=True))
        return Module(draw(graphs(name=graph_name, **graph_options)) for graph_name in names)

    return draw_module()


def bindings_for(graph: Graph, min_value: int = 1, max_value: int = 4) -> st.SearchStrategy[dict[str, int]]:
    """A strategy for values of every symbol `graph` declares (small, so bound graphs stay small).

    Values start at 1 by default: drawn graphs keep every dim positive for any binding
    of at least 1.
    """
    return st.fixed_dictionaries({symbol: st.integers(min_value, max_value) for symbol in graph.symbols})


# --- configuration ----------------------------------------------------------------------
def _config(dtypes, symbols, ops, float_only, max_rank, max_dim, leaves_first, special_floats) -> DrawConfig:
    dtypes = tuple(DType(dtype) if isinstance(dtype, str) else dtype for dtype in dtypes)
    numeric = tuple(dtype for dtype in dtypes if dtype is not DType.bool and (dtype.is_float or not float_only))
    if not numeric:
        raise ValueError(f"no usable dtype in {[dtype.value for dtype in dtypes]} (float_only={float_only})")
    symbol_names = tuple(symbols) if symbols and not isinstance(symbols, bool) else ()
    if symbols is True:
        symbol_names = ("B", "S")
    for symbol in symbol_names:
        if not symbol.isidentifier() or DType.parse(symbol) is not None:
            raise ValueError(f"{symbol!r} cannot name a symbol")
    chosen = tuple(ops) if ops is not None else SUPPORTED_OPS
    unknown = sorted(set(chosen) - set(SUPPORTED_OPS))
    if unknown:
        raise ValueError(f"graphs() cannot draw {', '.join(unknown)}; it draws: {', '.join(SUPPORTED_OPS)}")
    has_float = any(dtype.is_float for dtype in numeric)
    usable = tuple(
        op for op in chosen
        if (has_float or op not in _FLOAT_OPS) and not (float_only and op in _NON_FLOAT_OPS)
    )
    if not usable:
        raise ValueError(f"none of the ops {list(chosen)} can be drawn with dtypes {[d.value for d in numeric]}")
    if max_rank < 1 or max_dim < 1:
        raise ValueError("max_rank and max_dim must be at least 1")
    return DrawConfig(numeric, symbol_names, usable, max_rank, max_dim, leaves_first, special_floats)


def _motifs(motifs: Sequence[str], dtypes: tuple) -> tuple:
    unknown = sorted(set(motifs) - set(MOTIFS))
    if unknown:
        raise ValueError(f"graphs() has no motif {', '.join(unknown)}; it plants: {', '.join(MOTIFS)}")
    needs_float = sorted(set(motifs) & FLOAT_MOTIFS)
    if needs_float and not any(dtype.is_float for dtype in dtypes):
        raise ValueError(f"motifs {', '.join(needs_float)} need a floating-point dtype, "
                         f"got {[dtype.value for dtype in dtypes]}")
    return tuple(motifs)


@st.composite
def _graphs(draw, config: DrawConfig, min_ops: int, max_ops: int, name: str | None) -> Graph:
    symbols = {symbol: draw(st.none() | st.integers(1, 4)) for symbol in config.symbols}
    graph = Graph(name or draw(st.sampled_from(_GRAPH_NAMES)), symbols)
    leaves_first = config.leaves_first if config.leaves_first is not None else draw(st.booleans())
    builder = GraphDrawing(draw, graph, config, leaves_first, _BUILDERS, MOTIFS)
    last = None
    for _ in range(draw(st.integers(min_ops, max_ops))):
        if config.motifs and draw(st.integers(0, 2)) == 0:
            last = builder.plant(draw(st.sampled_from(config.motifs))) or last
            continue
        op = draw(st.sampled_from(config.ops))
        last = builder.build(op)
    if last is None:  # no ops asked for (or only dead ones): output a leaf
        last = builder.operand()
    others = [value for value in graph.schedule() if value != last and value not in builder.hidden]
    extra = draw(st.lists(st.sampled_from(others), max_size=2, unique=True)) if others else []
    unread = [value for value in builder.planted if not graph.users(value) and value not in extra + [last]]
    graph.set_outputs(extra + unread + [last])
    annotate_fills(graph)  # as the parser does, so a drawn graph equals its printed-and-parsed form
    verify(graph)
    return graph


# --- one builder per op family ----------------------------------------------------------
def _unary(b: GraphDrawing, op: str) -> str:
    x = b.operand(float_only=op in _FLOAT_OPS)
    attrs = {"approximate": b.draw(st.booleans())} if op == "gelu" else {}
    return b.add(op, [x], attrs)


def _binary(b: GraphDrawing, op: str) -> str:
    x = b.operand(float_only=op in _FLOAT_OPS)
    type_ = b.type(x)
    other = b.partner(type_.dtype, type_.shape)
    operands = [x, other] if b.draw(st.booleans()) else [other, x]
    return b.add(op, operands)


def _where(b: GraphDrawing, op: str) -> str:
    x = b.operand()
    type_ = b.type(x)
    cond = b.pick(
        lambda candidate: candidate.dtype is DType.bool and broadcasts(candidate.shape, type_.shape),
        lambda: b.leaf(TensorType(DType.bool, b.broadcast_partner(type_.shape)), "input"),
    )
    other = b.partner(type_.dtype, type_.shape, b.type(cond).shape)
    return b.add(op, [cond, x, other] if b.draw(st.booleans()) else [cond, other, x])


def _cast(b: GraphDrawing, op: str) -> str:
    x = b.operand()
    return b.add(op, [x], {"to": b.dtype()})


def _axis(b: GraphDrawing, rank: int) -> int:
    axis = b.draw(st.integers(0, rank - 1))
    return axis - rank if b.draw(st.booleans()) else axis


def _reduce(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=1, float_only=op in _FLOAT_OPS)
    rank = b.type(x).rank
    axes = b.draw(st.lists(st.integers(0, rank - 1), min_size=1, max_size=rank, unique=True))
    axes = [axis - rank if b.draw(st.booleans()) else axis for axis in axes]
    return b.add(op, [x], {"axes": axes, "keepdims": b.draw(st.booleans())})


def _softmax(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=1, float_only=True)
    return b.add(op, [x], {"axis": _axis(b, b.type(x).rank)})


def _cumsum(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=1)
    return b.add(op, [x], {"axis": _axis(b, b.type(x).rank), "exclusive": b.draw(st.booleans())})


def _matmul(b: GraphDrawing, op: str) -> str:
    a = b.operand(min_rank=1)
    a_type = b.type(a)
    transpose_a = a_type.rank >= 2 and b.draw(st.booleans())
    if a_type.rank == 1:
        contracted = a_type.shape[0]
    else:
        contracted = a_type.shape[-2] if transpose_a else a_type.shape[-1]
    transpose_b = b.draw(st.booleans())
    if b.draw(st.integers(0, 4)) == 0:
        b_shape: tuple = (contracted,)
        transpose_b = False
    else:
        batch = tuple(dim if b.draw(st.booleans()) else 1 for dim in a_type.shape[:-2])
        columns = b.dim()
        b_shape = batch[len(batch) - b.draw(st.integers(0, len(batch))):] + (
            (columns, contracted) if transpose_b else (contracted, columns))
    other = b.of_type(TensorType(a_type.dtype, b_shape), "param")
    return b.add(op, [a, other], {"transpose_a": transpose_a, "transpose_b": transpose_b})


def _linear(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=1, float_only=op in _FLOAT_OPS)
    x_type = b.type(x)
    columns = b.dim()
    weight = b.of_type(TensorType(x_type.dtype, (x_type.shape[-1], columns)), "param")
    operands = [x, weight]
    if op == "fused_matmul_bias_act" or b.draw(st.booleans()):
        operands.append(b.of_type(TensorType(x_type.dtype, (columns,)), "param"))
    attrs = {"activation": b.draw(st.sampled_from(("none", "gelu", "silu")))} if op == "fused_matmul_bias_act" else {}
    return b.add(op, operands, attrs)


def _eps(b: GraphDrawing) -> float:
    return b.draw(st.sampled_from((1e-5, 1e-6, 1e-3)))


def _norm(b: GraphDrawing, op: str) -> str:
    if op == "batchnorm":
        x = b.operand(min_rank=2, float_only=True)
        x_type = b.type(x)
        params = [b.of_type(TensorType(x_type.dtype, (x_type.shape[1],)), "param") for _ in range(4)]
        return b.add(op, [x, *params], {"eps": _eps(b)})
    x = b.operand(min_rank=1, float_only=True)
    x_type = b.type(x)
    axis = _axis(b, x_type.rank)
    normalized = x_type.shape[axis:]
    count = 2 if op == "layernorm" else 1
    params = [b.of_type(TensorType(x_type.dtype, normalized), "param") for _ in range(count)]
    return b.add(op, [x, *params], {"axis": axis, "eps": _eps(b)})


def _residual_norm(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=1, float_only=True)
    x_type = b.type(x)
    residual = b.of_type(x_type)
    count = 2 if op == "fused_residual_layernorm" else 1
    params = [b.of_type(TensorType(x_type.dtype, x_type.shape[-1:]), "param") for _ in range(count)]
    return b.add(op, [x, residual, *params], {"eps": _eps(b)})


def _fused_elementwise(b: GraphDrawing, op: str) -> str:
    x = b.operand(float_only=True)
    x_type = b.type(x)
    operands = [x]
    for _ in range(b.draw(st.integers(0, 2))):
        operands.append(b.partner(x_type.dtype, *(b.type(operand).shape for operand in operands)))
    steps: list[str] = []
    for index in range(b.draw(st.integers(1, 4))):
        refs = [f"${i}" for i in range(len(operands))] + [f"%{j}" for j in range(index)]
        if b.draw(st.booleans()):
            step_op = b.draw(st.sampled_from(_CHAIN_BINARY))
            step = f"{step_op}({b.draw(st.sampled_from(refs))}, {b.draw(st.sampled_from(refs))})"
        else:
            step_op = b.draw(st.sampled_from(_CHAIN_UNARY))
            step = f"{step_op}({b.draw(st.sampled_from(refs))})"
            if step_op == "gelu" and b.draw(st.booleans()):
                step += " {approximate = true}"
        steps.append(step)
    return b.add(op, operands, {"chain": "; ".join(steps)})


def _attention(b: GraphDrawing, op: str) -> str:
    q = b.operand(min_rank=4, max_rank=4, float_only=True)
    batch, heads, queries, depth = b.type(q).shape
    dtype = b.type(q).dtype
    keys = queries if b.draw(st.booleans()) else b.dim()
    k = b.of_type(TensorType(dtype, (batch, heads, keys, depth)))
    v = b.of_type(TensorType(dtype, (batch, heads, keys, depth if b.draw(st.booleans()) else b.dim())))
    operands = [q, k, v]
    if b.draw(st.booleans()):
        operands.append(b.of_type(TensorType(dtype, (queries, keys))))
    attrs = {"causal": b.draw(st.booleans())}
    if b.draw(st.booleans()):
        attrs["scale"] = b.draw(st.sampled_from((0.125, 0.5, -0.25)))
    return b.add(op, operands, attrs)


def _image(b: GraphDrawing, float_only: bool) -> str:
    """A rank-4 NCHW value with static spatial dims."""
    def static_spatial(type_: TensorType) -> bool:
        return isinstance(type_.shape[2], int) and isinstance(type_.shape[3], int)

    def make() -> str:
        shape = (b.dim(), b.dim(), b.dim(static=True) + 1, b.dim(static=True) + 1)
        return b.leaf(TensorType(b.dtype(float_only), shape), "input")

    return b.pick(lambda t: t.rank == 4 and t.dtype in b.config.dtypes and (t.dtype.is_float or not float_only)
                  and static_spatial(t), make)


def _window(b: GraphDrawing, size: int, dilation: int = 1) -> tuple[int, int, int]:
    """(kernel, before, after) padding such that the window fits a dim of `size`."""
    before, after = b.draw(st.integers(0, 1)), b.draw(st.integers(0, 1))
    largest = (size + before + after - 1) // dilation + 1
    return b.draw(st.integers(1, max(1, min(3, largest)))), before, after


def _conv2d(b: GraphDrawing, op: str) -> str:
    x = _image(b, float_only=False)
    batch, channels, height, width = b.type(x).shape
    dilation = (b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2)))
    kernel_h, top, bottom = _window(b, height, dilation[0])
    kernel_w, left, right = _window(b, width, dilation[1])
    groups = 1
    if isinstance(channels, int) and channels % 2 == 0 and b.draw(st.booleans()):
        groups = 2
    out_channels = mul(b.dim(), groups)  # each group makes the same number of channels
    dtype = b.type(x).dtype
    weight = b.of_type(TensorType(dtype, (out_channels, floordiv(channels, groups), kernel_h, kernel_w)), "param")
    operands = [x, weight]
    if b.draw(st.booleans()):
        operands.append(b.of_type(TensorType(dtype, (out_channels,)), "param"))
    attrs = {"stride": [b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2))], "padding": [top, left, bottom, right],
             "dilation": list(dilation), "groups": groups}
    return b.add(op, operands, attrs)


def _pool(b: GraphDrawing, op: str) -> str:
    x = _image(b, float_only=op in _FLOAT_OPS)
    _, _, height, width = b.type(x).shape
    kernel_h, top, bottom = _window(b, height)
    kernel_w, left, right = _window(b, width)
    attrs = {"kernel": [kernel_h, kernel_w], "padding": [top, left, bottom, right]}
    if b.draw(st.booleans()):
        attrs["stride"] = [b.draw(st.integers(1, 2)), b.draw(st.integers(1, 2))]
    return b.add(op, [x], attrs)


def _selective_scan(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=3, max_rank=3, float_only=True)
    dtype = b.type(x).dtype
    batch, steps, hidden = b.type(x).shape
    state = b.draw(st.integers(1, 4))
    delta = b.of_type(b.type(x))
    a = b.of_type(TensorType(dtype, (hidden, state)), "param")
    bm = b.of_type(TensorType(dtype, (batch, steps, state)))
    c = b.of_type(TensorType(dtype, (batch, steps, state)))
    return b.add(op, [x, delta, a, bm, c], {"state_size": state})


def _reshape(b: GraphDrawing, op: str) -> str:
    x = b.operand()
    shape = list(b.type(x).shape)
    move = b.draw(st.sampled_from(("merge", "split", "insert_one", "drop_one", "flatten")))
    if move == "merge" and len(shape) >= 2:
        at = b.draw(st.integers(0, len(shape) - 2))
        shape[at:at + 2] = [mul(shape[at], shape[at + 1])]
    elif move == "split" and any(isinstance(dim, int) and _divisors(dim) for dim in shape):
        at = b.draw(st.sampled_from([i for i, dim in enumerate(shape) if isinstance(dim, int) and _divisors(dim)]))
        factor = b.draw(st.sampled_from(_divisors(shape[at])))
        shape[at:at + 1] = [factor, shape[at] // factor]
    elif move == "insert_one":
        shape.insert(b.draw(st.integers(0, len(shape))), 1)
    elif move == "drop_one" and 1 in shape:
        shape.remove(1)
    elif move == "flatten":
        shape = [b.type(x).numel]
    target: list = list(shape)
    if target and b.draw(st.booleans()):
        hole = b.draw(st.integers(0, len(target) - 1))
        known: Dim = 1
        for index, dim in enumerate(target):
            if index != hole:
                known = mul(known, dim)
        if known != 0 and exact_div(b.type(x).numel, known) == target[hole]:
            target[hole] = -1
    return b.add(op, [x], {"shape": target})


def _divisors(value: int) -> list[int]:
    return [factor for factor in range(2, value) if value % factor == 0]


def _transpose(b: GraphDrawing, op: str) -> str:
    x = b.operand()
    return b.add(op, [x], {"perm": b.draw(st.permutations(range(b.type(x).rank)))})


def _expand(b: GraphDrawing, op: str) -> str:
    x = b.operand()
    shape = b.type(x).shape
    front = tuple(b.dim() for _ in range(b.draw(st.integers(0, 2))))
    grown = tuple(b.dim() if dim == 1 and b.draw(st.booleans()) else dim for dim in shape)
    return b.add(op, [x], {"shape": list(front + grown)})


def _concat(b: GraphDrawing, op: str) -> str:
    x = b.operand(min_rank=1)
    x_type = b.type(x)
    axis = _axis(b, x_type.rank)
    operands = [x]
    for _ in range(b.draw(st.integers(0, 2))):
        shape = list(x_type.shape)
        shape[axis] = b.dim()
        operands.append(b.of_type(x_type.with_shape(shape)))
    return b.add(op, operands, {"axis": axis})


def _slice(b: GraphDrawing, op: str) -> str:
    def has_static_dim(type_: TensorType) -> bool:
        return any(isinstance(dim, int) and dim >= 1 for dim in type_.shape)

    x = b.operand(min_rank=1, extra=has_static_dim)
    if not has_static_dim(b.type(x)):  # a new leaf drawn without one
        x = b.leaf(TensorType(b.dtype(), b.shape(0, b.config.max_rank - 1) + (b.dim(static=True),)))
    shape = b.type(x).shape
    axis = b.draw(st.sampled_from([i for i, dim in enumerate(shape) if isinstance(dim, int) and dim >= 1]))
    start = b.draw(st.integers(0, shape[axis] - 1))
    length = b.draw(st.integers(1, shape[axis] - start))
    return b.add(op, [x], {"axis": axis - len(shape) if b.draw(st.booleans()) else axis, "start": start, "len": length})


def _gather(b: GraphDrawing, op: str) -> str:
    table = b.operand(min_rank=1)
    index_dtype = b.draw(st.sampled_from((DType.i32, DType.i64)))
    indices = b.pick(lambda type_: type_.dtype is index_dtype,
                     lambda: b.leaf(TensorType(index_dtype, b.shape(0, 2)), "input"))
    return b.add(op, [table, indices], {"axis": _axis(b, b.type(table).rank)})


_BUILDERS: dict[str, Callable[[GraphDrawing, str], str]] = {
    **{op: _unary for op in UNARY}, **{op: _binary for op in BINARY + COMPARE}, **{op: _reduce for op in REDUCE},
    **{op: _norm for op in NORM}, **{op: _pool for op in ("max_pool2d", "avg_pool2d")},
    "cast": _cast, "where": _where, "softmax": _softmax, "cumsum": _cumsum, "matmul": _matmul, "linear": _linear,
    "attention": _attention, "conv2d": _conv2d, "selective_scan": _selective_scan, "reshape": _reshape,
    "transpose": _transpose, "expand": _expand, "concat": _concat, "slice": _slice, "gather": _gather,
    "fused_matmul_bias_act": _linear, "fused_residual_layernorm": _residual_norm,
    "fused_residual_rmsnorm": _residual_norm, "fused_elementwise": _fused_elementwise,
}
