"""The fit driver: budgets, and the batch search against brute force."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlxir
from rlxir.fit import arena_budget, fit_batch, plan_bound
from rlxir.target import get_target

GIB = 1 << 30


def brute_force(requested, arena, budget):
    fitting = [batch for batch in range(1, requested + 1) if arena(batch) <= budget]
    return max(fitting) if fitting else None


@settings(max_examples=200, deadline=None)
@given(requested=st.integers(1, 300), per_batch=st.integers(1, 10**6), fixed=st.integers(0, 10**8),
       budget=st.integers(1, 10**9))
def test_monotone_arenas_match_brute_force(requested, per_batch, fixed, budget):
    def arena(batch):
        return fixed + per_batch * batch

    result = fit_batch("cuda", requested, 0.6, arena, vram=budget * 10)
    best = brute_force(requested, arena, result.budget.bytes)
    assert result.batch == best
    assert len(result.tried) <= plan_bound(requested)
    if best is not None:
        assert result.fits and arena(result.batch) <= result.budget.bytes
        assert result.batch in [trial.batch for trial in result.tried]


@settings(max_examples=200, deadline=None)
@given(requested=st.integers(1, 300), arenas=st.lists(st.integers(0, 100), min_size=300, max_size=300),
       budget=st.integers(1, 100))
def test_non_monotone_arenas_never_return_a_batch_that_does_not_fit(requested, arenas, budget):
    def arena(batch):
        return arenas[batch - 1]

    target = get_target("cuda").derive("cuda-flat-test", side_buffers=())
    result = fit_batch(target, requested, 1.0, arena, vram=budget)
    assert len(result.tried) <= plan_bound(requested)
    planned = {trial.batch: trial for trial in result.tried}
    if result.batch is not None:
        assert result.batch in planned and planned[result.batch].fits
        assert arena(result.batch) <= budget
    else:
        assert not result.fits and arena(1) > budget


def test_even_batch_one_not_fitting_says_so_with_numbers():
    result = fit_batch("cuda", 64, 0.5, lambda batch: 50 * GIB * batch, vram=24 * GIB)
    assert result.batch is None and not result.fits
    assert [trial.batch for trial in result.tried] == [64, 32, 16, 8, 4, 2, 1]
    assert "even batch 1 needs an arena of 53687091200 B" in result.reason


def test_no_budget_returns_the_requested_batch_unplanned(scoped_target):
    target = get_target("gpu").derive("gpu-unbounded-test", arena_ceiling=None, shadow_f16_fraction=0.0)
    scoped_target(target)
    result = fit_batch(target, 16, 0.6, lambda batch: pytest.fail("nothing should be planned"))
    assert result.batch == 16 and result.tried == () and result.arena_bytes is None
    assert "no budget" in result.reason and "cannot query" in result.reason


def test_budget_subtracts_side_buffers_and_respects_the_ceiling():
    cuda = arena_budget("cuda", 0.5, vram=24 * GIB)
    assert cuda.bytes == 12 * GIB - 36 * (1 << 20)
    gpu = arena_budget("gpu", 0.5, vram=6 * GIB)
    assert gpu.bytes == 2 * GIB  # 3 GiB for the arena plus its half-size f16 shadow
    rocm = arena_budget("rocm", 0.6, vram=80 * GIB)
    assert rocm.bytes == 4294967295 and "capped at the ABI ceiling" in rocm.explain()


def test_headroom_out_of_range_is_refused():
    with pytest.raises(ValueError, match="headroom"):
        arena_budget("cuda", 1.5, vram=GIB)


def test_fit_on_a_real_graph_plans_through_compile():
    graph = rlxir.parse_file(Path(__file__).resolve().parents[1] / "examples" / "gpt2_block.rlx").main
    per_batch = rlxir.compiler.compile(graph, "cuda", {"B": 4, "S": 64}).arena_bytes
    result = fit_batch("cuda", 32, 1.0, lambda batch: graph.bind({"B": batch}), bindings={"S": 64},
                       vram=per_batch + 36 * (1 << 20))
    assert result.batch >= 4
    assert all(trial.arena_bytes == rlxir.compiler.plan_arena_bytes(graph, "cuda", {"B": trial.batch, "S": 64})
               for trial in result.tried[:2])


def test_plan_bound_formula():
    assert [plan_bound(n) for n in (1, 2, 64, 100)] == [2, 4, 14, 2 * math.ceil(math.log2(100)) + 2]
