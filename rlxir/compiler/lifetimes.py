"""From a lowered graph to the buffer list a planner places (docs/lir.md, "Buffers").

One buffer per non-view value, plus one per kernel workspace; views stand for their root.
Lifetimes are half-open step ranges over the schedule: a value is born at its producer's
step and dies after the last step that reads it (or any view of it); graph outputs live to
the end. Inputs, params and consts follow the `mode`:

- ``inference``: they live for the whole run, inside the arena.
- ``backward_activations_only``: params are not planned by this graph; each sits at the
  offset the forward plan gave the weight of the same name (`weight_layout`), live for the
  whole run, so every activation is kept clear of the weight ranges.

Two view rules exist. ``lir`` follows the `view_of`/`view_offset` annotations of `lower`
(reshape, same-dtype cast, axis-0 slice). ``bump`` is the RLX ROCm/CUDA rule: reshape and
*every* cast alias their operand's slot, and nothing else does.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.ops import LEAF_KINDS
from rlxir.planning.buffers import Buffer

MODES = ("inference", "backward_activations_only")


@attrs.frozen
class BufferInfo:
    """What a planned buffer stands for in the graph (for reports)."""

    value: str
    kind: str  # input, param, const, activation, output, workspace
    type: str


def bytes_per_element(graph: Graph, name: str, sizing: str) -> int:
    return 4 if sizing == "f32" else graph.type(name).dtype.itemsize


def value_bytes(graph: Graph, name: str, sizing: str) -> int:
    """Exact bytes of a value under a sizing rule (its type must be fully bound)."""
    numel = graph.type(name).numel
    if not isinstance(numel, int):
        from rlxir.symbolic import free_symbols
        from rlxir.errors import UnboundSymbolError

        raise UnboundSymbolError(free_symbols(numel), graph.location(name), context=f"sizing %{name}")
    return numel * bytes_per_element(graph, name, sizing)


def view_roots(graph: Graph, view_rule: str = "lir") -> dict[str, tuple[str, int]]:
    """Every view of a lowered graph -> (its root buffer's value, its byte offset in the root).

    ``lir`` reads the `view_of` / `view_offset` annotations; ``bump`` aliases reshape and every
    cast to its operand's root at offset 0. Under both rules an op annotated `in_place_of`
    (an optimizer's update written over its param) has that param as its root, at offset 0.
    Values that are not views are absent."""
    schedule = graph.schedule()
    return _view_roots(schedule, list(map(graph.data_by_name().__getitem__, schedule)), view_rule)


def _view_roots(schedule: list[str], records: list, view_rule: str) -> dict[str, tuple[str, int]]:
    """`view_roots` of the values `schedule` names, whose records are `records`."""
    roots: dict[str, tuple[str, int]] = {}
    for name, data in zip(schedule, records):
        over = data.attrs.get("in_place_of")
        if isinstance(over, str) and over.startswith("%"):
            roots[name] = (over[1:], 0)
        elif view_rule == "lir":
            view_of = data.attrs.get("view_of")
            if isinstance(view_of, str) and view_of.startswith("%"):
                roots[name] = (view_of[1:], int(data.attrs.get("view_offset", 0)))
        elif data.op in ("reshape", "cast"):
            operand = data.operands[0]
            roots[name] = roots.get(operand, (operand, 0))
    return roots


def graph_buffers(graph: Graph, sizing: str, view_rule: str = "lir", mode: str = "inference",
                  weight_layout: Mapping[str, int] | None = None) -> tuple[list[Buffer], dict[str, BufferInfo]]:
    """The buffers of a lowered, fully bound graph, in schedule order, and what each is.

    Raises `RlxError` for an unknown mode, a param missing from `weight_layout` in
    backward mode, and `UnboundSymbolError` for a size that needs an unbound symbol.
    """
    if mode not in MODES:
        raise RlxError(f"unknown planning mode {mode!r}", expected=" or ".join(MODES))
    schedule = graph.schedule()
    end = len(schedule)
    records = list(map(graph.data_by_name().__getitem__, schedule))  # each name looked up once
    roots = {view: root for view, (root, _) in _view_roots(schedule, records, view_rule).items()}
    last_read = last_reads(records, roots)
    for output in graph.outputs:
        last_read[roots.get(output, output)] = end
    buffers: list[Buffer] = []
    info: dict[str, BufferInfo] = {}
    outputs = {roots.get(output, output) for output in graph.outputs}
    sized: dict = {}  # type -> (bytes, text): types repeat across a model's layers
    for step, (name, data) in enumerate(zip(schedule, records)):
        if name in roots:
            continue
        kind = data.op if data.op in LEAF_KINDS else "op"
        type_ = data.type
        known = sized.get(type_)
        if known is None:
            known = sized[type_] = (value_bytes(graph, name, sizing), str(type_))
        size, text = known
        if kind == "param" and mode == "backward_activations_only":
            buffers.append(Buffer(name, 0, end, size, fixed_offset=_weight_offset(graph, name, weight_layout)))
        elif kind in ("input", "param", "const"):
            buffers.append(Buffer(name, 0, end, size))
        else:
            buffers.append(Buffer(name, step, min(max(last_read.get(name, step), step) + 1, end), size))
            kind = "output" if name in outputs else "activation"
        info[name] = BufferInfo(name, kind, text)
        workspace = data.attrs.get("workspace") if kind in ("output", "activation") else None
        if workspace:
            label = f"{name}.workspace"
            buffers.append(Buffer(label, step, step + 1, int(workspace)))
            info[label] = BufferInfo(name, "workspace", f"u8[{workspace}]")
    return buffers, info


def last_reads(records: list, roots: Mapping[str, str]) -> dict[str, int]:
    """The last step reading each value (by name) or, for a root, any of its views (`roots`:
    view -> root), given the schedule's records in order; values nobody reads are absent.
    One dict built in C from every (operand, step) pair (a later step overwrites an earlier
    one), then each view's last read carried to its root."""
    last_read = {operand: step for step, data in enumerate(records) for operand in data.operands}
    for view, root in roots.items():
        read = last_read.get(view)
        if read is not None and read > last_read.get(root, -1):
            last_read[root] = read
    return last_read


def _weight_offset(graph: Graph, name: str, weight_layout: Mapping[str, int] | None) -> int:
    offset = (weight_layout or {}).get(name)
    if offset is None:
        raise RlxError(f"param %{name} has no offset in the forward weight layout",
                       graph.location(name), "a forward plan that holds a weight of the same name")
    return offset
