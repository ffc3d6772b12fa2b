"""The compiled loop of the free-gap sweep of rlxir/planning/sweep.py (used by the pass
from the peak), behind rlxir/planning/compiled.py's `run_sweep_compiled`, which says what
it computes. Importing this module imports Numba; each function is compiled on its first
call and cached on disk."""

from __future__ import annotations

import numpy as np
from numba import njit

jit = njit(cache=True, nogil=True)


@jit
def find_first_at_least(sizes: np.ndarray, starts: np.ndarray, count: int, size: int, start: int) -> int:
    """First position of (`size`, `start`) or above in the pairs sorted by (size, start)."""
    lo = 0
    hi = count
    while lo < hi:
        middle = (lo + hi) >> 1
        if sizes[middle] < size or (sizes[middle] == size and starts[middle] < start):
            lo = middle + 1
        else:
            hi = middle
    return lo


@jit
def sweep_run(events: np.ndarray, n: int, sizes: np.ndarray, offsets: np.ndarray, state: np.ndarray,
              gap_sizes: np.ndarray, gap_starts: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
    """Apply `events` (event ``i < n`` places buffer i, ``n + i`` frees it) to the free
    list, as `_FreeList.take` and `_FreeList.release` of sweep.py do.

    The free gaps below the top are kept twice, sorted: by (size, start) in `gap_sizes`
    and `gap_starts` (the best fit is the first pair at or above (size, 0)), and by start
    in `starts` and `ends` (the neighbours a freed range merges with). `state` holds the
    gap count, the top and the highest top; the arrays hold room for a gap per buffer."""
    count = state[0]
    top = state[1]
    highest = state[2]
    for event in events:
        if event >= n:
            index = event - n
            size = sizes[index]
            if size == 0:
                continue
            start = offsets[index]
            end = start + size
            # The gap ending at `start` and the gap starting at `end`, if any, merge with it.
            at = np.searchsorted(starts[:count], start)
            if at > 0 and ends[at - 1] == start:
                start = starts[at - 1]
                remove_gap(gap_sizes, gap_starts, starts, ends, count, at - 1)
                count -= 1
                at -= 1
            if at < count and starts[at] == end:
                following = ends[at]
                remove_gap(gap_sizes, gap_starts, starts, ends, count, at)
                count -= 1
                end = following
            if end == top:
                top = start
            else:
                insert_gap(gap_sizes, gap_starts, starts, ends, count, start, end)
                count += 1
        else:
            size = sizes[event]
            if size == 0:
                continue
            position = find_first_at_least(gap_sizes, gap_starts, count, size, 0)
            if position == count:
                offsets[event] = top
                top += size
                if top > highest:
                    highest = top
                continue
            start = gap_starts[position]
            end = start + gap_sizes[position]
            offsets[event] = start
            remove_gap(gap_sizes, gap_starts, starts, ends, count, np.searchsorted(starts[:count], start))
            count -= 1
            if end - start > size:
                insert_gap(gap_sizes, gap_starts, starts, ends, count, start + size, end)
                count += 1
    state[0] = count
    state[1] = top
    state[2] = highest


@jit
def remove_gap(gap_sizes: np.ndarray, gap_starts: np.ndarray, starts: np.ndarray, ends: np.ndarray, count: int,
               at: int) -> None:
    """Drop the gap at position `at` of the by-start order from both orders."""
    start = starts[at]
    size = ends[at] - start
    for k in range(at, count - 1):
        starts[k] = starts[k + 1]
        ends[k] = ends[k + 1]
    position = find_first_at_least(gap_sizes, gap_starts, count, size, start)
    for k in range(position, count - 1):
        gap_sizes[k] = gap_sizes[k + 1]
        gap_starts[k] = gap_starts[k + 1]


@jit
def insert_gap(gap_sizes: np.ndarray, gap_starts: np.ndarray, starts: np.ndarray, ends: np.ndarray, count: int,
               start: int, end: int) -> None:
    """Add the free gap ``[start, end)`` to both orders."""
    at = np.searchsorted(starts[:count], start)
    for k in range(count, at, -1):
        starts[k] = starts[k - 1]
        ends[k] = ends[k - 1]
    starts[at] = start
    ends[at] = end
    size = end - start
    position = find_first_at_least(gap_sizes, gap_starts, count, size, start)
    for k in range(count, position, -1):
        gap_sizes[k] = gap_sizes[k - 1]
        gap_starts[k] = gap_starts[k - 1]
    gap_sizes[position] = size
    gap_starts[position] = start
