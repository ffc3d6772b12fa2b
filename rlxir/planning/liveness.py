"""The `liveness` planner: greedy by size, best fit, with reuse."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from rlxir.planning.buffers import Buffer, PlanResult, ProgressSink, placed_share
from rlxir.planning.compiled import NO_LIMIT, place_with_arena, use_compiled
from rlxir.planning.greedy import place_in_order
from rlxir.planning.orderings import by_size, by_size_array, peak_first, peak_first_array
from rlxir.planning.problem import Problem
from rlxir.planning.sweep import COLD_COMPILED_FROM, peak_sweep_best_fit


@attrs.frozen
class LivenessPlanner:
    """Greedy by size with best fit: the shared planner of the CPU, GPU and Metal targets.

    Buffers with a fixed offset stay there. The others are placed largest first (ties:
    earliest start, longest lifetime, name); each goes into the smallest free address gap
    that holds it among the already-placed buffers live at the same time as it (the lowest
    such gap on ties), or right above the highest of them when none does.

    This is RLX's placement rule without its cost: RLX scans every placed buffer for every
    candidate offset (O(n^3)); here an interval structure over time keeps merged address
    ranges (`OccupancyTree`), so no query lists the overlapping buffers one by one.

    On `peak_pass_from` buffers or more without imposed offsets, a cheaper pass runs first
    (`peak_sweep_best_fit`: best fit outward from the peak slot, 2.4-9.5x the lower-bound
    sweep); when its arena is the lower bound, no plan can be smaller and it is returned
    as it is (synth100k; on the idealloc instances it ends 0.85-3.7 % above the bound and
    the greedy rule below runs as before). Otherwise its plan is kept in hand: the
    greedy placement stops as soon as a buffer it places ends at or above that plan's
    arena (the greedy arena could then not be smaller), and the pass's plan is the
    result. So the arena is the smaller of the two, never more than the greedy one
    (crowded20000: 1.1608x the bound from the pass against 1.1742x by size).

    When the greedy arena ends more than `retry_above` over the lower bound, the same rule
    runs once more with the buffers live at the peak placed first (`peak_first`), and the
    smaller arena is kept: large early buffers can leave holes at the peak that no later
    buffer fills (iopddl/S_1 ends 1.6 % above the bound without it, at the bound with it).
    Instances already within the margin pay nothing, and the retry stops as soon as a
    buffer it places ends at or above the arena in hand (it could no longer win: after
    14-33 % of its placements on three crowded synthetic instances, 65 % on
    crowded200000). When the greedy pass stopped at the peak pass's arena, its own arena
    is unknown, so the retry runs in any case: the result is never above what the two
    greedy passes alone return.

    On large instances the passes run compiled (rlxir/planning/compiled.py; same
    offsets), and, where the process may use two cores, the pass from the peak runs in a
    second thread while this one places by size, followed there by the retry when the
    pass from the peak ended more than `retry_above` over the bound (`_PassesAhead`):
    same plan, sooner.
    """

    name: str = "liveness"
    retry_above: float = 1.01
    peak_pass_from: int = 4096
    """Buffers from which the pass outward from the peak is tried first (below, the
    greedy placement costs a few milliseconds anyway)."""

    def plan(self, buffers: Sequence[Buffer], alignment: int = 1, time_budget: float | None = None,
             progress: ProgressSink | None = None) -> PlanResult:
        """Place `buffers` at `alignment`. `time_budget` is accepted and ignored (the
        passes always finish); `progress` hears how far each pass is."""
        started = time.perf_counter()
        problem = Problem.build(buffers, alignment)
        peak = None
        if len(problem) >= self.peak_pass_from and not problem.has_fixed():
            ahead = _PassesAhead.start(problem, self.name, self.retry_above)
            if ahead is None:
                peak = problem.result(peak_sweep_best_fit(problem), self.name, 0.0)
                if peak.arena_bytes == peak.lower_bound_bytes:
                    return attrs.evolve(peak, seconds=time.perf_counter() - started)
                if peak.arena_bytes > peak.lower_bound_bytes * self.retry_above:
                    # The retry is likely: start it now on another core, if it runs compiled.
                    ahead = _PassesAhead.start(problem, self.name, self.retry_above, peak)
            if ahead is not None:
                return attrs.evolve(self._plan_beside(problem, ahead, progress),
                                    seconds=time.perf_counter() - started)
        # Abandoned (None) as soon as it cannot end below the pass from the peak.
        order = by_size(problem)
        offsets = place_in_order(problem, order, progress=_placing(progress, "greedy by size"),
                                 stop_at=None if peak is None else peak.arena_bytes)
        result, retry_above = self._by_size_or_peak(problem, offsets, peak)
        if result.arena_bytes > retry_above:
            # Abandoned (None) as soon as it cannot end below the arena in hand.
            offsets = place_in_order(problem, peak_first(problem, by_size_order=order),
                                     progress=_placing(progress, "peak-first retry"), stop_at=result.arena_bytes)
            result = self._smaller(problem, result, offsets)
        return attrs.evolve(result, seconds=time.perf_counter() - started)

    def _plan_beside(self, problem: Problem, ahead: _PassesAhead, progress: ProgressSink | None) -> PlanResult:
        """The plan of `plan`, with the pass from the peak (unless it ran already) and the
        retry, where that pass misses the bound by more than the margin, run in `ahead`'s
        thread while this one places by size."""
        by_size_arena = NO_LIMIT
        offsets = None
        try:
            order = by_size_array(problem)
            ahead.by_size_order.append(order)  # the retry's order starts from it
            placed = place_with_arena(problem, order, progress=_placing(progress, "greedy by size"),
                                      stop_cell=ahead.by_size_cell)
            if placed is not None:
                offsets, by_size_arena = placed
                # The retry can no longer win at or above this arena: stop it there now.
                ahead.retry_cell[0] = min(ahead.retry_cell[0], by_size_arena)
            peak_arena = ahead.peak_arena()
        except BaseException:
            ahead.stop()  # an interrupted plan leaves no work running behind it
            raise
        lower_bound = problem.lower_bound_bytes()
        if peak_arena == lower_bound:
            ahead.stop()
            return ahead.peak_result()
        if offsets is not None and by_size_arena >= peak_arena:
            # The peak's arena came after the by-size pass placed a buffer ending above it:
            # in sequence the pass would have stopped there.
            offsets = None
        peak = ahead.peak_result() if offsets is None else None  # a dictionary of every offset: only where needed
        result, retry_above = self._by_size_or_peak(problem, offsets, peak, by_size_arena)
        if result.arena_bytes <= retry_above:
            ahead.stop()  # not needed: it stops at its next look at the cell
            return result
        placing = _placing(progress, "peak-first retry")
        if ahead.retrying:
            retried = ahead.finish_retry(result.arena_bytes, placing)
            if retried is None:
                return result
            return self._smaller(problem, result, *retried)
        # The pass from the peak was within the margin, the by-size pass did not beat it.
        offsets = place_in_order(problem, peak_first_array(problem, by_size_order=order), progress=placing,
                                 stop_at=result.arena_bytes)
        return self._smaller(problem, result, offsets)

    def _by_size_or_peak(self, problem: Problem, offsets: Sequence[int] | np.ndarray | None,
                         peak: PlanResult | None, arena: int | None = None) -> tuple[PlanResult, float]:
        """The plan in hand after the by-size pass (its `offsets`, None where it was
        abandoned at the peak's arena; `arena`, their highest end, where known) and the
        arena above which the retry runs."""
        if offsets is not None:
            result = problem.result(offsets, self.name, 0.0, arena)
            return result, result.lower_bound_bytes * self.retry_above
        assert peak is not None  # without a stop, the by-size pass always finishes
        # The greedy arena, unknown, may have been past the margin: retry in any case.
        return peak, peak.lower_bound_bytes

    def _smaller(self, problem: Problem, result: PlanResult, offsets: Sequence[int] | np.ndarray | None,
                 arena: int | None = None) -> PlanResult:
        """`result`, or the retry's plan (`offsets`, None where abandoned; `arena`, their
        highest end, where known) when strictly smaller."""
        if offsets is None:
            return result
        retry = problem.result(offsets, self.name, 0.0, arena)
        return retry if retry.arena_bytes < result.arena_bytes else result


class _PassesAhead:
    """The pass from the peak (or its plan, where it has run already), then, where it
    misses the bound by more than the margin, the peak-first retry, run compiled in a
    second thread while the caller's thread places by size (the compiled loops release
    the interpreter lock).

    The by-size pass reads `by_size_cell` (an int64 array) at every placement: the peak's
    arena once that is known (0 where it is the bound: the by-size pass is not needed), so
    it stops as it would have in sequence or later, never earlier; the caller compares the
    arenas itself. The retry stops at `retry_cell`, read the same way: the peak's arena,
    lowered to the arena in hand once the by-size pass has it. Every offset is what the
    passes give in sequence: starting early changes when the answer comes, not what it
    is. Started only where the passes run compiled and the process may use two cores.

    The retry's order is taken from the by-size order the caller appends to
    `by_size_order` (this thread sorts its own where none has come when it needs one),
    and the pass from the peak's `PlanResult`, a dictionary of every offset, is made only
    when the caller asks for it: the thread goes from the one pass to the other with
    its arena alone.
    """

    def __init__(self, problem: Problem, name: str, retry_above: float, peak: PlanResult | None):
        stop = NO_LIMIT if peak is None else peak.arena_bytes
        self.problem = problem
        self.name = name
        self.by_size_cell = np.array([stop], dtype=np.int64)
        self.retry_cell = np.array([stop], dtype=np.int64)
        self.retrying = False
        self.heard: list[tuple[int, int]] = []
        self.by_size_order: list[np.ndarray] = []
        # The pass from the peak: its offsets (None where its plan was given) and arena, and
        # its `PlanResult` once asked for (or given).
        self.peak: list[PlanResult] = [] if peak is None else [peak]
        self.peak_plan: list[tuple[list[int] | None, int]] = [] if peak is None else [(None, peak.arena_bytes)]
        self.outcome: list[tuple[np.ndarray, int] | None] = []
        self.failure: list[BaseException] = []
        self.peak_known = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(retry_above,), name="rlxir-peak", daemon=True)

    @classmethod
    def start(cls, problem: Problem, name: str, retry_above: float,
              peak: PlanResult | None = None) -> _PassesAhead | None:
        """The passes started beside this thread (the retry alone where the pass from the
        `peak` has run already); None where the process may use one core only or the
        passes would not run compiled. A process that has not loaded the compiled loops
        loads them for the pass from the peak only from `COLD_COMPILED_FROM` buffers:
        below, that pass reaches the bound in Python often enough (the plans of most
        inference graphs) that loading them first would cost more."""
        cold_from = COLD_COMPILED_FROM if peak is None else None
        if _usable_cores() < 2 or not use_compiled(problem, cold_from=cold_from):
            return None
        ahead = cls(problem, name, retry_above, peak)
        ahead.thread.start()
        return ahead

    def _run(self, retry_above: float) -> None:
        problem = self.problem
        try:
            if not self.peak_plan:
                offsets = peak_sweep_best_fit(problem)
                self.peak_plan.append((offsets, problem.arena_bytes(offsets)))
            arena = self.peak_plan[0][1]
            lower_bound = problem.lower_bound_bytes()
            self.by_size_cell[0] = 0 if arena == lower_bound else arena
            self.retry_cell[0] = min(self.retry_cell[0], arena)
            self.retrying = arena > lower_bound * retry_above
            self.peak_known.set()
            if self.retrying:
                order = self.by_size_order[0] if self.by_size_order else by_size_array(problem)
                self.outcome.append(place_with_arena(
                    problem, peak_first_array(problem, by_size_order=order),
                    progress=lambda placed, total: self.heard.append((placed, total)), stop_cell=self.retry_cell))
        except BaseException as error:  # re-raised in the caller's thread
            self.failure.append(error)
        finally:
            self.peak_known.set()

    def peak_arena(self) -> int:
        """The arena of the pass from the peak; waits for it."""
        self.peak_known.wait()
        if not self.peak_plan:
            raise self.failure[0]
        return self.peak_plan[0][1]

    def peak_result(self) -> PlanResult:
        """The pass from the peak's plan; waits for it."""
        arena = self.peak_arena()
        if not self.peak:
            self.peak.append(self.problem.result(self.peak_plan[0][0], self.name, 0.0, arena))
        return self.peak[0]

    def finish_retry(self, stop_at: int,
                     progress: Callable[[int, int], None] | None) -> tuple[np.ndarray, int] | None:
        """The retry's offsets and arena, or None if it stopped at `stop_at` or above;
        waits for it, passing its progress on."""
        self.retry_cell[0] = min(self.retry_cell[0], stop_at)
        while self.thread.is_alive():
            self.thread.join(0.25)
            if progress is not None and self.heard:
                progress(*self.heard[-1])
        if self.failure:
            raise self.failure[0]
        return self.outcome[0]

    def stop(self) -> None:
        """Stop whatever still runs at its next look at a cell (the pass from the peak
        has none: it ends on its own)."""
        self.retry_cell[0] = 0
        self.by_size_cell[0] = 0


def _usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _placing(sink: ProgressSink | None, what: str) -> Callable[[int, int], None] | None:
    if sink is None:
        return None
    return lambda placed, total: sink(f"liveness: {what}, {placed_share(placed, total)}")
