"""Default fills: the stand-in arrays for inputs and params that a run is not given.

A fill is a function of (seed, value name, value type) and of two facts recorded on the
value itself, so a graph and any rewritten form of it (fused, unfused, lowered, printed and
parsed again) fill a value identically:

- ``fill_limit = N`` (integers): indices uniform in ``[0, N)``, the smallest table dim the
  value indexes as the indices of a gather, gather_elements or scatter_elements (followed
  through ops that only move or pick values);
- ``fill_sign = "positive"`` / ``"negative"`` (floats): uniform in [0.5, 1.5], or that
  negated, where the math needs a sign (batchnorm's variance, log/sqrt/rsqrt operands,
  selective_scan's delta; selective_scan's A).

`annotate_fills` computes both facts from the graph's readers; the parser calls it on
every graph it builds, so they describe the graph as written, and passes keep leaf
attributes untouched. Without the facts: integers in ``[0, 16)``; floats normal with
standard deviation 0.5, except params of rank 2 or more, which take LeCun's scale from
their own shape, 1/sqrt(fan-in) with fan-in ``shape[-2]`` (a ``[in, out]`` weight) for rank
2 and 3 and ``prod(shape[1:])`` (an ``[out, in, kh, kw]`` filter) for rank 4 and more.
"""

from __future__ import annotations

import math
import zlib
from typing import TYPE_CHECKING

from rlxir.dtypes import DType
from rlxir.ir.graph import Graph
from rlxir.numpy_on_use import numpy_on_use
from rlxir.ops.reference import to_dtype
from rlxir.ops.registry import AttrSpec, register_annotation

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_use(__name__)  # NumPy imported on first use (rlxir/numpy_on_use.py)

FLOAT_STDDEV = 0.5
INTEGER_FILL_LIMIT = 16
SIGNED_FILL_RANGE = (0.5, 1.5)
SIGNS = {"positive": 1, "negative": -1}

FILL_ANNOTATIONS = {
    "fill_limit": AttrSpec("int", None, doc="an index input or param: its default fill is uniform in [0, fill_limit)"),
    "fill_sign": AttrSpec("str", None, tuple(SIGNS),
                          doc="an input or param the math needs signed: its default fill is uniform in "
                              "[0.5, 1.5], negated when negative"),
}
"""The attributes an input or param may carry (the only ones a leaf statement takes)."""

for _key, _spec in FILL_ANNOTATIONS.items():
    register_annotation(_key, _spec)
del _key, _spec

# Operand positions whose fill must be positive or negative for the math to make sense.
POSITIVE_OPERANDS = {"batchnorm": (4,), "log": (0,), "sqrt": (0,), "rsqrt": (0,), "selective_scan": (1,)}
NEGATIVE_OPERANDS = {"selective_scan": (2,)}


def fill_array(name: str, type_, kind: str, facts: dict, seed: int = 0) -> np.ndarray:
    """The default fill of the `kind` ("input" or "param") called `name` of static type
    `type_` (see the module docstring); `facts` are its `fill_limit` / `fill_sign`."""
    shape, dtype = type_.static_shape(), type_.dtype
    generator = np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])
    if dtype is DType.bool:
        return generator.random(shape) < 0.5
    if dtype.is_integer:
        limit = facts.get("fill_limit") or INTEGER_FILL_LIMIT
        return generator.integers(0, max(limit, 1), size=shape).astype(dtype.numpy)
    sign = SIGNS.get(facts.get("fill_sign"), 0)
    if sign:
        return to_dtype(sign * generator.uniform(*SIGNED_FILL_RANGE, size=shape), dtype)
    stddev = (param_stddev(shape) if kind == "param" else None) or FLOAT_STDDEV
    if dtype.is_complex:
        real, imaginary = generator.standard_normal((2,) + shape) * stddev
        return to_dtype(real + 1j * imaginary, dtype)
    values = generator.standard_normal(shape, dtype=np.float32)
    values *= np.float32(stddev)
    return to_dtype(values, dtype)


