"""The `liveness` planner: greedy by size, best fit, with reuse."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence

import attrs

from rlxir.planning.buffers import Buffer, PlanResult, ProgressSink, placed_share
from rlxir.planning.compiled import place_over_compiled_tree, use_compiled
from rlxir.planning.greedy import place_in_order
from rlxir.planning.orderings import by_size, peak_first
from rlxir.planning.problem import Problem
from rlxir.planning.sweep import peak_sweep_best_fit


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
    offsets), and where the pass from the peak ended more than `retry_above` over the
    bound the retry starts at once in a second thread (`_RetryAhead`): same plan, sooner.
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
        if len(problem) >= self.peak_pass_from and all(offset is None for offset in problem.fixed):
            peak = problem.result(peak_sweep_best_fit(problem), self.name, 0.0)
            if peak.arena_bytes == peak.lower_bound_bytes:
                return attrs.evolve(peak, seconds=time.perf_counter() - started)
        retry_ahead = None
        if peak is not None and peak.arena_bytes > peak.lower_bound_bytes * self.retry_above:
            # The retry is likely: start it now on another core, if it runs compiled.
            retry_ahead = _RetryAhead.start(problem, peak.arena_bytes)
        try:
            # Abandoned (None) as soon as it cannot end below the pass from the peak.
            offsets = place_in_order(problem, by_size(problem), progress=_placing(progress, "greedy by size"),
                                     stop_at=None if peak is None else peak.arena_bytes)
        except BaseException:
            if retry_ahead is not None:
                retry_ahead.stop_cell[0] = 0  # an interrupted plan leaves no work running behind it
            raise
        if offsets is not None:
            result = problem.result(offsets, self.name, 0.0)
            retry_above = result.lower_bound_bytes * self.retry_above
        else:
            assert peak is not None  # without a stop_at, place_in_order always finishes
            result = peak
            # The greedy arena, unknown, may have been past the margin: retry in any case.
            retry_above = result.lower_bound_bytes
        if result.arena_bytes > retry_above:
            # Abandoned (None) as soon as it cannot end below the arena in hand.
            placing = _placing(progress, "peak-first retry")
            if retry_ahead is not None:
                offsets = retry_ahead.finish(result.arena_bytes, placing)
            else:
                offsets = place_in_order(problem, peak_first(problem), progress=placing, stop_at=result.arena_bytes)
            if offsets is not None:
                retry = problem.result(offsets, self.name, 0.0)
                result = retry if retry.arena_bytes < result.arena_bytes else result
        elif retry_ahead is not None:
            retry_ahead.finish(0, None)  # not needed: stop it at its next look at the cell
        return attrs.evolve(result, seconds=time.perf_counter() - started)


class _RetryAhead:
    """The peak-first retry run compiled in a thread beside the by-size pass (the loop
    releases the interpreter lock), stopped at the arena in hand once that is known.

    Its offsets do not depend on where it stops, and its plan is kept only when strictly
    smaller than the arena in hand, as in sequence: starting early changes when the answer
    comes, not what it is. Started only when the pass from the peak ended more than
    `retry_above` over the bound, where the retry usually runs (the crowded instances),
    so elsewhere no core does work that is thrown away.
    """

    def __init__(self, problem: Problem, stop_at: int):
        self.stop_cell = [stop_at]
        self.heard: list[tuple[int, int]] = []
        self.outcome: list[list[int] | None] = []
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(problem,), name="rlxir-retry", daemon=True)

    @classmethod
    def start(cls, problem: Problem, stop_at: int) -> _RetryAhead | None:
        """A retry started beside this thread; None where it would not run compiled or
        the process may use one core only."""
        if not use_compiled(problem) or _usable_cores() < 2:
            return None
        ahead = cls(problem, stop_at)
        ahead.thread.start()
        return ahead

    def _run(self, problem: Problem) -> None:
        try:
            self.outcome.append(place_over_compiled_tree(problem, peak_first(problem),
                                                         progress=lambda placed, total: self.heard.append((placed, total)),
                                                         stop_cell=self.stop_cell))
        except BaseException as error:  # re-raised in the caller's thread by `finish`
            self.failure.append(error)

    def finish(self, stop_at: int, progress: Callable[[int, int], None] | None) -> list[int] | None:
        """The retry's offsets, or None if it stopped at `stop_at` or above; waits for it,
        passing its progress on."""
        self.stop_cell[0] = min(self.stop_cell[0], stop_at)
        while self.thread.is_alive():
            self.thread.join(0.25)
            if progress is not None and self.heard:
                progress(*self.heard[-1])
        if self.failure:
            raise self.failure[0]
        return self.outcome[0]


def _usable_cores() -> int:
    """The cores this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _placing(sink: ProgressSink | None, what: str) -> Callable[[int, int], None] | None:
    if sink is None:
        return None
    return lambda placed, total: sink(f"liveness: {what}, {placed_share(placed, total)}")
