"""The planner's compiled loops, behind rlxir/planning/compiled.py (which says what they
compute): `place_run`, best-fit placement over the occupancy tree, with `query_reads`,
which prepares it; `sweep_run`, the free-gap sweep of rlxir/planning/sweep.py (in
rlxir/planning/sweep_kernels.py, imported here); and `first_overlap`, the overlap check
of `validate_plan` (in rlxir/planning/validate_kernels.py, imported here). Importing this
module imports Numba; each function is compiled on its first call and cached on disk."""

from __future__ import annotations

import numpy as np
from numba import njit

from rlxir.planning.prefetching import prefetch
from rlxir.planning.sweep_kernels import sweep_run  # noqa: F401  (compiled.py reaches every loop here)
from rlxir.planning.validate_kernels import first_overlap  # noqa: F401  (the same)

# The loops' steps work on arrays their caller owns and allocate nothing: compiled without
# reference counting (Numba counts every array argument of every call in and out, an
# atomic operation each; at ten calls a placement that was a sixth of `place_run`), and
# inlined where they are called.
step = njit(cache=True, nogil=True, _nrt=False, inline='always')
# The query's two larger steps (gather and sort, scan) stay functions of their own: their
# loops then have the registers to themselves (0.79 -> 0.74 s on crowded200000).
scan_step = njit(cache=True, nogil=True, _nrt=False)
# Indices the steps compute are unsigned where they index: Numba wraps a negative signed
# index round from the end, a test and a select at every access, which none of them needs.
U = np.uint64


@step
def bisect_left(pool: np.ndarray, lo: int, hi: int, value: int) -> int:
    low = U(lo)
    high = U(hi)
    while low < high:
        middle = (low + high) >> U(1)
        if pool[middle] < value:
            low = middle + U(1)
        else:
            high = middle
    return np.int64(low)


@step
def bisect_right(pool: np.ndarray, lo: int, hi: int, value: int) -> int:
    low = U(lo)
    high = U(hi)
    while low < high:
        middle = (low + high) >> U(1)
        if value < pool[middle]:
            high = middle
        else:
            low = middle + U(1)
    return np.int64(low)


@step
def add_range(pool: np.ndarray, meta: np.ndarray, used: np.ndarray, index: int, start: int, end: int) -> bool:
    """Union ``[start, end)`` into list `index` (`add_range` of occupancy.py). False, with
    nothing changed, where the list must move and the pool has no room left for it."""
    length = meta[index, 1]
    if length == 0:
        if meta[index, 2] == 0:
            if used[0] + 4 > pool.shape[0]:
                return False
            meta[index, 0] = used[0]
            meta[index, 2] = 4
            used[0] += 4
        head = meta[index, 0]
        pool[head] = start
        pool[head + 1] = end
        meta[index, 1] = 2
        return True
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
        moved = used[0]
        if moved + room > pool.shape[0]:
            return False
        used[0] = moved + room
        for k in range(U(i)):
            pool[U(moved) + k] = pool[U(head) + k]
        source = U(head + j)
        target = U(moved + i + count)
        for k in range(U(length - j)):
            pool[target + k] = pool[source + k]
        meta[index, 0] = moved
        meta[index, 2] = room
        head = moved
    else:
        shift = count - (j - i)
        if shift > 0:
            k = U(head + length)
            while k > U(head + j):
                k -= U(1)
                pool[k + U(shift)] = pool[k]
        elif shift < 0:
            for k in range(U(head + j), U(head + length)):
                pool[k - U(-shift)] = pool[k]
    if count >= 1:
        pool[head + i] = first
    if count == 2:
        pool[head + i + 1] = second
    meta[index, 1] = new_length
    return True


