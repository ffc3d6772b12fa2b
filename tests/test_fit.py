"""The fit driver: budgets, and the batch search against brute force."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlxir
from rlxir.errors import RlxError
from rlxir.compiler.budget import Budget, arena_budget
from rlxir.compiler.compile import CompileOptions
from rlxir.compiler.fit import Trial, fit_batch, plan_bound, search_batches
from rlxir.targets.target import get_target
from rlxir.compiler.workers import can_fork

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
    per_batch = rlxir.compiler.compile.compile(graph, "cuda", {"B": 4, "S": 64}).arena_bytes
    result = fit_batch("cuda", 32, 1.0, lambda batch: graph.bind({"B": batch}), bindings={"S": 64},
                       vram=per_batch + 36 * (1 << 20))
    assert result.batch >= 4
    assert all(trial.arena_bytes == rlxir.compiler.compile.plan_arena_bytes(graph, "cuda", {"B": trial.batch, "S": 64})
               for trial in result.tried[:2])


@pytest.mark.parametrize("target", ["cpu", "rocm"])
def test_fit_with_each_batch_handed_over_tries_what_fit_with_copies_tries(target):
    """`rlxir fit` hands each batch's freshly bound graph to its compile (`reuse_graph`):
    the same trials, arenas and answer as compiling a copy of it."""
    graph = rlxir.parse_file(Path(__file__).resolve().parents[1] / "examples" / "gpt2_block.rlx").main
    per_batch = rlxir.compiler.compile.plan_arena_bytes(graph, target, {"B": 5, "S": 32})
    vram = per_batch + sum(get_target(target).side_buffer_bytes(per_batch).values())  # batch 5 just fits
    runs = [fit_batch(target, 16, 1.0, lambda batch: graph.bind({"B": batch}), bindings={"S": 32}, vram=vram,
                      options=CompileOptions(reuse_graph=reuse)) for reuse in (False, True)]
    copied, handed = runs
    assert handed.tried == copied.tried and len(copied.tried) >= 3
    assert (handed.batch, handed.arena_bytes) == (copied.batch, copied.arena_bytes) and copied.batch >= 5
    assert "B" in graph.symbols  # the graph the batches are bound from stays as written


def test_plan_bound_formula():
    assert [plan_bound(n) for n in (1, 2, 64, 100)] == [2, 4, 14, 2 * math.ceil(math.log2(100)) + 2]


# --- several plans per round ------------------------------------------------------------
needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked")
ARENAS = st.lists(st.integers(0, 100), min_size=300, max_size=300)


def walk(requested, arena, budget, jobs):
    """search_batches with every wave planned in this process, in order (the workers'
    results, without their processes)."""
    def plan(batch):
        return Trial(batch, arena(batch), arena(batch) <= budget)

    return search_batches(requested, jobs, plan, lambda batches: [plan(batch) for batch in batches])


@settings(max_examples=300, deadline=None)
@given(requested=st.integers(1, 300), arenas=ARENAS, budget=st.integers(0, 100), jobs=st.integers(2, 9),
       grows=st.booleans())
def test_a_parallel_search_walks_the_serial_path_whatever_the_arenas(requested, arenas, budget, jobs, grows):
    def arena(batch):
        return sum(arenas[:batch]) // batch if grows else arenas[batch - 1]

    serial, parallel = walk(requested, arena, budget, 1), walk(requested, arena, budget, jobs)
    assert (parallel.fitting, parallel.failing) == (serial.fitting, serial.failing)
    assert set(serial.tried) <= set(parallel.tried)
    assert len({trial.batch for trial in parallel.tried}) == len(parallel.tried)  # no batch planned twice
    assert serial.rounds == len(serial.tried) <= plan_bound(requested)
    assert parallel.rounds <= serial.rounds and len(parallel.tried) <= jobs * parallel.rounds


@settings(max_examples=200, deadline=None)
@given(requested=st.integers(1, 300), per_batch=st.integers(1, 10**6), fixed=st.integers(0, 10**8),
       budget=st.integers(1, 10**9), jobs=st.integers(2, 9))
def test_a_parallel_search_finds_the_brute_force_answer_when_arenas_grow(requested, per_batch, fixed, budget, jobs):
    def arena(batch):
        return fixed + per_batch * batch

    search = walk(requested, arena, budget, jobs)
    best = brute_force(requested, arena, budget)
    found = search.fitting.batch if search.fitting is not None else None
    assert found == best


def test_more_jobs_take_fewer_rounds_and_more_plans():
    def never(batch):
        return 50 * GIB * batch

    serial = fit_batch("cuda", 64, 0.5, never, vram=24 * GIB)
    parallel = walk(64, never, serial.budget.bytes, 3)
    assert (serial.rounds, len(serial.tried)) == (7, 7)
    # the requested 64 alone; then each round the next batch and the batches after the
    # fewest outcomes, halving first: 32, below it 16 and above it 48; then 8, 4, 12; ...
    assert [trial.batch for trial in parallel.tried] == [64, 32, 16, 48, 8, 4, 12, 2, 1, 3]
    assert parallel.rounds == 4


def flat_budget(limit):
    return Budget(limit, None, None, 0, 0.0, 1.0, "a fixed budget")


@needs_fork
@pytest.mark.parametrize("arenas", [[5, 1, 9, 3, 7, 2, 8, 4, 6, 1, 9, 9, 2, 5, 3, 8, 1, 7, 4, 6],
                                    list(range(1, 41)), [5] * 40])
def test_fit_in_workers_answers_what_one_process_answers(arenas):
    serial = fit_batch("cpu", len(arenas), 1.0, lambda batch: arenas[batch - 1], budget=flat_budget(4))
    parallel = fit_batch("cpu", len(arenas), 1.0, lambda batch: arenas[batch - 1], budget=flat_budget(4), jobs=3)
    assert (parallel.batch, parallel.arena_bytes, parallel.fits, parallel.reason) == \
        (serial.batch, serial.arena_bytes, serial.fits, serial.reason)
    assert parallel.rounds < serial.rounds and parallel.jobs == 3 and serial.jobs == 1
    assert set(serial.tried) <= set(parallel.tried)


def refuses(batch: int, refused: int) -> int:
    if batch == refused:
        raise RlxError(f"batch {batch} cannot be planned")
    return batch


@needs_fork
def test_a_failed_plan_the_search_never_needs_fails_nothing():
    # with two jobs the first round plans 64 and 32; 64 fits, so 32 was never needed
    result = fit_batch("cpu", 64, 1.0, lambda batch: refuses(batch, 32), budget=flat_budget(100), jobs=2)
    assert result.batch == 64 and [trial.batch for trial in result.tried] == [64] and result.rounds == 1


@needs_fork
def test_a_failed_plan_on_the_search_path_raises_the_serial_error():
    with pytest.raises(RlxError) as serial:
        fit_batch("cpu", 64, 1.0, lambda batch: refuses(batch, 16), budget=flat_budget(10))
    with pytest.raises(RlxError) as parallel:
        fit_batch("cpu", 64, 1.0, lambda batch: refuses(batch, 16), budget=flat_budget(10), jobs=3)
    assert str(parallel.value) == str(serial.value) == "error: batch 16 cannot be planned"


def test_jobs_below_one_are_refused():
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        fit_batch("cpu", 8, 1.0, lambda batch: batch, budget=flat_budget(4), jobs=0)


EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.rlx"))
TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")


@needs_fork
@pytest.mark.parametrize("path", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_every_example_fits_the_same_batch_in_workers_on_every_target(path):
    graph = rlxir.parse_file(path).main
    others = {symbol: 8 for symbol in graph.symbols if symbol != "B"}
    for target in TARGETS:
        # a budget between two batches' arenas, so that the search halves and bisects
        budget = flat_budget(rlxir.plan_arena_bytes(graph.bind({"B": 11}), target, others))
        fits = [fit_batch(target, 16, 1.0, lambda batch: graph.bind({"B": batch}), budget=budget, bindings=others,
                          jobs=jobs) for jobs in (1, 2)]
        serial, parallel = fits
        assert (parallel.batch, parallel.arena_bytes, parallel.reason) == \
            (serial.batch, serial.arena_bytes, serial.reason), target
        assert serial.batch >= 11 and set(serial.tried) <= set(parallel.tried)
        assert parallel.rounds < serial.rounds == len(serial.tried), target


def _target_lookups(call) -> list[str]:
    """Where `get_target` runs during `call()`, as "file:line of the caller"."""
    import sys

    from rlxir.targets import target as target_module

    code, seen = target_module.get_target.__code__, []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            caller = frame.f_back
            seen.append(f"{Path(caller.f_code.co_filename).name}:{caller.f_lineno}")

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return seen


def test_a_target_is_looked_up_once_per_public_call():
    """The public functions resolve a target name at the boundary; the passes, the planner
    and the budget below them get the `Target` itself."""
    graph = rlxir.parse_file(Path(__file__).resolve().parents[1] / "examples" / "mlp.rlx").main
    fit = _target_lookups(lambda: fit_batch("rocm", 16, 0.6, lambda batch: graph.bind({"B": batch}), vram=8 * GIB))
    assert len(fit) == 1 and fit[0].startswith("fit.py:"), fit
    compiled = _target_lookups(lambda: rlxir.compile(graph, "rocm", {"B": 2}))
    assert len(compiled) == 1 and compiled[0].startswith("compile.py:"), compiled
