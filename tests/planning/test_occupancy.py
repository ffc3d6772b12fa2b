"""The range-list helpers under the occupancy tree, and the tree against a naive rule."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer
from rlxir.planning.greedy import place_in_order
from rlxir.planning.occupancy import _best_gap_numpy, add_range, best_fit_offset
from rlxir.planning.orderings import by_area, by_size, peak_first
from rlxir.planning.problem import Problem

from .reference import naive_best_fit
from .strategies import ALIGNMENTS, buffer_lists


def test_add_range_merges_touching_and_overlapping_ranges():
    ranges: list[int] = []
    add_range(ranges, 10, 20)
    add_range(ranges, 30, 40)
    assert ranges == [10, 20, 30, 40]
    add_range(ranges, 20, 25)  # touches [10,20)
    assert ranges == [10, 25, 30, 40]
    add_range(ranges, 24, 31)  # bridges the two
    assert ranges == [10, 40]
    add_range(ranges, 0, 5)
    add_range(ranges, 12, 15)  # inside: no change
    assert ranges == [0, 5, 10, 40]
    add_range(ranges, 0, 100)
    assert ranges == [0, 100]


def test_best_fit_offset_on_one_list():
    taken = [[10, 20, 30, 40, 44, 50]]  # gaps [0,10), [20,30), [40,44)
    assert best_fit_offset(taken, 4, numpy_merge=False) == 40
    assert best_fit_offset(taken, 5, numpy_merge=False) == 0  # [0,10) and [20,30) tie: lowest
    assert best_fit_offset(taken, 11, numpy_merge=False) == 50
    assert best_fit_offset([], 11, numpy_merge=False) == 0


def test_best_fit_offset_on_overlapping_lists_and_with_numpy():
    taken = [[0, 10, 50, 60], [5, 20], [30, 35]]  # union: [0,20), [30,35), [50,60)
    assert best_fit_offset(taken, 10, numpy_merge=False) == 20
    assert best_fit_offset(taken, 11, numpy_merge=False) == 35
    long_list = [[bound for k in range(200) for bound in (10 * k, 10 * k + 7)], [1994, 2100]]
    for numpy_merge in (False, True):
        assert best_fit_offset(long_list, 3, numpy_merge) == 7
        assert best_fit_offset(long_list, 4, numpy_merge) == 2100


@st.composite
def range_lists(draw):
    """Flat sorted lists of disjoint, non-touching ranges, long enough for the NumPy scan."""
    cursor = draw(st.integers(0, 40))
    flat = []
    for _ in range(draw(st.integers(0, 120))):
        end = cursor + draw(st.integers(1, 40))
        flat += [cursor, end]
        cursor = end + draw(st.integers(1, 40))
    return flat


@settings(max_examples=200, deadline=None)
@given(st.lists(range_lists(), max_size=5), st.integers(1, 90))
def test_the_numpy_gap_scan_equals_the_list_scan(taken, size):
    taken = [ranges for ranges in taken if ranges]
    expected = best_fit_offset(taken, size, numpy_merge=False)
    assert best_fit_offset(taken, size, numpy_merge=True) == expected
    assert best_fit_offset([array("q", ranges) for ranges in taken], size, numpy_merge=True) == expected
    if len(taken) == 1:
        assert _best_gap_numpy(taken[0], size, one_list=True) == expected
    if taken:
        assert _best_gap_numpy(sum(taken, []), size, one_list=False) == expected


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_tree_placement_equals_the_naive_rule(data):
    buffers, alignment, problem, order = _drawn(data, [by_size, by_area, peak_first])
    assert place_in_order(problem, order) == naive_best_fit(buffers, alignment, order)


def _drawn(data, orderings) -> tuple:
    """A drawn buffer list with fixed offsets, its alignment, its `Problem` and an order."""
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(buffer_lists(max_buffers=40, with_fixed=True, alignment=alignment))
    problem = Problem.build(buffers, alignment)
    return buffers, alignment, problem, data.draw(st.sampled_from(orderings))(problem)


def test_tree_placement_equals_the_naive_rule_on_a_long_schedule():
    # Enough buffers and slots for deep trees and for the NumPy merge path.
    buffers = [Buffer(f"b{i}", (i * 37) % 500, (i * 37) % 500 + 1 + (i * 11) % 150, 8 + (i * 53) % 200) for i in range(600)]
    problem = Problem.build(buffers, 8)
    order = by_size(problem)
    assert place_in_order(problem, order) == naive_best_fit(buffers, 8, order)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_a_pass_stops_exactly_when_its_arena_would_reach_stop_at(data):
    buffers, alignment, problem, order = _drawn(data, [by_size, peak_first])
    offsets = place_in_order(problem, order)
    placed_arena = max((offsets[i] + problem.sizes[i] for i in order), default=0)
    assert place_in_order(problem, order, stop_at=placed_arena + 1) == offsets
    assert place_in_order(problem, order, stop_at=placed_arena + data.draw(st.integers(1, 300))) == offsets
    if order:
        assert place_in_order(problem, order, stop_at=placed_arena - data.draw(st.integers(0, 300))) is None