@scan_step
def best_fit(pool: np.ndarray, meta: np.ndarray, taken: np.ndarray, taken_count: int, size: int,
             starts: np.ndarray, ends: np.ndarray, sorted_starts: np.ndarray, sorted_ends: np.ndarray,
             tally: np.ndarray, block_a: int, block_b: int) -> int:
    """`best_fit_offset` over the lists `taken[:taken_count]` and the block lists `block_a`
    and `block_b` (-1: none). The lists' ranges are gathered into `starts` and `ends` and,
    from two lists on, sorted by start: counted into about four buckets per range by their
    high address bits, then an insertion sort orders each bucket's few ranges. The block
    lists, sorted already, are merged in by `union_scan`."""
    count = U(0)
    top = 0
    for t in range(taken_count):
        head = U(meta[taken[t], 0])
        length = U(meta[taken[t], 1])
        for k in range(head, head + length, U(2)):
            starts[count] = pool[k]
            ends[count] = pool[k + U(1)]
            count += U(1)
        top = max(top, pool[head + length - U(1)])
    if taken_count < 2:
        return union_scan(pool, meta, starts, ends, count, size, block_a, block_b, sorted_starts)
    bits = 2
    while (1 << bits) < 4 * np.int64(count) and (2 << bits) < len(tally):
        bits += 1
    shift = 0
    while (top >> shift) >= (1 << bits):
        shift += 1
    buckets = U(1 << bits)
    tally[: buckets + U(1)] = 0
    for i in range(count):
        tally[U(starts[i] >> shift) + U(1)] += 1
    for b in range(U(1), buckets + U(1)):
        tally[b] += tally[b - U(1)]
    for i in range(count):
        b = U(starts[i] >> shift)
        at = U(tally[b])
        sorted_starts[at] = starts[i]
        sorted_ends[at] = ends[i]
        tally[b] += 1
    for i in range(U(1), count):
        start = sorted_starts[i]
        end = sorted_ends[i]
        j = i
        while j > U(0) and sorted_starts[j - U(1)] > start:
            sorted_starts[j] = sorted_starts[j - U(1)]
            sorted_ends[j] = sorted_ends[j - U(1)]
            j -= U(1)
        sorted_starts[j] = start
        sorted_ends[j] = end
    return union_scan(pool, meta, sorted_starts, sorted_ends, count, size, block_a, block_b, starts)


@scan_step
def union_scan(pool: np.ndarray, meta: np.ndarray, starts: np.ndarray, ends: np.ndarray, count: np.uint64,
               size: int, block_a: int, block_b: int, spare: np.ndarray) -> int:
    """The best fit for `size` among the gaps of the union of the ranges ``[starts[k],
    ends[k])`` for k below `count` (sorted by start) and the lists `block_a` and `block_b`
    (-1: none), scanned in address order: `best_fit_offset`'s answer. Two block lists are
    merged into `spare` first (room for both), so the scan always takes the next range
    from one of two streams, chosen by a select rather than a branch."""
    listed = pool
    at = U(0)
    end_at = U(0)
    if block_a >= 0:
        at = U(meta[block_a, 0])
        end_at = at + U(meta[block_a, 1])
    if block_b >= 0:
        end_at = merged(pool, at, end_at, U(meta[block_b, 0]), U(meta[block_b, 0] + meta[block_b, 1]), spare)
        listed = spare
        at = U(0)
    # The best fit so far is kept as gap - size read as unsigned (`wanted`): a gap fits
    # better when its own is below, one comparison that a gap too small for `size` fails
    # (it wraps round). Nothing fits while `wanted` is still where it starts.
    nothing = np.uint64((1 << 62) - size)  # 2^62 is above every address of an int64-safe problem
    wanted = nothing
    best_offset = 0
    covered = 0  # the end of the union of the ranges scanned so far
    k = U(0)
    while k < count and at < end_at:
        start_k = starts[k]
        start_listed = listed[at]
        from_k = start_k <= start_listed
        start = start_k if from_k else start_listed
        end = ends[k] if from_k else listed[at + U(1)]
        k += U(from_k)
        at += U(2) - U(2) * U(from_k)
        covered, wanted, best_offset = scanned(start, end, size, covered, wanted, best_offset)
    for rest in range(k, count):
        covered, wanted, best_offset = scanned(starts[rest], ends[rest], size, covered, wanted, best_offset)
    for rest in range(at, end_at, U(2)):
        covered, wanted, best_offset = scanned(listed[rest], listed[rest + U(1)], size, covered, wanted, best_offset)
    return covered if wanted == nothing else best_offset


@step
def merged(pool: np.ndarray, at_a: np.uint64, end_a: np.uint64, at_b: np.uint64, end_b: np.uint64,
           into: np.ndarray) -> np.uint64:
    """The range lists ``pool[at_a:end_a]`` and ``pool[at_b:end_b]`` (bounds in pairs,
    sorted) merged by start into `into`; the bounds written."""
    out = U(0)
    while at_a < end_a and at_b < end_b:
        start_a = pool[at_a]
        start_b = pool[at_b]
        from_a = start_a <= start_b
        into[out] = start_a if from_a else start_b
        into[out + U(1)] = pool[at_a + U(1)] if from_a else pool[at_b + U(1)]
        at_a += U(2) * U(from_a)
        at_b += U(2) - U(2) * U(from_a)
        out += U(2)
    for at in range(at_a, end_a):
        into[out] = pool[at]
        out += U(1)
    for at in range(at_b, end_b):
        into[out] = pool[at]
        out += U(1)
    return out


