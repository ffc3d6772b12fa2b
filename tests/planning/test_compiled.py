"""The compiled loops against their Python twins: the placement over the occupancy tree
(and the naive rule), and the free-gap sweep of the pass from the peak.

Skipped where Numba does not import (the Python loops are then the only ones used)."""

from __future__ import annotations

import ast
import functools
import os
import random
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.planning import Buffer, LivenessPlanner
from rlxir.planning import compiled, greedy, liveness, sweep
from rlxir.planning.compiled import compiled_placement_available, place_over_compiled_tree
from rlxir.planning.greedy import _place_over_tree, place_in_order
from rlxir.planning.occupancy import last_query_ranks, leaf_base
from rlxir.planning.orderings import by_area, by_size, peak_first
from rlxir.planning.problem import Problem
from rlxir.planning.sweep import peak_sweep_best_fit

from .reference import naive_best_fit
from .strategies import ALIGNMENTS, buffer_lists, crowded_buffers

needs_compiled = pytest.mark.skipif(not compiled_placement_available(), reason="Numba does not import here")


def over_tree(problem, order, stop_at=None):
    return _place_over_tree(problem, list(order), float("inf"), None, stop_at)


@needs_compiled
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_compiled_placement_equals_the_naive_rule(data):
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(buffer_lists(max_buffers=40, with_fixed=True, alignment=alignment))
    problem = Problem.build(buffers, alignment)
    order = data.draw(st.sampled_from([by_size, by_area, peak_first]))(problem)
    # Blocks from single pairs of slots up to the whole tree (the level is capped by its
    # depth), with bands of levels above them from none to four; scratch arrays and a pool
    # from far too small (the loop pauses for room, at queries and mid-insertion) to ample,
    # and the rows locating the lists switching to int64 as the pool grows, or not.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "BLOCK_LEVEL", data.draw(st.integers(1, 8)))
        patch.setattr(compiled, "BLOCK_BAND", data.draw(st.integers(0, 4)))
        patch.setattr(compiled, "BAND_UPDATES", data.draw(st.sampled_from([0, 12, 10**9])))
        patch.setattr(compiled, "_POOL_PER_BUFFER", data.draw(st.sampled_from([1, 16])))
        patch.setattr(compiled, "_SCRATCH_RANGES", data.draw(st.sampled_from([1, 3, 1024])))
        patch.setattr(compiled, "_META32_BELOW", data.draw(st.sampled_from([8, 1 << 31])))
        grow = data.draw(st.integers(1, 16))
        patch.setattr(compiled, "_grown", lambda pool: np.concatenate([pool, np.empty(grow, dtype=pool.dtype)]))
        placed, arena = compiled.place_with_arena(problem, order)
    assert placed.dtype == np.int64
    offsets = placed.tolist()
    assert offsets == naive_best_fit(buffers, alignment, order)
    assert offsets == over_tree(problem, order)
    # The arena the loop kept as it placed: fixed and size-0 buffers count too.
    assert arena == max((offset + size for offset, size in zip(offsets, problem.sizes)), default=0)


@needs_compiled
@pytest.mark.parametrize(("seed", "block_level", "band"), [(1, 8, 4), (2, 8, 4), (1, 1, 0), (2, 3, 2), (1, 5, 1),
                                                            (2, 6, 6)])
def test_compiled_placement_equals_the_python_tree_on_crowded_instances(seed, block_level, band, monkeypatch):
    # Hundreds of buffers live at once: long range lists, lists that move, a pool that grows;
    # blocks of 2 to 256 slots in a tree of 4,096 leaves, bands of levels reaching the
    # root or not.
    monkeypatch.setattr(compiled, "_POOL_PER_BUFFER", 1)
    monkeypatch.setattr(compiled, "BLOCK_LEVEL", block_level)
    monkeypatch.setattr(compiled, "BLOCK_BAND", band)
    problem = Problem.build(crowded_buffers(3000, seed), 64)
    for ordering in (by_size, peak_first):
        order = ordering(problem)
        assert place_over_compiled_tree(problem, order) == over_tree(problem, order)


