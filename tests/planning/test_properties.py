"""Properties every planner must have, on random buffer lists."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import BestPlanner, PLANNERS, get_planner, lower_bound, validate_plan

from .strategies import ALIGNMENTS, buffer_lists

# A node cap (not the clock) bounds the search, so runs do not depend on machine speed.
BEST = BestPlanner(max_search_nodes=300)
BUDGET = 600.0


def planners():
    return [planner for name, planner in PLANNERS.items() if name != "best"] + [BEST]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_plan_is_valid_and_at_least_the_lower_bound(data):
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(buffer_lists(with_fixed=data.draw(st.booleans()), alignment=alignment))
    bound = lower_bound(buffers, alignment)
    for planner in planners():
        result = planner.plan(buffers, alignment, time_budget=BUDGET)
        validate_plan(buffers, result.offsets, alignment, result.arena_bytes)
        assert result.arena_bytes >= bound == result.lower_bound_bytes
        assert result.arena_bytes <= result.unshared_bytes + max(
            (b.fixed_offset for b in buffers if b.fixed_offset is not None), default=0
        )
        for buffer in buffers:
            if buffer.fixed_offset is not None:
                assert result.offsets[buffer.name] == buffer.fixed_offset


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_best_is_never_worse_than_liveness(data):
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(buffer_lists(with_fixed=data.draw(st.booleans()), alignment=alignment))
    liveness = get_planner("liveness").plan(buffers, alignment)
    best = BEST.plan(buffers, alignment, time_budget=BUDGET)
    assert best.arena_bytes <= liveness.arena_bytes


@settings(max_examples=40, deadline=None)
@given(buffer_lists(), ALIGNMENTS)
def test_bump_uses_exactly_the_unshared_bytes(buffers, alignment):
    result = get_planner("bump").plan(buffers, alignment)
    assert result.arena_bytes == result.unshared_bytes
