"""A buffer list checked and flattened into the arrays the planners work on.

Planners never read `Buffer` objects in their loops: `Problem.build` validates the list
once (unique names, aligned fixed offsets), rounds sizes up to the alignment and
compresses time into *slots*. Slot ``i`` is the span between the ``i``-th and the next
distinct start time, and a buffer covers the slots ``[slot_lo, slot_hi)``. Two buffers
conflict exactly when their slot ranges intersect (of two overlapping intervals, the one
that starts later starts inside the other, so both cover that start's slot), so planners
can reason about slots only.

Sizes and offsets stay Python ints. NumPy ``int64`` arrays of times and sizes are used
only when every sum a planner can form fits (`int64_safe`); otherwise the key arrays hold
ranks (same order, small values) and no planner takes a fixed-width shortcut.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from operator import add

import attrs
import numpy as np

from rlxir.planning.buffers import Buffer, Offsets, PlanResult
from rlxir.planning.errors import PlanError

# Sums up to this bound cannot overflow int64, with room for one more addition.
_INT64_SAFE_LIMIT = 2**62


@attrs.frozen(slots=True, eq=False)
class Problem:
    """Validated, aligned, slot-compressed view of a buffer list (read-only by contract).

    `start_keys`, `end_keys` and `size_keys` sort like the starts, ends and aligned sizes
    (they are those values when `int64_safe`, dense ranks otherwise).
    """

    buffers: tuple[Buffer, ...]
    alignment: int
    names: list[str]
    sizes: list[int]  # aligned sizes, Python ints
    fixed: list[int | None]  # imposed offsets
    int64_safe: bool
    start_keys: np.ndarray
    end_keys: np.ndarray
    size_keys: np.ndarray
    slot_lo: np.ndarray  # int64, first slot covered
    slot_hi: np.ndarray  # int64, one past the last slot covered
    slot_count: int
    # Figures derived once and kept (the lower bound: several passes of one plan read it).
    memo: dict = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def build(cls, buffers: Sequence[Buffer], alignment: int) -> Problem:
        """Check `buffers` and compute the planning arrays.

        Raises `PlanError` on a repeated name or on a fixed offset that is not a multiple of
        `alignment`, and `ValueError` on an alignment below 1.
        """
        if alignment < 1:
            raise ValueError(f"alignment must be a positive integer, got {alignment}")
        buffers = tuple(buffers)
        names = [b.name for b in buffers]
        _check_names(names)
        fixed = [b.fixed_offset for b in buffers]
        _check_fixed_offsets(buffers, fixed, alignment)
        if alignment == 1:
            sizes = [b.size for b in buffers]
        else:
            sizes = [-(-b.size // alignment) * alignment for b in buffers]
        starts = [b.start for b in buffers]
        ends = [b.end for b in buffers]
        safe = _fits_int64(starts, ends, sizes, fixed)
        # Starts and ends share one key space: slots compare ends with starts.
        time_keys = _key_array(starts + ends, safe)
        start_keys, end_keys = time_keys[: len(starts)], time_keys[len(starts) :]
        size_keys = _key_array(sizes, safe)
        slot_lo, slot_hi, slot_count = _slot_ranges(start_keys, end_keys)
        return cls(
            buffers, alignment, names, sizes, fixed, safe, start_keys, end_keys, size_keys, slot_lo, slot_hi, slot_count
        )

    def __len__(self) -> int:
        return len(self.buffers)

    def key_array(self, values: Sequence[int]) -> np.ndarray:
        """`values` as an int64 array that sorts like them (dense ranks when too large)."""
        values = list(values)
        fits = max(map(abs, values), default=0) < _INT64_SAFE_LIMIT
        return _key_array(values, fits)

    def lifetime_keys(self) -> np.ndarray:
        """An int64 array that sorts like the lifetimes ``end - start``."""
        if self.int64_safe:
            return self.end_keys - self.start_keys
        return self.key_array([b.lifetime for b in self.buffers])

    def size_array(self) -> np.ndarray:
        """Aligned sizes as an array NumPy can sum exactly (int64 or Python-int objects)."""
        if self.int64_safe:
            return self.size_keys
        return np.array(self.sizes, dtype=object).reshape(len(self.sizes))

    def live_bytes_per_slot(self) -> np.ndarray:
        """Aligned bytes live in each slot (exact for any sizes: Python ints if needed).

        The live sum only grows at a start time, so its maximum over all time is reached in
        some slot; that maximum is the lower bound on any arena.
        """
        sizes = self.size_array()
        change = np.zeros(self.slot_count + 1, dtype=sizes.dtype)
        np.add.at(change, self.slot_lo, sizes)
        np.add.at(change, self.slot_hi, -sizes)
        return np.cumsum(change[:-1])

    def lower_bound_bytes(self) -> int:
        """The most bytes live in any slot (0 without buffers): no arena is smaller."""
        bound = self.memo.get("lower_bound")
        if bound is None:
            live = self.live_bytes_per_slot()
            bound = self.memo["lower_bound"] = int(live.max()) if len(live) else 0
        return bound

    def unshared_bytes(self) -> int:
        """The sum of the aligned sizes: what a plan without any reuse needs."""
        if self.int64_safe:
            return int(self.size_keys.sum())
        return sum(self.sizes)

    def has_fixed(self) -> bool:
        """Whether any buffer has an imposed offset."""
        fixed = self.memo.get("has_fixed")
        if fixed is None:
            fixed = self.memo["has_fixed"] = self.fixed.count(None) != len(self.fixed)
        return fixed

    def free_index_array(self) -> np.ndarray:
        """Indices of the buffers the planner chooses an offset for (int64)."""
        if not self.has_fixed():
            return np.arange(len(self.fixed), dtype=np.int64)
        return np.flatnonzero(np.fromiter((offset is None for offset in self.fixed), dtype=bool,
                                          count=len(self.fixed))).astype(np.int64)

    def fixed_array(self) -> np.ndarray:
        """The imposed offsets as int64, -1 where none (only for int64-safe problems)."""
        if not self.has_fixed():
            return np.full(len(self.fixed), -1, dtype=np.int64)
        return np.fromiter((-1 if offset is None else offset for offset in self.fixed), dtype=np.int64,
                           count=len(self.fixed))

    def arena_bytes(self, offsets: Sequence[int] | np.ndarray) -> int:
        """The highest end of the buffers at `offsets` (one per buffer, input order; 0
        without buffers): summed in NumPy where every sum fits int64, in Python ints else."""
        if self.int64_safe:
            return int(np.max(np.asarray(offsets, dtype=np.int64) + self.size_keys, initial=0))
        return max(map(add, offsets, self.sizes), default=0)

    def result(self, offsets: Sequence[int] | np.ndarray, planner: str, seconds: float,
               arena: int | None = None) -> PlanResult:
        """Package `offsets` (one per buffer, in input order: Python ints, or an int64 array
        where the problem is int64-safe) as a `PlanResult`, beside the names (`Offsets`);
        `arena`, where the caller has it, is their highest end."""
        return PlanResult(
            offsets=Offsets(self.names, offsets),
            arena_bytes=self.arena_bytes(offsets) if arena is None else arena,
            lower_bound_bytes=self.lower_bound_bytes(),
            unshared_bytes=self.unshared_bytes(),
            alignment=self.alignment,
            planner=planner,
            seconds=seconds,
        )


def _check_names(names: list[str]) -> None:
    if len(set(names)) == len(names):
        return
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PlanError(f"buffer name {name!r} appears more than once")
        seen.add(name)


def _check_fixed_offsets(buffers: tuple[Buffer, ...], fixed: list[int | None], alignment: int) -> None:
    for buffer, offset in zip(buffers, fixed):
        if offset is not None and offset % alignment:
            raise PlanError(
                f"buffer {buffer.name!r}: fixed offset {offset} is not a multiple of the alignment {alignment}"
            )


def _fits_int64(starts: list[int], ends: list[int], sizes: list[int], fixed: list[int | None]) -> bool:
    """Whether every time and every offset + size a planner can form fits in int64."""
    if not starts:
        return True
    times_fit = max(map(abs, starts)) < _INT64_SAFE_LIMIT and max(map(abs, ends)) < _INT64_SAFE_LIMIT
    highest_fixed = max((f for f in fixed if f is not None), default=0)
    return times_fit and highest_fixed + sum(sizes) + max(sizes) < _INT64_SAFE_LIMIT


def _key_array(values: list[int], safe: bool) -> np.ndarray:
    if safe:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    distinct = sorted(set(values))
    return np.fromiter((bisect_left(distinct, v) for v in values), dtype=np.int64, count=len(values))


def _slot_ranges(start_keys: np.ndarray, end_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Slot range of every buffer: the slots are the distinct start times, in order."""
    n = len(start_keys)
    if n == 0:
        return start_keys.copy(), end_keys.copy(), 0
    by_start = np.argsort(start_keys, kind="stable")
    sorted_starts = start_keys[by_start]
    is_new = np.empty(n, dtype=bool)
    is_new[0] = True
    np.not_equal(sorted_starts[1:], sorted_starts[:-1], out=is_new[1:])
    slot_lo = np.empty(n, dtype=np.int64)
    slot_lo[by_start] = np.cumsum(is_new) - 1
    distinct_starts = sorted_starts[is_new]
    # Searching sorted queries is several times faster than scattered ones.
    by_end = np.argsort(end_keys, kind="stable")
    slot_hi = np.empty(n, dtype=np.int64)
    slot_hi[by_end] = np.searchsorted(distinct_starts, end_keys[by_end])
    return slot_lo, slot_hi, len(distinct_starts)
