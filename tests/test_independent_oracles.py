"""Checks of the code by independent means, not by the code itself.

- `validate_plan` against an O(n^2) pairwise overlap check, on valid and invalid placements;
- the lower bound against a brute-force sum of the bytes live at each step;
- `plan_arena_bytes` against `rlxir compile --json` run in another process;
- `fit_batch` against a brute-force scan, on arenas that grow with the batch and on arenas
  that do not (what fit promises then: docs/fit.md, "What fit promises").
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlxir
from rlxir.compiler.budget import Budget
from rlxir.compiler.fit import plan_bound
from rlxir.planning import Buffer, PlanError, aligned_size, get_planner, validate_plan
from rlxir.planning.bounds import lower_bound

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def buffers_and_offsets(draw):
    """A buffer list and a placement that is valid about half of the time."""
    count = draw(st.integers(1, 12))
    buffers = []
    for index in range(count):
        start = draw(st.integers(0, 10))
        buffers.append(Buffer(f"b{index}", start, start + draw(st.integers(1, 6)), draw(st.integers(0, 64))))
    alignment = draw(st.sampled_from([1, 4, 16]))
    if draw(st.booleans()):  # a real planner's answer, maybe nudged
        offsets = list(get_planner("liveness").plan(buffers, alignment).offsets.values())
        if draw(st.booleans()):
            victim = draw(st.integers(0, count - 1))
            offsets[victim] = max(0, offsets[victim] + alignment * draw(st.integers(-3, 3)))
    else:  # anywhere
        offsets = [alignment * draw(st.integers(0, 12)) for _ in buffers]
    arena = max((offset + aligned_size(buffer.size, alignment) for offset, buffer in zip(offsets, buffers)), default=0)
    return buffers, offsets, alignment, arena


def pairwise_overlap(buffers, offsets, alignment) -> bool:
    """Two non-empty buffers live at a common step whose byte ranges intersect (O(n^2))."""
    for i, a in enumerate(buffers):
        for j in range(i + 1, len(buffers)):
            b = buffers[j]
            size_a, size_b = aligned_size(a.size, alignment), aligned_size(b.size, alignment)
            if not size_a or not size_b:
                continue
            live_together = a.start < b.end and b.start < a.end
            bytes_meet = offsets[i] < offsets[j] + size_b and offsets[j] < offsets[i] + size_a
            if live_together and bytes_meet:
                return True
    return False


@SETTINGS
@given(case=buffers_and_offsets())
def test_validate_plan_agrees_with_a_pairwise_check(case):
    buffers, offsets, alignment, arena = case
    expected_valid = not pairwise_overlap(buffers, offsets, alignment)
    try:
        validate_plan(buffers, {buffer.name: offset for buffer, offset in zip(buffers, offsets)}, alignment, arena)
        valid = True
    except PlanError:
        valid = False
    assert valid == expected_valid


@SETTINGS
@given(case=buffers_and_offsets())
def test_lower_bound_is_the_largest_per_step_sum(case):
    buffers, _, alignment, _ = case
    steps = range(max(buffer.end for buffer in buffers))
    brute = max(sum(aligned_size(b.size, alignment) for b in buffers if b.start <= step < b.end) for step in steps)
    assert lower_bound(buffers, alignment) == brute


def test_plan_arena_bytes_equals_a_compile_in_another_process():
    graph = rlxir.parse_file(ROOT / "examples" / "gpt2_block.rlx").main
    for target in ("cpu", "rocm", "gpu"):
        completed = subprocess.run(
            [sys.executable, "-m", "rlxir", "compile", str(ROOT / "examples" / "gpt2_block.rlx"), "--target", target,
             "--batch", "3", "-D", "S=40", "--json"], capture_output=True, text=True, check=False, cwd=ROOT)
        assert completed.returncode == 0, completed.stderr
        report = json.loads(completed.stdout)
        assert report["arena_bytes"] == rlxir.plan_arena_bytes(graph, target, {"B": 3, "S": 40})


def fit_on(arenas: list[int], budget: int, requested: int, jobs: int = 1):
    table = {batch: arenas[batch - 1] for batch in range(1, requested + 1)}
    limit = Budget(budget, None, None, 0, 0.0, 1.0, "a fixed budget")
    return rlxir.fit_batch("cpu", requested, 1.0, lambda batch: table[batch], budget=limit, jobs=jobs)


def growing_arenas(requested: int, data) -> tuple[list[int], int]:
    steps = data.draw(st.lists(st.integers(0, 50), min_size=requested, max_size=requested))
    arenas = [sum(steps[:batch]) + 1 for batch in range(1, requested + 1)]
    return arenas, data.draw(st.integers(0, arenas[-1] + 10))


def any_arenas(requested: int, data) -> tuple[list[int], int]:
    return data.draw(st.lists(st.integers(1, 100), min_size=requested, max_size=requested)), \
        data.draw(st.integers(0, 110))


def assert_brute_force_answer(result, arenas: list[int], budget: int, requested: int) -> None:
    fitting = [batch for batch in range(1, requested + 1) if arenas[batch - 1] <= budget]
    assert result.batch == (max(fitting) if fitting else None)
    assert result.rounds <= plan_bound(requested) or requested == 1


def assert_promises_kept(result, arenas: list[int], budget: int, requested: int) -> None:
    planned = {trial.batch: trial.arena_bytes for trial in result.tried}
    assert result.rounds <= plan_bound(requested) and len(result.tried) <= result.jobs * result.rounds
    if result.batch is None:
        assert arenas[0] > budget and planned[1] == arenas[0]
        return
    assert arenas[result.batch - 1] <= budget and planned[result.batch] == arenas[result.batch - 1]
    # the answer is the requested batch, or the next batch was planned and does not fit
    assert result.batch == requested or planned.get(result.batch + 1, -1) > budget


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requested=st.integers(1, 64), grows=st.booleans(), data=st.data())
def test_fit_keeps_its_promises_and_finds_the_brute_force_answer_when_arenas_grow(requested, grows, data):
    arenas, budget = (growing_arenas if grows else any_arenas)(requested, data)
    result = fit_on(arenas, budget, requested)
    assert_promises_kept(result, arenas, budget, requested)
    if grows:
        assert_brute_force_answer(result, arenas, budget, requested)
    assert len(result.tried) == result.rounds


# Each fit in workers forks its pool (about 0.1 s): fewer examples; the search itself is
# checked on many more in tests/test_fit.py.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requested=st.integers(2, 64), grows=st.booleans(), jobs=st.integers(2, 4), data=st.data())
def test_fit_in_workers_is_the_serial_fit_and_keeps_its_promises(requested, grows, jobs, data):
    arenas, budget = (growing_arenas if grows else any_arenas)(requested, data)
    serial, parallel = fit_on(arenas, budget, requested), fit_on(arenas, budget, requested, jobs)
    assert (parallel.batch, parallel.arena_bytes, parallel.reason) == (serial.batch, serial.arena_bytes, serial.reason)
    assert parallel.rounds <= serial.rounds and set(serial.tried) <= set(parallel.tried)
    assert_promises_kept(parallel, arenas, budget, requested)
    if grows:
        assert_brute_force_answer(parallel, arenas, budget, requested)