@needs_compiled
@pytest.mark.parametrize(("scale", "extra"), [(1, 0), (7, 0), (1 << 31, 0), (3, 1)])
def test_compiled_placement_equals_the_python_tree_in_any_address_unit(scale, extra, monkeypatch):
    # The loop counts addresses in the sizes' common divisor and keeps its range lists as
    # int32 where they fit: sizes scaled by 7 (int32, unit 448), past 2^31 (int64), and
    # prime to each other (unit 1). Scratch arrays of one range, and a pool that grows by
    # 16 bounds at a time, make queries and insertions pause for room and resume (a range
    # partly inserted when its pass paused is inserted again, every list up the tree).
    monkeypatch.setattr(compiled, "_POOL_PER_BUFFER", 1)
    monkeypatch.setattr(compiled, "_SCRATCH_RANGES", 1)
    monkeypatch.setattr(compiled, "_grown", lambda pool: np.concatenate([pool, np.empty(16, dtype=pool.dtype)]))
    # The rows locating the lists switch from int32 to int64 as the pool grows past this.
    monkeypatch.setattr(compiled, "_META32_BELOW", 4000)
    buffers = [attrs.evolve(buffer, size=buffer.size * scale + extra * (k % 2)) for k, buffer in
               enumerate(crowded_buffers(2000, 5))]
    problem = Problem.build(buffers, 1)
    for ordering in (by_size, peak_first):
        order = ordering(problem)
        offsets = over_tree(problem, order)
        assert place_over_compiled_tree(problem, order) == offsets
        arena = max(offset + size for offset, size in zip(offsets, problem.sizes))
        assert place_over_compiled_tree(problem, order, stop_at=arena) is None
        assert place_over_compiled_tree(problem, order, stop_at=arena + 1) == offsets


def test_the_address_unit_and_the_type_of_the_range_lists():
    sizes = np.array([64, 192, 0, 128], dtype=np.int64)
    none = np.full(4, -1, dtype=np.int64)
    assert compiled.address_unit(sizes, none, compiled.NO_LIMIT) == (64, np.int32)
    # A fixed offset joins the divisor, and its end the addresses.
    assert compiled.address_unit(sizes, np.array([-1, 32, -1, -1]), compiled.NO_LIMIT) == (32, np.int32)
    huge = np.array([3 << 31, 1 << 31], dtype=np.int64)
    assert compiled.address_unit(huge, np.full(2, -1), compiled.NO_LIMIT) == (1 << 31, np.int32)
    odd = huge + 1
    assert compiled.address_unit(odd, np.full(2, -1), compiled.NO_LIMIT) == (1, np.int64)
    # A pass that stops below 2^31 stores nothing above it, unless a fixed buffer does.
    assert compiled.address_unit(odd, np.full(2, -1), 1 << 30) == (1, np.int32)
    assert compiled.address_unit(odd, np.array([1 << 31, -1]), 1 << 30) == (1, np.int64)
    assert compiled.address_unit(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 1) == (1, np.int32)


def cover_levels(lo: int, hi: int, base: int) -> list[int]:
    """The levels of the cover nodes of slots [lo, hi) in a tree of `base` leaves."""
    levels = []
    left, right, level = lo + base, hi + base, 0
    while left < right:
        if left & 1:
            levels.append(level)
            left += 1
        if right & 1:
            right -= 1
            levels.append(level)
        left, right, level = left >> 1, right >> 1, level + 1
    return levels


@needs_compiled
@pytest.mark.parametrize("long_lived", [0.0, 0.5])
def test_the_band_of_block_levels_keeps_to_its_budget_of_updates(long_lived, monkeypatch):
    # Half the buffers live across half the schedule (activations kept for a backward pass):
    # spreading their ranges over blocks far above the block level would cost too much.
    monkeypatch.setattr(compiled, "BLOCK_LEVEL", 3)
    rng = random.Random(7)
    buffers = [Buffer(f"t{k}", k, k + (1000 if rng.random() < long_lived else rng.randint(1, 40)), 64)
               for k in range(2000)]
    problem = Problem.build(buffers, 1)
    base = leaf_base(problem.slot_count)
    slot_hi = np.where(problem.slot_hi == problem.slot_count, base, problem.slot_hi)
    per_level: list[int] = []
    last_query_ranks(problem.slot_lo, slot_hi, np.arange(len(buffers)), base, per_level)
    band = compiled._block_band(per_level, len(buffers), 3, base.bit_length() - 1)

    def updates(band: int) -> int:
        return sum(1 << (level - 3) for lo, hi in zip(problem.slot_lo.tolist(), slot_hi.tolist())
                   for level in cover_levels(lo, hi, base) if 3 <= level <= 3 + band)

    assert updates(band) <= compiled.BAND_UPDATES * len(buffers)
    if long_lived:
        assert band < compiled.BLOCK_BAND
        assert updates(band + 1) > compiled.BAND_UPDATES * len(buffers)
    else:
        assert band == compiled.BLOCK_BAND
    order = by_size(problem)
    assert place_over_compiled_tree(problem, order) == over_tree(problem, order)


