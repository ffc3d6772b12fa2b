"""The reference interpreter: run a graph with NumPy, one node at a time in schedule order.

Each op runs its NumPy reference (`rlxir.ops.reference`; custom ops bring their own), so
any stage runs — a parsed graph, the graph after `unfuse`, or a lowered graph whose nodes
carry stage annotations. Values are held as NumPy arrays of their dtype's NumPy type
(`DType.numpy`; bf16 as float32 rounded to bf16 precision). Floating-point exceptions
follow IEEE rules silently (overflow gives inf, 0/0 gives nan) instead of warning.

Inputs and params that are not given are filled deterministically, each from its own
generator seeded by ``(seed, crc32(name))``, so a value does not change when another is
given. A fill depends only on the seed, the value's name and type, and the fill facts
recorded on the value (`fill_limit` for gather indices, `fill_sign` where the math needs a
sign), so a graph and its optimised form fill alike; `rlxir.ir.fills` states the rule.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike

from rlxir.dtypes import DType
from rlxir.errors import RlxError, UnboundSymbolError
from rlxir.ir.fills import fill_array
from rlxir.ir.graph import Graph
from rlxir.ops.reference import to_dtype
from rlxir.symbolic import Expr, free_symbols



def interpret(graph: Graph, inputs: Mapping | None = None, params: Mapping | None = None,
              bindings: Mapping[str, int] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """Run `graph` and return its outputs, keyed by output value name (no ``%``).

    `inputs` / `params` map value names (``%`` optional) to arrays of exactly the value's
    shape and NumPy dtype (float32 for bf16); missing ones are filled from `seed` (see the
    module docstring). Symbols take the graph's defaults overridden by `bindings`.
    Raises `UnboundSymbolError` when a symbol the graph uses has no value, and `RlxError`
    for an unknown name, a wrong-shaped or wrong-dtype array, or an op without a reference.
    """
    return _run(graph, inputs, params, bindings, seed, rounded_again=False)


def interpret_rounded_again(graph: Graph, inputs: Mapping | None = None, params: Mapping | None = None,
                            bindings: Mapping[str, int] | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """`interpret`, with one more rounding on every value that rounds: each float input and
    param, and each float result of an op that computes (not one that only moves elements:
    the `layout` and `shape` ops), moved by one or two units in the last place
    (`rounded_again_array`).

    How far the outputs move from `interpret`'s is what rounding alone does to this graph at
    these values, wherever it happens: in the feeds, or in a result deep inside the graph
    (``x + residual`` that cancels to a few units in the last place, then normalised, moves
    by its whole size). Any two implementations of the graph in this precision may differ
    so; `rlxir.executor.check` calls a difference of up to ten times that movement
    precision, not a defect."""
    return _run(graph, inputs, params, bindings, seed, rounded_again=True)


def _run(graph: Graph, inputs: Mapping | None, params: Mapping | None, bindings: Mapping[str, int] | None,
         seed: int, rounded_again: bool) -> dict[str, np.ndarray]:
    if not isinstance(seed, int) or seed < 0:
        raise RlxError(f"the seed must be a non-negative integer, got {seed!r}")
    bound = bind_for_run(graph, bindings)
    feeds = {**_checked_feeds(bound, inputs, "input"), **_checked_feeds(bound, params, "param")}
    releases = _release_plan(bound)
    values: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for name in bound.schedule():
            value = _evaluate(bound, name, values, feeds, seed)
            if rounded_again:
                value = to_dtype(rounded_again_value(np, bound, name, value, seed), bound.type(name).dtype)
            values[name] = value
            for finished in releases.get(name, ()):
                del values[finished]
    return {name: values[name] for name in bound.outputs}


# --- one rounding more ---------------------------------------------------------------------
ULP_AT_ONE = {DType.f64: 2.0 ** -52, DType.f32: 2.0 ** -23, DType.f16: 2.0 ** -10, DType.bf16: 2.0 ** -7}
"""The spacing of each float dtype's values just above 1 (twice its unit roundoff)."""
MOVES_ONLY = frozenset({"layout", "shape"})
"""Op traits whose results hold operand elements unchanged: nothing there rounds."""


def rounds(graph: Graph, name: str) -> bool:
    """Whether value `name` of `graph` is one a rounding makes: a float input or param, or
    the float result of an op that computes (consts are as written)."""
    kind = graph.kind(name)
    if graph.type(name).dtype not in ULP_AT_ONE or kind == "const":
        return False
    if kind != "op":
        return True
    opdef = graph.opdef(name)
    return opdef is None or not (opdef.traits & MOVES_ONLY)


