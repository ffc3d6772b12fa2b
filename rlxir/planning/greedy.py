"""Best-fit placement of buffers one at a time, in a given order."""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from rlxir.planning.batched import overlap_pairs, place_batched, schedule_batches
from rlxir.planning.compiled import place_over_compiled_tree, use_compiled
from rlxir.planning.occupancy import OccupancyTree, last_query_ranks, leaf_base, live_to_the_end
from rlxir.planning.problem import Problem

# Placements between two looks at the clock (a few milliseconds of work).
CHECK_EVERY = 1024

# Buffers from which placement goes in NumPy batches where it can: below, a chunk's
# fixed NumPy cost outweighs the tree's per-buffer Python (2x slower on the 154-454
# buffers of MiniMalloc's challenging set).
_BATCHED_FROM = 4096

# Buffers live per slot, on average, from which the occupancy tree keeps int64 arrays.
_CROWDED_FROM = 64


def place_in_order(
    problem: Problem,
    order: Sequence[int],
    deadline: float = math.inf,
    progress: Callable[[int, int], None] | None = None,
    stop_at: int | None = None,
) -> list[int] | None:
    """Offsets (one per buffer, input order) from best-fit placement in `order`.

    Buffers with a fixed offset are placed first, at that offset. Then each buffer of
    `order` (which must list every other buffer exactly once) goes to the lowest offset of
    the smallest free gap that holds it among the buffers already placed whose lifetimes
    overlap its own, or just above the highest of them when no gap is large enough.
    Buffers of size 0 hold no address and get offset 0.

    None if the clock passes `deadline` (a `time.perf_counter()` value) first; it is read
    every `CHECK_EVERY` placements, and `progress(placed, total)` is called as often.

    None also once a placed buffer ends at or above `stop_at` (when given): the arena of
    a partial plan only grows as buffers are added, so the whole plan's arena would be
    `stop_at` or more. A caller holding a plan of arena `stop_at` that keeps a new one only
    when strictly smaller gets the same answer without finishing a pass that cannot win.

    On instances of thousands of buffers that overlap a few tens of others each (and
    whose order does not chain them, see `schedule_batches`), the placements are
    computed in batches with NumPy (`place_batched`); elsewhere one at a time over an
    `OccupancyTree`, or, without a `deadline` on large instances (`use_compiled`), over the
    same tree compiled (`place_over_compiled_tree`). All give the same offsets.
    """
    pairs = overlap_pairs(problem) if len(problem) >= _BATCHED_FROM else None
    batches = None if pairs is None else schedule_batches(problem, order, pairs)
    if batches is not None:
        return place_batched(problem, batches, deadline, progress, stop_at)
    if deadline == math.inf and use_compiled(problem):
        return place_over_compiled_tree(problem, order, progress, stop_at)
    return _place_over_tree(problem, list(order), deadline, progress, stop_at)


def _place_over_tree(
    problem: Problem,
    order: list[int],
    deadline: float,
    progress: Callable[[int, int], None] | None,
    stop_at: int | None = None,
) -> list[int] | None:
    ends = live_to_the_end(problem.slot_hi, problem.slot_count, leaf_base(problem.slot_count))
    tree = _tree_for(problem, order, ends)
    offsets = [0] * len(problem)
    slot_lo = problem.slot_lo.tolist()
    slot_hi = ends.tolist()
    sizes = problem.sizes
    gc_was_enabled = gc.isenabled()
    # The loop allocates many small lists that never form cycles; collecting them costs
    # a tenth of the run on large inputs for nothing.
    gc.disable()
    try:
        for index, fixed in enumerate(problem.fixed):
            if fixed is not None:
                offsets[index] = fixed
                tree.occupy(slot_lo[index], slot_hi[index], fixed, sizes[index])
        place = tree.place
        # Offsets start at 0 and sizes are positive where they count: the highest end
        # of a placed buffer is below this limit as long as the pass may continue.
        limit = math.inf if stop_at is None else stop_at
        for first in range(0, len(order), CHECK_EVERY):
            if progress is not None:
                progress(first, len(order))
            if time.perf_counter() > deadline:
                return None
            for rank in range(first, min(first + CHECK_EVERY, len(order))):
                index = order[rank]
                size = sizes[index]
                offset = place(slot_lo[index], slot_hi[index], size, rank)
                if offset + size >= limit:
                    return None
                offsets[index] = offset
    finally:
        if gc_was_enabled:
            gc.enable()
    return offsets


def _tree_for(problem: Problem, order: list[int], ends: np.ndarray) -> OccupancyTree:
    """The tree for placing `order`, whose buffers end at `ends` (`live_to_the_end`)."""
    base = leaf_base(problem.slot_count)
    indices = np.asarray(order, dtype=np.int64).reshape(len(order))
    last_query = last_query_ranks(
        problem.slot_lo[indices], ends[indices], np.arange(len(order), dtype=np.int64), base
    ).tolist()  # the Python tree reads Python ints fastest
    live_per_slot = int((problem.slot_hi - problem.slot_lo).sum()) / max(problem.slot_count, 1)
    return OccupancyTree(problem.slot_count, last_query, problem.int64_safe, live_per_slot >= _CROWDED_FROM)
