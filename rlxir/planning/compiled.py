"""The planner's two hot loops compiled with Numba, where Numba is installed.

`place_over_compiled_tree` places buffers one at a time by the rule of `place_in_order`,
over the same segment tree as `OccupancyTree` (rlxir/planning/occupancy.py says how it
works): the same cover nodes, the same ``own`` and ``sub`` range lists, the same updates
skipped past a node's last query. The offsets are the same, buffer for buffer; only the
loop runs as machine code instead of Python (docs/performance.md, "The placement loop
compiled", has the timings).

Layout. Every range list lives in one int64 pool: list ``v`` (``own[v]`` for ``v <
2 * base``, ``sub[v - 2 * base]`` above) is the run ``pool[start : start + length]``
with room for ``capacity`` bounds (a row of `meta`). A list that outgrows its room moves
to the end of the pool with twice the room; the pool itself doubles when full. A
query gathers the ranges taken at its slots, sorts them by start (into buckets by their
high address bits, then an insertion sort) and scans the gaps of their union for the
best fit.

`run_sweep_compiled` applies the events of rlxir/planning/sweep.py's free-gap sweep
(used by the pass from the peak) the same way: the free gaps are kept twice, sorted by
(size, start) for the best fit and by start for the neighbours a freed range joins.

Both are used for passes of `COMPILED_FROM` buffers or more that have no deadline
(`use_compiled`; the pass from the peak loads the loops itself only from 200,000
buffers). Numba compiles the loops on first use and caches the machine code beside this
file (or in the user's cache folder when that is read-only), so the compile (about 6 s)
is paid once per installation and a process loads them in about 0.3 s. Without Numba (or
where it fails to set up), or with ``RLXIR_COMPILED_PLANNER=0`` in the environment,
`compiled_placement_available()` is False and the Python loops run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from rlxir.planning.occupancy import last_query_ranks, leaf_base
from rlxir.planning.problem import Problem

# Buffers from which a pass without a deadline runs compiled, where it can: below, the
# Python loops take a few hundred milliseconds at most, about what loading the compiled
# ones costs a process the first time.
COMPILED_FROM = 16384

# Placements per call of the compiled loop: progress is reported between calls.
CALL_EVERY = 4096

# Pool bounds reserved per buffer up front (it doubles when that is not enough).
_POOL_PER_BUFFER = 16


def compiled_placement_available() -> bool:
    """Whether `place_over_compiled_tree` can run: Numba imports and the environment does
    not turn it off (``RLXIR_COMPILED_PLANNER=0``)."""
    if os.environ.get("RLXIR_COMPILED_PLANNER", "1") == "0":
        return False
    return _kernels() is not None


def use_compiled(problem: Problem, cold_from: int | None = None) -> bool:
    """Whether a pass over `problem` without a deadline runs compiled: `COMPILED_FROM`
    buffers or more, int64-safe, and the compiled loops available. With `cold_from`, a
    process that has not loaded the loops yet (about 0.3 s) loads them only for that many
    buffers or more: for a pass whose Python loop is cheap, loading costs more than it
    saves. (A pass with a deadline keeps to Python: the first compile in an installation
    takes seconds, which a time budget cannot absorb.)"""
    if len(problem) < COMPILED_FROM or not problem.int64_safe:
        return False
    if cold_from is not None and len(problem) < cold_from and not _kernels.cache_info().currsize:
        return False
    return compiled_placement_available()


def place_over_compiled_tree(
    problem: Problem,
    order: Sequence[int],
    progress: Callable[[int, int], None] | None = None,
    stop_at: int | None = None,
    stop_cell: list[int] | None = None,
) -> list[int] | None:
    """Offsets (one per buffer, input order) of best-fit placement in `order`, as
    `place_in_order` defines it (fixed offsets first, size-0 buffers at 0; None once a
    placed buffer ends at or above `stop_at`), computed by the compiled loop.

    Only for int64-safe problems (`Problem.int64_safe`) and when
    `compiled_placement_available()`; `progress(placed, total)` is called every
    `CALL_EVERY` placements. `stop_cell`, a one-element list, lowers `stop_at` while the
    pass runs (another thread may write it; it is read between calls of the loop, so a
    pass may place up to `CALL_EVERY` buffers past a new value before it stops).
    """
    place_run = _kernel(problem, "place_run")
    n = len(problem)
    order_array = np.asarray(order, dtype=np.int64).reshape(len(order))
    fixed = np.array([-1 if offset is None else offset for offset in problem.fixed], dtype=np.int64).reshape(n)
    fixed_indices = np.flatnonzero(fixed >= 0).astype(np.int64)
    sequence = np.concatenate([fixed_indices, order_array])
    base = leaf_base(problem.slot_count)
    last_query = last_query_ranks(problem.slot_lo[order_array], problem.slot_hi[order_array],
                                  np.arange(len(order_array), dtype=np.int64), base)
    sizes = problem.size_keys.astype(np.int64, copy=False)
    meta = np.zeros((3 * base, 3), dtype=np.int64)
    pool = np.empty(max(1024, _POOL_PER_BUFFER * n), dtype=np.int64)
    used = np.zeros(1, dtype=np.int64)
    offsets = np.zeros(n, dtype=np.int64)
    limit = (1 << 62) if stop_at is None else min(stop_at, 1 << 62)
    total = len(order_array)
    fixed_count = len(fixed_indices)
    for first in range(0, len(sequence), CALL_EVERY):
        placed = max(0, first - fixed_count)
        if progress is not None and placed < total:
            progress(placed, total)
        stop = min(first + CALL_EVERY, len(sequence))
        if stop_cell is not None:
            limit = min(limit, stop_cell[0])
        stopped, pool = place_run(problem.slot_lo, problem.slot_hi, sizes, fixed, sequence, first, stop,
                                  fixed_count, base, last_query, meta, pool, used, limit, offsets)
        if stopped:
            return None
    return offsets.tolist()


def run_sweep_compiled(events: np.ndarray, problem: Problem, offsets: np.ndarray, top: int) -> None:
    """Apply `events` (event ``i < n`` places buffer i, ``n + i`` frees it, as sweep.py's
    `_events` orders them) to a free list with no gap and its top at `top`, writing
    each placed buffer's offset into `offsets` (int64, one per buffer): what sweep.py's
    `_apply` does with a `_FreeList` in that state. Needs an int64-safe `problem`."""
    sweep_run = _kernel(problem, "sweep_run")
    n = len(problem)
    state = np.array([0, top, top], dtype=np.int64)
    # A gap lies below or between live buffers: never more gaps than buffers, plus one.
    gap_arrays = [np.empty(n + 2, dtype=np.int64) for _ in range(4)]
    sweep_run(np.asarray(events, dtype=np.int64), n, problem.size_keys.astype(np.int64, copy=False), offsets, state,
              *gap_arrays)


def _kernel(problem: Problem, name: str) -> Any:
    kernels = _kernels()
    if kernels is None or not problem.int64_safe:
        raise RuntimeError("the compiled loops need Numba and an int64-safe problem")
    return getattr(kernels, name)


@cache
def _kernels() -> Any:
    """The module of compiled loops, or None where it cannot be set up: Numba missing, or
    failing on this platform (for instance a RuntimeError when no folder can hold its
    cache). The Python loops then run; nothing is lost but time."""
    try:
        return _import_kernels()
    except Exception:
        return None


def _import_kernels() -> Any:
    from rlxir.planning import kernels

    return kernels