def rounded_again_value(xp: ModuleType, graph: Graph, name: str, value: Any, seed: int = 0) -> Any:
    """Value `name`'s array `value` rounded once more where it `rounds`, keyed by its name
    and `seed` (so a run on another array module moves the same elements the same way);
    as it is otherwise. The caller puts the result back in the value's dtype."""
    if not rounds(graph, name):
        return value
    return rounded_again_array(xp, value, graph.type(name).dtype, zlib.crc32(name.encode()) + seed)


def rounded_again_array(xp: ModuleType, array: Any, dtype: DType, key: int) -> Any:
    """`array` (of float `dtype`, on array module `xp`) with every element that is not a whole
    number moved up or down, by a hash of its index and `key`, by a relative ``ULP_AT_ONE``:
    one or two units in the last place, never lost to rounding back. Whole numbers stay: most
    are exact (counts, positions, masks), and no rounding moves an exact result. The caller
    rounds bf16 (held as float32) back to its grid."""
    if array.size == 0:
        return array
    index = xp.arange(array.size, dtype=xp.uint64).reshape(array.shape)
    hashed = (index + xp.uint64(key & 0xFFFFFFFF)) * xp.uint64(0x9E3779B97F4A7C15)
    signs = ((hashed >> xp.uint64(40)) & xp.uint64(1)).astype(array.dtype) * 2 - 1
    moved = array * (1 + ULP_AT_ONE[dtype] * signs)
    return xp.where(array == xp.rint(array), array, moved)


def bind_for_run(graph: Graph, bindings: Mapping[str, int] | None = None) -> Graph:
    """`graph` with every symbol bound (defaults, then `bindings`); raises
    `UnboundSymbolError` naming the symbols that still have no value."""
    values = {symbol: default for symbol, default in graph.symbols.items() if default is not None}
    values.update(bindings or {})
    bound = graph.bind(values) if values else graph
    missing = _symbols_in_use(bound)
    if missing:
        raise UnboundSymbolError(missing, bound.loc, context=f"needed to run graph {bound.name}")
    return bound


def _symbols_in_use(graph: Graph) -> frozenset[str]:
    names: frozenset[str] = frozenset()
    for name in graph.schedule():
        names |= graph.type(name).symbols
        for value in graph.attrs(name).values():
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                if isinstance(item, Expr):
                    names |= free_symbols(item)
    return names


# --- given arrays ----------------------------------------------------------------------
def _checked_feeds(graph: Graph, given: Mapping | None, kind: str) -> dict[str, np.ndarray]:
    feeds = {}
    for key, value in (given or {}).items():
        name = key.removeprefix("%")
        if name not in graph or graph.kind(name) != kind:
            known = ", ".join("%" + value_name for value_name in graph.values_of_kind(kind)) or "none"
            raise RlxError(f"graph {graph.name} has no {kind} %{name}", expected=f"one of its {kind}s: {known}")
        feeds[name] = _checked_array(graph, name, value)
    return feeds


def _checked_array(graph: Graph, name: str, value: ArrayLike) -> np.ndarray:
    """`value` as the array for `name`; its shape and NumPy dtype must match the type."""
    type_ = graph.type(name)
    array = np.asarray(value)
    shape = type_.static_shape()
    kind = graph.kind(name)
    if array.shape != shape:
        raise RlxError(f"{kind} %{name} was given an array of shape {list(array.shape)}, but its type is {type_}",
                       graph.location(name), expected=f"an array of shape {list(shape)}")
    if array.dtype != type_.dtype.numpy:
        raise RlxError(f"{kind} %{name} was given {array.dtype} data, but its type is {type_}", graph.location(name),
                       expected=f"{type_.dtype.numpy} data" + (" (bf16 is passed as float32)" if
                                                               type_.dtype is DType.bf16 else ""))
    return to_dtype(array, type_.dtype)


def _release_plan(graph: Graph) -> dict[str, list[str]]:
    """For each node, the values it is the last to touch: the operands it reads last, and
    its own result when nothing reads it. Graph outputs are never released."""
    last_touch = {}
    for name in graph.schedule():
        last_touch[name] = name
        for operand in graph.operands(name):
            last_touch[operand] = name
    plan: dict[str, list[str]] = defaultdict(list)
    for value, toucher in last_touch.items():
        if value not in graph.outputs:
            plan[toucher].append(value)
    return plan


@attrs.frozen
class LivePeak:
    """The most bytes the interpreter holds at once on a bound graph, and the step where
    that happens: its values (each in its NumPy type, bf16 as float32) plus the scratch of
    the op running then (`reference_scratch_bytes`)."""

    bytes: int
    step: str | None