@step
def scanned(start: int, end: int, size: int, covered: int, wanted: np.uint64,
            best_offset: int) -> tuple[int, np.uint64, int]:
    """The scan's state after the range ``[start, end)``, next in address order: the gap
    from `covered` up to `start` taken as the best fit if it fits better (see `best_fit`)."""
    fit = np.uint64(start - covered - size)
    if fit < wanted:
        wanted = fit
        best_offset = covered
    return max(covered, end), wanted, best_offset


@step
def take(listed: int, meta: np.ndarray, taken: np.ndarray, taken_count: int) -> int:
    """Note list `listed` as read by a query when it holds any range; the new count."""
    if meta[listed, 1]:
        taken[taken_count] = listed
        taken_count += 1
    return taken_count


@step
def cover(node: int, level: int, base: int, meta: np.ndarray, nodes: np.ndarray, levels: np.ndarray,
          node_count: int, taken: np.ndarray, taken_count: int) -> tuple[int, int]:
    """Note `node` (at `level`) as a cover node of a query, and the lists that hold the
    ranges stored at or below it as taken: ``own`` of a leaf, ``sub`` of a node at an even
    level, and for a node at an odd level (which keeps no ``sub``) its ``own`` and its two
    children's lists. The new counts."""
    nodes[node_count] = node
    levels[node_count] = level
    if node >= base:
        taken_count = take(node, meta, taken, taken_count)
    elif not level & 1:
        taken_count = take(2 * base + node, meta, taken, taken_count)
    else:
        taken_count = take(node, meta, taken, taken_count)
        for child in (2 * node, 2 * node + 1):
            taken_count = take(child if child >= base else 2 * base + child, meta, taken, taken_count)
    return node_count + 1, taken_count


@step
def rows_ahead(lo_at: np.ndarray, hi_at: np.ndarray, position: int, base: int, first_block: int, blocks: int,
               rows: np.ndarray, which: int) -> int:
    """The rows of `meta` that placing the buffer at `position` reads (its slots are
    ``[lo_at[position], hi_at[position])``), written to ``rows[which]``: ``own`` on
    the paths from its end slots up to the block level, its end blocks' lists, and ``sub``
    at the even levels above its end slots, where its range climbs. Returns their count."""
    count = 0
    left = lo_at[position] + base
    right = hi_at[position] - 1 + base
    while left >= 2 * first_block:
        rows[which, count] = left
        count += 1
        if right != left:
            rows[which, count] = right
            count += 1
        left >>= 1
        right >>= 1
    for block in (left, right):
        rows[which, count] = blocks + block
        count += 1
        if right == left:
            break
    left = (lo_at[position] + base) >> 2
    right = (hi_at[position] - 1 + base) >> 2
    while left:
        rows[which, count] = 2 * base + left
        count += 1
        if right != left:
            rows[which, count] = 2 * base + right
            count += 1
        left >>= 2
        right >>= 2
    return count


@step
def prefetch_rows(cells: np.ndarray, read_until: np.ndarray, rows: np.ndarray, which: int, count: int,
                  base: int) -> None:
    """Ask for ``rows[which, :count]`` of `meta` (`cells`: its three columns read flat), and
    for the `read_until` of the ``sub`` rows among them."""
    for row in rows[which, :count]:
        prefetch(cells, 3 * row)
        if 2 * base <= row < 3 * base:
            prefetch(read_until, row - 2 * base)


@step
def prefetch_lists(meta: np.ndarray, pool: np.ndarray, rows: np.ndarray, which: int, count: int, base: int) -> None:
    """Ask for the first bounds of the lists of ``rows[which, :count]`` (rows asked for a
    placement earlier), and of a ``sub`` list the first probes of a bisection."""
    for row in rows[which, :count]:
        length = meta[row, 1]
        if not length:
            continue
        head = meta[row, 0]
        if 2 * base <= row < 3 * base:
            prefetch(pool, head + (length >> 1))
            prefetch(pool, head + (length >> 2))
            prefetch(pool, head + length - (length >> 2) - 1)
        else:
            prefetch(pool, head)


# What `place_run` returns: every buffer placed; stopped at the limit; paused at position
# ``state[1]`` for a larger pool (its range partly inserted) or for scratch arrays of
# ``state[2]`` ranges (nothing of that buffer done yet).
PLACED = 0
STOPPED = 1
POOL_FULL = 2
SCRATCH_SHORT = 3


