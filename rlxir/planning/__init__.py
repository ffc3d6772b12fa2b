"""Memory planning on plain buffer lists: placements, the lower bound, the validator.

A planner places `Buffer` s (name, half-open live interval ``[start, end)`` in schedule
steps, size in bytes, optionally an imposed offset) in one arena and returns a
`PlanResult`. Planners are found by name (`get_planner`, `PLANNERS`):

- ``bump``: no reuse, every buffer at the cursor in the given order (RLX ROCm/CUDA);
- ``liveness``: greedy by size with best fit over free gaps (on large lists, a pass from
  the peak instead where it reaches the lower bound);
- ``best``: never worse than ``liveness``, searching for better within a time budget.

`lower_bound` gives the peak of live bytes (no arena can be smaller) and `validate_plan`
checks a placement. Everything here works on buffer lists; building them from a graph
(liveness over the schedule, views) is the caller's job.
"""

from rlxir.planning.best import DEFAULT_TIME_BUDGET, BestPlanner
from rlxir.planning.bounds import lower_bound
from rlxir.planning.buffers import Buffer, Offsets, PlanResult, aligned_size, offsets_in_order
from rlxir.planning.bump import BumpPlanner
from rlxir.planning.errors import PlanError
from rlxir.planning.instances import InstanceError, read_instance, read_solution, write_solution
from rlxir.planning.liveness import LivenessPlanner
from rlxir.planning.registry import PLANNERS, Planner, get_planner
from rlxir.planning.validate import validate_plan

__all__ = [
    "DEFAULT_TIME_BUDGET",
    "PLANNERS",
    "BestPlanner",
    "Buffer",
    "BumpPlanner",
    "InstanceError",
    "LivenessPlanner",
    "Offsets",
    "PlanError",
    "PlanResult",
    "Planner",
    "aligned_size",
    "get_planner",
    "lower_bound",
    "offsets_in_order",
    "read_instance",
    "read_solution",
    "validate_plan",
    "write_solution",
]