def live_peak(graph: Graph) -> LivePeak:
    """Walk `graph` (bound) as `interpret` runs it: a value is held from its step to the
    step that releases it (`_release_plan`), outputs to the end; while an op runs, its
    reference's scratch is held too. Feeds count from their step (a caller that made them
    beforehand holds them longer)."""
    releases = _release_plan(graph)
    held = peak = 0
    at = None
    for name in graph.schedule():
        held += _held_bytes(graph, name)
        running = held + reference_scratch_bytes(graph, name)
        if running > peak:
            peak, at = running, name
        held -= sum(_held_bytes(graph, finished) for finished in releases.get(name, ()))
    return LivePeak(peak, at)


def reference_scratch_bytes(graph: Graph, name: str) -> int:
    """What an op's NumPy reference holds besides its operands and result, bounded from its
    types: one temporary of the result's size (a reference computes, then converts), and
    for `attention` three copies of its [..., queries, keys] score matrix (the scores, and
    the softmax's shifted exponentials and quotient while the scores are still held)."""
    if graph.kind(name) != "op":
        return 0
    scratch = _held_bytes(graph, name)
    if graph.op(name) == "attention":
        query, key = (graph.type(operand).static_shape() for operand in graph.operands(name)[:2])
        itemsize = np.dtype(graph.type(name).dtype.numpy).itemsize
        scratch += 3 * math.prod(query[:-1]) * key[-2] * itemsize
    return scratch


def _held_bytes(graph: Graph, name: str) -> int:
    type_ = graph.type(name)
    return type_.nbytes(itemsize=np.dtype(type_.dtype.numpy).itemsize)


# --- evaluation ------------------------------------------------------------------------
def _evaluate(graph: Graph, name: str, values: dict, feeds: dict, seed: int) -> np.ndarray:
    kind = graph.kind(name)
    if kind == "op":
        return _run_op(graph, name, values)
    if kind == "const":
        return const_array(graph, name)
    if name in feeds:
        return feeds[name]
    return random_fill(graph, name, seed)


def _run_op(graph: Graph, name: str, values: dict) -> np.ndarray:
    op, loc = graph.op(name), graph.location(name)
    opdef = graph.opdef(name)
    if opdef is None or opdef.reference is None:
        raise RlxError(f"%{name} = {op}: the op has no NumPy reference, so the interpreter cannot run it", loc,
                       "an op with a reference (OpDef.reference, or rlxir.ops.attach(op, reference=...))")
    arguments = [values[operand] for operand in graph.operands(name)]
    try:
        result = opdef.reference(arguments, graph.full_attrs(name))
    except RlxError as error:
        raise error.with_location(loc) from None
    except (ArithmeticError, ValueError, TypeError, IndexError) as error:
        raise RlxError(f"%{name} = {op} failed in its NumPy reference: {error}", loc) from error
    return _conform(graph, name, result)


def _conform(graph: Graph, name: str, result: ArrayLike) -> np.ndarray:
    """The reference's result in the node's dtype; its shape must be the node's."""
    type_ = graph.type(name)
    array = to_dtype(result, type_.dtype)
    if array.shape != type_.static_shape():
        raise RlxError(f"the reference of {graph.op(name)} gave shape {list(array.shape)} for %{name} : {type_}",
                       graph.location(name), "the shape the op's shape rule infers")
    return array


def const_array(graph: Graph, name: str) -> np.ndarray:
    """Const `name`'s literal (splat or flat list) as an array of its static type."""
    type_ = graph.type(name)
    literal = graph.attrs(name)["value"]
    shape = type_.static_shape()
    if isinstance(literal, tuple):
        array = np.array(literal, dtype=type_.dtype.numpy).reshape(shape)
    else:
        array = np.full(shape, literal, dtype=type_.dtype.numpy)
    return to_dtype(array, type_.dtype)


# --- random fills ----------------------------------------------------------------------
def random_feeds(graph: Graph, bindings: Mapping[str, int] | None = None,
                 seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(inputs, params): the arrays `interpret` would fill in for `graph` with this seed.

    The fill depends only on the seed and each value's name, type and recorded fill facts,
    so a graph and its rewritten forms get the same arrays.
    """
    bound = bind_for_run(graph, bindings)
    inputs = {name: random_fill(bound, name, seed) for name in bound.inputs()}
    params = {name: random_fill(bound, name, seed) for name in bound.params()}
    return inputs, params


def random_fill(graph: Graph, name: str, seed: int = 0) -> np.ndarray:
    """The deterministic stand-in for input or param `name`: a function of the seed, its
    name, its type and its recorded fill facts only (`rlxir.ir.fills`)."""
    facts = graph.attrs(name)
    limit = facts.get("fill_limit")
    if isinstance(limit, Expr):
        raise UnboundSymbolError(free_symbols(limit), graph.location(name), context=f"needed to fill %{name}")
    return fill_array(name, graph.type(name), graph.kind(name), facts, seed)