def work_arrays(base: int, ranges: int, bounds: type) -> tuple[np.ndarray, ...]:
    """The scratch arrays `place_run` works in, for a tree of `base` leaves, queries of up
    to `ranges` gathered ranges and range lists of type `bounds`: cover nodes and their
    levels, the lists a query takes, the gathered ranges and their sorted copies, the
    bucket tally, and the rows of `meta` asked for ahead."""
    depth = max(1, (2 * base - 1).bit_length())
    return (np.empty(2 * depth + 2, dtype=np.int64), np.empty(2 * depth + 2, dtype=np.int64),
            np.empty(8 * depth + 8, dtype=np.int64), *(np.empty(ranges, dtype=bounds) for _ in range(4)),
            np.empty((1 << 15) + 1, dtype=np.int64), np.empty((2, 4 * depth + 8), dtype=np.int64))


@step
def place_run(lo_at: np.ndarray, hi_at: np.ndarray, size_at: np.ndarray, fixed: np.ndarray,
              sequence: np.ndarray, first: int, stop: int, fixed_count: int, base: int, block_level: int,
              block_band: int, read_until: np.ndarray, block_read_until: np.ndarray, meta: np.ndarray, pool: np.ndarray,
              used: np.ndarray, unit: int, limit: int, cell: np.ndarray, offsets: np.ndarray, state: np.ndarray,
              work: tuple, resume: bool) -> int:
    """Place `sequence[first:stop]` (the fixed buffers, then the order) in the arrays of
    `work_arrays`. The buffer at position p of `sequence` covers the slots ``[lo_at[p],
    hi_at[p])`` and has size ``size_at[p]``: read in the order of the placements, not
    scattered by buffer (a cache miss a placement each, about 7 % of the loop).
    `STOPPED` as soon as a buffer of the order ends at or above `limit` or ``cell[0]``
    (which another thread may lower: it is read at every placement).
    `state[0]` keeps the highest end of the order's buffers placed so far (-1 before the
    first). Sizes, fixed offsets, the offsets written and the range lists count addresses
    in `unit` bytes; `limit`, the cell and `state[0]` count bytes. Allocates nothing:
    where the pool or the scratch arrays are too small it pauses (`POOL_FULL`,
    `SCRATCH_SHORT`), and the caller grows them and calls again from ``state[1]``, with
    `resume` after `POOL_FULL`: that buffer's offset is kept and its range inserted again
    (inserting a range twice changes no list)."""
    nodes, levels, taken, starts, range_ends, sorted_starts, sorted_ends, tally, rows = work
    scratch = starts.shape[0]
    sub = 2 * base
    first_block = base >> block_level  # the nodes at the block level are the blocks
    below_blocks = 2 * first_block  # nodes from here on lie below the block level
    above_band = first_block >> block_band  # nodes before this one lie above the band of levels
    blocks = 3 * base - first_block  # row of block b is blocks + b (b counted from first_block)
    # Two placements ahead, ask for the rows of `meta` they read; one ahead, for the lists
    # those rows point to: the walks below then wait on memory less often. Row p & 1 of
    # `rows` holds those of the placement at position p.
    cells = meta.reshape(-1)
    next_count = 0
    if first + 1 < stop:
        next_count = rows_ahead(lo_at, hi_at, first + 1, base, first_block, blocks, rows, (first + 1) & 1)
    for position in range(first, stop):
        after_count = 0
        if position + 2 < stop:
            after_count = rows_ahead(lo_at, hi_at, position + 2, base, first_block, blocks, rows,
                                     position & 1)
            prefetch_rows(cells, read_until, rows, position & 1, after_count, base)
        prefetch_lists(meta, pool, rows, (position + 1) & 1, next_count, base)
        next_count = after_count
        bound = min(limit, cell[0])
        if state[0] >= bound:
            return STOPPED  # a buffer placed before the cell was lowered ends above it
        index = sequence[position]
        is_fixed = position < fixed_count
        rank = -1 if is_fixed else position - fixed_count
        size = size_at[position]
        if size == 0:
            offset = fixed[index] if is_fixed else 0
            offsets[index] = offset
            if not is_fixed and offset * unit >= bound:
                return STOPPED
            continue
        lo = lo_at[position]
        hi = hi_at[position]
        node_count = 0
        taken_count = 0
        left = lo + base
        right = hi + base
        level = 0
        while left < right:
            if left & 1:
                node_count, taken_count = cover(left, level, base, meta, nodes, levels, node_count, taken,
                                                taken_count)
                left += 1
            if right & 1:
                right -= 1
                node_count, taken_count = cover(right, level, base, meta, nodes, levels, node_count, taken,
                                                taken_count)
            left >>= 1
            right >>= 1
            level += 1
        again = resume and position == first
        if again:
            offset = offsets[index]  # placed before the pause: only its range is inserted
        else:
            # Buffers stored above the cover nodes sit on the paths from the end leaves up:
            # below the block level in the nodes' ``own``, from it up in the two end blocks'
            # lists.
            left = (lo + base) >> 1
            right = (hi - 1 + base) >> 1
            while left >= below_blocks:
                taken_count = take(left, meta, taken, taken_count)
                if right != left:
                    taken_count = take(right, meta, taken, taken_count)
                left >>= 1
                right >>= 1
            block_a = blocks + left
            block_b = blocks + right
            if not meta[block_a, 1]:
                block_a = -1
            if right == left or not meta[block_b, 1]:
                block_b = -1
            left >>= block_band + 1
            right >>= block_band + 1
            while left:
                taken_count = take(left, meta, taken, taken_count)
                if right != left:
                    taken_count = take(right, meta, taken, taken_count)
                left >>= 1
                right >>= 1
            if is_fixed:
                offset = fixed[index]
            elif taken_count == 0 and block_a < 0 and block_b < 0:
                offset = 0
            else:
                ranges = 0
                for t in range(taken_count):
                    ranges += meta[taken[t], 1]
                ranges >>= 1
                if block_b >= 0:
                    # `union_scan` merges the two block lists' bounds into a scratch array.
                    ranges = max(ranges, meta[block_b, 1] + (meta[block_a, 1] if block_a >= 0 else 0))
                if ranges > scratch:
                    state[1] = position
                    state[2] = ranges
                    return SCRATCH_SHORT
                offset = best_fit(pool, meta, taken, taken_count, size, starts, range_ends, sorted_starts,
                                  sorted_ends, tally, block_a, block_b)
        end = offset + size
        if not is_fixed:
            if end * unit >= bound:
                return STOPPED
            state[0] = max(state[0], end * unit)
        offsets[index] = offset
        for k in range(node_count):
            node = nodes[k]
            level = levels[k]
            # ``own``: read by the path walks below the block level, and by the queries
            # covering a node at an odd level; above, an even level's ``sub`` holds it.
            if node >= below_blocks or node < above_band or (level & 1 and read_until[node] > rank):
                if not add_range(pool, meta, used, node, offset, end):
                    state[1] = position
                    return POOL_FULL
            if above_band <= node < below_blocks:
                # Every block under the node, where a later query's path walk reads it.
                low = node
                high = node + 1
                while low < first_block:
                    low <<= 1
                    high <<= 1
                for block in range(low, high):
                    if block_read_until[block - first_block] > rank:
                        if not add_range(pool, meta, used, blocks + block, offset, end):
                            state[1] = position
                            return POOL_FULL
            if node >= base:
                up = node >> 1
                level = 1
            else:
                up = node
            # ``sub`` at the even levels up the tree, where a later query reads it, until a
            # node holds the range (all of them where the range was partly inserted before
            # a pause: a list that holds it then says nothing of the lists above).
            while up:
                if not level & 1 and read_until[up] > rank:
                    listed = sub + up
                    length = meta[listed, 1]
                    if length and not again:
                        head = meta[listed, 0]
                        i = bisect_right(pool, head, head + length, offset) - head
                        if (i & 1) and pool[head + i] >= end:
                            break
                    if not add_range(pool, meta, used, listed, offset, end):
                        state[1] = position
                        return POOL_FULL
                up >>= 1
                level += 1
    return PLACED


@step
def query_reads(slot_lo: np.ndarray, slot_hi: np.ndarray, base: int, block_level: int, last: np.ndarray,
                block_last: np.ndarray, per_level: np.ndarray) -> int:
    """For the queries ``[slot_lo[r], slot_hi[r])`` in rank order r: per tree node, the
    last rank having it as a cover node (into `last`, -1 where none); per block, the last
    rank whose first or last slot lies in it (into `block_last`); and per level, leaves
    first, how many cover nodes the queries have there (added into `per_level`). Returns
    the number of levels the walks reached: `last_query_ranks` and the block reads of
    compiled.py's `_read_until`, in one pass."""
    levels = 0
    for rank in range(slot_lo.shape[0]):
        block_last[slot_lo[rank] >> block_level] = rank
        block_last[(slot_hi[rank] - 1) >> block_level] = rank
        left = slot_lo[rank] + base
        right = slot_hi[rank] + base
        level = 0
        while left < right:
            if left & 1:
                last[left] = rank
                per_level[level] += 1
                left += 1
            if right & 1:
                right -= 1
                last[right] = rank
                per_level[level] += 1
            left >>= 1
            right >>= 1
            level += 1
        levels = max(levels, level)
    return levels
