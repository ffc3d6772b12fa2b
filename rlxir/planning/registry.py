"""Planners by name: what a backend declares as its `planner`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Protocol

from rlxir.planning.best import BestPlanner
from rlxir.planning.buffers import Buffer, PlanResult, ProgressSink
from rlxir.planning.bump import BumpPlanner
from rlxir.planning.errors import PlanError
from rlxir.planning.liveness import LivenessPlanner


class Planner(Protocol):
    """Places buffers in one arena. `time_budget` (seconds) matters to `best` only;
    `progress`, when given, receives a one-line status now and then during long work."""

    name: str

    def plan(self, buffers: Sequence[Buffer], alignment: int = 1, time_budget: float | None = None,
             progress: ProgressSink | None = None) -> PlanResult: ...


PLANNERS: Mapping[str, Planner] = MappingProxyType(
    {planner.name: planner for planner in (BumpPlanner(), LivenessPlanner(), BestPlanner())}
)


def get_planner(name: str) -> Planner:
    """The planner registered as `name`; `PlanError` listing the known names otherwise."""
    try:
        return PLANNERS[name]
    except KeyError:
        known = ", ".join(sorted(PLANNERS))
        raise PlanError(f"unknown planner {name!r} (known: {known})") from None
