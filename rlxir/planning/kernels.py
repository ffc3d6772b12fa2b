"""The planner's compiled loops, behind rlxir/planning/compiled.py (which says what they
compute): `place_run`, best-fit placement over the occupancy tree, and `sweep_run`, the
free-gap sweep of rlxir/planning/sweep.py. Importing this module imports Numba; each
function is compiled on its first call and cached on disk."""

from __future__ import annotations

import numpy as np
from numba import njit

from rlxir.planning.prefetching import prefetch

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
             tally: np.ndarray, block_a: int, block_b: int) -> int:
    """`best_fit_offset` over the lists `taken[:taken_count]` and the block lists `block_a`
    and `block_b` (-1: none). The lists' ranges are gathered into `starts` and `ends` and,
    from two lists on, sorted by start: counted into about four buckets per range by their
    high address bits, then an insertion sort orders each bucket's few ranges. The block
    lists, sorted already, are merged in as the gaps of the union are scanned in address
    order (without a branch on which stream comes next where there is one block list,
    as for every query within one block)."""
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
    # Three sorted streams: the gathered ranges (k), block list a (at_a), block list b (at_b).
    at_a = 0
    end_a = 0
    if block_a >= 0:
        at_a = meta[block_a, 0]
        end_a = at_a + meta[block_a, 1]
    at_b = 0
    end_b = 0
    if block_b >= 0:
        at_b = meta[block_b, 0]
        end_b = at_b + meta[block_b, 1]
    past = 1 << 62  # above every address of an int64-safe problem
    # The best fit so far is kept as gap - size read as unsigned (`wanted`): a gap fits
    # better when its own is below, one comparison that a gap too small for `size` fails
    # (it wraps round). Nothing fits while `wanted` is still where it starts.
    nothing = np.uint64(past - size)
    wanted = nothing
    best_offset = 0
    covered = 0  # the end of the union of the ranges scanned so far
    k = 0
    if at_b == end_b:
        # Two streams (a query within one block): which comes next is a select, not a branch.
        while k < count and at_a < end_a:
            start_k = starts[k]
            start_a = pool[at_a]
            from_k = start_k <= start_a
            start = start_k if from_k else start_a
            end = ends[k] if from_k else pool[at_a + 1]
            k += from_k
            at_a += 2 - 2 * from_k
            covered, wanted, best_offset = scanned(start, end, size, covered, wanted, best_offset)
        for rest in range(k, count):
            covered, wanted, best_offset = scanned(starts[rest], ends[rest], size, covered, wanted, best_offset)
        for at in range(at_a, end_a, 2):
            covered, wanted, best_offset = scanned(pool[at], pool[at + 1], size, covered, wanted, best_offset)
        return covered if wanted == nothing else best_offset
    while True:
        next_k = starts[k] if k < count else past
        next_a = pool[at_a] if at_a < end_a else past
        next_b = pool[at_b] if at_b < end_b else past
        if next_k <= next_a and next_k <= next_b:
            if next_k == past:
                break
            start = next_k
            end = ends[k]
            k += 1
        elif next_a <= next_b:
            start = next_a
            end = pool[at_a + 1]
            at_a += 2
        else:
            start = next_b
            end = pool[at_b + 1]
            at_b += 2
        covered, wanted, best_offset = scanned(start, end, size, covered, wanted, best_offset)
    return covered if wanted == nothing else best_offset


@jit
def scanned(start: int, end: int, size: int, covered: int, wanted: np.uint64,
            best_offset: int) -> tuple[int, np.uint64, int]:
    """The scan's state after the range ``[start, end)``, next in address order: the gap
    from `covered` up to `start` taken as the best fit if it fits better (see `best_fit`)."""
    fit = np.uint64(start - covered - size)
    if fit < wanted:
        wanted = fit
        best_offset = covered
    return max(covered, end), wanted, best_offset


@jit
def take(listed: int, meta: np.ndarray, taken: np.ndarray, taken_count: int) -> int:
    """Note list `listed` as read by a query when it holds any range; the new count."""
    if meta[listed, 1]:
        taken[taken_count] = listed
        taken_count += 1
    return taken_count


@jit
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


@jit
def rows_ahead(slot_lo: np.ndarray, slot_hi: np.ndarray, index: int, base: int, first_block: int, blocks: int,
               rows: np.ndarray) -> int:
    """The rows of `meta` that placing buffer `index` reads, written to `rows`: ``own`` on
    the paths from its end slots up to the block level, its end blocks' lists, and ``sub``
    at the even levels above its end slots, where its range climbs. Returns their count."""
    count = 0
    left = slot_lo[index] + base
    right = slot_hi[index] - 1 + base
    while left >= 2 * first_block:
        rows[count] = left
        count += 1
        if right != left:
            rows[count] = right
            count += 1
        left >>= 1
        right >>= 1
    for block in (left, right):
        rows[count] = blocks + block
        count += 1
        if right == left:
            break
    left = (slot_lo[index] + base) >> 2
    right = (slot_hi[index] - 1 + base) >> 2
    while left:
        rows[count] = 2 * base + left
        count += 1
        if right != left:
            rows[count] = 2 * base + right
            count += 1
        left >>= 2
        right >>= 2
    return count


