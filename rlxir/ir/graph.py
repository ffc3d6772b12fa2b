"""The graph: SSA values in one `networkx.DiGraph`, with an explicit schedule.

Node key = value name (without ``%``). Node data is a `ValueNode` record (networkx sees a
mapping of its six keys) holding ``op`` (an op name, or ``input`` /
``param`` / ``const``), ``operands`` (an ordered tuple; repeats allowed, which edges alone
cannot express), ``attrs`` (only values that differ from the op's defaults), ``type``,
``loc`` (source location) and ``provenance`` (the original values a node derives from).
An edge ``a -> b`` exists exactly when ``a`` is an operand of ``b`` (edges carry no data: all
share `NO_EDGE_DATA`); every mutation goes
through this class so edges, operands and the schedule stay consistent.

Queries live in `rlxir.ir.graph_reading.GraphReading`, which `Graph` extends with building,
rewriting and the whole-graph operations (copy, bind, equals).

The schedule is the execution order: parse order for parsed graphs; new nodes go where a
pass puts them (`before=` / `after=`), and untouched nodes keep their relative order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from rlxir.errors import IRTypeError, Location, RlxError, VerifyError
from rlxir.gcpause import no_collections
from rlxir.ir.binding import bound_fields
from rlxir.ir.inference import infer_result
from rlxir.ir.labels import SPACING, label_between
from rlxir.ir.graph_reading import (NO_EDGE_DATA, SCHEDULE_END, GraphError, GraphReading, SharedAttrs,
                                    ValueNode)
from rlxir.ops import LEAF_KINDS, OpDef, check_attributes, get_op
from rlxir.types import TensorType

if TYPE_CHECKING:
    from rlxir.ir.nx_graph import ValueDiGraph


class Graph(GraphReading):
    """One SSA graph. See the module docstring for the data model."""

    def __init__(self, name: str = "main", symbols: Mapping[str, int | None] | None = None):
        self.name = name
        self.symbols: dict[str, int | None] = dict(symbols or {})
        self._nodes: dict[str, ValueNode] = {}
        self._successors: dict[str, dict] = {}
        self._predecessors: dict[str, dict] = {}
        self._nx: ValueDiGraph | None = None
        self.outputs = []
        self.output_loc: Location | None = None
        self.loc: Location | None = None
        self._next: dict[str, str] = {SCHEDULE_END: SCHEDULE_END}
        self._prev: dict[str, str] = {SCHEDULE_END: SCHEDULE_END}
        self._order: list[str] | None = []
        self._label: dict[str, int] = {SCHEDULE_END: 0}
        self._last_inserted: str | None = None
        self._fresh: dict[str, int] = {}
        self._leaves: dict[str, None] = {}
        self._leaf_version, self._interface_rows = 0, None  # inputs and params stored, dropped or moved; see interface_leaves

    # --- storage ------------------------------------------------------------------------
    # The values live in three dicts: the nodes, their successors and their predecessors
    # (`graph.nx`, a networkx DiGraph, is built over these same dicts when first asked
    # for). Reads and the hot mutations (add a node, add or drop an edge) are plain dict
    # operations on them. Built through networkx's `add_node`/`add_edge` (which check their
    # arguments and clear the cache on every call) a graph takes about twice as long, and
    # its views add a call to every read. This section is the only code that writes those
    # dicts; everything else uses the methods below, or `graph.nx` to hand the graph to
    # networkx.
    @property
    def nx(self) -> ValueDiGraph:
        """This graph as a `networkx.DiGraph` (an edge from each operand to its reader), over
        the same storage: changes through either are seen by both."""
        if self._nx is None:
            from rlxir.ir.nx_graph import ValueDiGraph  # networkx loads here, on first use

            self._nx = ValueDiGraph.over(self._nodes, self._successors, self._predecessors)
        return self._nx

    def _store_node(self, name: str, data: ValueNode, linked: bool = False) -> None:
        """Store a new value; `linked`: with its edges, one from each distinct operand in
        operand order (what a `_link` per operand makes, without a call per edge)."""
        self._nodes[name] = data
        self._successors[name] = {}
        self._predecessors[name] = predecessors = dict.fromkeys(data.operands, NO_EDGE_DATA) if linked else {}
        successors = self._successors
        for operand in predecessors:
            successors[operand][name] = NO_EDGE_DATA
        if data.op in LEAF_KINDS:
            self._leaves[name] = None
            self._leaf_changed(data)
        if self._nx is not None:
            self._changed()

    def _link(self, source: str, target: str) -> None:
        if target not in self._successors[source]:
            self._successors[source][target] = NO_EDGE_DATA
            self._predecessors[target][source] = NO_EDGE_DATA

    def _unlink_edge(self, source: str, target: str) -> None:
        del self._successors[source][target]
        del self._predecessors[target][source]

    def _drop_node(self, name: str) -> None:
        for source in self._predecessors.pop(name):
            del self._successors[source][name]
        for target in self._successors.pop(name):
            del self._predecessors[target][name]
        data = self._nodes.pop(name)
        if name in self._leaves:
            del self._leaves[name]
            self._leaf_changed(data)
        self._changed()

    def _leaf_changed(self, data: ValueNode | None) -> None:
        # A leaf stored, dropped or moved: counted for `interface_leaves` unless it is a
        # const (passes make and erase them all the time; the interface holds none).
        if data is None or data.op != "const":
            self._leaf_version += 1

    def _changed(self) -> None:
        # networkx caches conversions for its dispatch backends on the graph; changes made
        # outside its methods clear that cache by hand (`G.__networkx_cache__.clear()` in
        # the documentation of `networkx.config.cache_converted_graphs`).
        if self._nx is not None:
            cache = getattr(self._nx, "__networkx_cache__", None)
            if cache:
                cache.clear()

    # --- building -----------------------------------------------------------------------
    def fresh_name(self, hint: str = "t") -> str:
        """A value name not yet in the graph, derived from `hint`."""
        if hint not in self._nodes:
            return hint
        counter = self._fresh.get(hint, 0)
        while True:
            counter += 1
            candidate = f"{hint}.{counter}"
            if candidate not in self._nodes:
                self._fresh[hint] = counter
                return candidate

    def _insert(self, name: str, before: str | None, after: str | None) -> None:
        if before is not None and after is not None:
            raise GraphError("give before= or after=, not both")
        anchor_next = SCHEDULE_END
        if before is not None:
            if before not in self._nodes:
                raise self._missing(before)
            anchor_next = before
        elif after is not None:
            if after not in self._nodes:
                raise self._missing(after)
            anchor_next = self._next[after]
        anchor_prev = self._prev[anchor_next]
        self._next[anchor_prev] = name
        self._prev[name] = anchor_prev
        self._next[name] = anchor_next
        self._prev[anchor_next] = name
        self._label[name] = self._label_between(anchor_prev, anchor_next)
        self._last_inserted = name
        if self._order is not None and anchor_next == SCHEDULE_END:
            self._order.append(name)
        else:
            self._order = None

    def _label_between(self, before: str, after: str) -> int:
        return label_between(self._label, self._prev, self._next, before, after, self._last_inserted)

    def _unlink(self, name: str) -> None:
        if name in self._leaves:  # an input or param moving: the interface's order may change
            self._leaf_changed(self._nodes.get(name))
        before, after = self._prev.pop(name), self._next.pop(name)
        self._next[before] = after
        self._prev[after] = before
        del self._label[name]
        self._order = None

    def _add_node(self, name: str, op: str, operands: tuple[str, ...], attrs: dict, type_: TensorType,
                  loc: Location | None, provenance: tuple, before: str | None, after: str | None) -> str:
        if name in self._nodes:
            raise GraphError(f"value %{name} is already defined", loc)
        self._store_node(name, ValueNode(op, operands, attrs, type_, loc, provenance), linked=True)
        self._insert(name, before, after)
        return name

    def store_parsed(self, name: str, op: str, operands: tuple[str, ...], attrs: dict, type_: TensorType,
                     loc: Location) -> None:
        """Store a value the parser has checked (`name` new, operands present, `attrs` and
        `type_` from `infer_result`) with its edges, not yet in the schedule: the parser
        appends a run of them in one go (`append_to_schedule`)."""
        self._store_node(name, ValueNode(op, operands, attrs, type_, loc, (name,)), linked=True)

    def append_to_schedule(self, names: list[str]) -> None:
        """Put stored values that are not in the schedule yet at its end, in order: what
        adding each at the end does, in one go."""
        if not names:
            return
        spacing, last = SPACING, self._prev[SCHEDULE_END]
        links = [last, *names, SCHEDULE_END]
        self._next.update(zip(links, links[1:]))
        self._prev.update(zip(links[1:], links))
        base = self._label[last] if last != SCHEDULE_END else 0
        self._label.update(zip(names, range(base + spacing, base + spacing * (len(names) + 1), spacing)))
        if self._order is not None:
            self._order.extend(names)
        self._last_inserted = names[-1]
        self._changed()

    def add_input(self, name: str, type_: TensorType, loc: Location | None = None, attrs: Mapping | None = None,
                  **where: str | None) -> str:
        """An input; `attrs` holds its fill facts (`rlxir.ir.fills`), if any."""
        return self._add_node(name, "input", (), dict(attrs or {}), type_, loc, (name,), where.get("before"),
                              where.get("after"))

    def add_param(self, name: str, type_: TensorType, loc: Location | None = None, attrs: Mapping | None = None,
                  **where: str | None) -> str:
        """A param; `attrs` holds its fill facts (`rlxir.ir.fills`), if any."""
        return self._add_node(name, "param", (), dict(attrs or {}), type_, loc, (name,), where.get("before"),
                              where.get("after"))

    def add_const(self, name: str | None, type_: TensorType, value: Any, loc: Location | None = None,
                  provenance: tuple = (), **where: str | None) -> str:
        """A literal: `value` is a scalar splat or a flat row-major tuple of `numel` items."""
        name = name or self.fresh_name("c")
        value = tuple(value) if isinstance(value, (list, tuple)) else value
        return self._add_node(name, "const", (), {"value": value}, type_, loc, provenance or (name,),
                              where.get("before"), where.get("after"))

    def infer_type(self, op: str, operands: Iterable[str], attrs: Mapping[str, Any] | None = None) -> TensorType:
        """The result type `op` would have on these operands (raises on bad input)."""
        opdef = get_op(op)
        if opdef is None:
            raise IRTypeError(f"unknown op {op!r}")
        operands = tuple(operands)
        if not opdef.accepts_arity(len(operands)):
            raise IRTypeError(f"{op} takes {opdef.arity_text()}, got {len(operands)}")
        _, full = check_attributes(opdef, attrs or {})
        return opdef.shape_rule(tuple(self.type(operand) for operand in operands), full)

    def _applied(self, op: str, operands: tuple[str, ...], attrs: Mapping[str, Any] | None,
                 loc: Location | None) -> tuple[OpDef, tuple[str, ...], dict, TensorType]:
        """(op definition, operands, canonical attributes, result type) of ``op(operands)
        {attrs}`` on this graph's values; raises as `add_op` documents."""
        opdef = get_op(op)
        if opdef is None:
            raise IRTypeError(f"unknown op {op!r}", loc, expected="a registered op (see `rlxir ops`)")
        nodes = self._nodes
        for operand in operands:
            if operand not in nodes:
                raise GraphError(f"operand %{operand} of {op} is not defined", loc)
        if not opdef.accepts_arity(len(operands)):
            raise IRTypeError(f"{op} takes {opdef.arity_text()}, got {len(operands)}", loc)
        return (opdef, operands, *infer_result(opdef, tuple([nodes[operand].type for operand in operands]), attrs))

    def add_op(self, op: str, operands: Iterable[str], attrs: Mapping[str, Any] | None = None, *,
               type: TensorType | None = None, name: str | None = None, before: str | None = None,
               after: str | None = None, loc: Location | None = None, provenance: tuple | None = None,
               origin: str | None = None) -> str:
        """Add ``%name = op(operands) {attrs}`` and return its name.

        The result type is inferred; a given `type` must equal it. `origin` names the value
        this one is rewritten from: its location and provenance are inherited (a node with
        neither `origin` nor `provenance` is its own provenance, as inputs are). New nodes go
        at the end of the schedule unless `before`/`after` names an anchor.
        Raises `IRTypeError` (unknown op, arity, attributes, shapes) or `GraphError`.
        """
        opdef, operands, canonical, inferred = self._applied(op, tuple(operands), attrs, loc)
        if type is not None and type != inferred:
            raise IRTypeError(f"result type {type} differs from the inferred {inferred}", loc, expected=str(inferred))
        if origin is not None:
            origin_data = self.data(origin)
            loc = loc or origin_data.loc
            provenance = provenance or origin_data.provenance or (origin,)
        # New values are named after the value they are rewritten from (%h -> %h.1), so
        # rewritten IR stays readable; otherwise after their op.
        name = name or self.fresh_name(origin if origin is not None else op)
        # The registry's name object, not the caller's copy (a parse slices one per statement).
        return self._add_node(name, opdef.name, operands, canonical, inferred, loc, tuple(provenance or (name,)),
                              before, after)

    # --- rewriting ----------------------------------------------------------------------
    def rewrite_in_place(self, name: str, op: str, operands: Iterable[str], attrs: Mapping[str, Any] | None = None,
                         *, provenance: tuple | None = None) -> str:
        """Make op value `name` compute ``op(operands) {attrs}`` where it stands; returns `name`.
        Its name, type, location, place and readers stay (a fusion ending at `name` rewrites
        it, then erases the values only it read). The operands must come before `name` and
        the inferred type must be its type; `provenance`, when given, replaces its own.
        Raises `IRTypeError` or `GraphError` with the graph unchanged."""
        data = self.data(name)
        if data.op in LEAF_KINDS:
            raise GraphError(f"%{name} is a leaf ({data.op}), not an op value: it cannot be rewritten in place",
                             data.loc)
        opdef, operands, canonical, inferred = self._applied(op, tuple(operands), attrs, data.loc)
        label = self._label
        for operand in operands:
            if label[operand] >= label[name]:
                raise GraphError(f"operand %{operand} does not come before %{name}, which {op} would rewrite",
                                 data.loc)
        if inferred != data.type:
            raise IRTypeError(f"{op} gives {inferred}, not the type of %{name} it would rewrite", data.loc,
                              expected=str(data.type))
        successors = self._successors
        for source in self._predecessors[name]:
            del successors[source][name]
        self._predecessors[name] = predecessors = dict.fromkeys(operands, NO_EDGE_DATA)
        for source in predecessors:
            successors[source][name] = NO_EDGE_DATA
        data.op, data.operands, data.attrs = opdef.name, operands, canonical
        if provenance is not None:
            data.provenance = tuple(provenance)
        self._changed()
        return name

    def set_operands(self, name: str, operands: Iterable[str]) -> None:
        """Change a node's operands (edges follow). The caller re-checks types if needed."""
        data = self.data(name)
        operands = tuple(operands)
        for operand in operands:
            if operand not in self._nodes:
                raise GraphError(f"operand %{operand} is not defined")
        for old in set(data.operands) - set(operands):
            self._unlink_edge(old, name)
        for new in operands:
            self._link(new, name)
        data.operands = operands
        self._changed()

    def set_attrs(self, name: str, attrs: Mapping[str, Any]) -> None:
        """Replace a node's attributes (validated against its op's schema)."""
        data = self.data(name)
        opdef = get_op(data.op)
        data.attrs = check_attributes(opdef, attrs)[0] if opdef else dict(attrs)

    def set_type(self, name: str, type_: TensorType) -> None:
        self.data(name).type = type_

    def replace_all_uses(self, old: str, new: str) -> int:
        """Make every reader of `old` (and the outputs) read `new`; returns uses changed."""
        if old == new:
            return 0
        self.data(new)
        changed = 0
        for user in list(self._successors[old]):
            # `set_operands` when only `old` changes to `new`: its edge goes, one from `new` comes.
            data = self._nodes[user]
            operands = data.operands
            changed += operands.count(old)
            data.operands = tuple([new if operand == old else operand for operand in operands])
            self._unlink_edge(old, user)
            self._link(new, user)
            self._changed()
        changed += self.outputs.replace(old, new)
        return changed

    def replace_uses(self, mapping: Mapping[str, str]) -> None:
        """`replace_all_uses(old, new)` for each pair of `mapping`, in its order, with every
        reader's operands rewritten once: k values merged into one reader of k operands cost
        O(k), not O(k^2). No value may be both replaced and a replacement. (`replace_all_uses`
        keeps its own loop for one pair: a pass calls it tens of thousands of times, and
        going through a mapping cost `fuse` a few per cent.)"""
        if any(new in mapping for new in mapping.values()):
            raise GraphError("replace_uses: a value is both replaced and a replacement")
        readers: dict[str, None] = {}
        for old, new in mapping.items():
            self.data(old), self.data(new)
            for user in list(self._successors[old]):
                self._unlink_edge(old, user)
                self._link(new, user)
                readers[user] = None
            self.outputs.replace(old, new)
        for user in readers:
            data = self._nodes[user]
            data.operands = tuple([mapping.get(operand, operand) for operand in data.operands])
        self._changed()

    def rename(self, old: str, new: str, *, views: bool = True) -> None:
        """Call value `old` `new` from now on: its readers, the outputs and the schedule
        follow (its place in the schedule and its provenance stay). Lowered views that name
        `old` as their root follow too, by a scan of the graph; a caller renaming many values
        passes ``views=False`` and calls `rename_view_roots` once with all of them."""
        if new in self._nodes:
            raise GraphError(f"cannot rename %{old} to %{new}: %{new} is already defined")
        data = self.data(old)
        users = list(self._successors[old])
        operands = data.operands
        for operand in set(operands):
            self._unlink_edge(operand, old)
        for user in users:
            self._unlink_edge(old, user)
        del self._nodes[old], self._successors[old], self._predecessors[old]
        self._leaves.pop(old, None)
        self._store_node(new, data, linked=True)
        for user in users:
            user_data = self._nodes[user]
            user_data.operands = tuple(new if operand == old else operand for operand in user_data.operands)
            self._link(new, user)
        self._rename_in_schedule(old, new)
        self.outputs.replace(old, new)
        if views:
            self.rename_view_roots([(old, new)])

    def rename_view_roots(self, renames: Iterable[tuple[str, str]]) -> None:
        """Make lowered views (`view_of`, which may name any ancestor) follow `renames`, the
        (old, new) pairs of `rename` calls in the order they were made, in one scan."""
        origin: dict[str, str] = {}  # a name now -> the name its value had before the renames
        for old, new in renames:
            origin[new] = origin.pop(old, old)
        final = {"%" + before: "%" + now for now, before in origin.items() if now != before}
        if not final:
            return
        for data in self._nodes.values():
            root = data.attrs.get("view_of")
            if root in final:
                data.attrs = {**data.attrs, "view_of": final[root]}

    def _rename_in_schedule(self, old: str, new: str) -> None:
        before, after = self._prev.pop(old), self._next.pop(old)
        self._next[before], self._prev[after] = new, new
        self._prev[new], self._next[new] = before, after
        self._label[new] = self._label.pop(old)
        if self._last_inserted == old:
            self._last_inserted = new
        self._order = None

    def erase(self, name: str) -> None:
        """Remove a value nobody reads (raises `GraphError` when it still has users)."""
        if self._successors[name] or name in self.outputs:
            readers = ", ".join("%" + user for user in self.users(name)) or "the graph outputs"
            raise GraphError(f"cannot erase %{name}: still read by {readers}")
        self._drop_node(name)
        self._unlink(name)

    def move_before(self, name: str, anchor: str) -> None:
        self._unlink(name)
        self._insert(name, anchor, None)

    def move_after(self, name: str, anchor: str) -> None:
        self._unlink(name)
        self._insert(name, None, anchor)

    def set_outputs(self, outputs: Iterable[str]) -> None:
        outputs = list(outputs)
        for value in outputs:
            self.data(value)
        self.outputs = outputs

    # --- whole-graph operations ---------------------------------------------------------
    def copy(self) -> Graph:
        clone = Graph(self.name, self.symbols)
        clone.loc, clone.output_loc = self.loc, self.output_loc
        for name in self.schedule():
            data = self._nodes[name]
            attrs = data.attrs if type(data.attrs) is SharedAttrs else dict(data.attrs)  # read-only ones stay shared
            clone._store_node(name, ValueNode(data.op, data.operands, attrs, data.type, data.loc, data.provenance))
        for source, targets in self._successors.items():
            for target in targets:
                clone._link(source, target)
        clone._next, clone._prev = dict(self._next), dict(self._prev)
        clone._label = dict(self._label)
        clone._order = None
        clone.outputs = list(self.outputs)
        clone._fresh = dict(self._fresh)
        return clone

    def bound_symbols(self, bindings: Mapping[str, int] | None = None) -> dict[str, int]:
        """Header defaults overridden by `bindings` (only symbols the graph declares)."""
        values = {symbol: default for symbol, default in self.symbols.items() if default is not None}
        values.update({symbol: value for symbol, value in (bindings or {}).items() if symbol in self.symbols})
        return values

    def bind(self, bindings: Mapping[str, int] | None = None, *, in_place: bool = False, **symbols: int) -> Graph:
        """A specialised copy with the given symbols replaced by integers.

        Every node's type is inferred again, so checks that need numbers (slice bounds,
        reshape counts) run now; a failure is located at the node. Unknown symbols are an error.

        ``in_place=True`` binds this graph itself and returns it: the same result without
        the copy, for a caller that has no further use for the graph as written (a failure
        then leaves it part-bound).
        """
        values = {**(bindings or {}), **symbols}
        unknown = sorted(set(values) - set(self.symbols))
        if unknown:
            declared = ", ".join(self.symbols) or "none"
            raise RlxError(f"graph {self.name} has no symbol {', '.join(unknown)}", self.loc,
                           expected=f"one of its symbols: {declared}")
        for symbol, value in values.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise RlxError(f"symbol {symbol} must be bound to a non-negative integer, got {value!r}")
        remaining = {symbol: default for symbol, default in self.symbols.items() if symbol not in values}
        if in_place:
            return self._bind_in_place(values, remaining)
        result = Graph(self.name, remaining)
        result.loc, result.output_loc = self.loc, self.output_loc
        bound_types: dict = {}
        inferred: dict = {}
        with no_collections():
            order = self.schedule()
            for name in order:
                _rebuild_node(result, name, self._nodes[name], values, bound_types, inferred)
            result.append_to_schedule(order)
        result.outputs = list(self.outputs)
        return result

    def _bind_in_place(self, values: Mapping[str, int], remaining: dict[str, int | None]) -> Graph:
        """`bind(values, in_place=True)`: each record gets the type and attributes a copy's
        would have; names, edges, the schedule and the outputs stay as they are."""
        bound_types: dict = {}
        inferred: dict = {}
        nodes = self._nodes
        with no_collections():
            for name in self.schedule():
                data = nodes[name]
                data.attrs, data.type = bound_fields(name, data, nodes, values, bound_types, inferred)
        self.symbols = remaining
        self._fresh = {}  # as in a new graph: the passes name new values the same way
        self._leaf_version += 1  # the leaves' types changed
        self._changed()
        return self

    def equals(self, other: Graph) -> bool:
        """Structural equality: name, symbols, schedule, every node's op, operands,
        attributes and type, and the outputs (locations and provenance are not compared)."""
        if (self.name, self.symbols, self.outputs) != (other.name, other.symbols, other.outputs):
            return False
        if self.schedule() != other.schedule():
            return False
        for name in self.schedule():
            mine, theirs = self._nodes[name], other._nodes[name]
            if (mine.op, mine.operands, mine.type) != (theirs.op, theirs.operands, theirs.type):
                return False
            if not _same_attrs(mine.attrs, theirs.attrs):
                return False
        return True

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self)} values>"


