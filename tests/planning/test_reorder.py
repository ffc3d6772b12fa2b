"""Canonical dives and the local search over their order."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings

from rlxir.planning import Buffer, lower_bound, validate_plan
from rlxir.planning.problem import Problem
from rlxir.planning.reorder import dive, reorder_dives
from rlxir.planning.search import CanonicalSearch

from .strategies import ALIGNMENTS, buffer_lists
from .test_best import puzzle  # packs into the lower bound only with "long1" at the bottom


def setting(buffers: list[Buffer], alignment: int = 1) -> tuple[Problem, np.ndarray, list[np.ndarray]]:
    problem = Problem.build(buffers, alignment)
    sizes = np.asarray(problem.sizes, dtype=np.int64).reshape(len(problem))
    return problem, sizes, CanonicalSearch(problem).overlaps


def test_a_dive_places_the_buffer_with_the_lowest_offset_first_ties_by_priority():
    problem, sizes, overlaps = setting(puzzle())
    # long2 at 0 lifts long1 and left to 4; right1 (offset 0) goes next, then left (4),
    # right2 (5, on right1), long1 (8, on left).
    assert dive(sizes, overlaps, [1, 2, 0, 3, 4, 5]).tolist() == [8, 0, 4, 0, 5, 0]
    offsets = dive(sizes, overlaps, [0, 1, 2, 3, 4, 5])
    assert offsets.tolist() == [0, 4, 8, 4, 9, 0]
    assert max(offsets + sizes) == 12 == lower_bound(puzzle())


@settings(max_examples=60, deadline=None)
@given(buffer_lists(max_buffers=30), ALIGNMENTS)
def test_every_dive_is_a_valid_plan(buffers, alignment):
    problem, sizes, overlaps = setting(buffers, alignment)
    order = list(range(len(problem)))[::-1]
    offsets = dive(sizes, overlaps, order).tolist()
    validate_plan(buffers, offsets, alignment, max(map(sum, zip(offsets, problem.sizes)), default=0))


def test_reordering_never_loses_the_starting_plan():
    buffers = [Buffer(f"b{i}", (5 * i) % 17, (5 * i) % 17 + 1 + i % 7, 1 + (13 * i) % 23) for i in range(80)]
    problem, sizes, overlaps = setting(buffers)
    start = list(range(len(problem)))
    first = max(dive(sizes, overlaps, start) + sizes)
    offsets, dives = reorder_dives(problem, overlaps, start, lower_bound(buffers), math.inf, np.random.default_rng(0), 300)
    arena = max(map(sum, zip(offsets, problem.sizes)))
    validate_plan(buffers, offsets, 1, arena)
    assert lower_bound(buffers) <= arena <= first
    assert dives <= 300


def test_reordering_is_deterministic_for_a_seed_and_a_dive_cap():
    buffers = [Buffer(f"b{i}", (7 * i) % 13, (7 * i) % 13 + 1 + i % 5, 1 + (31 * i) % 17) for i in range(60)]
    problem, sizes, overlaps = setting(buffers)
    start = list(range(len(problem)))
    lower = lower_bound(buffers)
    runs = [reorder_dives(problem, overlaps, start, lower, math.inf, np.random.default_rng(5), 200) for _ in range(2)]
    assert runs[0] == runs[1]
    validate_plan(buffers, runs[0][0], 1, max(map(sum, zip(runs[0][0], problem.sizes))))