@needs_compiled
def test_compiled_placement_stops_where_the_python_tree_stops():
    problem = Problem.build(crowded_buffers(1500, 3), 1)
    order = by_size(problem)
    offsets = place_over_compiled_tree(problem, order)
    arena = max(offset + size for offset, size in zip(offsets, problem.sizes))
    assert place_over_compiled_tree(problem, order, stop_at=arena + 1) == offsets
    assert place_over_compiled_tree(problem, order, stop_at=arena) is None
    assert over_tree(problem, order, stop_at=arena) is None


@needs_compiled
def test_a_stop_counts_only_the_buffers_of_the_order():
    # Fixed buffers are not the pass's to place: a stop at or below their ends, even at 0,
    # stops nothing until a buffer of the order ends there (as in the Python tree).
    buffers = [Buffer(f"f{k}", k, k + 2, 64, fixed_offset=64 * k) for k in range(3)]
    problem = Problem.build(buffers, 1)
    for stop in (0, 64, 1000):
        assert place_over_compiled_tree(problem, [], stop_at=stop) == [0, 64, 128] == over_tree(problem, [], stop)
        assert place_over_compiled_tree(problem, [], stop_cell=np.array([stop])) == [0, 64, 128]
    problem = Problem.build(buffers + [Buffer("free", 0, 1, 8)], 1)
    assert place_over_compiled_tree(problem, [3], stop_at=72) is None  # it goes above f0: [64, 72)
    assert place_over_compiled_tree(problem, [3], stop_at=73) == [0, 64, 128, 64] == over_tree(problem, [3], 73)


def four_apart() -> tuple[Problem, list[int]]:
    """Four buffers that never meet (sizes 100, 50, 40, 30) and their by-size order: every
    one goes to 0, only the first ends at 100."""
    buffers = [Buffer(f"b{k}", 2 * k, 2 * k + 1, size) for k, size in enumerate([100, 50, 40, 30])]
    problem = Problem.build(buffers, 1)
    return problem, by_size(problem)


@needs_compiled
def test_a_stop_lowered_during_the_pass_counts_the_buffers_already_placed(monkeypatch):
    # Another thread lowers the cell between calls of the loop (here: the progress sink,
    # called before each call) or during the last one; a buffer placed before may already
    # end above the new value, and the pass must not return a plan then.
    monkeypatch.setattr(compiled, "CALL_EVERY", 1)
    problem, order = four_apart()
    assert place_over_compiled_tree(problem, order, stop_cell=[101]) == [0, 0, 0, 0]
    cell = [1 << 62]
    heard = []

    def lower_after_the_first(placed: int, total: int) -> None:
        heard.append(placed)
        if placed == 1:
            cell[0] = 100

    assert place_over_compiled_tree(problem, order, progress=lower_after_the_first, stop_cell=cell) is None
    assert heard == [0, 1]  # it stopped at the first look after the cell was lowered
    place_run = compiled._kernel(problem, "place_run")
    late = [1 << 62]

    def lowering_during_the_last_call(*args):
        outcome = place_run(*args)
        if args[6] == len(order):  # `stop`: this call placed the last buffer
            late[0] = 100
        return outcome

    monkeypatch.setattr(compiled, "_kernel", lambda problem, name: lowering_during_the_last_call)  # place_run only
    assert place_over_compiled_tree(problem, order, stop_cell=late) is None


@needs_compiled
def test_a_stop_cell_may_be_an_array_that_the_loop_reads_itself(monkeypatch):
    # An int64 array is handed to the loop as it is (another thread's write reaches it at
    # the next placement, not at the next call): the loop itself stops the pass.
    monkeypatch.setattr(compiled, "CALL_EVERY", 4)
    problem, order = four_apart()
    place_run = compiled._kernel(problem, "place_run")
    outcomes = []
    cells = []

    def one_call(*args):
        cells.append(args[18])  # `cell`
        outcomes.append(place_run(*args))
        return outcomes[-1]

    monkeypatch.setattr(compiled, "_kernel", lambda problem, name: one_call)
    cell = np.array([101])
    assert place_over_compiled_tree(problem, order, stop_cell=cell) == [0, 0, 0, 0]
    assert cells[-1] is cell
    cell[0] = 100
    assert place_over_compiled_tree(problem, order, stop_cell=cell) is None
    assert outcomes[-1] == compiled._kernels().STOPPED


