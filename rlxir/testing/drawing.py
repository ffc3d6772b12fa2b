"""The state of one graph being drawn by `rlxir.testing.strategies.graphs`: its value pool
and how new names, leaves, dims, shapes and operands are drawn. The op builders
(strategies.py) and the motifs (motifs.py) both work on a `GraphDrawing`; it reaches them
through the tables it is given, so neither module imports the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import attrs
from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.ir.graph import Graph
from rlxir.ops import ShapeError, broadcast_shapes
from rlxir.symbolic import Dim, Expr, add, floordiv, mul
from rlxir.types import TensorType

NAME_PREFIXES = ("v", "t", "h.", "x_", "")


@attrs.frozen
class DrawConfig:
    """What `graphs` may draw: dtypes, symbols, ops and motifs, ranks and dims."""

    dtypes: tuple
    symbols: tuple
    ops: tuple
    max_rank: int
    max_dim: int
    leaves_first: bool | None
    special_floats: bool
    motifs: tuple = ()


class GraphDrawing:
    """One graph under construction: its value pool and how new values are drawn."""

    def __init__(self, draw, graph: Graph, config: DrawConfig, leaves_first: bool,
                 builders: Mapping[str, Callable[[GraphDrawing, str], str]],
                 motifs: Mapping[str, Callable[[GraphDrawing], str | None]]):
        self.draw = draw
        self.graph = graph
        self.config = config
        self.leaves_first = leaves_first
        self.prefix = draw(st.sampled_from(NAME_PREFIXES))
        self.counter = 0
        self.first_op: str | None = None
        self.hidden: set[str] = set()
        """Values no later op and no output may read: dead on purpose, or read once by design."""
        self.planted: list[str] = []
        """Results of motifs, made outputs unless a later op reads them."""
        self.builders = builders
        """One function per op that draws an op statement (strategies.py's table)."""
        self.motifs = motifs
        """One function per motif (motifs.py's table)."""

    # --- ops and motifs ----------------------------------------------------------------
    def build(self, op: str) -> str:
        """One `op` statement on values from the pool (or new leaves); returns its result."""
        return self.builders[op](self, op)

    def plant(self, motif: str) -> str | None:
        """One motif; returns its result, or None for one that leaves nothing to read."""
        result = self.motifs[motif](self)
        if result is not None:
            self.planted.append(result)
        return result

    def hide(self, *names: str) -> None:
        self.hidden.update(names)

    # --- names and nodes --------------------------------------------------------------
    def fresh(self) -> str:
        name = f"{self.prefix}{self.counter}"
        self.counter += 1
        return name

    def add(self, op: str, operands: Sequence[str], attrs: dict | None = None) -> str:
        name = self.graph.add_op(op, operands, attrs or {}, name=self.fresh())
        self.first_op = self.first_op or name
        return name

    def leaf(self, type_: TensorType, kind: str | None = None, value=None) -> str:
        """A new input, param or const of `type_` (a const holds `value` when given)."""
        kind = kind or self.draw(st.sampled_from(("input", "param", "const")))
        where = {"before": self.first_op} if self.leaves_first and self.first_op else {}
        name = self.fresh()
        if kind == "const":
            if value is None:
                value = self.draw(const_value(type_, self.config.special_floats))
            return self.graph.add_const(name, type_, value, **where)
        if kind == "param":
            return self.graph.add_param(name, type_, **where)
        return self.graph.add_input(name, type_, **where)

    def type(self, name: str) -> TensorType:
        return self.graph.type(name)

    # --- dims and shapes ---------------------------------------------------------------
    def dim(self, static: bool = False) -> Dim:
        if static or not self.config.symbols or self.draw(st.integers(0, 2)) == 0:
            return self.draw(st.integers(1, self.config.max_dim))
        symbol = Expr.symbol(self.draw(st.sampled_from(self.config.symbols)))
        form = self.draw(st.integers(0, 5))
        if form == 3:
            return mul(symbol, 2)
        if form == 4:
            return add(symbol, 1)
        if form == 5:
            return floordiv(add(symbol, 1), 2)
        return symbol

    def shape(self, min_rank: int = 0, max_rank: int | None = None) -> tuple:
        high = max(min_rank, self.config.max_rank if max_rank is None else max_rank)
        rank = self.draw(st.integers(min_rank, high))
        return tuple(self.dim() for _ in range(rank))

    def dtype(self, float_only: bool = False) -> DType:
        choices = [dtype for dtype in self.config.dtypes if dtype.is_float or not float_only]
        return self.draw(st.sampled_from(choices))

    # --- operands ----------------------------------------------------------------------
    def values(self, accept: Callable[[TensorType], bool]) -> list[str]:
        return [name for name in self.graph.schedule() if name not in self.hidden and accept(self.type(name))]

    def pick(self, accept: Callable[[TensorType], bool], make: Callable[[], str]) -> str:
        """An existing value whose type `accept`s, or (sometimes, or when none) `make()`."""
        candidates = self.values(accept)
        choice = self.draw(st.integers(0, 3)) if candidates else 0
        if choice == 0:
            return make()
        if choice == 1:  # the most recent one, so graphs grow chains and not only fans
            return candidates[-1]
        return self.draw(st.sampled_from(candidates))

    def operand(self, min_rank: int = 0, max_rank: int | None = None, float_only: bool = False,
                extra: Callable[[TensorType], bool] | None = None) -> str:
        """A data value (never a bool) of rank in [min_rank, max_rank]."""
        high = self.config.max_rank if max_rank is None else max_rank

        def accept(type_: TensorType) -> bool:
            return (type_.dtype in self.config.dtypes and min_rank <= type_.rank <= max(high, min_rank)
                    and (type_.dtype.is_float or not float_only) and (extra is None or extra(type_)))

        return self.pick(accept, lambda: self.leaf(TensorType(self.dtype(float_only), self.shape(min_rank, high))))

    def of_type(self, type_: TensorType, kind: str | None = None) -> str:
        """An existing value of exactly `type_`, or a new leaf."""
        return self.pick(lambda candidate: candidate == type_, lambda: self.leaf(type_, kind))

    def partner(self, dtype: DType, *shapes: tuple) -> str:
        """A value of `dtype` whose shape broadcasts with all of `shapes`."""
        def accept(type_: TensorType) -> bool:
            return type_.dtype is dtype and broadcasts(type_.shape, *shapes)

        joint = broadcast_shapes(*shapes)
        return self.pick(accept, lambda: self.leaf(TensorType(dtype, self.broadcast_partner(joint))))

    def broadcast_partner(self, shape: tuple) -> tuple:
        """A shape that broadcasts with `shape`: a suffix of it, some dims 1, maybe more dims in front.
        (It then also broadcasts with every shape whose broadcast `shape` is.)"""
        keep = self.draw(st.integers(0, len(shape)))
        suffix = [dim if self.draw(st.integers(0, 3)) else 1 for dim in shape[len(shape) - keep:]]
        front = [self.dim() for _ in range(self.draw(st.integers(0, 1)))] if keep == len(shape) else []
        return tuple(front + suffix)


def broadcasts(*shapes: tuple) -> bool:
    try:
        broadcast_shapes(*shapes)
    except ShapeError:
        return False
    return True


@st.composite
def const_value(draw, type_: TensorType, special_floats: bool):
    dtype = type_.dtype
    if dtype is DType.bool:
        item = st.booleans()
    elif dtype.is_integer:
        low, high = (0, 9) if dtype.value.startswith("u") else (-9, 9)
        item = st.integers(low, high)
    else:
        finite = (0.0, 1.0, -2.5, 0.125, 1e-5, 1024.0, 0.1)
        item = st.sampled_from(finite + ((math.inf, -math.inf) if special_floats else ()))
    numel = type_.numel
    if isinstance(numel, int) and numel <= 6 and draw(st.booleans()):
        return tuple(draw(st.lists(item, min_size=numel, max_size=numel)))
    return draw(item)