@jit
def prefetch_rows(cells: np.ndarray, read_until: np.ndarray, rows: np.ndarray, count: int, base: int) -> None:
    """Ask for `rows[:count]` of `meta` (`cells`: its three columns read flat), and for the
    `read_until` of the ``sub`` rows among them."""
    for row in rows[:count]:
        prefetch(cells, 3 * row)
        if 2 * base <= row < 3 * base:
            prefetch(read_until, row - 2 * base)


@jit
def prefetch_lists(meta: np.ndarray, pool: np.ndarray, rows: np.ndarray, count: int, base: int) -> None:
    """Ask for the first bounds of the lists of `rows[:count]` (rows asked for a placement
    earlier), and of a ``sub`` list the first probes of a bisection."""
    for row in rows[:count]:
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


@jit
def place_run(slot_lo: np.ndarray, slot_hi: np.ndarray, sizes: np.ndarray, fixed: np.ndarray,
              sequence: np.ndarray, first: int, stop: int, fixed_count: int, base: int, block_level: int,
              block_band: int, read_until: np.ndarray, block_read_until: np.ndarray, meta: np.ndarray, pool: np.ndarray,
              used: np.ndarray, limit: int, offsets: np.ndarray, highest: np.ndarray) -> tuple[bool, np.ndarray]:
    """Place `sequence[first:stop]` (the fixed buffers, then the order); True as soon
    as a buffer of the order ends at or above `limit`. `highest[0]` keeps the highest end
    of the order's buffers placed so far."""
    depth = 1
    while (1 << depth) < 2 * base:
        depth += 1
    nodes = np.empty(2 * depth + 2, dtype=np.int64)
    levels = np.empty(2 * depth + 2, dtype=np.int64)
    taken = np.empty(8 * depth + 8, dtype=np.int64)
    scratch = 1024
    starts = np.empty(scratch, dtype=np.int64)
    range_ends = np.empty(scratch, dtype=np.int64)
    sorted_starts = np.empty(scratch, dtype=np.int64)
    sorted_ends = np.empty(scratch, dtype=np.int64)
    tally = np.empty((1 << 15) + 1, dtype=np.int64)
    sub = 2 * base
    first_block = base >> block_level  # the nodes at the block level are the blocks
    below_blocks = 2 * first_block  # nodes from here on lie below the block level
    above_band = first_block >> block_band  # nodes before this one lie above the band of levels
    blocks = 3 * base - first_block  # row of block b is blocks + b (b counted from first_block)
    # Two placements ahead, ask for the rows of `meta` they read; one ahead, for the lists
    # those rows point to: the walks below then wait on memory less often.
    cells = meta.reshape(-1)
    rows_next = np.empty(4 * depth + 8, dtype=np.int64)  # of the next placement
    rows_after = np.empty(4 * depth + 8, dtype=np.int64)  # of the one after it
    next_count = 0
    if first + 1 < stop:
        next_count = rows_ahead(slot_lo, slot_hi, sequence[first + 1], base, first_block, blocks, rows_next)
    for position in range(first, stop):
        after_count = 0
        if position + 2 < stop:
            after_count = rows_ahead(slot_lo, slot_hi, sequence[position + 2], base, first_block, blocks, rows_after)
            prefetch_rows(cells, read_until, rows_after, after_count, base)
        prefetch_lists(meta, pool, rows_next, next_count, base)
        rows_next, rows_after, next_count = rows_after, rows_next, after_count
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
        # Buffers stored above the cover nodes sit on the paths from the end leaves up: below
        # the block level in the nodes' ``own``, from it up in the two end blocks' lists.
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
            if ranges > scratch:
                scratch = 2 * ranges
                starts = np.empty(scratch, dtype=np.int64)
                range_ends = np.empty(scratch, dtype=np.int64)
                sorted_starts = np.empty(scratch, dtype=np.int64)
                sorted_ends = np.empty(scratch, dtype=np.int64)
            offset = best_fit(pool, meta, taken, taken_count, size, starts, range_ends, sorted_starts, sorted_ends,
                              tally, block_a, block_b)
        end = offset + size
        if not is_fixed:
            if end >= limit:
                return True, pool
            if end > highest[0]:
                highest[0] = end
        offsets[index] = offset
        for k in range(node_count):
            node = nodes[k]
            level = levels[k]
            # ``own``: read by the path walks below the block level, and by the queries
            # covering a node at an odd level; above, an even level's ``sub`` holds it.
            if node >= below_blocks or node < above_band or (level & 1 and read_until[node] > rank):
                pool = add_range(pool, meta, used, node, offset, end)
            if above_band <= node < below_blocks:
                # Every block under the node, where a later query's path walk reads it.
                low = node
                high = node + 1
                while low < first_block:
                    low <<= 1
                    high <<= 1
                for block in range(low, high):
                    if block_read_until[block - first_block] > rank:
                        pool = add_range(pool, meta, used, blocks + block, offset, end)
            if node >= base:
                up = node >> 1
                level = 1
            else:
                up = node
            # ``sub`` at the even levels up the tree, where a later query reads it, until a
            # node holds the range.
            while up:
                if not level & 1 and read_until[up] > rank:
                    listed = sub + up
                    length = meta[listed, 1]
                    if length:
                        head = meta[listed, 0]
                        i = bisect_right(pool, head, head + length, offset) - head
                        if (i & 1) and pool[head + i] >= end:
                            break
                    pool = add_range(pool, meta, used, listed, offset, end)
                up >>= 1
                level += 1
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
