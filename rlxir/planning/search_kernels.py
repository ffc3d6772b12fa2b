"""The compiled loop of `CanonicalSearch` (rlxir/planning/search.py), behind
rlxir/planning/search_compiled.py: the same depth-first search over canonical placements,
node for node, with its state in arrays the caller owns, so that a call can pause and the
next one go on where it stopped. Importing this module imports Numba; `search_run` is
compiled on its first call and cached on disk.

Two things are computed more cheaply than search.py does, each giving the same answer:

- A child's candidates come from its parent's sorted list: the placed buffer dropped,
  the buffers whose minimum offset it raised taken out and merged back in at their new
  keys (search.py sorts every unplaced buffer again).
- After a placement, slot inference reads only the slots whose floor was raised by a
  neighbour: in the placed buffer's own slots the floor becomes its top and the bytes
  left shrink by its size, so their sum is what it was at the offset already checked,
  and every other slot is unchanged. The floor is saved over the slots that change, not
  whole.
"""

from __future__ import annotations

import numpy as np
from numba import njit

jit = njit(cache=True, nogil=True)

# Rows of the `state` array: the current depth, the nodes counted, the buffers still to
# place, the top of the undo log.
DEPTH, NODES, REMAINING, LOG_TOP = 0, 1, 2, 3

# What `search_run` returns.
EXHAUSTED, FOUND, NODE_LIMIT, PAUSED = 0, 1, 2, 3

_NEVER = np.int64(1) << 62


@jit
def fits_at(floor: np.ndarray, totals: np.ndarray, offset: int, capacity: int, lo: int, hi: int) -> bool:
    """Slot inference over slots ``[lo, hi)``: the floor (at least `offset`) plus the bytes left fit."""
    for slot in range(lo, hi):
        if max(floor[slot], offset) + totals[slot] > capacity:
            return False
    return True


@jit
def first_candidates(sizes: np.ndarray, unplaced: np.ndarray, min_offset: np.ndarray, rank: np.ndarray,
                     candidates: np.ndarray, count: np.ndarray, lowest_top: np.ndarray) -> None:
    """Depth 0's candidates: every unplaced buffer as the key offset * n + rank, sorted,
    and the lowest top any of them can reach."""
    n = sizes.shape[0]
    found = 0
    lowest = _NEVER
    for buffer in range(n):
        if unplaced[buffer]:
            candidates[0, found] = min_offset[buffer] * n + rank[buffer]
            found += 1
            lowest = min(lowest, min_offset[buffer] + sizes[buffer])
    candidates[0, :found].sort()
    count[0] = found
    lowest_top[0] = lowest


@jit
def _child_candidates(depth: int, sizes: np.ndarray, min_offset: np.ndarray, rank: np.ndarray,
                      at_rank: np.ndarray, placed: int, log_buffer: np.ndarray, first: int, last: int,
                      candidates: np.ndarray, count: np.ndarray, lowest_top: np.ndarray, raised: np.ndarray,
                      fresh: np.ndarray) -> None:
    """Depth `depth`'s candidates from its parent's: `placed` dropped, the buffers raised
    by it (``log_buffer[first:last]``) merged back in at their new keys."""
    n = sizes.shape[0]
    moved = 0
    for entry in range(first, last):
        buffer = log_buffer[entry]
        if not raised[buffer]:
            raised[buffer] = True
            fresh[moved] = min_offset[buffer] * n + rank[buffer]
            moved += 1
    fresh[:moved].sort()
    parent = candidates[depth - 1]
    row = candidates[depth]
    kept = 0
    taken = 0
    for position in range(count[depth - 1]):
        key = parent[position]
        buffer = at_rank[key % n]
        if buffer == placed or raised[buffer]:
            continue
        while taken < moved and fresh[taken] < key:
            row[kept] = fresh[taken]
            kept += 1
            taken += 1
        row[kept] = key
        kept += 1
    while taken < moved:
        row[kept] = fresh[taken]
        kept += 1
        taken += 1
    for entry in range(first, last):
        raised[log_buffer[entry]] = False
    lowest = _NEVER
    for position in range(kept):
        buffer = at_rank[row[position] % n]
        lowest = min(lowest, min_offset[buffer] + sizes[buffer])
    count[depth] = kept
    lowest_top[depth] = lowest


@jit
def _unplace(depth: int, buffer: int, sizes: np.ndarray, slot_lo: np.ndarray, slot_hi: np.ndarray,
             min_offset: np.ndarray, unplaced: np.ndarray, floor: np.ndarray, totals: np.ndarray,
             floor_saved: np.ndarray, saved_lo: np.ndarray, saved_hi: np.ndarray, log_buffer: np.ndarray,
             log_old: np.ndarray, log_start: np.ndarray, state: np.ndarray) -> None:
    """Undo the placement made at `depth`."""
    floor[saved_lo[depth]:saved_hi[depth]] = floor_saved[depth, : saved_hi[depth] - saved_lo[depth]]
    for slot in range(slot_lo[buffer], slot_hi[buffer]):
        totals[slot] += sizes[buffer]
    for entry in range(log_start[depth], state[LOG_TOP]):
        min_offset[log_buffer[entry]] = log_old[entry]
    state[LOG_TOP] = log_start[depth]
    unplaced[buffer] = True
    state[REMAINING] += 1


