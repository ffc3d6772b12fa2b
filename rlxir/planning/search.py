"""Exact-style search for small instances: does a placement fit in a given capacity?

A depth-first search over *canonical* placements, after MiniMalloc (M. D. Moffitt,
ASPLOS 2023). Every buffer goes to its *minimum offset* (the highest top among the
already-placed buffers it overlaps), and buffers are placed in non-decreasing order of
that offset: any packing can be rearranged into such a sequence, so nothing is lost. At
each node the candidates are the unplaced buffers sorted by (minimum offset, preorder
rank); the search prunes with

- canonical order: no candidate before the previous placement in that order;
- dominance: a candidate whose offset is at or above the lowest top any unplaced buffer
  could reach would leave a gap another buffer fits in;
- slot inference: in every slot, the floor (raised to the current offset) plus the bytes
  still to place there must fit in the capacity. A slot's floor is the top of the last
  buffer placed in it, raised to the lowest minimum offset of its unplaced buffers (the
  space below that is lost).

Only for instances small enough for an n x n overlap matrix (see `BestPlanner`).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from rlxir.planning.problem import Problem

# A preorder heuristic is a string of keys, most significant first, all descending:
# T = the largest live total among the slots the buffer covers, A = area (size x
# lifetime), W = width (lifetime), Z = size.
HEURISTICS = ("WAT", "TAW", "TWA")


# Above every offset: marks slots without unplaced buffers.
_NEVER = np.iinfo(np.int64).max


class _OutOfBudget(Exception):
    """The node limit or the deadline was reached before the search finished."""


class CanonicalSearch:
    """The decision search over one problem, reusable across capacities and preorders.

    `problem` must have no imposed offsets and be int64-safe.
    """

    def __init__(self, problem: Problem):
        n = len(problem)
        self.n = n
        self.sizes = np.asarray(problem.sizes, dtype=np.int64).reshape(n)
        self.size_list = list(problem.sizes)
        self.slot_lo = problem.slot_lo.tolist()
        self.slot_hi = problem.slot_hi.tolist()
        self.slot_lo_array = problem.slot_lo
        self.slot_hi_array = problem.slot_hi
        self.initial_totals = problem.live_bytes_per_slot().astype(np.int64)
        self.overlaps = _overlap_lists(problem)
        self.slot_members, self.slot_member_start = _slot_members(problem)
        self.nodes = 0

    def solve(self, capacity: int, order: list[int], node_limit: int, deadline: float) -> list[int] | None:
        """Offsets of a placement whose arena is at most `capacity`, or None.

        `order` (every buffer index once, see `preorder`) breaks ties between candidates
        at the same offset, and so steers the search. None means "not found": either none
        exists or the search stopped at `node_limit` nodes or at `deadline` (a
        `time.perf_counter()` value). Deterministic when the deadline does not bind.
        """
        self.buffer_at_rank = list(order)
        self.rank = np.empty(self.n, dtype=np.int64)
        self.rank[order] = np.arange(self.n)
        self._reset(capacity, node_limit, deadline)
        if not self.unplaced.any():
            return list(self.offsets)
        try:
            return self._search()
        except _OutOfBudget:
            return None

    def _reset(self, capacity: int, node_limit: int, deadline: float) -> None:
        self.capacity = capacity
        self.node_limit = node_limit
        self.deadline = deadline
        self.nodes = 0
        self.min_offset = np.zeros(self.n, dtype=np.int64)
        # Empty buffers hold no address: they sit at 0 from the start (and would break the
        # dominance bound, their top being their offset).
        self.unplaced = self.sizes > 0
        self.offsets = [0] * self.n
        self.floor = np.zeros(len(self.initial_totals), dtype=np.int64)
        self.totals = self.initial_totals.copy()

    def _search(self) -> list[int] | None:
        """Iterative depth-first search (a frame per depth; no recursion limit)."""
        stack = [_Frame(self._candidates(), last_offset=0, last_rank=-1)]
        while stack:
            frame = stack[-1]
            if frame.undo is not None:
                self._unplace(frame.undo)
                frame.undo = None
            if not self._place_next(frame):
                stack.pop()
                continue
            if not self.unplaced.any():
                return list(self.offsets)
            self._count_node()
            stack.append(_Frame(self._candidates(), frame.last_offset_placed, frame.last_rank_placed))
        return None

    def _count_node(self) -> None:
        self.nodes += 1
        if self.nodes > self.node_limit:
            raise _OutOfBudget
        # A node costs O(n) NumPy work (milliseconds at n = 3000): read the clock at each.
        if time.perf_counter() > self.deadline:
            raise _OutOfBudget

    def _candidates(self) -> tuple[list[int], int]:
        """Unplaced buffers in search order, as keys offset * n + rank, and the lowest top
        any of them can reach (the dominance bound)."""
        unplaced = np.flatnonzero(self.unplaced)
        offsets = self.min_offset[unplaced]
        keys = np.sort(offsets * self.n + self.rank[unplaced]).tolist()
        return keys, int((offsets + self.sizes[unplaced]).min())

    def _place_next(self, frame: _Frame) -> bool:
        """Place the frame's next viable candidate; False when none is left."""
        keys, lowest_top = frame.candidates
        while frame.position < len(keys):
            offset, rank = divmod(keys[frame.position], self.n)
            frame.position += 1
            if offset >= lowest_top:
                return False  # offsets only grow down the sorted candidates
            if offset != frame.checked_offset:
                # Placing any buffer at `offset` leaves this bound unchanged (its slots get
                # floor + rest = offset + their current rest), and it grows with `offset`.
                if not self._fits_at(offset):
                    return False
                frame.checked_offset = offset
            if offset < frame.last_offset or (offset == frame.last_offset and rank < frame.last_rank):
                continue
            undo = self._place(self.buffer_at_rank[rank], offset)
            if self._fits_at(offset):
                frame.undo = undo
                frame.last_offset_placed = offset
                frame.last_rank_placed = rank
                return True
            self._unplace(undo)
        return False

    def _fits_at(self, offset: int) -> bool:
        """Slot inference: every slot's floor (at least `offset`) plus what remains fits."""
        return int((np.maximum(self.floor, offset) + self.totals).max()) <= self.capacity

    def _place(self, buffer: int, offset: int) -> _Undo:
        """Put `buffer` at `offset` and update the bounds; returns what undoes it."""
        top = offset + self.size_list[buffer]
        self.unplaced[buffer] = False
        self.offsets[buffer] = offset
        neighbours = self.overlaps[buffer]
        raised = neighbours[self.unplaced[neighbours] & (self.min_offset[neighbours] < top)]
        undo = _Undo(buffer, raised, self.min_offset[raised], self.floor.copy())
        self.min_offset[raised] = top
        lo, hi = self.slot_lo[buffer], self.slot_hi[buffer]
        self.floor[lo:hi] = top  # the buffer overlaps every earlier one there: it is on top
        self.totals[lo:hi] -= self.size_list[buffer]
        if len(raised):
            self._raise_floors(raised)
        return undo

    def _raise_floors(self, raised: np.ndarray) -> None:
        """Lift the floor of the slots of `raised` to their unplaced buffers' lowest offset."""
        lo = int(self.slot_lo_array[raised].min())
        hi = int(self.slot_hi_array[raised].max())
        first = self.slot_member_start[lo]
        members = self.slot_members[first : self.slot_member_start[hi]]
        values = np.where(self.unplaced[members], self.min_offset[members], _NEVER)
        # Every slot has a member (the buffer starting there), so no segment is empty.
        lowest = np.minimum.reduceat(values, self.slot_member_start[lo:hi] - first)
        lowest[lowest == _NEVER] = 0
        np.maximum(self.floor[lo:hi], lowest, out=self.floor[lo:hi])

    def _unplace(self, undo: _Undo) -> None:
        self.floor = undo.floor
        self.totals[self.slot_lo[undo.buffer] : self.slot_hi[undo.buffer]] += self.size_list[undo.buffer]
        self.min_offset[undo.raised] = undo.min_offsets
        self.unplaced[undo.buffer] = True