def _rebuild_node(result: Graph, name: str, data: ValueNode, values: Mapping[str, int], bound_types: dict,
                  inferred: dict) -> None:
    """Store `name` and its edges in `result`, symbols bound, type inferred again (the caller schedules it)."""
    attrs, type_ = bound_fields(name, data, result._nodes, values, bound_types, inferred)
    if data.op in LEAF_KINDS:
        result._store_node(name, ValueNode(data.op, (), attrs, type_, data.loc, data.provenance))
    else:
        result._store_node(name, ValueNode(data.op, data.operands, attrs, type_, data.loc, data.provenance),
                           linked=True)


def _same_attrs(left: dict, right: dict) -> bool:
    """Attribute equality where NaN equals NaN (a NaN literal must survive a round trip)."""
    return left.keys() == right.keys() and all(_same_value(left[key], right[key]) for key in left)


def _same_value(left: object, right: object) -> bool:
    if isinstance(left, tuple) and isinstance(right, tuple):
        return len(left) == len(right) and all(_same_value(a, b) for a, b in zip(left, right))
    if isinstance(left, float) and isinstance(right, float) and left != left and right != right:
        return True
    return type(left) is type(right) and left == right


class Module:
    """The graphs of one file, in file order; `main` is the first."""

    def __init__(self, graphs: Iterable[Graph] = (), filename: str = "<string>"):
        self.graphs: dict[str, Graph] = {}
        self.filename = filename
        for graph in graphs:
            self.add(graph)

    def add(self, graph: Graph) -> None:
        if graph.name in self.graphs:
            raise VerifyError(f"graph {graph.name} is defined twice", graph.loc)
        self.graphs[graph.name] = graph

    @property
    def main(self) -> Graph:
        if not self.graphs:
            raise RlxError(f"{self.filename} holds no graph", expected="graph NAME(...) { ... }")
        return next(iter(self.graphs.values()))

    def __getitem__(self, name: str) -> Graph:
        try:
            return self.graphs[name]
        except KeyError:
            names = ", ".join(self.graphs) or "none"
            raise RlxError(f"no graph named {name!r} in {self.filename}", expected=f"one of: {names}") from None

    def __iter__(self) -> Iterator[Graph]:
        return iter(self.graphs.values())

    def __len__(self) -> int:
        return len(self.graphs)

    def equals(self, other: Module) -> bool:
        return list(self.graphs) == list(other.graphs) and all(
            graph.equals(other.graphs[name]) for name, graph in self.graphs.items()
        )
