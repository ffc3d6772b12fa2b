"""The greedy placement orders."""

from __future__ import annotations

from rlxir.planning import Buffer
from rlxir.planning.orderings import by_area, by_size, by_size_then_lifetime, peak_first
from rlxir.planning.problem import Problem


def names(buffers, order):
    return [buffers[i].name for i in order]


def test_by_size_ties_start_then_lifetime_then_name():
    buffers = [Buffer("d", 1, 5, 8), Buffer("c", 0, 2, 8), Buffer("b", 0, 2, 8), Buffer("a", 0, 9, 8), Buffer("big", 3, 4, 9)]
    assert names(buffers, by_size(Problem.build(buffers, 1))) == ["big", "a", "b", "c", "d"]


def test_by_size_then_lifetime():
    buffers = [Buffer("short", 0, 2, 8), Buffer("long", 1, 9, 8), Buffer("big", 3, 4, 9)]
    assert names(buffers, by_size_then_lifetime(Problem.build(buffers, 1))) == ["big", "long", "short"]


def test_peak_first_puts_the_peak_buffers_first_by_start():
    # The peak is at step 5 (a, c, d live: 30 bytes); b is the largest but off-peak.
    buffers = [Buffer("a", 4, 9, 10), Buffer("b", 0, 2, 25), Buffer("c", 5, 6, 10), Buffer("d", 3, 7, 10)]
    assert names(buffers, peak_first(Problem.build(buffers, 1))) == ["d", "a", "c", "b"]
    assert names(buffers, peak_first(Problem.build(buffers, 1), "lifetime")) == ["a", "d", "c", "b"]
    assert names(buffers, peak_first(Problem.build(buffers, 1), "end")) == ["a", "d", "c", "b"]


def test_by_area_with_areas_beyond_int64():
    buffers = [Buffer("wide", 0, 2**40, 2**40), Buffer("tall", 0, 2, 2**60)]
    assert names(buffers, by_area(Problem.build(buffers, 1))) == ["wide", "tall"]


def test_fixed_buffers_are_left_out():
    buffers = [Buffer("w", 0, 4, 64, fixed_offset=0), Buffer("x", 0, 4, 8)]
    assert names(buffers, by_size(Problem.build(buffers, 1))) == ["x"]
