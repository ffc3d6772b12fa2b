"""What a planner places (`Buffer`) and what it returns (`PlanResult`)."""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from typing import Any

import attrs

ProgressSink = Callable[[str], None]


def placed_share(placed: int, total: int) -> str:
    """How far a placement pass is, as its progress lines say it: ``40% of 1000 buffers``."""
    return f"{placed * 100 // max(total, 1)}% of {total} buffers"
"""Where a planner sends a one-line status now and then during long work (the CLI shows
it on a terminal)."""


def aligned_size(size: int, alignment: int) -> int:
    """`size` rounded up to a multiple of `alignment` (exact for any Python int)."""
    if alignment < 1:
        raise ValueError(f"alignment must be a positive integer, got {alignment}")
    return -(-size // alignment) * alignment


def _check_interval(buffer: Buffer, attribute: attrs.Attribute, end: int) -> None:
    if end <= buffer.start:
        raise ValueError(
            f"buffer {buffer.name!r}: live interval [{buffer.start}, {end}) is empty; "
            "a buffer must be live for at least one step"
        )


def _check_non_negative(buffer: Buffer, attribute: attrs.Attribute, value: int | None) -> None:
    if value is not None and value < 0:
        raise ValueError(f"buffer {buffer.name!r}: {attribute.name} must be >= 0, got {value}")


@attrs.frozen(slots=True)
class Buffer:
    """One block of memory the planner must place, live over the steps ``[start, end)``.

    Two buffers conflict (may not share addresses) when their live intervals intersect:
    ``a.start < b.end and b.start < a.end``. Views are not buffers: the caller resolves a
    view (a reshape, a same-dtype cast, an axis-0 slice) to its root before planning and
    simply does not pass it.

    `size` is in bytes, before alignment; planners reserve ``aligned_size(size,
    alignment)``. `fixed_offset`, when set, is imposed on the planner (for example a weight
    bound to the forward layout when planning a backward graph); it must be a multiple of
    the alignment the plan uses.
    """

    name: str
    start: int
    end: int = attrs.field(validator=_check_interval)
    size: int = attrs.field(validator=_check_non_negative)
    fixed_offset: int | None = attrs.field(default=None, validator=_check_non_negative)

    @property
    def lifetime(self) -> int:
        """Number of steps the buffer is live."""
        return self.end - self.start


class Offsets(Mapping[str, int]):
    """A plan's offsets by buffer name, in the order the buffers were given: what a
    planner's `PlanResult.offsets` holds. The names and the offsets are kept side by side
    (the offsets as a list of ints or an int64 array); the dictionary that finds an
    offset by name is made at the first lookup. Reading them in order (iterating,
    `values`, `items`, `in_order`) needs no lookup: at 10^5-10^6 buffers, making that
    dictionary would be most of what packaging a plan costs.

    Compares equal to any mapping of the same names to the same offsets (a dict
    included)."""

    __slots__ = ("_names", "_values", "_by_name")

    def __init__(self, names: Sequence[str], values: Sequence[int] | Any):
        if len(names) != len(values):
            raise ValueError(f"{len(values)} offsets for {len(names)} names")
        self._names = names
        self._values = values
        self._by_name: dict[str, int] | None = None

    def _value_list(self) -> list[int]:
        values = self._values
        if not isinstance(values, list):
            # An int64 array (or another sequence): Python ints, once.
            values = self._values = values.tolist() if hasattr(values, "tolist") else list(values)
        return values

    def _table(self) -> dict[str, int]:
        table = self._by_name
        if table is None:
            table = self._by_name = dict(zip(self._names, self._value_list()))
        return table

    def __getitem__(self, name: str) -> int:
        return self._table()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._table()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def values(self) -> ValuesView[int]:
        return _InOrderValues(self)

    def items(self) -> ItemsView[str, int]:
        return _InOrderItems(self)

    def in_order(self, names: Sequence[str]) -> list[int] | None:
        """The offsets of `names`, in that order, where they are this plan's names in its
        order (compared by identity first, so the planner's own name list costs nothing);
        None otherwise."""
        mine = self._names
        if names is not mine and (len(names) != len(mine) or _as_list(names) != _as_list(mine)):
            return None
        return list(self._value_list())

    def __repr__(self) -> str:
        return f"Offsets({dict(self.items())!r})"

    def __reduce__(self) -> tuple:
        return Offsets, (list(self._names), list(self._value_list()))


def _as_list(names: Sequence[str]) -> list[str]:
    # Two lists compare in C, each pair of names by identity first.
    return names if isinstance(names, list) else list(names)


class _InOrderValues(ValuesView):
    __slots__ = ()

    def __iter__(self) -> Iterator[int]:
        return iter(self._mapping._value_list())


class _InOrderItems(ItemsView):
    __slots__ = ()

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return zip(self._mapping._names, self._mapping._value_list())


def offsets_in_order(names: Sequence[str], offsets: Mapping[str, int]) -> list[int]:
    """The offsets of `names` in that order: read side by side from an `Offsets` of
    those names, looked up by name otherwise (KeyError for a missing name)."""
    if isinstance(offsets, Offsets):
        placed = offsets.in_order(names)
        if placed is not None:
            return placed
    return [offsets[name] for name in names]


@attrs.frozen(slots=True)
class PlanResult:
    """A placement of a buffer list in one arena, with the numbers that judge it.

    - `offsets`: byte offset of every buffer, by name, in the order the buffers were given
      (an `Offsets` from the planners; any mapping where made by hand).
    - `arena_bytes`: max over buffers of offset + aligned size (0 for no buffers).
    - `lower_bound_bytes`: peak over time of the aligned sizes live together; no plan of
      these buffers can use less (see `lower_bound`).
    - `unshared_bytes`: the sum of aligned sizes, what a plan without any reuse needs.
    - `alignment`, `planner` (registry name) and `seconds` (wall time of the plan call).
    """

    offsets: Mapping[str, int] = attrs.field(repr=False)
    arena_bytes: int
    lower_bound_bytes: int
    unshared_bytes: int
    alignment: int
    planner: str
    seconds: float

    @property
    def ratio(self) -> float:
        """Arena over lower bound (1.0 is optimal; 1.0 as well when both are 0)."""
        if self.lower_bound_bytes == 0:
            return 1.0
        return self.arena_bytes / self.lower_bound_bytes