def param_stddev(shape: tuple) -> float | None:
    """LeCun's 1/sqrt(fan-in) from a param's own shape (None below rank 2)."""
    if len(shape) < 2:
        return None
    fan_in = shape[-2] if len(shape) <= 3 else math.prod(shape[1:])
    return 1.0 / math.sqrt(fan_in) if isinstance(fan_in, int) and fan_in > 0 else None


# --- recording the facts ----------------------------------------------------------------
def annotate_fills(graph: Graph) -> None:
    """Record `fill_limit` / `fill_sign` on each input and param whose readers need them
    and that does not carry them yet (a fact already written is kept)."""
    nodes = graph.data_by_name()
    # Only an operand of a sign-taking op can need a sign: found in one pass over the ops
    # rather than by looking at every reader of every float param.
    signed = {operand for data in nodes.values() if data.op in _SIGNED_OPS for operand in data.operands}
    for name in (*graph.inputs(), *graph.params()):
        data = nodes[name]
        if not data.type.dtype.is_integer and name not in signed:
            continue
        facts = _needed_facts(graph, name)
        present = data.attrs
        missing = {key: value for key, value in facts.items() if key not in present}
        if missing:
            data.attrs = {**present, **missing}


def _needed_facts(graph: Graph, name: str) -> dict:
    dtype = graph.type(name).dtype
    if dtype.is_integer:
        limit = index_limit(graph, name)
        return {"fill_limit": limit} if limit is not None else {}
    if dtype is DType.bool:
        return {}
    sign = _required_sign(graph, name)
    return {"fill_sign": sign} if sign else {}


def _required_sign(graph: Graph, name: str) -> str | None:
    """"positive" or "negative" when a reader needs `name` of that sign, else None."""
    nodes = graph.data_by_name()
    for user in graph.users(name):
        data = nodes[user]
        if data.op not in _SIGNED_OPS:  # most readers take any sign: nothing to look up
            continue
        positions = [index for index, operand in enumerate(data.operands) if operand == name]
        if any(index in POSITIVE_OPERANDS.get(data.op, ()) for index in positions):
            return "positive"
        if any(index in NEGATIVE_OPERANDS.get(data.op, ()) for index in positions):
            return "negative"
    return None


_SIGNED_OPS = frozenset(POSITIVE_OPERANDS) | frozenset(NEGATIVE_OPERANDS)


def index_limit(graph: Graph, name: str):
    """The smallest table dim that `name` indexes as the indices of a gather, gather_elements
    or scatter_elements (operand 1, along the op's axis of operand 0), following it through
    layout ops (reshape, slice, ...) and casts; None when it reaches no gather."""
    limits, frontier, seen = [], [name], {name}
    while frontier:
        value = frontier.pop()
        for user in graph.users(value):
            table, *indices = graph.operands(user)
            if graph.op(user) in _INDEXING and value == indices[0]:
                axis = graph.attr(user, "axis") % graph.type(table).rank
                limits.append(graph.type(table).shape[axis])
            elif _carries_indices(graph, user) and user not in seen:
                seen.add(user)
                frontier.append(user)
    static = [limit for limit in limits if isinstance(limit, int)]
    # A symbolic table dim is recorded as written; binding the graph binds it too.
    return min(static) if static else (limits[0] if limits else None)


def _carries_indices(graph: Graph, name: str) -> bool:
    """Whether `name`'s op passes index values through unchanged (it moves or picks them)."""
    opdef = graph.opdef(name)
    return opdef is not None and (opdef.has("layout") or opdef.has("view") or opdef.name in _INDEX_PRESERVING)


_INDEXING = frozenset({"gather", "gather_elements", "scatter_elements"})
"""Ops whose operand 1 indexes operand 0 along the op's `axis`."""

_INDEX_PRESERVING = frozenset({"cast", "reduce_max", "reduce_min", "maximum", "minimum", "where"})
