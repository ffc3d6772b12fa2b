"""The best planner and the canonical search under it."""

from __future__ import annotations

import time

from rlxir.planning import BestPlanner, Buffer, LivenessPlanner, get_planner, validate_plan
from rlxir.planning.greedy import place_in_order
from rlxir.planning.orderings import by_size
from rlxir.planning.problem import Problem
from rlxir.planning.search import HEURISTICS, CanonicalSearch, preorder
from rlxir.planning.sweep import peak_sweep_best_fit, sweep_best_fit

from .strategies import crowded_buffers

# Budgets generous enough never to bind; the node cap makes the runs deterministic.
BUDGET = 600.0
BEST = BestPlanner(max_search_nodes=2000)


def puzzle() -> list[Buffer]:
    """Six buffers that pack into 12 bytes (the lower bound) with "long1" at the bottom.

    Greedy by size puts the largest, "right1", at the bottom instead, and needs 13.
    """
    return [
        Buffer("long1", 0, 6, 4),
        Buffer("long2", 0, 3, 4),
        Buffer("left", 0, 3, 4),
        Buffer("right1", 3, 6, 5),
        Buffer("right2", 3, 6, 3),
        Buffer("tiny", 0, 6, 0),
    ]


def test_search_finds_a_packing_at_the_lower_bound():
    buffers = puzzle()
    problem = Problem.build(buffers, 1)
    search = CanonicalSearch(problem)
    offsets = search.solve(12, preorder(problem, HEURISTICS[0]), node_limit=1000, deadline=float("inf"))
    assert offsets is not None
    validate_plan(buffers, offsets, 1, 12)


def test_search_reports_none_below_the_lower_bound():
    problem = Problem.build(puzzle(), 1)
    search = CanonicalSearch(problem)
    assert search.solve(11, preorder(problem, "TAW"), node_limit=10_000, deadline=float("inf")) is None


def test_best_reaches_the_lower_bound_where_greedy_by_size_does_not():
    buffers = puzzle()
    liveness = LivenessPlanner(retry_above=float("inf")).plan(buffers)
    best = BEST.plan(buffers, time_budget=BUDGET)
    validate_plan(buffers, best.offsets, 1, best.arena_bytes)
    assert liveness.arena_bytes == 13 > liveness.lower_bound_bytes == 12
    assert best.arena_bytes == 12
    assert best.planner == "best"


def test_best_keeps_fixed_offsets():
    buffers = [Buffer("w", 0, 8, 32, fixed_offset=64), Buffer("x", 0, 4, 32), Buffer("y", 4, 8, 64)]
    result = BEST.plan(buffers, alignment=32, time_budget=BUDGET)
    validate_plan(buffers, result.offsets, 32, result.arena_bytes)
    assert result.offsets["w"] == 64


def test_best_is_deterministic_for_a_seed():
    buffers = [Buffer(f"b{i}", (7 * i) % 13, (7 * i) % 13 + 1 + i % 5, 1 + (31 * i) % 17) for i in range(60)]
    first = BestPlanner(seed=3, max_search_nodes=3000).plan(buffers, time_budget=BUDGET)
    second = BestPlanner(seed=3, max_search_nodes=3000).plan(buffers, time_budget=BUDGET)
    assert first.offsets == second.offsets


def test_best_with_no_buffers():
    assert BEST.plan([], time_budget=BUDGET).arena_bytes == 0


def test_liveness_retries_peak_first_when_greedy_leaves_a_hole_at_the_peak():
    buffers = puzzle()
    result = get_planner("liveness").plan(buffers)
    validate_plan(buffers, result.offsets, 1, result.arena_bytes)
    assert result.arena_bytes == result.lower_bound_bytes == 12


def crowded_instance(count: int, seed: int = 5) -> list[Buffer]:
    """Hundreds of buffers live at once, where a greedy pass costs far more than 0.05 s."""
    return crowded_buffers(count, seed)


def test_best_keeps_a_tiny_budget_on_a_large_instance():
    buffers = crowded_instance(40_000)
    started = time.perf_counter()
    result = BestPlanner().plan(buffers, time_budget=0.05)
    elapsed = time.perf_counter() - started
    validate_plan(buffers, result.offsets, 1, result.arena_bytes)
    # Past the budget only Problem.build and stacking the unplaced buffers remain (about
    # 0.05 s per 10^4 buffers on an idle machine; the margin allows a loaded one).
    assert elapsed < 0.05 + 2.0


def test_best_returns_a_sweep_plan_when_the_greedy_pass_cannot_finish():
    buffers = crowded_instance(20_000)
    problem = Problem.build(buffers, 1)
    plans = [sweep_best_fit(problem), peak_sweep_best_fit(problem)]
    sweep_seconds = time.perf_counter()
    sweep_best_fit(problem)
    sweep_seconds = time.perf_counter() - sweep_seconds
    # Time for the two sweep passes, not for a greedy pass (several times dearer).
    result = BestPlanner().plan(buffers, time_budget=4 * sweep_seconds + 0.2)
    validate_plan(buffers, result.offsets, 1, result.arena_bytes)
    assert [result.offsets[b.name] for b in buffers] in plans
    assert result.arena_bytes <= max(map(sum, zip(plans[0], problem.sizes)))


def test_best_is_never_worse_than_the_peak_pass():
    buffers = crowded_instance(1500)
    problem = Problem.build(buffers, 1)
    peak = peak_sweep_best_fit(problem)
    result = BestPlanner(search_max_buffers=0).plan(buffers, time_budget=1.0)
    assert result.arena_bytes <= max(map(sum, zip(peak, problem.sizes)))


def test_a_greedy_pass_past_its_deadline_gives_up():
    problem = Problem.build(crowded_instance(1500), 1)
    assert place_in_order(problem, by_size(problem), deadline=time.perf_counter() - 1) is None
    assert place_in_order(problem, by_size(problem)) is not None
