"""A fast placement in schedule order: the `best` planner's first, always-finished plan.

One pass over the slots. At each slot the buffers that end there give their addresses
back, then the buffers that start there are placed, largest first, each into the smallest
free gap below the top of the live buffers (the lowest such gap on ties), or on that top.
Free gaps are kept sorted by (size, offset), so a placement is a bisection and a list
insertion: O(n log n) comparisons in all, however many buffers are live at once.

It sees only the buffers live at a start, not those that start later, so it packs less
tightly than `place_in_order` (on synth100k 1.02x the lower bound against 1.0000x); it is
several times cheaper, which makes it the plan `best` always has in hand.

`peak_sweep_best_fit` runs the same pass outward from the peak slot: the buffers live
there are stacked first (longest-lived at the bottom), then one pass goes forward in time
from the peak and one backward, each from that stack. The peak itself then has no holes,
and the holes a pass leaves grow only with the distance from it: on the idealloc
instances 1.0000-1.037x the lower bound against 1.003-1.26x for the schedule-order pass.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left, insort
from collections.abc import Callable

import numpy as np

from rlxir.planning.bounds import peak_slot
from rlxir.planning.compiled import run_sweep_compiled, use_compiled
from rlxir.planning.problem import Problem

# Events between two looks at the clock.
CHECK_EVERY = 2048

# Buffers from which the pass from the peak loads the compiled loops itself (below, it
# runs compiled only once they are loaded): the Python sweep costs 1-2.5 us a buffer, the
# compiled one about a third of that, and loading the loops about 0.4 s.
COLD_COMPILED_FROM = 200_000


def sweep_best_fit(
    problem: Problem, deadline: float = math.inf, progress: Callable[[int, int], None] | None = None
) -> list[int]:
    """Offsets (one per buffer, input order) of the schedule-order best-fit pass.

    `problem` must have no imposed offsets. If the clock passes `deadline` (a
    `time.perf_counter()` value) before the pass ends, every buffer not placed yet is
    stacked above the highest address used so far, so the result is always a valid plan.
    `progress(placed, total)` is called between batches of events.
    """
    n = len(problem)
    offsets = [0] * n
    sizes = problem.sizes
    events = _events(problem).tolist()  # Python ints: what the loop below reads fastest
    free = _FreeList(sum(sizes))
    for first in range(0, len(events), CHECK_EVERY):
        if progress is not None:
            progress(first // 2, n)
        if time.perf_counter() > deadline:
            _stack_the_rest(offsets, sizes, events[first:], n, free.highest)
            break
        _apply(events[first : first + CHECK_EVERY], n, offsets, sizes, free)
    return offsets


def peak_sweep_best_fit(problem: Problem, deadline: float = math.inf) -> list[int] | None:
    """Offsets (one per buffer, input order) of the best-fit pass run outward from the
    peak slot (see the module docstring); None if the clock passes `deadline` first.

    `problem` must have no imposed offsets. At the peak the buffers are stacked most
    slots first (ties: largest, input order); the forward pass then frees and places like
    `sweep_best_fit` (ties: input order) over the later slots, the backward pass over the
    earlier ones with time mirrored (a buffer is placed at its last slot and freed before
    its first). Without a deadline, large instances run the passes compiled
    (`use_compiled`; same offsets).
    """
    n = len(problem)
    offsets = [0] * n
    if n == 0:
        return offsets
    sizes = problem.sizes
    lo, hi = problem.slot_lo, problem.slot_hi
    peak = peak_slot(problem)
    at_peak = np.flatnonzero((lo <= peak) & (peak < hi))
    slots_live = hi - lo
    stacked = at_peak[np.lexsort((at_peak, -problem.size_keys[at_peak], -slots_live[at_peak]))]
    stack = _FreeList(sum(sizes))
    for index in stacked.tolist():
        if sizes[index]:
            offsets[index] = stack.take(sizes[index])
    mirror = problem.slot_count
    halves = (
        (np.flatnonzero(lo > peak), lo, hi),
        (np.flatnonzero(hi <= peak), mirror - hi, mirror - lo),  # time mirrored
    )
    if deadline == math.inf and use_compiled(problem, cold_from=COLD_COMPILED_FROM):
        # The stack has no gaps (it was only ever taken from): each half starts at its top.
        offset_array = np.array(offsets, dtype=np.int64)
        for placed, first_slot, end_slot in halves:
            run_sweep_compiled(_events(problem, first_slot, end_slot, placed, at_peak), problem, offset_array,
                               stack.top)
        return offset_array.tolist()
    for placed, first_slot, end_slot in halves:
        events = _events(problem, first_slot, end_slot, placed, at_peak).tolist()
        if not _run(events, n, offsets, sizes, stack.copy(), deadline):
            return None
    return offsets


def _run(events: list[int], n: int, offsets: list[int], sizes: list[int], free: _FreeList, deadline: float) -> bool:
    """Apply `events` (see `_events`) to `free`, writing offsets; False past `deadline`."""
    for first in range(0, len(events), CHECK_EVERY):
        if time.perf_counter() > deadline:
            return False
        _apply(events[first : first + CHECK_EVERY], n, offsets, sizes, free)
    return True


def _apply(events: list[int], n: int, offsets: list[int], sizes: list[int], free: _FreeList) -> None:
    """Place (event ``i < n``) or free (event ``n + i``) each buffer of `events` in turn."""
    for event in events:
        if event >= n:
            index = event - n
            if sizes[index]:
                free.release(offsets[index], sizes[index])
        elif sizes[event]:
            offsets[event] = free.take(sizes[event])


def _events(
    problem: Problem,
    slot_lo: np.ndarray | None = None,
    slot_hi: np.ndarray | None = None,
    placed: np.ndarray | None = None,
    held: np.ndarray | None = None,
) -> np.ndarray:
    """Event ``i < n`` places buffer i, event ``n + i`` frees it: by slot, frees first,
    then placements largest first (ties: longest lifetime, input order).

    By default every buffer is placed and freed over the problem's own slots. Otherwise
    the buffers `placed` are placed and freed and the buffers `held` (already placed) only
    freed, over the slot ranges ``[slot_lo, slot_hi)``, and placement ties go by input
    order alone (the lifetime tie-break costs the peak pass 7 % on pangu_2.6B).
    """
    n = len(problem)
    slot_lo = problem.slot_lo if slot_lo is None else slot_lo
    slot_hi = problem.slot_hi if slot_hi is None else slot_hi
    placed = np.arange(n) if placed is None else placed
    freed = placed if held is None else np.concatenate([held, placed])
    zeros = np.zeros(len(freed), np.int64)
    slots = np.concatenate([slot_hi[freed], slot_lo[placed]])
    is_start = np.concatenate([zeros, np.ones(len(placed), np.int64)])
    size_keys = np.concatenate([zeros, -problem.size_keys[placed]])
    lifetimes = -problem.lifetime_keys()[placed] if held is None else np.zeros(len(placed), np.int64)
    life_keys = np.concatenate([zeros, lifetimes])
    event_ids = np.concatenate([freed + n, placed])
    order = np.lexsort((event_ids, life_keys, size_keys, is_start, slots))
    return event_ids[order]


def _stack_the_rest(offsets: list[int], sizes: list[int], events: list[int], n: int, highest: int) -> None:
    cursor = highest
    for event in events:
        if event < n and sizes[event]:
            offsets[event] = cursor
            cursor += sizes[event]


class _FreeList:
    """Free gaps below `top` (the end of the highest live buffer), by size then offset.

    A gap is one integer key ``size * _SPAN + start`` in a sorted list, so the best fit
    for `size` is the first key at or above ``size * _SPAN``; `by_start` and `by_end` find
    the neighbours a freed range merges with.
    """

    def __init__(self, total_bytes: int):
        self.keys: list[int] = []
        self.by_start: dict[int, int] = {}  # gap start -> gap end
        self.by_end: dict[int, int] = {}  # gap end -> gap start
        self.top = 0
        self.highest = 0
        self.span = 1 << total_bytes.bit_length()  # above every address the pass can use

    def copy(self) -> _FreeList:
        """An independent free list in the same state."""
        twin = _FreeList(0)
        twin.keys = list(self.keys)
        twin.by_start = dict(self.by_start)
        twin.by_end = dict(self.by_end)
        twin.top, twin.highest, twin.span = self.top, self.highest, self.span
        return twin

    def take(self, size: int) -> int:
        keys = self.keys
        position = bisect_left(keys, size * self.span)
        if position == len(keys):
            offset = self.top
            self.top += size
            self.highest = max(self.highest, self.top)
            return offset
        gap_size, offset = divmod(keys.pop(position), self.span)
        end = self.by_start.pop(offset)
        del self.by_end[end]
        if gap_size > size:
            self._add(offset + size, end)
        return offset

    def release(self, offset: int, size: int) -> None:
        start, end = offset, offset + size
        if start in self.by_end:
            start = self.by_end[start]
            self._remove(start)
        if end in self.by_start:
            following_end = self.by_start[end]
            self._remove(end)
            end = following_end
        if end == self.top:
            self.top = start
        else:
            self._add(start, end)

    def _add(self, start: int, end: int) -> None:
        self.by_start[start] = end
        self.by_end[end] = start
        insort(self.keys, (end - start) * self.span + start)

    def _remove(self, start: int) -> None:
        end = self.by_start.pop(start)
        del self.by_end[end]
        key = (end - start) * self.span + start
        del self.keys[bisect_left(self.keys, key)]
