"""The `bump` planner: one pass in schedule order, no reuse (RLX's ROCm and CUDA rule)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs

from rlxir.planning.buffers import Buffer, PlanResult, ProgressSink
from rlxir.planning.problem import Problem


@attrs.frozen
class BumpPlanner:
    """Every buffer at the cursor, in the order given; the cursor then moves past it.

    The caller passes the buffers in schedule order. Aliasing is the caller's: RLX's ROCm
    and CUDA backends give a reshape or a cast its input's slot, so the caller simply does
    not pass those as buffers. Nothing is reused, so the arena is the final cursor, the sum
    of the aligned sizes (plus, with fixed offsets, the highest imposed end: the cursor
    starts above every buffer whose offset is imposed, so none is ever overlapped).
    """

    name: str = "bump"

    def plan(self, buffers: Sequence[Buffer], alignment: int = 1, time_budget: float | None = None,
             progress: ProgressSink | None = None) -> PlanResult:
        """Place `buffers` at `alignment`. `time_budget` and `progress` are accepted and
        ignored (one pass, O(n))."""
        started = time.perf_counter()
        problem = Problem.build(buffers, alignment)
        return problem.result(bump_offsets(problem), self.name, time.perf_counter() - started)


def bump_offsets(problem: Problem) -> list[int]:
    """Imposed offsets kept; every other buffer at a cursor that starts above all of them
    and moves past each buffer in turn (input order). Always a valid plan, in O(n)."""
    cursor = max(
        (fixed + size for fixed, size in zip(problem.fixed, problem.sizes) if fixed is not None),
        default=0,
    )
    offsets = []
    for fixed, size in zip(problem.fixed, problem.sizes):
        if fixed is not None:
            offsets.append(fixed)
            continue
        offsets.append(cursor)
        cursor += size
    return offsets