@jit
def search_run(sizes, slot_lo, slot_hi, overlap_start, overlap, member_start, members, capacity, rank, at_rank,
               min_offset, unplaced, offsets, floor, totals, candidates, count, lowest_top, position,
               last_offset, last_rank, checked, has_undo, placed_offset, placed_rank, placed_buffer, floor_saved,
               saved_lo, saved_hi, log_buffer, log_old, log_start, raised, fresh, state, node_limit,
               pause_after):  # noqa: ANN001 (arrays and ints, as search_compiled.py passes them)
    """Run the search from ``state[DEPTH]`` until it finds a placement (FOUND, `offsets`
    filled), has tried every one (EXHAUSTED), counts more than `node_limit` nodes
    (NODE_LIMIT) or has made `pause_after` placement attempts (PAUSED: call again to go
    on). The frame of each depth is a row of the per-depth arrays; search.py's `_Frame`
    names the same fields."""
    n = sizes.shape[0]
    slots = floor.shape[0]
    depth = state[DEPTH]
    attempts = 0
    while depth >= 0:
        if attempts >= pause_after:
            state[DEPTH] = depth
            return PAUSED
        if has_undo[depth]:
            _unplace(depth, placed_buffer[depth], sizes, slot_lo, slot_hi, min_offset, unplaced, floor, totals,
                     floor_saved, saved_lo, saved_hi, log_buffer, log_old, log_start, state)
            has_undo[depth] = False
        placed = False
        lowest = lowest_top[depth]
        while position[depth] < count[depth]:
            key = candidates[depth, position[depth]]
            offset = key // n
            rank_here = key - offset * n
            position[depth] += 1
            if offset >= lowest:
                break  # dominance: offsets only grow down the sorted candidates
            if offset != checked[depth]:
                if not fits_at(floor, totals, offset, capacity, 0, slots):
                    break
                checked[depth] = offset
            if offset < last_offset[depth] or (offset == last_offset[depth] and rank_here < last_rank[depth]):
                continue  # canonical order
            attempts += 1
            buffer = at_rank[rank_here]
            top = offset + sizes[buffer]
            unplaced[buffer] = False
            state[REMAINING] -= 1
            offsets[buffer] = offset
            log_start[depth] = state[LOG_TOP]
            raised_lo = _NEVER
            raised_hi = -1
            for entry in range(overlap_start[buffer], overlap_start[buffer + 1]):
                neighbour = overlap[entry]
                if unplaced[neighbour] and min_offset[neighbour] < top:
                    logged = state[LOG_TOP]
                    log_buffer[logged] = neighbour
                    log_old[logged] = min_offset[neighbour]
                    state[LOG_TOP] = logged + 1
                    min_offset[neighbour] = top
                    raised_lo = min(raised_lo, slot_lo[neighbour])
                    raised_hi = max(raised_hi, slot_hi[neighbour])
            lo = min(slot_lo[buffer], raised_lo)
            hi = max(slot_hi[buffer], raised_hi)
            saved_lo[depth] = lo
            saved_hi[depth] = hi
            floor_saved[depth, : hi - lo] = floor[lo:hi]
            for slot in range(slot_lo[buffer], slot_hi[buffer]):
                floor[slot] = top  # the buffer overlaps every earlier one there: it is on top
                totals[slot] -= sizes[buffer]
            fits = True
            if raised_hi >= 0:
                # Lift the raised slots' floors to their unplaced buffers' lowest offset.
                for slot in range(raised_lo, raised_hi):
                    floor_here = _NEVER
                    for entry in range(member_start[slot], member_start[slot + 1]):
                        member = members[entry]
                        if unplaced[member] and min_offset[member] < floor_here:
                            floor_here = min_offset[member]
                    if floor_here != _NEVER and floor_here > floor[slot]:
                        floor[slot] = floor_here
                fits = fits_at(floor, totals, offset, capacity, raised_lo, raised_hi)
            placed_buffer[depth] = buffer
            if fits:
                has_undo[depth] = True
                placed_offset[depth] = offset
                placed_rank[depth] = rank_here
                placed = True
                break
            _unplace(depth, buffer, sizes, slot_lo, slot_hi, min_offset, unplaced, floor, totals, floor_saved,
                     saved_lo, saved_hi, log_buffer, log_old, log_start, state)
        if not placed:
            depth -= 1
            continue
        if state[REMAINING] == 0:
            state[DEPTH] = depth
            return FOUND
        state[NODES] += 1
        if state[NODES] > node_limit:
            state[DEPTH] = depth
            return NODE_LIMIT
        depth += 1
        position[depth] = 0
        last_offset[depth] = placed_offset[depth - 1]
        last_rank[depth] = placed_rank[depth - 1]
        checked[depth] = -1
        has_undo[depth] = False
        placed_offset[depth] = last_offset[depth]
        placed_rank[depth] = last_rank[depth]
        _child_candidates(depth, sizes, min_offset, rank, at_rank, placed_buffer[depth - 1], log_buffer,
                          log_start[depth - 1], state[LOG_TOP], candidates, count, lowest_top, raised, fresh)
    state[DEPTH] = depth
    return EXHAUSTED
