"""The planner's two hot loops compiled with Numba, where Numba is installed.

`place_over_compiled_tree` places buffers one at a time by the rule of `place_in_order`,
over the segment tree of `OccupancyTree` (rlxir/planning/occupancy.py says how it works):
the same cover nodes, and every query takes the union of the same ranges, so the offsets
are the same, buffer for buffer. Where those ranges are kept differs in three ways, each
to spend less on insertions (docs/performance.md, "Fewer lists to update", has the
timings):

- Only the nodes at even levels keep ``sub``. A query covering a node at an odd level
  reads that node's ``own`` and its two children's lists (``sub``, or ``own`` of a leaf)
  instead, so a range placed climbs through half as many ``sub`` lists.
- Blocks: the nodes of 2^`BLOCK_LEVEL` slots each keep one more list, the union of the
  ``own`` ranges stored at the block and at its ancestors up to `BLOCK_BAND` levels above.
  A query's walk up from its end slots takes the ``own`` lists below the block level, the
  two end blocks' lists (sorted already: merged in while the gaps are scanned, not
  gathered and sorted), and ``own`` above the band. A range stored at a node in that
  band goes to the lists of the blocks under it (at most 2^`BLOCK_BAND`) instead of its
  ``own``, which nobody would read but the walk.
- A buffer live to the last slot counts as live to the tree's end (no query lies beyond
  that slot, so every query overlaps it as before): a buffer live throughout, like the
  weights of a training step, is stored at the root alone rather than at a node per set
  bit of the slot count.

As in the Python tree, a list is not updated past the last query that reads it
(`_read_until`). Layout: every range list lives in one pool: list ``v`` (``own[v]`` for
``v < 2 * base``, ``sub[v - 2 * base]`` up to ``3 * base``, the blocks' lists after) is
the run ``pool[start : start + length]`` with room for ``capacity`` bounds (a row of
`meta`). Addresses are counted in the greatest common divisor of the sizes and fixed
offsets (every offset is a sum of them), and the pool is int32 where no address can
reach 2^31 of those units (`address_unit`), int64 otherwise; `meta` is int32 while the
pool's positions fit. A list that outgrows its room moves to the end of the pool with
twice the room; when the pool is full the loop pauses, this module doubles the pool, and
the loop inserts that buffer's range again (a range inserted twice changes no list). A
query gathers the ranges of the lists it takes, sorts them by start (into buckets by
their high address bits, then an insertion sort), merges the two end blocks' lists where
it has two, and scans the gaps of the union of the two sorted streams for the best fit,
taking the next range from either by a select, not a branch. The loop asks for memory
ahead (rlxir/planning/prefetching.py): the rows of `meta` two placements ahead, the lists
they point to one placement ahead, so that its walks, which would otherwise wait on a
cache miss at almost every list, find them loaded; it reads each buffer's slots and size
from arrays permuted into placement order, one after another. Its steps allocate nothing
and are compiled without Numba's reference counts (kernels.py says why).

`run_sweep_compiled` applies the events of rlxir/planning/sweep.py's free-gap sweep
(used by the pass from the peak) the same way (its loop in sweep_kernels.py): the free
gaps are kept twice, sorted by (size, start) for the best fit and by start for the
neighbours a freed range joins.

Both are used for passes of `COMPILED_FROM` buffers or more that have no deadline
(`use_compiled`; the pass from the peak loads the loops itself only from 200,000
buffers). Numba compiles the loops on first use and caches the machine code beside this
file (or in the user's cache folder when that is read-only), so the compile (about 7 s,
and about 6 s more for int64 range lists when a plan first needs them) is paid once per
installation and a process loads them in about 0.4 s. Without Numba (or
where it fails to set up), or with ``RLXIR_COMPILED_PLANNER=0`` in the environment,
`compiled_placement_available()` is False and the Python loops run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

from rlxir.planning.occupancy import leaf_base, live_to_the_end
from rlxir.planning.problem import Problem

# Buffers from which a pass without a deadline runs compiled, where it can: below, the
# Python loops take a few hundred milliseconds at most, about what loading the compiled
# ones costs a process the first time.
COMPILED_FROM = 16384

# Placements per call of the compiled loop: progress is reported between calls.
CALL_EVERY = 4096

# Tree level of the blocks: nodes of 2^BLOCK_LEVEL slots whose lists hold the ranges stored
# at or above them, so a query's walk up from its end slots stops at that level.
BLOCK_LEVEL = 8
# Levels above the block level whose nodes' ranges also go to the blocks' lists (a node at
# the top of that band holds 2^BLOCK_BAND blocks to update); further up, the nodes keep
# ``own`` and a query's walk goes on through them.
BLOCK_BAND = 6
# Updates of blocks' lists per buffer, on average, that a band may cost: past that, the
# long-lived ranges it would send to the blocks (activations kept for a backward pass
# span half the schedule) cost more to spread than the walks save.
BAND_UPDATES = 12

# A limit no arena reaches (the offsets of an int64-safe problem stay below it): "no stop".
NO_LIMIT = 1 << 62

# Pool bounds reserved per buffer up front (it doubles when that is not enough). The loop
# uses 11-44 per buffer on the shared and generated instances; it writes the pool from its
# start up, so the pages of a reservation it never reaches are never touched: room costs
# address space, where growing the pool mid-pass costs a copy (10-90 ms on 200,000 buffers,
# twice, and as much again in the other thread).
_POOL_PER_BUFFER = 64
# Ranges a query may gather before the scratch arrays grow (to twice what it needed).
_SCRATCH_RANGES = 1024
# Pool sizes (in bounds) below which the rows locating its lists are int32.
_META32_BELOW = 1 << 31


def compiled_placement_available() -> bool:
    """Whether `place_over_compiled_tree` can run: Numba imports and the environment does
    not turn it off (``RLXIR_COMPILED_PLANNER=0``)."""
    if os.environ.get("RLXIR_COMPILED_PLANNER", "1") == "0":
        return False
    return _kernels() is not None


def use_compiled(problem: Problem, cold_from: int | None = None) -> bool:
    """Whether a pass over `problem` without a deadline runs compiled: `COMPILED_FROM`
    buffers or more, int64-safe, and the compiled loops available. With `cold_from`, a
    process that has not loaded the loops yet (about 0.4 s) loads them only for that many
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
    stop_cell: list[int] | np.ndarray | None = None,
) -> list[int] | None:
    """Offsets (one per buffer, input order) of best-fit placement in `order`, as
    `place_in_order` defines it (fixed offsets first, size-0 buffers at 0; None once a
    placed buffer ends at or above `stop_at`), computed by the compiled loop.

    Only for int64-safe problems (`Problem.int64_safe`) and when
    `compiled_placement_available()`; `progress(placed, total)` is called every
    `CALL_EVERY` placements. `stop_cell`, a one-element list or int64 array, lowers
    `stop_at` while the pass runs: another thread may write it. The loop reads an array at
    every placement, a list between its calls (up to `CALL_EVERY` placements apart) and at
    the end; a buffer placed before the value was lowered counts as well, so whether the
    pass returns None does not depend on when the value changed.
    """
    placed = place_with_arena(problem, order, progress, stop_at, stop_cell)
    return None if placed is None else placed[0].tolist()


