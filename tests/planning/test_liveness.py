"""The liveness planner: greedy by size, best fit, on hand-computed cases."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer, LivenessPlanner, PlanError, get_planner, validate_plan
from rlxir.planning.problem import Problem
from rlxir.planning.sweep import peak_sweep_best_fit

from .strategies import ALIGNMENTS, buffer_lists, crowded_buffers


def plan(buffers, alignment=1):
    result = get_planner("liveness").plan(buffers, alignment)
    validate_plan(buffers, result.offsets, alignment, result.arena_bytes)
    return result


def test_reuses_memory_of_dead_buffers():
    buffers = [Buffer("a", 0, 2, 100), Buffer("b", 2, 4, 100), Buffer("c", 4, 6, 60)]
    result = plan(buffers)
    assert result.offsets == {"a": 0, "b": 0, "c": 0}
    assert result.arena_bytes == 100 == result.lower_bound_bytes


def test_largest_first_then_stacked():
    buffers = [Buffer("small", 0, 4, 10), Buffer("big", 0, 4, 50), Buffer("mid", 0, 4, 30)]
    result = plan(buffers)
    assert result.offsets == {"big": 0, "mid": 50, "small": 80}


def test_best_fit_takes_the_smallest_gap_that_holds_it():
    # Imposed layout over the whole run: gaps [100,120) of 20 bytes and [200,240) of 40.
    # G (20 bytes) fits both and takes the smaller one.
    layout = [
        Buffer("A", 0, 10, 100, fixed_offset=0),
        Buffer("B", 0, 10, 40, fixed_offset=120),
        Buffer("C", 0, 10, 40, fixed_offset=160),
        Buffer("D", 0, 10, 30, fixed_offset=240),
        Buffer("G", 2, 4, 20),
    ]
    assert plan(layout).offsets["G"] == 100


def test_best_fit_skips_gaps_too_small():
    layout = [
        Buffer("A", 0, 10, 100, fixed_offset=0),
        Buffer("B", 0, 10, 40, fixed_offset=110),
        Buffer("C", 0, 10, 30, fixed_offset=190),
        Buffer("G", 2, 4, 20),
    ]
    assert plan(layout).offsets["G"] == 150  # [100,110) is too small; [150,190) holds it


def test_best_fit_prefers_the_lowest_of_equal_gaps():
    layout = [
        Buffer("A", 0, 10, 8, fixed_offset=8),
        Buffer("B", 0, 10, 8, fixed_offset=24),
        Buffer("G", 3, 5, 8),
    ]
    assert plan(layout).offsets["G"] == 0  # gaps [0,8) and [16,24) are equal


def test_goes_on_top_when_no_gap_fits():
    layout = [
        Buffer("A", 0, 10, 8, fixed_offset=8),
        Buffer("B", 0, 10, 8, fixed_offset=24),
        Buffer("G", 3, 5, 9),
    ]
    assert plan(layout).offsets["G"] == 32


def test_only_buffers_live_at_the_same_time_block_a_gap():
    # "late" lives after "G"; its bytes [0,64) do not count against G.
    layout = [Buffer("late", 5, 9, 64, fixed_offset=0), Buffer("early", 0, 3, 16, fixed_offset=64), Buffer("G", 1, 5, 32)]
    assert plan(layout).offsets["G"] == 0


def test_alignment_applies_to_sizes_and_offsets():
    buffers = [Buffer("a", 0, 2, 5), Buffer("b", 0, 2, 17), Buffer("c", 1, 3, 1)]
    result = plan(buffers, alignment=16)
    assert all(offset % 16 == 0 for offset in result.offsets.values())
    assert result.arena_bytes == 16 + 32 + 16
    assert result.unshared_bytes == 64


def test_ties_are_broken_by_start_then_lifetime_then_name():
    buffers = [Buffer("z", 0, 5, 8), Buffer("y", 0, 5, 8), Buffer("x", 0, 9, 8), Buffer("w", 1, 9, 8)]
    result = plan(buffers)
    # x: longest lifetime among the start-0 ones; then y before z by name; w starts last.
    assert result.offsets == {"x": 0, "y": 8, "z": 16, "w": 24}


def test_result_does_not_depend_on_input_order():
    buffers = [Buffer(f"b{i}", i % 5, i % 5 + 1 + i % 3, 8 * (i % 4) + 8) for i in range(40)]
    forward = plan(buffers).offsets
    backward = plan(list(reversed(buffers))).offsets
    assert forward == backward


def test_fixed_offsets_are_kept_and_avoided():
    buffers = [
        Buffer("weight", 0, 10, 64, fixed_offset=0),
        Buffer("act1", 0, 5, 32),
        Buffer("act2", 5, 10, 32),
    ]
    result = plan(buffers)
    assert result.offsets == {"weight": 0, "act1": 64, "act2": 64}


def test_unaligned_fixed_offset_is_refused():
    with pytest.raises(PlanError, match="fixed offset 8 is not a multiple of the alignment 16"):
        get_planner("liveness").plan([Buffer("w", 0, 1, 16, fixed_offset=8)], alignment=16)


def test_sizes_beyond_int64_stay_exact():
    huge = 2**70
    buffers = [Buffer("a", 0, 2, huge), Buffer("b", 1, 3, huge), Buffer("c", 2, 4, 3)]
    result = plan(buffers)
    assert result.offsets == {"a": 0, "b": huge, "c": 0}
    assert result.arena_bytes == 2 * huge


def test_a_pass_from_the_peak_that_reaches_the_bound_is_returned_as_it_is():
    # A chain of short buffers beside one that lives throughout: the peak pass packs it
    # at the bound (each new buffer takes the gap the one before last left), so the
    # by-size placement is skipped on large enough lists.
    buffers = [Buffer("all", 0, 400, 64)] + [Buffer(f"b{i}", i, i + 2, 32) for i in range(398)]
    problem = Problem.build(buffers, 1)
    peak = peak_sweep_best_fit(problem)
    result = LivenessPlanner(peak_pass_from=len(buffers)).plan(buffers)
    validate_plan(buffers, result.offsets, 1, result.arena_bytes)
    assert result.arena_bytes == result.lower_bound_bytes
    assert [result.offsets[b.name] for b in buffers] == peak
    by_size = LivenessPlanner(peak_pass_from=len(buffers) + 1).plan(buffers)
    assert by_size.arena_bytes >= result.arena_bytes


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_the_pass_from_the_peak_never_makes_the_arena_larger(data):
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(buffer_lists(max_buffers=40, with_fixed=data.draw(st.booleans()), alignment=alignment))
    with_pass = LivenessPlanner(peak_pass_from=0).plan(buffers, alignment)
    without = LivenessPlanner(peak_pass_from=len(buffers) + 1).plan(buffers, alignment)
    validate_plan(buffers, with_pass.offsets, alignment, with_pass.arena_bytes)
    assert with_pass.arena_bytes <= without.arena_bytes
    problem = Problem.build(buffers, alignment)
    if all(offset is None for offset in problem.fixed):
        peak = peak_sweep_best_fit(problem)
        assert with_pass.arena_bytes <= max((o + s for o, s in zip(peak, problem.sizes)), default=0)


def crowded(count, seed):
    """A schedule where a fifth of the buffers live for hundreds of steps."""
    return crowded_buffers(count, seed, longest=500, shortest_span=3, largest=2000)


@pytest.mark.parametrize("seed", range(1, 9))
def test_on_crowded_lists_the_result_is_the_smaller_of_the_pass_and_the_greedy_rule(seed):
    buffers = crowded(400, seed)
    problem = Problem.build(buffers, 1)
    peak = peak_sweep_best_fit(problem)
    peak_arena = max(o + s for o, s in zip(peak, problem.sizes))
    without = LivenessPlanner(peak_pass_from=len(buffers) + 1).plan(buffers)
    result = LivenessPlanner(peak_pass_from=len(buffers)).plan(buffers)
    validate_plan(buffers, result.offsets, 1, result.arena_bytes)
    assert result.arena_bytes <= min(peak_arena, without.arena_bytes)
    if peak_arena < without.arena_bytes and result.arena_bytes == peak_arena:
        assert [result.offsets[b.name] for b in buffers] == peak
    if without.arena_bytes < peak_arena:
        assert result.offsets == without.offsets  # the greedy rule's plan, as before
