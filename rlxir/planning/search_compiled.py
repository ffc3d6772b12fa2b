"""`CanonicalSearch` compiled: the same search, node for node, as rlxir/planning/search.py,
run by the loop in rlxir/planning/search_kernels.py (Numba).

`compiled_if_ready(search, problem)` gives the compiled search where it is ready and the
Python one otherwise. Ready means: Numba imports, ``RLXIR_COMPILED_PLANNER`` is not ``0``, and the
loop is compiled already, in this process or in Numba's cache on disk. The first compile
in an installation takes about 5 s, more than `best`'s default budget, so `best` never
waits for it; `prepare_compiled_search()` compiles it (and caches it for every later
process), and the test suite does so on its first compiled search. Loading the cached
loop costs a process about 0.4 s (Numba's import included) and makes each search node
10-25x cheaper.
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

import numpy as np

from rlxir.planning.buffers import Buffer
from rlxir.planning.compiled import compiled_placement_available
from rlxir.planning.problem import Problem
from rlxir.planning.search import CanonicalSearch

# Placement attempts per call of the compiled loop: the deadline is read between calls
# (at most about 15 ms apart on MiniMalloc's challenging set).
ATTEMPTS_PER_CALL = 1024

# Node limits beyond int64 mean "no limit".
_NO_LIMIT = (1 << 62) - 1


class CompiledCanonicalSearch:
    """`CanonicalSearch`'s interface (`solve`, `nodes`, `overlaps`), run compiled. Every
    answer is the Python search's for the same arguments while the deadline does not bind."""

    def __init__(self, python: CanonicalSearch, kernels: Any):
        self.python = python  # its set-up (overlaps, slot members) is shared
        self.kernels = kernels
        self.overlaps = self.python.overlaps
        self.n = n = self.python.n
        self.nodes = 0
        self.sizes = self.python.sizes
        self.slot_lo = python.slot_lo_array.astype(np.int64).reshape(n)
        self.slot_hi = python.slot_hi_array.astype(np.int64).reshape(n)
        degrees = np.fromiter((len(row) for row in self.overlaps), dtype=np.int64, count=n)
        self.overlap_start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(degrees, out=self.overlap_start[1:])
        self.overlap = np.concatenate([*self.overlaps, np.zeros(0, np.int64)]).astype(np.int64)
        self.members = self.python.slot_members.astype(np.int64)
        self.member_start = self.python.slot_member_start.astype(np.int64)
        slots = len(self.python.initial_totals)
        # A frame per depth (at most one per buffer, plus the last one pushed).
        self.candidates = np.zeros((n + 1, max(n, 1)), dtype=np.int64)
        self.floor_saved = np.zeros((n + 1, max(slots, 1)), dtype=np.int64)
        self.frames = np.zeros((12, n + 1), dtype=np.int64)
        self.has_undo = np.zeros(n + 1, dtype=np.bool_)
        # Every raise is of a neighbour of a buffer on the stack: at most one entry per overlap.
        self.log_buffer = np.zeros(max(len(self.overlap), 1), dtype=np.int64)
        self.log_old = np.zeros_like(self.log_buffer)
        self.raised = np.zeros(n, dtype=np.bool_)
        self.fresh = np.zeros(max(n, 1), dtype=np.int64)

    def solve(self, capacity: int, order: list[int], node_limit: int, deadline: float) -> list[int] | None:
        """See `CanonicalSearch.solve`."""
        k = self.kernels
        n = self.n
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        at_rank = np.asarray(order, dtype=np.int64).reshape(n)
        min_offset = np.zeros(n, dtype=np.int64)
        unplaced = self.sizes > 0  # empty buffers sit at 0 from the start
        offsets = np.zeros(n, dtype=np.int64)
        floor = np.zeros(len(self.python.initial_totals), dtype=np.int64)
        totals = self.python.initial_totals.astype(np.int64, copy=True)
        (count, lowest_top, position, last_offset, last_rank, checked, placed_offset, placed_rank, placed_buffer,
         log_start, saved_lo, saved_hi) = self.frames
        state = np.zeros(4, dtype=np.int64)
        state[k.REMAINING] = int(unplaced.sum())
        self.nodes = 0
        if not state[k.REMAINING]:
            return offsets.tolist()
        self.frames[:, 0] = 0
        k.first_candidates(self.sizes, unplaced, min_offset, rank, self.candidates, count, lowest_top)
        last_rank[0] = checked[0] = placed_rank[0] = -1
        self.has_undo[0] = False
        limit = min(int(node_limit), _NO_LIMIT)
        while True:
            outcome = k.search_run(
                self.sizes, self.slot_lo, self.slot_hi, self.overlap_start, self.overlap, self.member_start,
                self.members, int(capacity), rank, at_rank, min_offset, unplaced, offsets, floor, totals,
                self.candidates, count, lowest_top, position, last_offset, last_rank, checked, self.has_undo,
                placed_offset, placed_rank, placed_buffer, self.floor_saved, saved_lo, saved_hi, self.log_buffer,
                self.log_old, log_start, self.raised, self.fresh, state, limit, ATTEMPTS_PER_CALL)
            self.nodes = int(state[k.NODES])
            if outcome == k.FOUND:
                return offsets.tolist()
            if outcome != k.PAUSED or time.perf_counter() > deadline:
                return None


def compiled_if_ready(search: CanonicalSearch, problem: Problem) -> CanonicalSearch | CompiledCanonicalSearch:
    """`search` (the Python search over `problem`) run compiled where the loop is ready
    (see the module's docstring), else `search` itself. The search's keys (offset times
    buffer count) must stay below 2^62: the capacities it is asked for never exceed the
    sum of all sizes."""
    if not _keys_fit(problem):
        return search
    kernels = _ready_kernels()
    if kernels is None:
        return search
    return CompiledCanonicalSearch(search, kernels)


def prepare_compiled_search() -> bool:
    """Compile the search's loop now (about 5 s the first time in an installation, then
    cached on disk), so that `best` uses it from the next plan on; False where Numba is
    unavailable or turned off."""
    kernels = _kernels()
    if kernels is None:
        return False
    problem = Problem.build([Buffer("a", 0, 2, 1), Buffer("b", 1, 3, 1)], 1)
    CompiledCanonicalSearch(CanonicalSearch(problem), kernels).solve(2, [0, 1], 10, time.perf_counter() + 600)
    return True


def _keys_fit(problem: Problem) -> bool:
    return (sum(problem.sizes) + 1) * max(len(problem), 1) < (1 << 62)


def _ready_kernels() -> Any:
    kernels = _kernels()
    if kernels is None or not (kernels.search_run.signatures or _cached_on_disk(kernels.search_run)):
        return None
    return kernels


def _cached_on_disk(dispatcher: Any) -> bool:
    """Whether Numba's disk cache holds a compiled version of `dispatcher` for its current
    source (read through Numba's cache object; any failure counts as no)."""
    try:
        return bool(dispatcher._cache._cache_file._load_index())
    except Exception:
        return False


@cache
def _kernels() -> Any:
    """rlxir/planning/search_kernels.py, or None where the planner's compiled loops are
    unavailable or turned off (`compiled_placement_available`)."""
    if not compiled_placement_available():
        return None
    try:
        from rlxir.planning import search_kernels
    except Exception:
        return None
    return search_kernels
