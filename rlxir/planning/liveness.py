"""The `liveness` planner: greedy by size, best fit, with reuse."""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs

from rlxir.planning.buffers import Buffer, PlanResult
from rlxir.planning.greedy import place_in_order
from rlxir.planning.orderings import by_size
from rlxir.planning.problem import Problem


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
    """

    name: str = "liveness"

    def plan(self, buffers: Sequence[Buffer], alignment: int = 1, time_budget: float | None = None) -> PlanResult:
        """Place `buffers` at `alignment`. `time_budget` is accepted and ignored (one pass)."""
        started = time.perf_counter()
        problem = Problem.build(buffers, alignment)
        offsets = place_in_order(problem, by_size(problem))
        return problem.result(offsets, self.name, time.perf_counter() - started)
