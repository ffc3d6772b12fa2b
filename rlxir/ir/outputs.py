"""The graph's output list: a `list` of value names that also counts its members, so
`name in graph.outputs` and `graph.outputs.count(name)` cost O(1) however many outputs a
graph has (a training step lists every updated weight and state tensor); passes ask both
for every value they erase or rewrite. `replace` finds the positions of a name through an
index of them, built on first use and dropped by any change that moves members, so a pass
that rewrites thousands of outputs does not search the list for each. It is a plain list
otherwise: compare, print, slice, pickle and JSON-encode it as one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, SupportsIndex


class OutputList(list):
    """A list of value names with a count of each, kept by every method that changes it."""

    __slots__ = ("_counts", "_positions")

    def __init__(self, names: Iterable[str] = ()) -> None:
        super().__init__(names)
        self._counts: Counter[str] = Counter(self)
        self._positions: dict[str, list[int]] | None = None  # name -> its indices; None: not built

    def __reduce__(self) -> tuple:
        return (OutputList, (list(self),))

    def __contains__(self, name: object) -> bool:
        return self._counts.get(name, 0) > 0  # type: ignore[call-overload]

    def count(self, name: Any) -> int:
        return self._counts.get(name, 0)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            removed, added = self[index], list(value)
            value = added
        else:
            removed, added = [self[index]], [value]
        positions = self._positions
        if positions is not None and not isinstance(index, slice):
            index = range(len(self))[index]  # a negative index as the position it names (IndexError as a list's)
            positions[removed[0]].remove(index)
            positions.setdefault(value, []).append(index)
        else:
            self._positions = None
        super().__setitem__(index, value)
        self._counts.subtract(removed)
        self._counts.update(added)

    def __delitem__(self, index: Any) -> None:
        self._counts.subtract(self[index] if isinstance(index, slice) else [self[index]])
        super().__delitem__(index)
        self._positions = None

    def __iadd__(self, names: Iterable[str]) -> OutputList:  # type: ignore[override,misc]
        self.extend(names)
        return self

    def append(self, name: str) -> None:
        super().append(name)
        self._counts[name] += 1
        self._positions = None

    def extend(self, names: Iterable[str]) -> None:
        names = list(names)
        super().extend(names)
        self._counts.update(names)
        self._positions = None

    def insert(self, index: SupportsIndex, name: str) -> None:
        super().insert(index, name)
        self._counts[name] += 1
        self._positions = None

    def pop(self, index: SupportsIndex = -1) -> str:
        name = super().pop(index)
        self._counts[name] -= 1
        self._positions = None
        return name

    def remove(self, name: str) -> None:
        super().remove(name)
        self._counts[name] -= 1
        self._positions = None

    def clear(self) -> None:
        super().clear()
        self._counts.clear()
        self._positions = None

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self._positions = None

    def reverse(self) -> None:
        super().reverse()
        self._positions = None

    def replace(self, old: str, new: str) -> int:
        """Every position holding `old` holds `new` instead; returns how many."""
        held = self._counts.get(old, 0)
        if not held:
            return 0
        positions = self._positions
        if positions is None:
            positions = self._positions = {}
            for index, name in enumerate(self):
                positions.setdefault(name, []).append(index)
        moved = positions.pop(old)
        for index in moved:
            list.__setitem__(self, index, new)
        positions.setdefault(new, []).extend(moved)
        self._counts[old] = 0
        self._counts[new] += held
        return held
