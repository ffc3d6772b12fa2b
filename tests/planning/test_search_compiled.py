"""The compiled canonical search against the Python one: the same answer and the same
node count for every capacity, order and node limit, paused and resumed or not.

Skipped where Numba does not import (`best` then searches in Python)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer, read_instance, validate_plan
from rlxir.planning import search_compiled
from rlxir.planning.problem import Problem
from rlxir.planning.search import HEURISTICS, CanonicalSearch, preorder
from rlxir.planning.search_compiled import CompiledCanonicalSearch, compiled_if_ready, prepare_compiled_search

from .strategies import buffer_lists

DATA = Path(__file__).resolve().parents[1] / "data" / "planning" / "minimalloc" / "challenging"


@pytest.fixture(scope="module")
def kernels():
    if not prepare_compiled_search():
        pytest.skip("Numba does not import here")
    return search_compiled._kernels()


def both(buffers, kernels):
    problem = Problem.build(buffers, 1)
    python = CanonicalSearch(problem)
    return problem, python, CompiledCanonicalSearch(CanonicalSearch(problem), kernels)


def assert_same_answers(problem, python, compiled, capacities, node_limit):
    for capacity in capacities:
        for heuristic in HEURISTICS:
            order = preorder(problem, heuristic)
            want = python.solve(capacity, order, node_limit, float("inf"))
            assert compiled.solve(capacity, order, node_limit, float("inf")) == want
            assert compiled.nodes == python.nodes


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_compiled_search_gives_the_python_answer(kernels, data):
    buffers = data.draw(buffer_lists(max_buffers=24))
    problem, python, compiled = both(buffers, kernels)
    lower = int(max(problem.live_bytes_per_slot(), default=0))
    total = sum(problem.sizes)
    capacity = data.draw(st.integers(max(lower - 1, 0), max(total, lower)))
    order = preorder(problem, data.draw(st.sampled_from(HEURISTICS)))
    if data.draw(st.booleans()):
        order = data.draw(st.permutations(range(len(problem))))
    node_limit = data.draw(st.sampled_from([0, 1, 5, 50, 10_000]))
    # Pausing after every attempt or almost never must not change the search.
    attempts = data.draw(st.sampled_from([1, 3, search_compiled.ATTEMPTS_PER_CALL]))
    want = python.solve(capacity, list(order), node_limit, float("inf"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_compiled, "ATTEMPTS_PER_CALL", attempts)
        got = compiled.solve(capacity, list(order), node_limit, float("inf"))
    assert got == want
    assert compiled.nodes == python.nodes
    if got is not None:
        arena = max((o + s for o, s in zip(got, problem.sizes)), default=0)
        assert arena <= capacity
        validate_plan(problem.buffers, got, 1, arena)


@st.composite
def tight_lists(draw):
    """Buffers of a few sizes over a short schedule: ties between offsets and tops, and
    capacities near the lower bound, where the search backtracks most."""
    count = draw(st.integers(2, 36))
    sizes = draw(st.lists(st.sampled_from([8, 16, 24, 32, 40]), min_size=count, max_size=count))
    buffers = []
    for index, size in enumerate(sizes):
        start = draw(st.integers(0, 14))
        buffers.append(Buffer(f"b{index}", start, start + draw(st.integers(1, 8)), size))
    return buffers


@settings(max_examples=300, deadline=None)
@given(buffers=tight_lists(), slack=st.integers(-8, 48), heuristic=st.sampled_from(HEURISTICS),
       node_limit=st.sampled_from([20, 400, 100_000]))
def test_compiled_search_gives_the_python_answer_near_the_bound(kernels, buffers, slack, heuristic, node_limit):
    problem, python, compiled = both(buffers, kernels)
    capacity = int(max(problem.live_bytes_per_slot())) + slack
    order = preorder(problem, heuristic)
    assert compiled.solve(capacity, order, node_limit, float("inf")) == python.solve(capacity, order, node_limit,
                                                                                     float("inf"))
    assert compiled.nodes == python.nodes


@pytest.mark.parametrize("name", ["A", "E"])
def test_compiled_search_gives_the_python_answer_on_a_challenging_instance(kernels, name):
    path = DATA / f"{name}.1048576.csv"
    problem, python, compiled = both(read_instance(path), kernels)
    lower = int(max(problem.live_bytes_per_slot()))
    assert_same_answers(problem, python, compiled, (lower, lower * 21 // 20, lower * 11 // 10), 300)


def test_compiled_search_is_reused_across_capacities(kernels):
    # One object answers several questions in turn, as the bisection asks them.
    buffers = [Buffer(f"b{i}", i % 5, i % 5 + 3 + i % 4, 10 + 7 * i) for i in range(18)]
    problem, python, compiled = both(buffers, kernels)
    lower = int(max(problem.live_bytes_per_slot()))
    assert_same_answers(problem, python, compiled, (lower * 2, lower, lower + 30, lower - 1, lower * 3 // 2), 500)


def test_compiled_search_stops_at_the_deadline(kernels):
    buffers = [Buffer(f"b{i}", i % 7, i % 7 + 2 + i % 9, 13 * i + 1) for i in range(60)]
    problem, _, compiled = both(buffers, kernels)
    lower = int(max(problem.live_bytes_per_slot()))
    started = time.perf_counter()
    assert compiled.solve(lower - 1, preorder(problem, "WAT"), 10**12, started - 1.0) is None
    assert time.perf_counter() - started < 1.0


def test_the_compiled_search_is_chosen_once_it_is_ready(kernels, monkeypatch):
    problem = Problem.build([Buffer("a", 0, 2, 4), Buffer("b", 1, 3, 4)], 1)
    search = CanonicalSearch(problem)
    assert isinstance(compiled_if_ready(search, problem), CompiledCanonicalSearch)
    # Turned off by the environment: the Python search itself.
    monkeypatch.setenv("RLXIR_COMPILED_PLANNER", "0")
    search_compiled._kernels.cache_clear()
    try:
        assert compiled_if_ready(search, problem) is search
        assert prepare_compiled_search() is False
    finally:
        monkeypatch.delenv("RLXIR_COMPILED_PLANNER")
        search_compiled._kernels.cache_clear()


def test_sizes_too_large_for_the_keys_keep_the_python_search(kernels):
    problem = Problem.build([Buffer("a", 0, 2, 1 << 61), Buffer("b", 1, 3, 1 << 61)], 1)
    search = CanonicalSearch(problem)
    assert compiled_if_ready(search, problem) is search