@needs_compiled
def test_compiled_placement_keeps_fixed_offsets_and_reports_progress(monkeypatch):
    monkeypatch.setattr(compiled, "CALL_EVERY", 100)
    buffers = [Buffer(f"f{k}", k, k + 50, 64, fixed_offset=64 * k) for k in range(4)]
    buffers += crowded_buffers(1000, 4)
    problem = Problem.build(buffers, 1)
    order = [index for index in by_size(problem) if problem.fixed[index] is None]
    heard: list[tuple[int, int]] = []
    offsets = place_over_compiled_tree(problem, order, progress=lambda placed, total: heard.append((placed, total)))
    assert offsets[:4] == [0, 64, 128, 192]
    assert offsets == over_tree(problem, order)
    assert [placed for placed, _ in heard] == sorted({placed for placed, _ in heard})
    assert heard[0] == (0, 1000) and len(heard) >= 10


@needs_compiled
def test_place_in_order_compiles_large_passes_without_a_deadline_only(monkeypatch):
    monkeypatch.setattr(compiled, "COMPILED_FROM", 100)
    problem = Problem.build(crowded_buffers(600, 5), 1)
    order = by_size(problem)
    expected = over_tree(problem, order)
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return place_over_compiled_tree(*args, **kwargs)

    monkeypatch.setattr(greedy, "place_over_compiled_tree", counted)
    assert place_in_order(problem, order) == expected
    assert len(calls) == 1
    assert place_in_order(problem, order, deadline=float(10**12)) == expected
    assert len(calls) == 1  # a pass with a deadline keeps to the Python tree
    plan = LivenessPlanner().plan(problem.buffers, 1)
    assert len(calls) >= 2 and plan.arena_bytes >= plan.lower_bound_bytes


def test_the_environment_turns_the_compiled_loop_off(monkeypatch):
    monkeypatch.setenv("RLXIR_COMPILED_PLANNER", "0")
    assert not compiled_placement_available()
    monkeypatch.setattr(compiled, "COMPILED_FROM", 1)
    problem = Problem.build(crowded_buffers(300, 6), 1)
    order = by_size(problem)
    monkeypatch.setattr(greedy, "place_over_compiled_tree", lambda *args, **kwargs: pytest.fail("compiled loop ran"))
    assert place_in_order(problem, order) == over_tree(problem, order)


@needs_compiled
def test_an_interrupt_during_a_compiled_call_is_raised_as_an_interrupt(monkeypatch):
    # What Numba's dispatcher does when Ctrl-C lands in a callback of its own: it returns
    # with the KeyboardInterrupt still set, and Python reports a SystemError caused by it.
    def interrupted_call(*args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError("place_run returned a result with an exception set") from interrupt

    def broken_call(*args):
        raise SystemError("something else")

    kernels = compiled._kernels()
    problem = Problem.build(crowded_buffers(300, 1), 1)
    monkeypatch.setattr(kernels, "place_run", interrupted_call)
    with pytest.raises(KeyboardInterrupt):  # the CLI reports "interrupted", not an internal error
        place_over_compiled_tree(problem, by_size(problem))
    monkeypatch.setattr(kernels, "place_run", broken_call)
    with pytest.raises(SystemError, match="something else"):  # other failures stay what they are
        place_over_compiled_tree(problem, by_size(problem))


@needs_compiled
def test_the_loops_run_as_python_with_numbas_jit_turned_off():
    # NUMBA_DISABLE_JIT=1 (for debugging) runs the loops as Python: the cache hints they
    # give cannot run there and must do nothing, not fail.
    script = (
        "from rlxir.planning.compiled import place_over_compiled_tree\n"
        "from rlxir.planning.orderings import by_size\n"
        "from rlxir.planning.problem import Problem\n"
        "from tests.planning.strategies import crowded_buffers\n"
        "problem = Problem.build(crowded_buffers(200, 3), 1)\n"
        "print(place_over_compiled_tree(problem, by_size(problem)))\n"
    )
    environment = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                              cwd=Path(__file__).resolve().parents[2], check=False)
    assert finished.returncode == 0, finished.stderr
    problem = Problem.build(crowded_buffers(200, 3), 1)
    assert ast.literal_eval(finished.stdout) == over_tree(problem, by_size(problem))


