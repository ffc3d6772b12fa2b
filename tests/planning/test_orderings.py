"""The greedy placement orders."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer
from rlxir.planning.orderings import _combined_key, by_area, by_size, by_size_then_lifetime, peak_first
from rlxir.planning.problem import Problem

from .strategies import buffer_lists


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


def sorted_by_keys(buffers, problem):
    """`by_size`'s order written out: size descending, start, lifetime descending, name."""
    free = [i for i, b in enumerate(buffers) if b.fixed_offset is None]
    return sorted(free, key=lambda i: (-problem.sizes[i], buffers[i].start, -buffers[i].lifetime, buffers[i].name))


@settings(max_examples=150, deadline=None)
@given(buffer_lists(max_buffers=40, with_fixed=True))
def test_by_size_is_the_sort_it_describes(buffers):
    problem = Problem.build(buffers, 1)
    assert by_size(problem) == sorted_by_keys(buffers, problem)


def peak_first_written_out(buffers, problem, tie):
    """`peak_first`'s order written out: the free buffers live at the peak slot by the tie
    key, then by `by_size`'s keys and name; then the others as `by_size` orders them."""
    live = problem.live_bytes_per_slot()
    peak = int(np.argmax(live)) if len(live) else -1
    tie_key = {"start": lambda b: b.start, "lifetime": lambda b: -b.lifetime, "end": lambda b: -b.end}[tie]
    ordered = sorted_by_keys(buffers, problem)
    stacked = [i for i in ordered if problem.slot_lo[i] <= peak < problem.slot_hi[i]]
    return sorted(stacked, key=lambda i: tie_key(buffers[i])) + [i for i in ordered if i not in stacked]


@settings(max_examples=150, deadline=None)
@given(buffer_lists(max_buffers=40, with_fixed=True), st.sampled_from(["start", "lifetime", "end"]))
def test_peak_first_is_the_sort_it_describes(buffers, tie):
    problem = Problem.build(buffers, 1)
    expected = peak_first_written_out(buffers, problem, tie)
    assert peak_first(problem, tie) == expected
    # Taken from a `by_size` order the caller has already: the same order.
    assert peak_first(problem, tie, by_size_order=by_size(problem)) == expected


def test_by_size_with_keys_too_wide_for_one_combined_key():
    # Sizes 2^36 apart and lifetimes 2^29 apart: the spans multiply past 2^62, so the keys
    # are sorted one by one; the order is the same rule (with ties in every key).
    buffers = [Buffer(f"b{i}", (i % 3) << 30, ((i % 3) << 30) + 1 + (i % 5) * (1 << 29), ((i % 6) + 1) << 36, None)
               for i in range(60)]
    problem = Problem.build(buffers, 1)
    assert _combined_key((-problem.lifetime_keys(), problem.slot_lo, -problem.size_keys)) is None
    assert by_size(problem) == sorted_by_keys(buffers, problem)


def test_a_combined_key_sorts_like_its_keys():
    primary = np.array([2, 0, 2, 1, 0])
    secondary = np.array([-5, 7, -9, 7, 3])
    combined = _combined_key((secondary, primary))
    assert np.argsort(combined, kind="stable").tolist() == np.lexsort((secondary, primary)).tolist()


def test_the_free_buffers_and_fixed_offsets_as_arrays():
    buffers = [Buffer("w", 0, 4, 64, fixed_offset=0), Buffer("x", 0, 4, 8), Buffer("y", 1, 2, 8, fixed_offset=64)]
    problem = Problem.build(buffers, 1)
    assert problem.has_fixed() and problem.free_index_array().tolist() == [1]
    assert problem.fixed_array().tolist() == [0, -1, 64]
    free = Problem.build(buffers[1:2], 1)
    assert not free.has_fixed() and free.free_index_array().tolist() == [0] and free.fixed_array().tolist() == [-1]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 5, 2**63, 2**70]), st.integers(0, 3),
                          st.sampled_from([0, 2**64, -(2**65)]), st.integers(0, 5), st.integers(1, 9),
                          st.sampled_from([1, 2**66])), min_size=1, max_size=30))
def test_by_size_beyond_int64_is_the_same_sort(rows):
    # Sizes and times past int64: the keys are ranks, and the order is still the rule.
    buffers = [Buffer(f"b{i}", base + jitter, base + jitter + span * scale, size + extra)
               for i, (size, extra, base, jitter, span, scale) in enumerate(rows)]
    problem = Problem.build(buffers, 1)
    assert not problem.int64_safe or max(b.size for b in buffers) < 2**62
    assert by_size(problem) == sorted_by_keys(buffers, problem)
