"""The arena run catches plans that the validator cannot: a lifetime one step too short,
a view that reaches past its root, storage that cannot hold a value.

The validator checks a placement against the lifetimes the planner was given; if those
lifetimes are wrong, both agree and the plan passes. The run reads every value where the
plan put it after the plan's own lifetimes have poisoned the dead ones, so the error shows.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import rlxir
import rlxir.compiler.memory_plan
from rlxir.executor import ExecutionError
from rlxir.executor.arena import ArenaLayout
from rlxir.compiler.lifetimes import graph_buffers

TEXT = """
graph chain(B) {
  input %x : f32[B, 64]
  param %w : f32[64, 64]
  %h = matmul(%x, %w) : f32[B, 64]
  %a = tanh(%h) : f32[B, 64]
  %b = exp(%a) : f32[B, 64]
  %c = mul(%b, %h) : f32[B, 64]
  %d = sin(%c) : f32[B, 64]
  output %d
}
"""


def chain():
    return rlxir.parse(TEXT).main.bind({"B": 4})


def shortened(victim: str):
    """`graph_buffers` with `victim`'s lifetime one step shorter: the planted bug."""

    def buffers_with_bug(graph, *args, **kwargs):
        buffers, info = graph_buffers(graph, *args, **kwargs)
        planted = [attrs.evolve(buffer, end=buffer.end - 1) if buffer.name == victim else buffer
                   for buffer in buffers]
        return planted, info

    return buffers_with_bug


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
def test_the_unchanged_plan_runs_and_matches(target):
    graph = chain()
    assert rlxir.check_execution(graph, rlxir.compile(graph, target)).matched


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
def test_a_lifetime_one_step_short_is_caught(target, monkeypatch):
    graph = chain()
    # %h is read by %a and, three steps later, by %c: one step less and it dies before %c reads it
    monkeypatch.setattr(rlxir.compiler.memory_plan, "graph_buffers", shortened("h"))
    result = rlxir.compile(graph, target)  # the validator agrees with the wrong lifetimes
    check = rlxir.check_execution(graph, result)
    assert not check.matched
    assert "h" in {operand for _, operand in check.run.poisoned_reads}  # (the reader may be a fused region)
    assert "read dead memory" in check.verdict
    assert check.cause == "defect" and "a defect in the target's pipeline or planner" in check.verdict


def test_a_view_past_its_root_is_refused():
    graph = rlxir.parse("""
graph v {
  input %x : f32[4, 8]
  %r = reshape(%x) {shape = [32]} : f32[32]
  %y = exp(%r) : f32[32]
  output %y
}
""").main
    result = rlxir.compile(graph, "cpu")
    lowered = result.graph
    assert lowered.attrs("r")["view_of"] == "%x"
    lowered.set_attrs("r", {**lowered.attrs("r"), "view_offset": 64})  # half of %r would lie past %x
    with pytest.raises(ExecutionError, match="needs 128 bytes but its view of %x at byte 64 holds 64"):
        ArenaLayout.of(lowered, result.plan)


def test_a_slot_smaller_than_its_value_is_refused():
    graph = chain()
    result = rlxir.compile(graph, "cpu")
    buffers, info, offsets = result.plan.placement
    smaller = [attrs.evolve(buffer, size=buffer.size // 2) if buffer.name == "h" else buffer for buffer in buffers]
    plan = attrs.evolve(result.plan, placement=(smaller, info, offsets))
    with pytest.raises(ExecutionError, match="%h needs 1024 bytes but its buffer holds 512"):
        ArenaLayout.of(result.graph, plan)


def test_storage_that_cannot_hold_a_value_is_reported_as_the_targets_loss():
    graph = rlxir.parse("""
graph big {
  input %i : i64[4]
  const %k : i64[] = 3000000000
  %s = add(%i, %k) : i64[4]
  %t = sub(%s, %k) : i64[4]
  output %s, %t
}
""").main
    feeds = {"i": np.array([1, 2, 3, 4], dtype=np.int64)}
    exact = rlxir.check_execution(graph, rlxir.compile(graph, "cpu"), inputs=feeds)
    assert exact.matched and exact.run.storage_losses == ()
    lossy = rlxir.check_execution(graph, rlxir.compile(graph, "rocm"), inputs=feeds)  # f32 sizing: int32 slots
    assert not lossy.matched
    lost = {loss.value for loss in lossy.run.storage_losses}
    assert "k" in lost and all(loss.storage == "int32" for loss in lossy.run.storage_losses)  # 3e9 > 2^31 - 1
    assert "storage loss" in lossy.verdict


def test_an_f64_rounded_by_f32_storage_is_reported():
    graph = rlxir.parse("""
graph wide {
  input %x : f64[3]
  %y = mul(%x, %x) : f64[3]
  output %y
}
""").main
    feeds = {"x": np.array([1.0 + 2.0 ** -40, 3.0, 0.1], dtype=np.float64)}
    run = rlxir.run_in_arena(rlxir.compile(graph, "cuda"), inputs=feeds)
    losses = {loss.value: loss for loss in run.storage_losses}
    assert set(losses) >= {"x"} and losses["x"].elements == 2 and losses["x"].max_change > 0
    assert rlxir.run_in_arena(rlxir.compile(graph, "cpu"), inputs=feeds).storage_losses == ()


def test_live_buffers_placed_on_the_same_bytes_are_refused_as_a_defect():
    graph = chain()
    result = rlxir.compile(graph, "cpu")
    buffers, info, offsets = result.plan.placement
    # %h lives from the matmul to its last reader; the tanh's buffer, live in between, moves onto it
    tanh = next(buffer.name for buffer in buffers if buffer.name.endswith("tanh"))
    moved = {**offsets, tanh: offsets["h"]}
    plan = attrs.evolve(result.plan, placement=(buffers, info, moved))
    with pytest.raises(ExecutionError, match="a defect in the target's pipeline or planner") as refused:
        ArenaLayout.of(result.graph, plan)
    assert "h" in str(refused.value) and tanh in str(refused.value)


def test_a_kernel_out_of_memory_is_a_located_refusal_naming_the_op(monkeypatch):
    import rlxir.executor.runner as runner

    def exhausted(xp, args, attrs_, out, workspace=None):
        raise MemoryError("Out of memory allocating 4,096 bytes")

    monkeypatch.setitem(runner.KERNELS, "sin", exhausted)
    graph = chain()
    with pytest.raises(ExecutionError) as caught:
        rlxir.run_in_arena(rlxir.compile(graph, "cpu"))
    assert "%d = sin: the host ran out of memory" in str(caught.value) and "4,096 bytes" in str(caught.value)
    assert caught.value.loc is not None and caught.value.loc.line == 9
