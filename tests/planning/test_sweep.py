"""The schedule-order best-fit pass that `best` starts from."""

from __future__ import annotations

import time

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer, lower_bound, validate_plan
from rlxir.planning.problem import Problem
from rlxir.planning.sweep import peak_sweep_best_fit, sweep_best_fit

from .strategies import ALIGNMENTS, buffer_lists


def arena(problem: Problem, offsets: list[int]) -> int:
    return max((offset + size for offset, size in zip(offsets, problem.sizes)), default=0)


def test_a_freed_gap_is_reused_and_the_smallest_fitting_gap_wins():
    buffers = [
        Buffer("big", 0, 2, 8),
        Buffer("small", 0, 2, 3),
        Buffer("keep", 0, 4, 5),
        Buffer("lid", 0, 4, 1),  # at slot 0, largest first: big 0-8, keep 8-13, small 13-16, lid 16-17
        Buffer("late", 2, 4, 2),  # big and small are gone: gaps [0, 8) and [13, 16)
        Buffer("later", 3, 4, 9),  # no gap holds 9 bytes: on top
    ]
    problem = Problem.build(buffers, 1)
    offsets = sweep_best_fit(problem)
    assert offsets == [0, 13, 8, 16, 13, 17]


def test_released_neighbours_merge_into_one_gap():
    buffers = [Buffer("a", 0, 1, 4), Buffer("b", 0, 1, 4), Buffer("top", 0, 2, 1), Buffer("c", 1, 2, 8)]
    problem = Problem.build(buffers, 1)
    offsets = sweep_best_fit(problem)
    assert offsets[3] == 0  # a and b freed together give one 8-byte gap under "top"


@pytest.mark.parametrize("place", [sweep_best_fit, peak_sweep_best_fit])
@settings(max_examples=80, deadline=None)
@given(buffers=buffer_lists(max_buffers=40), alignment=ALIGNMENTS)
def test_each_pass_gives_a_valid_plan(place, buffers, alignment):
    problem = Problem.build(buffers, alignment)
    offsets = place(problem)
    validate_plan(buffers, offsets, alignment, arena(problem, offsets))
    assert arena(problem, offsets) >= lower_bound(buffers, alignment)


@settings(max_examples=30, deadline=None)
@given(buffer_lists(max_buffers=40), st.integers(0, 3))
def test_a_passed_deadline_still_gives_a_valid_plan(buffers, checks):
    # With the deadline already past, every buffer is stacked; the plan stays valid.
    problem = Problem.build(buffers, 1)
    offsets = sweep_best_fit(problem, deadline=time.perf_counter() - checks)
    validate_plan(buffers, offsets, 1, arena(problem, offsets))
    assert arena(problem, offsets) == sum(problem.sizes)


def test_the_peak_pass_stacks_the_peak_and_places_outward_from_it():
    buffers = [
        Buffer("early", 0, 2, 6),  # before the peak: placed by the backward pass
        Buffer("long", 0, 4, 2),  # live at the peak (slot [2, 3)), most slots: at the bottom
        Buffer("peak_a", 2, 3, 4),  # fewest slots: on top of the stack
        Buffer("peak_b", 2, 4, 4),
        Buffer("late", 3, 4, 4),  # after the peak: where peak_a was
    ]
    problem = Problem.build(buffers, 1)
    offsets = peak_sweep_best_fit(problem)
    assert offsets == [2, 0, 6, 2, 6]
    assert arena(problem, offsets) == lower_bound(buffers)


def test_the_peak_pass_gives_up_past_its_deadline():
    buffers = [Buffer(f"b{i}", i, i + 3, 8 + i) for i in range(20)]
    assert peak_sweep_best_fit(Problem.build(buffers, 1), deadline=time.perf_counter() - 1) is None
