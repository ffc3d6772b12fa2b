"""The reading half of `rlxir.ir.graph.Graph`: the storage it keeps its values in (the
dicts that `graph.nx` is built over, the schedule's links) and every query on it — a
value's op, operands, attributes, type and users, the schedule, the values of a kind.
Nothing here changes a graph; `Graph` adds building, rewriting and the whole-graph
operations on top.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, KeysView, Mapping, MutableMapping
from itertools import compress, repeat
from operator import attrgetter, eq
from types import MappingProxyType
from typing import Any

from rlxir.errors import Location, RlxError
from rlxir.ir.outputs import OutputList
from rlxir.ops import LEAF_KINDS, OpDef, check_attributes, get_op
from rlxir.types import TensorType


class GraphError(RlxError):
    """Misuse of the graph API by a pass (erasing a used value, unknown names, ...)."""


NODE_FIELDS = ("op", "operands", "attrs", "type", "loc", "provenance")
_OP_OF, _TYPE_OF = attrgetter("op"), attrgetter("type")
_FIELD_SET = frozenset(NODE_FIELDS)


class ValueNode(MutableMapping):
    """One value's data, as networkx's node data: a slotted record of ``op``, ``operands``,
    ``attrs``, ``type``, ``loc`` and ``provenance`` (a fifth of the size of the dict it
    replaces). Code in rlxir reads the fields as attributes (``data.op``); for everything
    else, networkx included, it is a mapping of exactly those six keys: ``data["op"]``,
    ``get``, ``in``, ``keys``/``items``, ``data["attrs"] = ...``. Other keys are refused
    (a value carries no other data), and ``copy()`` gives a plain dict.
    """

    __slots__ = NODE_FIELDS

    op: str
    operands: tuple[str, ...]
    attrs: dict
    type: TensorType
    loc: Location | None
    provenance: tuple

    def __init__(self, op: str, operands: tuple[str, ...], attrs: dict, type: TensorType,
                 loc: Location | None, provenance: tuple) -> None:
        self.op, self.operands, self.attrs = op, operands, attrs
        self.type, self.loc, self.provenance = type, loc, provenance

    def __getitem__(self, key: str) -> Any:
        if key in _FIELD_SET:
            return getattr(self, key)
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in _FIELD_SET:
            raise KeyError(f"a value's data holds only {', '.join(NODE_FIELDS)}; not {key!r}")
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"a value's data always holds {key!r}; set it instead of deleting it")

    def __iter__(self) -> Iterator[str]:
        return iter(NODE_FIELDS)

    def __len__(self) -> int:
        return len(NODE_FIELDS)

    def __contains__(self, key: object) -> bool:
        return key in _FIELD_SET

    def copy(self) -> dict:
        return {key: getattr(self, key) for key in NODE_FIELDS}

    def replaced(self, **fields: Any) -> ValueNode:
        """A new record with `fields` changed (the others shared)."""
        data = self.copy()
        data.update(fields)
        return ValueNode(**data)

    def __repr__(self) -> str:
        return f"ValueNode({self.copy()!r})"


class SharedAttrs(dict):
    """An op node's attributes as inference canonicalised them, one object shared by every
    node with the same op, operand types and attributes (the layers of a stack repeat them
    thousands of times), so it refuses changes: `Graph.set_attrs` or assigning
    ``data.attrs`` replaces a node's attributes instead. ``copy()`` gives a plain dict."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a node's attributes are shared with other nodes: replace them (Graph.set_attrs), "
                        "do not change them in place")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _refuse

    def copy(self) -> dict:
        return dict(self)

    def __reduce__(self) -> tuple:
        return SharedAttrs, (dict(self),)


NO_ATTRS = SharedAttrs()


class NoEdgeData(Mapping):
    """The data of every edge: edges in rlxir carry nothing (operands are in the nodes), so
    one shared, empty, read-only mapping serves them all instead of a dict per edge. Writes
    that would add something (networkx's ``add_edge(u, v, weight=1)``,
    ``set_edge_attributes``) are refused; ``copy()`` gives a plain empty dict."""

    __slots__ = ()

    def __getitem__(self, key: object) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __setitem__(self, key: object, value: object) -> None:
        raise GraphError(f"edges carry no data in rlxir (tried to set {key!r})")

    def update(self, *others: Any, **items: Any) -> None:
        """networkx calls this with each edge it adds: nothing to add is fine."""
        if items or any(other for other in others):
            raise GraphError("edges carry no data in rlxir (operands and attributes live in the nodes)")

    def copy(self) -> dict:
        return {}

    def __reduce__(self) -> str:
        return "NO_EDGE_DATA"  # unpickled as the one instance

    def __repr__(self) -> str:
        return "NO_EDGE_DATA"


NO_EDGE_DATA = NoEdgeData()


SCHEDULE_END = ""  # sentinel of the circular schedule list (never a value name)