def test_without_numba_the_compiled_loop_is_unavailable(monkeypatch):
    monkeypatch.setattr(compiled, "_kernels", lambda: None)
    assert not compiled_placement_available()
    with pytest.raises(RuntimeError, match="Numba"):
        place_over_compiled_tree(Problem.build([Buffer("a", 0, 1, 8)], 1), [0])


@needs_compiled
def test_a_pass_with_a_cheap_python_loop_does_not_load_the_compiled_loops(monkeypatch):
    loads = []

    @functools.cache
    def kernels():
        loads.append(1)
        from rlxir.planning import kernels as module

        return module

    monkeypatch.setattr(compiled, "_kernels", kernels)
    monkeypatch.setattr(compiled, "COMPILED_FROM", 10)
    problem = Problem.build(crowded_buffers(300, 1), 1)
    assert not compiled.use_compiled(problem, cold_from=1000)
    assert not loads
    assert compiled.use_compiled(problem, cold_from=100)
    assert loads == [1]
    assert compiled.use_compiled(problem, cold_from=1000)  # loaded now: no reason to keep to Python


def python_peak_sweep(problem, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(sweep, "use_compiled", lambda problem, cold_from=None: False)
        return peak_sweep_best_fit(problem)


@needs_compiled
@settings(max_examples=100, deadline=None)
@given(st.data())
def test_the_compiled_sweep_equals_the_python_sweep(data):
    alignment = data.draw(ALIGNMENTS)
    buffers = data.draw(buffer_lists(max_buffers=60, alignment=alignment))
    problem = Problem.build(buffers, alignment)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(compiled, "COMPILED_FROM", 0)
        patch.setattr(sweep, "COLD_COMPILED_FROM", 0)
        offsets = peak_sweep_best_fit(problem)
        expected = python_peak_sweep(problem, patch)
    assert offsets == expected


@needs_compiled
@pytest.mark.parametrize("seed", [7, 8])
def test_the_compiled_sweep_equals_the_python_sweep_on_crowded_instances(seed, monkeypatch):
    monkeypatch.setattr(compiled, "COMPILED_FROM", 100)
    monkeypatch.setattr(sweep, "COLD_COMPILED_FROM", 100)
    problem = Problem.build(crowded_buffers(4000, seed), 16)
    calls = []
    monkeypatch.setattr(sweep, "run_sweep_compiled", lambda *args: calls.append(1) or compiled.run_sweep_compiled(*args))
    offsets = peak_sweep_best_fit(problem)
    assert len(calls) == 2  # both halves, forward and backward from the peak
    assert offsets == python_peak_sweep(problem, monkeypatch)
    assert peak_sweep_best_fit(problem, deadline=float(10**12)) == offsets
    assert len(calls) == 2  # with a deadline the Python loop runs


def passes_started(monkeypatch) -> list:
    """What every `_PassesAhead.start` of the test returns (None where none started), in order."""
    started: list = []
    start = liveness._PassesAhead.start
    monkeypatch.setattr(liveness._PassesAhead, "start",
                        classmethod(lambda cls, *args: started.append(start(*args)) or started[-1]))
    return started


@needs_compiled
def test_liveness_plans_the_same_with_its_passes_run_ahead(monkeypatch):
    # The pass from the peak runs in a thread beside the by-size pass, then the retry where
    # it misses the bound by more than 1 %; the plans are those of the passes run one after
    # the other. Crowded lists (the retry runs ahead), lists whose pass from the peak
    # reaches the bound (the by-size pass is stopped), and lists in between.
    monkeypatch.setattr(compiled, "COMPILED_FROM", 100)
    started = passes_started(monkeypatch)
    instances = [crowded_buffers(2500, seed, longest=1200) for seed in range(4)]
    instances += [crowded_buffers(2000, seed, longest=100, shortest_span=3) for seed in range(4)]
    instances += [[Buffer(f"t{k}", k, k + 2, 64) for k in range(500)]]
    # With a margin of 50 %, the pass from the peak is within it and the retry, where the
    # by-size pass does not beat that pass, runs in this thread after it (and wins on the
    # second list: peak-first 8,321,472 B against 8,420,480 from the peak, 8,554,048 by size).
    runs = [(LivenessPlanner(peak_pass_from=100), buffers) for buffers in instances]
    runs += [(LivenessPlanner(peak_pass_from=100, retry_above=1.5), buffers)
             for buffers in (instances[0], crowded_buffers(2000, 0, longest=300, shortest_span=10))]
    # A process that has not loaded the compiled loops runs the pass from the peak first,
    # in Python below 200,000 buffers, and only the retry ahead.
    runs += [("cold", buffers) for buffers in instances[:3]]
    retried = at_bound = 0
    for planner, buffers in runs:
        cold = planner == "cold"
        if cold:
            planner = LivenessPlanner(peak_pass_from=100)
            monkeypatch.setattr(liveness, "use_compiled",
                                lambda problem, cold_from=None: cold_from is None and compiled.use_compiled(problem))
        first = len(started)
        plan = planner.plan(buffers, 16)
        mine = [ahead for ahead in started[first:] if ahead is not None]
        with monkeypatch.context() as patch:
            patch.setenv("RLXIR_COMPILED_PLANNER", "0")
            in_sequence = planner.plan(buffers, 16)
        assert plan.offsets == in_sequence.offsets
        assert plan.arena_bytes == in_sequence.arena_bytes
        assert len(mine) == 1
        ahead = mine[0]
        assert not cold or started[first] is None  # cold: the first start declined, the retry's did not
        ahead.thread.join(10)
        assert not ahead.thread.is_alive()  # nothing left running behind the plan
        retried += ahead.retrying
        at_bound += ahead.peak_arena() == Problem.build(buffers, 16).lower_bound_bytes()
    assert retried and at_bound  # both ways were taken


@needs_compiled
def test_a_failure_in_the_passes_run_ahead_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(compiled, "COMPILED_FROM", 100)
    problem = Problem.build(crowded_buffers(500, 1), 1)

    def broken(*args, **kwargs):
        raise MemoryError("no room for the range lists")

    with monkeypatch.context() as patch:
        patch.setattr(liveness, "peak_sweep_best_fit", broken)
        ahead = liveness._PassesAhead.start(problem, "liveness", 1.01)
        assert ahead is not None
        with pytest.raises(MemoryError, match="range lists"):
            ahead.peak_result()
    monkeypatch.setattr(liveness, "place_with_arena", broken)
    ahead = liveness._PassesAhead.start(problem, "liveness", 1.0)
    assert ahead is not None and ahead.peak_result().arena_bytes > 0
    with pytest.raises(MemoryError, match="range lists"):
        ahead.finish_retry(10**9, None)


def test_a_numba_that_fails_to_set_up_leaves_the_python_loops(monkeypatch):
    def failing():
        raise RuntimeError("cannot cache function 'place_run': no locator available")

    monkeypatch.setattr(compiled, "_import_kernels", failing)
    assert compiled._kernels.__wrapped__() is None


@needs_compiled
def test_the_passes_do_not_run_ahead_on_one_core(monkeypatch):
    monkeypatch.setattr(compiled, "COMPILED_FROM", 100)
    problem = Problem.build(crowded_buffers(500, 2), 1)
    monkeypatch.setattr(liveness, "_usable_cores", lambda: 1)
    assert liveness._PassesAhead.start(problem, "liveness", 1.01) is None
    monkeypatch.setattr(liveness, "_usable_cores", lambda: 2)
    ahead = liveness._PassesAhead.start(problem, "liveness", 1.0)
    assert ahead is not None and ahead.finish_retry(10**9, None) is not None


@needs_compiled
def test_an_interrupted_plan_stops_its_passes_run_ahead(monkeypatch):
    monkeypatch.setattr(compiled, "COMPILED_FROM", 100)
    aheads = passes_started(monkeypatch)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(liveness, "by_size_array", interrupted)  # the by-size pass, in this thread
    buffers = crowded_buffers(2500, 0, longest=1200)
    with pytest.raises(KeyboardInterrupt):
        LivenessPlanner(peak_pass_from=100).plan(buffers, 16)
    assert aheads and aheads[0] is not None
    assert aheads[0].retry_cell.tolist() == [0] and aheads[0].by_size_cell.tolist() == [0]
    aheads[0].thread.join(10)
    assert not aheads[0].thread.is_alive()
