"""The lower bound: peak of live aligned bytes, on hand-computed cases."""

from __future__ import annotations

from rlxir.planning import Buffer, lower_bound, read_instance
from rlxir.planning.problem import Problem


def test_empty_list():
    assert lower_bound([]) == 0


def test_peak_of_overlapping_buffers():
    # a [0,4) 10 B, b [2,6) 20 B, c [3,5) 5 B: at step 3 all three are live.
    buffers = [Buffer("a", 0, 4, 10), Buffer("b", 2, 6, 20), Buffer("c", 3, 5, 5)]
    assert lower_bound(buffers) == 35


def test_half_open_intervals_that_touch_do_not_add_up():
    buffers = [Buffer("a", 0, 3, 10), Buffer("b", 3, 6, 20)]
    assert lower_bound(buffers) == 20


def test_alignment_rounds_each_size_first():
    buffers = [Buffer("a", 0, 2, 1), Buffer("b", 0, 2, 17)]
    assert lower_bound(buffers, 16) == 16 + 32


def test_minimalloc_readme_example(planning_data):
    # input.12.csv: the example of MiniMalloc's README, packable in 12 bytes.
    assert lower_bound(read_instance(planning_data / "minimalloc/examples/input.12.csv")) == 12


def test_exact_beyond_int64():
    huge = 2**70
    buffers = [Buffer("a", 0, 2, huge), Buffer("b", 1, 3, huge), Buffer("c", -(2**65), 2, 3)]
    assert lower_bound(buffers) == 2 * huge + 3


def test_the_arena_of_a_placement_is_its_highest_aligned_end_past_int64_too():
    small = Problem.build([Buffer("a", 0, 2, 10), Buffer("b", 1, 3, 17), Buffer("z", 0, 1, 0)], 16)
    assert small.int64_safe and small.arena_bytes([32, 0, 64]) == 64 and small.arena_bytes([0, 16, 0]) == 48
    huge = Problem.build([Buffer("a", 0, 2, 2**70), Buffer("b", 1, 3, 8)], 1)
    assert not huge.int64_safe and huge.arena_bytes([8, 0]) == 8 + 2**70
    assert Problem.build([], 1).arena_bytes([]) == 0
