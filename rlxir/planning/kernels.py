"""The planner's compiled loops, behind rlxir/planning/compiled.py (which says what they
compute): `place_run`, best-fit placement over the occupancy tree, and `sweep_run`, the
free-gap sweep of rlxir/planning/sweep.py. Importing this module imports Numba; each
function is compiled on its first call and cached on disk."""

from __future__ import annotations

import numpy as np
from numba import njit

jit = njit(cache=True, nogil=True)


@jit
def bisect_left(pool: np.ndarray, lo: int, hi: int, value: int) -> int:
    while lo < hi:
        middle = (lo + hi) >> 1
        if pool[middle] < value:
            lo = middle + 1
        else:
            hi = middle
    return lo


@jit
def bisect_right(pool: np.ndarray, lo: int, hi: int, value: int) -> int:
    while lo < hi:
        middle = (lo + hi) >> 1
        if value < pool[middle]:
            hi = middle
        else:
            lo = middle + 1
    return lo


@jit
def reserve(pool: np.ndarray, used: np.ndarray, room: int) -> tuple[int, np.ndarray]:
    """Start of `room` fresh bounds at the end of the pool (grown if need be)."""
    start = used[0]
    if start + room > pool.shape[0]:
        size = pool.shape[0]
        while size < start + room:
            size *= 2
        grown = np.empty(size, dtype=np.int64)
        grown[:start] = pool[:start]
        pool = grown
    used[0] = start + room
    return start, pool


@jit
def add_range(pool: np.ndarray, meta: np.ndarray, used: np.ndarray, index: int, start: int,
              end: int) -> np.ndarray:
    """Union ``[start, end)`` into list `index` (`add_range` of occupancy.py)."""
    length = meta[index, 1]
    if length == 0:
        if meta[index, 2] == 0:
            head, pool = reserve(pool, used, 4)
            meta[index, 0] = head
            meta[index, 2] = 4
        head = meta[index, 0]
        pool[head] = start
        pool[head + 1] = end
        meta[index, 1] = 2
        return pool
    head = meta[index, 0]
    i = bisect_left(pool, head, head + length, start) - head
    j = bisect_right(pool, head + i, head + length, end) - head
    # An odd index falls inside (or at the end of) a range: that range absorbs the bound.
    first = start
    second = end
    if i & 1:
        count = 0 if j & 1 else 1
        first = end
    else:
        count = 1 if j & 1 else 2
    new_length = length - (j - i) + count
    if new_length > meta[index, 2]:
        room = 2 * meta[index, 2]
        while room < new_length:
            room *= 2
        moved, pool = reserve(pool, used, room)
        pool[moved : moved + i] = pool[head : head + i]
        pool[moved + i + count : moved + new_length] = pool[head + j : head + length]
        meta[index, 0] = moved
        meta[index, 2] = room
        head = moved
    else:
        shift = count - (j - i)
        if shift > 0:
            for k in range(length - 1, j - 1, -1):
                pool[head + k + shift] = pool[head + k]
        elif shift < 0:
            for k in range(j, length):
                pool[head + k + shift] = pool[head + k]
    if count >= 1:
        pool[head + i] = first
    if count == 2:
        pool[head + i + 1] = second
    meta[index, 1] = new_length
    return pool


@jit
def best_fit(pool: np.ndarray, meta: np.ndarray, taken: np.ndarray, taken_count: int, size: int,
             starts: np.ndarray, ends: np.ndarray, sorted_starts: np.ndarray, sorted_ends: np.ndarray,
             tally: np.ndarray) -> int:
    """`best_fit_offset` over the lists `taken[:taken_count]`. Their ranges are gathered
    into `starts` and `ends` and, from two lists on, sorted by start: counted into about
    four buckets per range by their high address bits, then an insertion sort orders
    each bucket's few ranges. The gaps of the union are scanned in address order."""
    count = 0
    top = 0
    for t in range(taken_count):
        head = meta[taken[t], 0]
        length = meta[taken[t], 1]
        for k in range(head, head + length, 2):
            starts[count] = pool[k]
            ends[count] = pool[k + 1]
            count += 1
        if pool[head + length - 1] > top:
            top = pool[head + length - 1]
    if taken_count > 1:
        bits = 2
        while (1 << bits) < 4 * count and (2 << bits) < len(tally):
            bits += 1
        shift = 0
        while (top >> shift) >= (1 << bits):
            shift += 1
        buckets = 1 << bits
        tally[: buckets + 1] = 0
        for i in range(count):
            tally[(starts[i] >> shift) + 1] += 1
        for b in range(1, buckets + 1):
            tally[b] += tally[b - 1]
        for i in range(count):
            b = starts[i] >> shift
            sorted_starts[tally[b]] = starts[i]
            sorted_ends[tally[b]] = ends[i]
            tally[b] += 1
        for i in range(1, count):
            start = sorted_starts[i]
            end = sorted_ends[i]
            j = i - 1
            while j >= 0 and sorted_starts[j] > start:
                sorted_starts[j + 1] = sorted_starts[j]
                sorted_ends[j + 1] = sorted_ends[j]
                j -= 1
            sorted_starts[j + 1] = start
            sorted_ends[j + 1] = end
        starts = sorted_starts
        ends = sorted_ends
    best_gap = -1
    best_offset = 0
    covered = 0  # the end of the union of the ranges scanned so far
    for k in range(count):
        gap = starts[k] - covered
        if gap >= size and (best_gap < 0 or gap < best_gap):
            best_gap = gap
            best_offset = covered
        if ends[k] > covered:
            covered = ends[k]
    return covered if best_gap < 0 else best_offset



