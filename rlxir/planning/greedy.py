"""Best-fit placement of buffers one at a time, in a given order."""

from __future__ import annotations

import gc
from collections.abc import Sequence

import numpy as np

from rlxir.planning.occupancy import OccupancyTree, last_query_ranks, leaf_base
from rlxir.planning.problem import Problem


def place_in_order(problem: Problem, order: Sequence[int]) -> list[int]:
    """Offsets (one per buffer, input order) from best-fit placement in `order`.

    Buffers with a fixed offset are placed first, at that offset. Then each buffer of
    `order` (which must list every other buffer exactly once) goes to the lowest offset of
    the smallest free gap that holds it among the buffers already placed whose lifetimes
    overlap its own, or just above the highest of them when no gap is large enough.
    Buffers of size 0 hold no address and get offset 0.
    """
    order = list(order)
    tree = _tree_for(problem, order)
    offsets = [0] * len(problem)
    slot_lo = problem.slot_lo.tolist()
    slot_hi = problem.slot_hi.tolist()
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
        for rank, index in enumerate(order):
            offsets[index] = place(slot_lo[index], slot_hi[index], sizes[index], rank)
    finally:
        if gc_was_enabled:
            gc.enable()
    return offsets


def _tree_for(problem: Problem, order: list[int]) -> OccupancyTree:
    base = leaf_base(problem.slot_count)
    indices = np.asarray(order, dtype=np.int64).reshape(len(order))
    last_query = last_query_ranks(
        problem.slot_lo[indices], problem.slot_hi[indices], np.arange(len(order), dtype=np.int64), base
    )
    return OccupancyTree(problem.slot_count, last_query, problem.int64_safe)
