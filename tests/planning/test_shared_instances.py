"""Every instance small enough for a unit test, planned by every planner, validated.

MiniMalloc's instances are kept in tests/data/planning; idealloc's real-workload ones are
read from ../shared/data where it exists. The heavy instances (synth100k, pangu_2.6B, S_1,
Y_1) are in bench/planner.py instead.
"""

from __future__ import annotations

import pytest

from rlxir.planning import BestPlanner, get_planner, read_instance, validate_plan

from .reference import UNIT_INSTANCES


# The search is capped by nodes, not by the clock: the test does not depend on speed.
PLANNERS = [get_planner("bump"), get_planner("liveness"), BestPlanner(max_search_nodes=200)]


@pytest.mark.parametrize("folder, relative_path",
                         [("planning_data", "minimalloc/examples/input.12.csv"), *UNIT_INSTANCES])
def test_instance_plans_validly(request, folder, relative_path):
    check_every_planner(request.getfixturevalue(folder) / relative_path)


def check_every_planner(path):
    buffers = read_instance(path)
    arenas = {}
    for planner in PLANNERS:
        result = planner.plan(buffers, alignment=1, time_budget=600.0)
        validate_plan(buffers, result.offsets, 1, result.arena_bytes)
        assert result.arena_bytes >= result.lower_bound_bytes
        arenas[result.planner] = result.arena_bytes
    assert arenas["best"] <= arenas["liveness"] <= arenas["bump"]


def test_readme_example_is_solved_exactly(planning_data):
    buffers = read_instance(planning_data / "minimalloc/examples/input.12.csv")
    result = get_planner("liveness").plan(buffers)
    assert result.arena_bytes == 12 == result.lower_bound_bytes
