"""Batched best-fit placement against the occupancy tree and the naive rule."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer, read_instance
from rlxir.planning.batched import CHUNK, overlap_pairs, place_batched, schedule_batches
from rlxir.planning.greedy import _BATCHED_FROM, _place_over_tree, place_in_order
from rlxir.planning.orderings import by_area, by_size, peak_first
from rlxir.planning.problem import Problem

from .reference import UNIT_INSTANCES, naive_best_fit
from .strategies import ALIGNMENTS, buffer_lists

NO_PAIR_LIMIT = 10**9


def batched(problem, order):
    pairs = overlap_pairs(problem, max_per_buffer=NO_PAIR_LIMIT)
    assert pairs is not None
    return place_batched(problem, schedule_batches(problem, order, pairs, max_levels=CHUNK + 1))


def over_tree(problem, order):
    return _place_over_tree(problem, list(order), float("inf"), None)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_batched_placement_equals_the_naive_rule(data):
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(
        buffer_lists(max_buffers=40, with_fixed=True, alignment=alignment)
    )
    problem = Problem.build(buffers, alignment)
    order = data.draw(st.sampled_from([by_size, by_area, peak_first]))(problem)
    assert batched(problem, order) == naive_best_fit(buffers, alignment, order)


def test_overlap_pairs_lists_every_overlapping_pair_once():
    buffers = [
        Buffer("a", 0, 4, 8),
        Buffer("b", 2, 6, 8),
        Buffer("c", 4, 5, 8),
        Buffer("d", 6, 9, 8),
        Buffer("e", 1, 2, 0),
    ]
    first, second = overlap_pairs(Problem.build(buffers, 1))
    pairs = {
        frozenset((buffers[i].name, buffers[j].name))
        for i, j in zip(first.tolist(), second.tolist())
    }
    assert len(pairs) == len(first)
    assert pairs == {
        frozenset("ab"),
        frozenset("bc"),
    }  # "e" is empty: it holds no address


def test_crowded_instances_are_left_to_the_tree():
    buffers = [Buffer(f"b{i}", 0, 10, 8) for i in range(50)]  # 49 neighbours each
    assert overlap_pairs(Problem.build(buffers, 1), max_per_buffer=8) is None
    assert overlap_pairs(Problem.build(buffers, 1), max_per_buffer=64) is not None


def several_chunks(count: int, size_scale: int, seed: int = 3) -> list[Buffer]:
    """One buffer per step, some long-lived: many chunks, several levels in each."""
    rng = random.Random(seed)
    buffers = []
    for step in range(count):
        life = rng.randint(30, 400) if rng.random() < 0.05 else rng.randint(1, 6)
        buffers.append(
            Buffer(
                f"t{step}", step, step + life, 64 * rng.randint(1, 3000 * size_scale)
            )
        )
    return buffers


# Small sizes: the sort keys fit int32; large ones need int64 (and member << shift
# overflowed 32 bits once, past the 512th member of a chunk).
@pytest.mark.parametrize("size_scale", [1, 4096])
@pytest.mark.parametrize("ordering", [by_size, peak_first])
def test_batched_equals_the_tree_across_chunks(size_scale, ordering):
    buffers = several_chunks(3 * CHUNK + 100, size_scale)
    problem = Problem.build(buffers, 64)
    order = ordering(problem)
    assert batched(problem, order) == over_tree(problem, order)


def test_batched_equals_the_tree_with_fixed_offsets_across_chunks():
    buffers = several_chunks(2 * CHUNK + 7, 1)
    buffers[::97] = [
        Buffer(b.name, b.start, b.end, b.size, fixed_offset=64 * 4000 * k)
        for k, b in enumerate(buffers[::97])
    ]
    problem = Problem.build(buffers, 64)
    order = by_size(problem)
    assert batched(problem, order) == over_tree(problem, order)


@pytest.mark.parametrize("folder, relative_path", UNIT_INSTANCES)
def test_batched_equals_the_tree_on_the_challenging_set_and_real_workloads(request, folder, relative_path):
    check_same_offsets(request.getfixturevalue(folder) / relative_path)


def check_same_offsets(path):
    for alignment in (1, 64):
        problem = Problem.build(read_instance(path), alignment)
        for ordering in (by_size, peak_first):
            order = ordering(problem)
            assert batched(problem, order) == over_tree(problem, order)


def test_place_in_order_takes_the_batched_path_past_its_deadline_too():
    problem = Problem.build(several_chunks(_BATCHED_FROM + 10, 1), 1)
    order = by_size(problem)
    assert schedule_batches(problem, order, overlap_pairs(problem)) is not None
    assert place_in_order(problem, order, deadline=0.0) is None


def test_the_batched_path_stops_at_the_arena_in_hand():
    problem = Problem.build(several_chunks(_BATCHED_FROM + 10, 1), 1)
    order = by_size(problem)
    assert schedule_batches(problem, order, overlap_pairs(problem)) is not None
    offsets = place_in_order(problem, order)
    arena = max(offset + size for offset, size in zip(offsets, problem.sizes))
    assert offsets == over_tree(problem, order)
    assert place_in_order(problem, order, stop_at=arena + 1) == offsets
    assert place_in_order(problem, order, stop_at=arena) is None
    assert _place_over_tree(problem, list(order), float("inf"), None, arena) is None


def test_chunks_that_chain_are_left_to_the_tree():
    # Sizes falling along the schedule: by size is schedule order, each buffer overlaps
    # the next, and every chunk is one chain of CHUNK levels.
    count = _BATCHED_FROM + 10
    buffers = [Buffer(f"t{step}", step, step + 2, 64 * (count - step)) for step in range(count)]
    problem = Problem.build(buffers, 1)
    order = by_size(problem)
    pairs = overlap_pairs(problem)
    assert schedule_batches(problem, order, pairs) is None
    assert place_in_order(problem, order) == over_tree(problem, order) == batched(problem, order)
