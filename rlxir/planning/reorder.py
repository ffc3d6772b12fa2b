"""Local search over the order of canonical placements, for `best` on small instances.

A *dive* places every buffer canonically (as `CanonicalSearch` does, without a capacity
or pruning): at each step the unplaced buffer with the lowest minimum offset (the highest
top among the placed buffers it overlaps) goes there, ties broken by a priority order.
That is the search's first descent, which never backtracks; on MiniMalloc's challenging
K every plan the search found within its budget was such a descent, so here the order is
searched instead of the offsets.

`reorder_dives` starts from one order and repeats: move one buffer to a random earlier
place in the order (four times in five one that sticks out above the lower bound in the
current plan, else any), dive, and keep the new order if its plan scores no worse. The
score is (arena, buffers whose top is above the lower bound, bytes above it summed over
them): the last two tell apart the many orders that give the same arena and lead the
search down the plateau towards plans with fewer and lower buffers above the bound.

A dive costs O(n) NumPy calls over n-element arrays (1.3 ms of CPU at n = 454), so a few
seconds try a few thousand orders. Only for instances small enough for the search's
overlap lists (see `BestPlanner`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from rlxir.planning.problem import Problem

# Share of moves that take a buffer sticking out above the lower bound (tuned on
# MiniMalloc's challenging set: 0.5 gave 1.06-1.12x the bound on E-K, 0.8 1.04-1.12x).
_STICKING_OUT_SHARE = 0.8

# Above every offset: marks placed buffers in the dive's keys.
_PLACED = np.iinfo(np.int64).max


def dive(sizes: np.ndarray, overlaps: Sequence[np.ndarray], order: Sequence[int]) -> np.ndarray:
    """Offsets of the canonical placement in priority `order` (every index once).

    Buffers of size 0 get offset 0 and constrain nothing.
    """
    n = len(sizes)
    rank = np.empty(n, dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(n)
    offsets = np.zeros(n, dtype=np.int64)
    size_list = sizes.tolist()
    # One key per unplaced buffer, minimum offset * n + rank, so argmin is the next one
    # and a neighbour sits below a top exactly when its key is below top * n (placed
    # buffers' keys are above every such bound).
    keys = np.where(sizes > 0, rank, _PLACED)
    for _ in range(int((sizes > 0).sum())):
        buffer = int(keys.argmin())
        offset = int(keys[buffer]) // n
        offsets[buffer] = offset
        keys[buffer] = _PLACED
        top_key = (offset + size_list[buffer]) * n
        neighbours = overlaps[buffer]
        raised = neighbours[keys[neighbours] < top_key]
        keys[raised] = top_key + rank[raised]
    return offsets


def reorder_dives(
    problem: Problem,
    overlaps: Sequence[np.ndarray],
    order: list[int],
    lower: int,
    deadline: float,
    rng: np.random.Generator,
    max_dives: int | None = None,
) -> tuple[list[int], int]:
    """Offsets of the smallest-arena dive found from `order` (see the module docstring)
    until the clock passes `deadline`, the plan reaches `lower`, or `max_dives` dives
    (moves that change nothing count too); and the number of dives.

    `problem` has no imposed offsets; `overlaps[i]` lists the buffers overlapping i.
    """
    sizes = np.asarray(problem.sizes, dtype=np.int64).reshape(len(problem))
    current = list(order)
    offsets = dive(sizes, overlaps, current)
    score = _score(offsets, sizes, lower)
    best, best_arena = offsets, score[0]
    dives = 1
    while best_arena > lower and time.perf_counter() < deadline and (max_dives is None or dives < max_dives):
        moved = _moved(current, offsets, sizes, lower, rng)
        dives += 1
        if moved is None:
            continue
        trial = dive(sizes, overlaps, moved)
        trial_score = _score(trial, sizes, lower)
        if trial_score <= score:
            current, offsets, score = moved, trial, trial_score
            if score[0] < best_arena:
                best, best_arena = trial, score[0]
    return best.tolist(), dives


def _moved(
    order: list[int], offsets: np.ndarray, sizes: np.ndarray, lower: int, rng: np.random.Generator
) -> list[int] | None:
    """`order` with one buffer moved to a random earlier place; None if it is first."""
    sticking_out = np.flatnonzero(offsets + sizes > lower)
    if len(sticking_out) and rng.random() < _STICKING_OUT_SHARE:
        buffer = int(sticking_out[rng.integers(len(sticking_out))])
    else:
        buffer = int(rng.integers(len(order)))
    position = order.index(buffer)
    if position == 0:
        return None
    moved = list(order)
    del moved[position]
    moved.insert(int(rng.integers(position)), buffer)
    return moved


def _score(offsets: np.ndarray, sizes: np.ndarray, lower: int) -> tuple[int, int, int]:
    """(arena, buffers above `lower`, their bytes above it): smaller is better."""
    tops = offsets + sizes
    excess = tops[tops > lower] - lower
    return int(tops.max(initial=0)), len(excess), int(excess.sum())
