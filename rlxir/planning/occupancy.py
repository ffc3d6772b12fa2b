"""Which addresses are taken when: the structure behind best-fit placement.

`OccupancyTree` answers, for a slot range and a size, the best-fit offset among the
buffers already placed there, without ever listing the placed buffers one by one: it
works on merged address ranges.

It is a segment tree over the slots (leaf ``N + s`` is slot ``s``, node ``v`` has
children ``2v`` and ``2v + 1``). A slot range ``[lo, hi)`` splits into O(log N)
*cover nodes* whose spans tile it. Each node keeps two address sets, as sorted flat lists
``[start0, end0, start1, end1, ...]`` of disjoint, non-touching half-open ranges:

- ``own[v]``: addresses of the buffers that have `v` among their cover nodes (buffers live
  in all of `v`'s span);
- ``sub[v]`` (internal nodes only): the union of ``own`` over `v`'s subtree, i.e. the
  addresses of buffers live somewhere in `v`'s span and stored at or below `v`.

The addresses taken anywhere in ``[lo, hi)`` are then the union of ``sub`` (``own`` for a
leaf) of the cover nodes, plus ``own`` of every node on the paths from the two end
leaves to the root (buffers stored above the cover nodes). That is a handful of short
lists, merged per query; a buffer is inserted into ``own`` of its cover nodes and into
``sub`` up the tree, stopping at the first ancestor that already holds its range (its
ancestors hold it too).

``sub[v]`` is only ever read by a query that has `v` as a cover node. The order of the
queries is known in advance, so a node whose last such query is past is not updated any
more (`last_query`). The placement loops pass a buffer live to the last slot as live to
the tree's end (`live_to_the_end`): one cover node, the root, for a buffer live
throughout.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

import numpy as np

# Above this many range bounds, a query merges with NumPy instead of Python lists: the
# sort and the gap scan then cost less than NumPy's fixed per-call overhead.
_NUMPY_MERGE_MIN = 150
# A difference of int64-safe values read as unsigned is at least this when negative.
_NEGATIVE = 1 << 63


def leaf_base(slot_count: int) -> int:
    """Index of the first leaf: the smallest power of two >= `slot_count` (at least 1)."""
    base = 1
    while base < slot_count:
        base *= 2
    return base


def live_to_the_end(slot_hi: np.ndarray, slot_count: int, base: int) -> np.ndarray:
    """`slot_hi` with a buffer live to the last slot taken as live to the end of a tree of
    `base` leaves: no query lies past that slot, so every query overlaps it as before, and
    a buffer live throughout (the weights of a training step) is stored at the root alone
    instead of at one node per set bit of the slot count."""
    return np.where(slot_hi == slot_count, base, slot_hi)


def last_query_ranks(slot_lo: np.ndarray, slot_hi: np.ndarray, rank: np.ndarray, base: int,
                     per_level: list[int] | None = None) -> np.ndarray:
    """For every tree node, the highest `rank` of a query having it as a cover node (int64).

    Nodes no query covers get -1. Vectorised over all queries: one pass per tree level,
    walking the standard bottom-up decomposition of ``[lo, hi)`` for all of them at once.
    With `per_level`, the number of cover nodes the queries have at each level (leaves
    first) is appended to it, up to the highest level that has any.
    """
    last = np.full(2 * base, -1, dtype=np.int64)
    left = slot_lo + base
    right = slot_hi + base
    while True:
        open_ = left < right
        if not open_.any():
            return last
        take_left = open_ & ((left & 1) == 1)
        np.maximum.at(last, left[take_left], rank[take_left])
        left = left + take_left
        take_right = open_ & ((right & 1) == 1)
        right = right - take_right
        np.maximum.at(last, right[take_right], rank[take_right])
        if per_level is not None:
            per_level.append(int(np.count_nonzero(take_left)) + int(np.count_nonzero(take_right)))
        left >>= 1
        right >>= 1


def add_range(ranges: list[int] | array, start: int, end: int) -> None:
    """Union ``[start, end)`` into the flat sorted range list `ranges` (a list, or an
    ``array('q')``), merging neighbours."""
    i = bisect_left(ranges, start)
    j = bisect_right(ranges, end, i)
    # An odd index falls inside (or at the end of) an existing range: it absorbs the bound.
    if i & 1:
        replacement = [] if j & 1 else [end]
    else:
        replacement = [start] if j & 1 else [start, end]
    ranges[i:j] = replacement if type(ranges) is list else array("q", replacement)


def _best_gap_numpy(flat: list[int] | array, size: int, one_list: bool) -> int:
    """The gap scan of `best_fit_offset` for many bounds (int64-safe values only)."""
    if isinstance(flat, array):
        bounds = np.frombuffer(flat, dtype=np.int64)
    else:
        bounds = np.array(flat, dtype=np.int64)
    starts = bounds[0::2]
    ends = bounds[1::2]
    if not one_list:
        starts = np.sort(starts)  # starts and ends each sorted, as in the list scan
        ends = np.sort(ends)
    # Gap k lies between end k - 1 and start k (gap 0, from address 0, is handled
    # apart). Read as unsigned, `gap - size` is huge exactly where the gap is too small,
    # so its smallest value (the first one on ties) is the best fit.
    slack = (starts[1:] - ends[:-1] - size).view(np.uint64)
    first_gap = int(starts[0])
    if len(slack):
        best = int(slack.argmin())
        best_slack = int(slack[best])
        if best_slack < _NEGATIVE:
            return 0 if size <= first_gap <= size + best_slack else int(ends[best])
    return 0 if size <= first_gap else int(ends[-1])


def best_fit_offset(taken: list[list[int]] | list[array], size: int, numpy_merge: bool) -> int:
    """Best-fit offset for `size` bytes next to the union of the range lists `taken`
    (all lists, or all ``array('q')``, as `OccupancyTree` keeps them).

    The lowest offset of the smallest free gap that holds `size`; with no such gap, the
    highest taken address (0 when nothing is taken).
    """
    if not taken:
        return 0
    if len(taken) == 1:
        flat = taken[0]
    else:
        flat = taken[0][:0]  # empty, of the lists' type
        for ranges in taken:
            flat += ranges
    if numpy_merge and len(flat) > _NUMPY_MERGE_MIN:
        return _best_gap_numpy(flat, size, len(taken) == 1)
    starts = flat[0::2]
    ends = flat[1::2]
    if len(taken) > 1:
        starts = sorted(starts)
        ends = sorted(ends)
    # With the starts and the ends sorted separately (the lists may overlap), the space
    # between ends[k - 1] and starts[k] is free exactly when positive: k ranges have
    # started and k have ended.
    best_gap = -1
    best_offset = 0
    previous_end = 0
    for start, end in zip(starts, ends):
        gap = start - previous_end
        if gap >= size and (best_gap < 0 or gap < best_gap):
            best_gap = gap
            best_offset = previous_end
        previous_end = end
    return previous_end if best_gap < 0 else best_offset


class OccupancyTree:
    """Address ranges taken per slot, for best-fit placement (see the module docstring).

    Contract: buffers are placed in rank order 0, 1, 2, ... (`place`), and `last_query`
    was computed for exactly these placements. Buffers whose offset is imposed are
    recorded first, with `occupy`.
    """

    def __init__(self, slot_count: int, last_query: list[int], int64_safe: bool, crowded: bool = False):
        """`crowded` (for int64-safe instances with many buffers live at once) keeps the
        range lists as ``array('q')``: queries then merge hundreds of bounds, which NumPy
        reads from an array without a copy; with few buffers live at once, lists are
        cheaper (their bisection and insertion cost less)."""
        self.base = leaf_base(slot_count)
        self.last_query = last_query
        self.numpy_merge = int64_safe
        self.new_ranges = _new_array if int64_safe and crowded else _new_list
        self.own: list[list[int] | None] = [None] * (2 * self.base)
        self.sub: list[list[int] | None] = [None] * self.base

    def place(self, slot_lo: int, slot_hi: int, size: int, rank: int) -> int:
        """Best-fit offset for `size` bytes over the slots ``[slot_lo, slot_hi)``, recorded.

        Among the addresses taken in the range, the lowest offset of the smallest free gap
        that holds `size`, else the highest taken address (0 if none). Size 0 gets 0.
        """
        if size == 0:
            return 0  # an empty buffer holds no address; 0 keeps plans reproducible
        nodes, taken = self._cover_and_taken(slot_lo, slot_hi)
        offset = best_fit_offset(taken, size, self.numpy_merge)
        self._record(nodes, offset, offset + size, rank)
        return offset

    def occupy(self, slot_lo: int, slot_hi: int, offset: int, size: int) -> None:
        """Record a buffer placed before any `place` call (an imposed offset)."""
        if size:
            nodes, _ = self._cover_and_taken(slot_lo, slot_hi)
            self._record(nodes, offset, offset + size, -1)

    def _cover_and_taken(self, slot_lo: int, slot_hi: int) -> tuple[list[int], list[list[int]]]:
        """The cover nodes of ``[slot_lo, slot_hi)`` and the non-empty range lists whose
        union is every address taken in it."""
        own = self.own
        sub = self.sub
        base = self.base
        nodes = []
        taken = []
        left = slot_lo + base
        right = slot_hi + base
        while left < right:
            if left & 1:
                nodes.append(left)
                ranges = own[left] if left >= base else sub[left]
                if ranges:
                    taken.append(ranges)
                left += 1
            if right & 1:
                right -= 1
                nodes.append(right)
                ranges = own[right] if right >= base else sub[right]
                if ranges:
                    taken.append(ranges)
            left >>= 1
            right >>= 1
        # Buffers stored above the cover nodes sit on the paths from the end leaves up.
        left = (slot_lo + base) >> 1
        right = (slot_hi - 1 + base) >> 1
        while left != right:
            ranges = own[left]
            if ranges:
                taken.append(ranges)
            ranges = own[right]
            if ranges:
                taken.append(ranges)
            left >>= 1
            right >>= 1
        while left:
            ranges = own[left]
            if ranges:
                taken.append(ranges)
            left >>= 1
        return nodes, taken

    def _record(self, nodes: list[int], start: int, end: int, rank: int) -> None:
        """Add ``[start, end)`` to ``own`` of `nodes` and to ``sub`` from each up the tree."""
        own = self.own
        base = self.base
        new_ranges = self.new_ranges
        for node in nodes:
            ranges = own[node]
            if ranges is None:
                own[node] = new_ranges(start, end)
            else:
                add_range(ranges, start, end)
            self._add_up(node >> 1 if node >= base else node, start, end, rank)

    def _add_up(self, node: int, start: int, end: int, rank: int) -> None:
        """Add ``[start, end)`` to ``sub`` of `node` and of its ancestors.

        Only where a later placement reads ``sub`` (`last_query` above `rank`); and the walk
        stops at the first such node that already holds the range, since every node above
        it that is still read has received everything it received.
        """
        sub = self.sub
        last_query = self.last_query
        while node:
            ranges = sub[node]
            if last_query[node] <= rank:
                pass  # no later placement reads this union
            elif ranges is None:
                sub[node] = self.new_ranges(start, end)
            elif (i := bisect_right(ranges, start)) & 1 and ranges[i] >= end:
                return
            else:
                add_range(ranges, start, end)
            node >>= 1


def _new_array(start: int, end: int) -> array:
    return array("q", (start, end))


def _new_list(start: int, end: int) -> list[int]:
    return [start, end]