@jit
def cover(node: int, base: int, meta: np.ndarray, nodes: np.ndarray, node_count: int, taken: np.ndarray,
          taken_count: int) -> tuple[int, int]:
    """Note `node` as a cover node of a query, and its range list (``own`` of a leaf,
    ``sub`` of an inner node) as taken when it holds any; the new counts."""
    nodes[node_count] = node
    listed = node if node >= base else 2 * base + node
    if meta[listed, 1]:
        taken[taken_count] = listed
        taken_count += 1
    return node_count + 1, taken_count

@jit
def place_run(slot_lo: np.ndarray, slot_hi: np.ndarray, sizes: np.ndarray, fixed: np.ndarray,
              sequence: np.ndarray, first: int, stop: int, fixed_count: int, base: int,
              last_query: np.ndarray, meta: np.ndarray, pool: np.ndarray, used: np.ndarray, limit: int,
              offsets: np.ndarray) -> tuple[bool, np.ndarray]:
    """Place `sequence[first:stop]` (the fixed buffers, then the order); True as soon
    as a buffer of the order ends at or above `limit`."""
    depth = 1
    while (1 << depth) < 2 * base:
        depth += 1
    nodes = np.empty(2 * depth + 2, dtype=np.int64)
    taken = np.empty(4 * depth + 4, dtype=np.int64)
    scratch = 1024
    starts = np.empty(scratch, dtype=np.int64)
    range_ends = np.empty(scratch, dtype=np.int64)
    sorted_starts = np.empty(scratch, dtype=np.int64)
    sorted_ends = np.empty(scratch, dtype=np.int64)
    tally = np.empty((1 << 15) + 1, dtype=np.int64)
    sub = 2 * base
    for position in range(first, stop):
        index = sequence[position]
        is_fixed = position < fixed_count
        rank = -1 if is_fixed else position - fixed_count
        size = sizes[index]
        if size == 0:
            offset = fixed[index] if is_fixed else 0
            offsets[index] = offset
            if not is_fixed and offset >= limit:
                return True, pool
            continue
        lo = slot_lo[index]
        hi = slot_hi[index]
        node_count = 0
        taken_count = 0
        left = lo + base
        right = hi + base
        while left < right:
            if left & 1:
                node_count, taken_count = cover(left, base, meta, nodes, node_count, taken, taken_count)
                left += 1
            if right & 1:
                right -= 1
                node_count, taken_count = cover(right, base, meta, nodes, node_count, taken, taken_count)
            left >>= 1
            right >>= 1
        # Buffers stored above the cover nodes sit on the paths from the end leaves up.
        left = (lo + base) >> 1
        right = (hi - 1 + base) >> 1
        while left != right:
            if meta[left, 1]:
                taken[taken_count] = left
                taken_count += 1
            if meta[right, 1]:
                taken[taken_count] = right
                taken_count += 1
            left >>= 1
            right >>= 1
        while left:
            if meta[left, 1]:
                taken[taken_count] = left
                taken_count += 1
            left >>= 1
        if is_fixed:
            offset = fixed[index]
        elif taken_count == 0:
            offset = 0
        else:
            ranges = 0
            for t in range(taken_count):
                ranges += meta[taken[t], 1]
            ranges >>= 1
            if ranges > scratch:
                scratch = 2 * ranges
                starts = np.empty(scratch, dtype=np.int64)
                range_ends = np.empty(scratch, dtype=np.int64)
                sorted_starts = np.empty(scratch, dtype=np.int64)
                sorted_ends = np.empty(scratch, dtype=np.int64)
            offset = best_fit(pool, meta, taken, taken_count, size, starts, range_ends, sorted_starts, sorted_ends,
                              tally)
        end = offset + size
        if not is_fixed and end >= limit:
            return True, pool
        offsets[index] = offset
        for k in range(node_count):
            node = nodes[k]
            pool = add_range(pool, meta, used, node, offset, end)
            up = node >> 1 if node >= base else node
            # `sub` up the tree, where a later query reads it, until a node holds the range.
            while up:
                listed = sub + up
                if last_query[up] > rank:
                    length = meta[listed, 1]
                    if length:
                        head = meta[listed, 0]
                        i = bisect_right(pool, head, head + length, offset) - head
                        if (i & 1) and pool[head + i] >= end:
                            break
                    pool = add_range(pool, meta, used, listed, offset, end)
                up >>= 1
    return False, pool


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
            at = bisect_left(starts, 0, count, start)
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
            remove_gap(gap_sizes, gap_starts, starts, ends, count, bisect_left(starts, 0, count, start))
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
    at = bisect_left(starts, 0, count, start)
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