class _Undo(NamedTuple):
    """What `_place` changed: the buffer, the neighbours whose minimum offset it raised
    (and their old values), and the whole floor array before it."""

    buffer: int
    raised: np.ndarray
    min_offsets: np.ndarray
    floor: np.ndarray


class _Frame:
    """One level of the depth-first search: its candidates and where it stands."""

    __slots__ = (
        "candidates",
        "position",
        "last_offset",
        "last_rank",
        "checked_offset",
        "undo",
        "last_offset_placed",
        "last_rank_placed",
    )

    def __init__(self, candidates: tuple[list[int], int], last_offset: int, last_rank: int):
        self.candidates = candidates
        self.position = 0
        self.last_offset = last_offset
        self.last_rank = last_rank
        self.checked_offset = -1
        self.undo: _Undo | None = None
        self.last_offset_placed = last_offset
        self.last_rank_placed = last_rank


def _slot_members(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """The buffers covering each slot, flattened: slot s holds members[start[s]:start[s+1]]."""
    lo = problem.slot_lo
    hi = problem.slot_hi
    counts = hi - lo
    buffer_ids = np.repeat(np.arange(len(problem)), counts)
    slot_ids = np.repeat(lo, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    order = np.argsort(slot_ids, kind="stable")
    start = np.zeros(problem.slot_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(slot_ids, minlength=problem.slot_count), out=start[1:])
    return buffer_ids[order], start


def _overlap_lists(problem: Problem) -> list[np.ndarray]:
    """For every buffer, the indices of the buffers whose slot ranges meet its own."""
    lo = problem.slot_lo
    hi = problem.slot_hi
    meets = (lo[:, None] < hi[None, :]) & (lo[None, :] < hi[:, None])
    np.fill_diagonal(meets, False)
    return [np.flatnonzero(row) for row in meets]


def preorder(problem: Problem, heuristic: str, rng: np.random.Generator | None = None) -> list[int]:
    """Buffer indices sorted by `heuristic` keys, all descending (see `HEURISTICS`).

    With `rng`, areas and totals are jittered by up to 10 % first, for restarts that
    explore other orders near the heuristic one.
    """
    sizes = np.asarray(problem.sizes, dtype=np.int64).reshape(len(problem))
    width = np.asarray([b.lifetime for b in problem.buffers], dtype=np.int64).reshape(len(problem))
    totals = problem.live_bytes_per_slot().astype(np.int64)
    slot_peak = np.array([totals[lo:hi].max() for lo, hi in zip(problem.slot_lo, problem.slot_hi)])
    keys = {"T": slot_peak.astype(float), "A": (sizes * width).astype(float), "W": width, "Z": sizes}
    if rng is not None:
        keys["T"] = keys["T"] * rng.uniform(0.9, 1.1, len(problem))
        keys["A"] = keys["A"] * rng.uniform(0.9, 1.1, len(problem))
    columns = [np.arange(len(problem))] + [-keys[letter] for letter in reversed(heuristic)]
    return np.lexsort(columns).tolist()