def place_with_arena(
    problem: Problem,
    order: Sequence[int],
    progress: Callable[[int, int], None] | None = None,
    stop_at: int | None = None,
    stop_cell: list[int] | np.ndarray | None = None,
) -> tuple[np.ndarray, int] | None:
    """`place_over_compiled_tree`'s offsets, as an int64 array, with their arena (the
    highest end, 0 where none), which the loop keeps as it places: no second pass over
    the offsets."""
    kernels = _kernels()
    place_run = _kernel(problem, "place_run")
    n = len(problem)
    order_array = np.asarray(order, dtype=np.int64).reshape(len(order))
    fixed = problem.fixed_array()
    fixed_indices = np.flatnonzero(fixed >= 0).astype(np.int64)
    sequence = np.concatenate([fixed_indices, order_array])
    base = max(2, leaf_base(problem.slot_count))
    block_level = min(BLOCK_LEVEL, base.bit_length() - 1)
    slot_hi = live_to_the_end(problem.slot_hi, problem.slot_count, base)
    per_level: list[int] = []
    read_until, block_read_until = _read_until(problem.slot_lo[order_array], slot_hi[order_array], base,
                                               block_level, per_level)
    block_band = _block_band(per_level, len(order_array), block_level, base.bit_length() - 1)
    sizes = problem.size_keys.astype(np.int64, copy=False)
    limit = NO_LIMIT if stop_at is None else min(stop_at, NO_LIMIT)
    unit, bounds = address_unit(sizes, fixed, limit)
    sizes = sizes // unit
    fixed = np.where(fixed >= 0, fixed // unit, -1)
    # Slots and sizes in placement order: the loop reads them one after another.
    lo_at, hi_at, size_at = problem.slot_lo[sequence], slot_hi[sequence], sizes[sequence]
    pool = np.empty(max(1024, _POOL_PER_BUFFER * n), dtype=bounds)
    # Each row of `meta` locates a list in the pool: int32 while the pool's positions fit.
    meta = np.zeros((3 * base + (base >> block_level), 3), dtype=np.int32 if len(pool) < _META32_BELOW else np.int64)
    used = np.zeros(1, dtype=np.int64)
    offsets = np.zeros(n, dtype=np.int64)
    # The highest end of the order's buffers so far (-1: none yet); where a call paused, and why.
    state = np.array([-1, 0, 0], dtype=np.int64)
    work = kernels.work_arrays(base, _SCRATCH_RANGES, bounds)
    shared = isinstance(stop_cell, np.ndarray)
    cell = stop_cell if shared else np.array([NO_LIMIT], dtype=np.int64)
    total = len(order_array)
    fixed_count = len(fixed_indices)
    for first in range(0, len(sequence), CALL_EVERY):
        placed = max(0, first - fixed_count)
        if progress is not None and placed < total:
            progress(placed, total)
        stop = min(first + CALL_EVERY, len(sequence))
        if stop_cell is not None and not shared:
            cell[0] = min(cell[0], stop_cell[0])
        start = first
        resume = False
        while True:
            outcome = place_run(lo_at, hi_at, size_at, fixed, sequence, start, stop, fixed_count, base,
                                block_level, block_band, read_until, block_read_until, meta, pool, used, unit,
                                limit, cell, offsets, state, work, resume)
            if outcome == kernels.PLACED:
                break
            if outcome == kernels.STOPPED:
                return None
            start = int(state[1])
            resume = outcome == kernels.POOL_FULL
            if resume:
                pool = _grown(pool)
                if len(pool) >= _META32_BELOW:
                    meta = meta.astype(np.int64, copy=False)
            else:
                work = kernels.work_arrays(base, 2 * int(state[2]), bounds)
    if stop_cell is not None and state[0] >= stop_cell[0]:
        return None
    fixed_top = int(np.max(fixed[fixed_indices] + sizes[fixed_indices], initial=0)) * unit
    if unit != 1:
        offsets *= unit
    return offsets, max(int(state[0]), fixed_top, 0)


def _grown(pool: np.ndarray) -> np.ndarray:
    """`pool` with twice the room (its bounds kept; the new half left untouched)."""
    grown = np.empty(2 * len(pool), dtype=pool.dtype)
    grown[: len(pool)] = pool
    return grown


def address_unit(sizes: np.ndarray, fixed: np.ndarray, limit: int) -> tuple[int, type]:
    """The unit the loop counts addresses in and the integer type of its range lists, for
    a pass over buffers of `sizes` (int64) with `fixed` offsets (-1: none) that stops at
    `limit`: the greatest common divisor of the sizes and fixed offsets (every offset the
    pass gives is a sum of them), and int32 where no address it stores can reach 2^31 units
    (half the bytes to read and move as int64; `NO_LIMIT`, 2^62, is int64's bound).

    A placed buffer ends at most at the highest fixed end plus the sizes of the buffers
    placed before it, and never at or above `limit` (the pass stops first)."""
    values = np.concatenate([sizes[sizes > 0], fixed[fixed > 0]])
    unit = int(np.gcd.reduce(values)) if len(values) else 1
    fixed_top = int(np.max(np.where(fixed >= 0, fixed + sizes, 0), initial=0))
    top = max(fixed_top, min(fixed_top + int(sizes.sum()), limit))
    return unit, (np.int32 if -(-top // unit) < 1 << 31 else np.int64)


def _block_band(per_level: list[int], placed: int, block_level: int, depth: int) -> int:
    """The widest band of levels above the block level, up to `BLOCK_BAND` and the root's
    level `depth`, whose ranges cost at most `BAND_UPDATES` updates of blocks' lists per
    placed buffer in all (a range stored k levels above the block level updates 2^k of
    them), given the number of cover nodes the `placed` buffers have at each level
    (`per_level`, leaves first; levels past its end have none)."""
    updates = 0
    band = -1
    for level in range(block_level, min(block_level + BLOCK_BAND, depth) + 1):
        updates += (per_level[level] if level < len(per_level) else 0) << (level - block_level)
        if updates > BAND_UPDATES * placed:
            break
        band += 1
    return max(band, 0)


def _read_until(slot_lo: np.ndarray, slot_hi: np.ndarray, base: int, block_level: int,
                per_level: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """For the queries ``[slot_lo[r], slot_hi[r])`` in rank order: per tree node, the last
    rank that reads the list the loop keeps for it, and per block, the last rank whose
    path walk reads the block's list (-1 where none does; int64). Their cover nodes per
    level are appended to `per_level` (as `last_query_ranks` counts them), computed by the
    compiled `query_reads`.

    A node at an odd level keeps ``own`` for the queries covering it; one at an even level
    keeps ``sub`` for those covering it or its parent (which reads its children's lists).
    A query reads the lists of the blocks holding its first and its last slot."""
    last = np.full(2 * base, -1, dtype=np.int64)
    block_read_until = np.full(base >> block_level, -1, dtype=np.int64)
    counts = np.zeros(base.bit_length() + 1, dtype=np.int64)
    levels = _kernels().query_reads(np.ascontiguousarray(slot_lo, dtype=np.int64),
                                    np.ascontiguousarray(slot_hi, dtype=np.int64), base, block_level, last,
                                    block_read_until, counts)
    per_level.extend(counts[:levels].tolist())
    read_until = last.copy()
    depth = base.bit_length() - 1
    for level in range(2, depth + 1, 2):
        nodes = np.arange(base >> level, 2 * base >> level)
        nodes = nodes[nodes >= 2]  # the root has no parent
        read_until[nodes] = np.maximum(last[nodes], last[nodes >> 1])
    return read_until, block_read_until


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


def overlap_found(problem: Problem, offsets: np.ndarray) -> bool:
    """Whether two buffers of `problem` that share a slot overlap in address at `offsets`
    (int64, one per buffer, each at least zero, every end below `NO_LIMIT`): each buffer
    of a size, in order of offset, against the highest end of those before it that share a
    slot with it (`first_overlap` of rlxir/planning/validate_kernels.py). Which buffers
    overlap is left to `validate_plan`'s sweep to find and word. Needs an int64-safe
    `problem`."""
    first_overlap = _kernel(problem, "first_overlap")
    sizes = problem.size_keys.astype(np.int64, copy=False)
    taking = np.flatnonzero(sizes > 0)  # an empty buffer holds no address
    order = taking[np.argsort(offsets[taking], kind="stable")]
    base = max(2, leaf_base(problem.slot_count))
    highest, whole = np.zeros(2 * base, dtype=np.int64), np.zeros(2 * base, dtype=np.int64)
    return first_overlap(order, problem.slot_lo, problem.slot_hi, offsets, sizes, base, highest, whole) >= 0


def _kernel(problem: Problem, name: str) -> Any:
    kernels = _kernels()
    if kernels is None or not problem.int64_safe:
        raise RuntimeError("the compiled loops need Numba and an int64-safe problem")
    return _interruptible(getattr(kernels, name))


def _interruptible(loop: Callable[..., Any]) -> Callable[..., Any]:
    """`loop`, with an interrupt (Ctrl-C) that lands during a call raised as the
    KeyboardInterrupt it is. Numba's dispatcher can run the interrupt's handler in a
    Python callback of its own (it unpickles constants) and then return its result with
    that exception still set, which Python reports as a SystemError caused by it."""

    def call(*args: Any) -> Any:
        try:
            return loop(*args)
        except SystemError as error:
            if isinstance(error.__cause__, KeyboardInterrupt):
                raise error.__cause__ from None
            raise

    return call


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