class GraphReading:
    """Queries on one SSA graph; `Graph` holds the state and the changes (see
    `rlxir.ir.graph` for the data model)."""

    name: str
    _outputs: OutputList
    _nodes: dict[str, ValueNode]
    _successors: dict[str, dict[str, NoEdgeData]]
    _predecessors: dict[str, dict[str, NoEdgeData]]
    _next: dict[str, str]
    _label: dict[str, int]
    _order: list[str] | None
    _leaves: dict[str, None]
    _leaf_version: int
    _interface_rows: tuple | None

    @property
    def outputs(self) -> OutputList:
        """The output values in order (a list; membership and counts cost O(1))."""
        return self._outputs

    @outputs.setter
    def outputs(self, names: Iterable[str]) -> None:
        self._outputs = names if isinstance(names, OutputList) else OutputList(names)

    def __contains__(self, name: str) -> bool:
        return name in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[str]:
        return iter(self.schedule())

    def data(self, name: str) -> ValueNode:
        """The node's data record (read it; change it only through the methods below)."""
        try:
            return self._nodes[name]
        except KeyError:
            raise GraphError(f"no value %{name} in graph {self.name}") from None

    # The one-field reads below index the dict themselves rather than through `data`:
    # passes call them millions of times on a big graph, and the extra call was a fifth of
    # their cost. A missing name raises the same `GraphError` as `data`.
    def op(self, name: str) -> str:
        try:
            return self._nodes[name].op
        except KeyError:
            raise self._missing(name) from None

    def opdef(self, name: str) -> OpDef | None:
        try:
            return get_op(self._nodes[name].op)
        except KeyError:
            raise self._missing(name) from None

    def _missing(self, name: str) -> GraphError:
        return GraphError(f"no value %{name} in graph {self.name}")

    def operands(self, name: str) -> tuple[str, ...]:
        try:
            return self._nodes[name].operands
        except KeyError:
            raise GraphError(f"no value %{name} in graph {self.name}") from None

    def attrs(self, name: str) -> dict:
        """Attributes as stored (defaults omitted)."""
        try:
            return self._nodes[name].attrs
        except KeyError:
            raise self._missing(name) from None

    def attr(self, name: str, key: str, default: Any = None) -> Any:
        """An attribute's value with the op's schema default filled in."""
        data = self.data(name)
        if key in data.attrs:
            return data.attrs[key]
        opdef = get_op(data.op)
        spec = opdef.attributes.get(key) if opdef else None
        if spec is not None and not spec.required:
            return spec.default
        return default

    def full_attrs(self, name: str) -> dict:
        data = self.data(name)
        opdef = get_op(data.op)
        if opdef is None:
            return dict(data.attrs)
        return check_attributes(opdef, data.attrs)[1]

    def type(self, name: str) -> TensorType:
        try:
            return self._nodes[name].type
        except KeyError:
            raise self._missing(name) from None

    def location(self, name: str) -> Location | None:
        """Where value `name` is defined. (`graph.loc` is the graph header's location.)"""
        return self.data(name).loc

    def provenance(self, name: str) -> tuple[str, ...]:
        try:
            return self._nodes[name].provenance
        except KeyError:
            raise self._missing(name) from None

    def kind(self, name: str) -> str:
        """``input``, ``param``, ``const`` or ``op``."""
        try:
            op = self._nodes[name].op
        except KeyError:
            raise self._missing(name) from None
        return op if op in LEAF_KINDS else "op"

    def users(self, name: str) -> list[str]:
        """The values that read `name`, in schedule order (O(k log k) for k users)."""
        try:
            users = list(self._successors[name])
        except KeyError:
            raise GraphError(f"no value %{name} in graph {self.name}") from None
        if len(users) > 1:
            users.sort(key=self._label.__getitem__)
        return users

    def edge_sources(self, name: str) -> KeysView[str]:
        """The values with an edge into `name`, as a set-like view (the verifier checks it
        equals the set of its operands)."""
        return self._predecessors[name].keys()

    def edge_targets(self, name: str) -> KeysView[str]:
        """The values with an edge from `name` (its users, each once), as a set-like view in
        the order their edges were added: O(1), where `users` sorts by schedule."""
        try:
            return self._successors[name].keys()
        except KeyError:
            raise GraphError(f"no value %{name} in graph {self.name}") from None

    def user_count(self, name: str) -> int:
        """How many distinct values read `name` (its out-degree; `use_count` also counts
        repeated reads and graph outputs)."""
        try:
            return len(self._successors[name])
        except KeyError:
            raise GraphError(f"no value %{name} in graph {self.name}") from None

    def data_by_name(self) -> Mapping[str, ValueNode]:
        """Every value's data record by name, as a read-only mapping (for walks over the whole
        graph; its keys are exactly the values stored, whatever the schedule says)."""
        return MappingProxyType(self._nodes)

    def readers_by_name(self) -> Mapping[str, Mapping[str, NoEdgeData]]:
        """Every value's readers (each once, as the keys of a read-only mapping) by name: what
        `edge_targets` and `user_count` answer for one value, for walks that ask it of many."""
        return MappingProxyType(self._successors)

    def comes_before(self, first: str, second: str) -> bool:
        """Whether `first` is earlier than `second` in the schedule (O(1))."""
        return self._label[first] < self._label[second]

    def use_count(self, name: str) -> int:
        """Reads of `name` by ops (repeats counted) plus graph outputs."""
        count = sum(self._nodes[user].operands.count(name) for user in self._successors[name])
        return count + self.outputs.count(name)

    def schedule(self) -> list[str]:
        """Value names in execution order (a fresh list)."""
        if self._order is None:
            # The labels increase along the linked list, so sorting by them (in C) gives its
            # order: 0.6x the time of walking the list's dict on 10^5 nodes.
            label = self._label
            order = list(label)
            order.remove(SCHEDULE_END)
            order.sort(key=label.__getitem__)
            self._order = order
        return list(self._order)

    def values_with_op(self, ops: Container[str]) -> list[str]:
        """The values whose op is in `ops`, in schedule order, for a pass that looks at a few
        ops only: read from the records in storage order (no name is hashed) and sorted by
        their places in the schedule, without ordering the whole graph first. At 10^5 values
        that read costs about 60 % of a walk along the schedule, and a schedule that changed
        since it was last read would cost another walk to order."""
        found = [name for name, data in self._nodes.items() if data.op in ops]
        found.sort(key=self._label.__getitem__)
        return found

    def in_schedule_order(self, names: Iterable[str]) -> list[str]:
        """`names` sorted by their places in the schedule, O(k log k) for k names: for a
        pass that visits only the values it can change (the readers of some values, say)
        rather than walking the whole schedule."""
        ordered = list(names)
        try:
            ordered.sort(key=self._label.__getitem__)
        except KeyError:
            missing = next(name for name in ordered if name not in self._nodes)
            raise self._missing(missing) from None
        return ordered

    def schedule_span(self, first: str, last: str) -> list[str]:
        """The values from `first` through `last` in schedule order (empty when `last` comes
        before `first`), read along the schedule's links: O(values in the span) however
        big the graph, for a pass that rearranges one stretch of it."""
        label, following = self._label, self._next
        for name in (first, last):
            if name not in self._nodes:
                raise self._missing(name)
        if label[last] < label[first]:
            return []
        span = [first]
        while span[-1] != last:
            span.append(following[span[-1]])
        return span

    def positions(self) -> dict[str, int]:
        """Schedule position of every value."""
        return {name: index for index, name in enumerate(self.schedule())}

    def values_of_kind(self, kind: str) -> list[str]:
        """The values of `kind` (see `kind`) in schedule order. Inputs, params and consts are
        read from the graph's list of leaves, so asking for them (as every pass's interface
        check does, twice) costs O(leaves), not a walk over every value."""
        nodes = self._nodes
        if kind == "op":
            return [name for name in self.schedule() if nodes[name].op not in LEAF_KINDS]
        found = [name for name in self._leaves if name in nodes and nodes[name].op == kind]
        found.sort(key=self._label.__getitem__)
        return found

    def interface_leaves(self) -> tuple[tuple[tuple[str, TensorType], ...], tuple[tuple[str, TensorType], ...]]:
        """(inputs, params), each ((name, type), ...) in schedule order: what the interface
        check after every pass reads. Names and order are kept from the previous call while
        no input or param was stored, dropped, renamed or moved (the graph counts those
        changes; consts, which passes make and erase all the time, do not count); each
        call still checks that every input and param has the same record, op and type, which
        a pass may also change directly (through `graph.nx`, or a record's fields). The reads
        are C-level iterators (`map`, `compress`, `zip`): a model's tens of thousands of
        params cost milliseconds, not a loop over them."""
        rows = self._interface_rows
        if rows is not None and rows[0] == self._leaf_version:
            _, ordered, records, ops, types, answer = rows
            if (list(map(self._nodes.get, ordered)) == records and list(map(_OP_OF, records)) == ops
                    and list(map(_TYPE_OF, records)) == types):
                return answer
        nodes, label = self._nodes, self._label
        names = list(filter(nodes.__contains__, self._leaves))
        leaf_ops = list(map(_OP_OF, map(nodes.__getitem__, names)))
        found = {}
        for kind in ("input", "param"):
            found[kind] = list(compress(names, map(eq, leaf_ops, repeat(kind))))
            found[kind].sort(key=label.__getitem__)
        ordered = found["input"] + found["param"]
        records = list(map(nodes.__getitem__, ordered))
        ops, types = list(map(_OP_OF, records)), list(map(_TYPE_OF, records))
        pairs = tuple(zip(ordered, types))
        answer = (pairs[:len(found["input"])], pairs[len(found["input"]):])
        self._interface_rows = (self._leaf_version, ordered, records, ops, types, answer)
        return answer

    def inputs(self) -> list[str]:
        return self.values_of_kind("input")

    def params(self) -> list[str]:
        return self.values_of_kind("param")

    def consts(self) -> list[str]:
        return self.values_of_kind("const")

    def ops(self) -> list[str]:
        return self.values_of_kind("op")
