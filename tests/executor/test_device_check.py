"""How a GPU run is checked (rlxir.executor.device_check): which check fits, and that each one
finds what it must. The checks take the array module the run uses, so they run here with NumPy
as the "device"; tests/executor/test_gpu.py runs them with CuPy where a GPU is present."""

from __future__ import annotations

import numpy as np
import pytest

import rlxir
from rlxir.executor.device_check import (DeviceCheckError, DeviceCheckPlan, check_on_device, device_interpret,
                                         plan_device_check, sample_rows)
from rlxir.interpreter import bind_for_run, interpret, interpret_rounded_again, random_feeds
from rlxir.autodiff.training import compile_training, training_graph

ROWS_GRAPH = """
graph rows(B, S=4) {
  input %x : f32[B, S, 8]
  param %w : f32[8, 8]
  %h = matmul(%x, %w) : f32[B, S, 8]
  %y = softmax(%h) {axis = -1} : f32[B, S, 8]
  output %y
}
"""

TRAINING_GRAPH = """
graph train(B) {
  input %x : f32[B, 8]
  param %w : f32[8, 4]
  %h = matmul(%x, %w) : f32[B, 4]
  %t = tanh(%h) : f32[B, 4]
  %loss = reduce_mean(%t) {axes = [0, 1]} : f32[]
  output %loss
}
"""

MIXED_GRAPH = """
graph mixed(B) {
  input %x : f32[B, 8]
  %m = reduce_mean(%x) {axes = [0], keepdims = true} : f32[1, 8]
  %y = sub(%x, %m) : f32[B, 8]
  output %y
}
"""


def graph_of(text: str):
    return rlxir.parse(text).main


def test_sample_rows_are_the_first_middle_and_last():
    assert sample_rows(128) == (0, 64, 127)
    assert sample_rows(2) == (0, 1)
    assert sample_rows(1) == (0,)


def test_the_plan_is_the_device_reference_when_everything_fits():
    unbound = graph_of(ROWS_GRAPH)
    reference = bind_for_run(unbound, {"B": 16})
    plan = plan_device_check(reference, unbound, "B", arena_bytes=10_000, free_device=1 << 30, available_host=1 << 30)
    assert plan.how == "device"


def test_a_full_card_samples_rows_and_says_which():
    unbound = graph_of(ROWS_GRAPH)
    reference = bind_for_run(unbound, {"B": 16})
    plan = plan_device_check(reference, unbound, "B", arena_bytes=10_000, free_device=10_000, available_host=1 << 30)
    assert plan.how == "rows" and plan.rows == (0, 8, 15)
    assert "batch rows 0, 8, 15 of B" in plan.scope()


def test_without_a_batch_axis_the_outputs_go_to_the_host():
    training = bind_for_run(training_graph(graph_of(TRAINING_GRAPH).bind({"B": 2})))
    plan = plan_device_check(training, None, "B", arena_bytes=1 << 30, free_device=1 << 30, available_host=1 << 30)
    assert plan.how == "host"


def test_a_check_that_fits_nowhere_is_refused_with_the_figures():
    reference = bind_for_run(graph_of(MIXED_GRAPH), {"B": 4})
    with pytest.raises(DeviceCheckError, match="free on the device"):
        plan_device_check(reference, None, "B", arena_bytes=1 << 40, free_device=10, available_host=10)


def test_the_device_interpreter_gives_the_interpreters_outputs():
    graph = bind_for_run(graph_of(ROWS_GRAPH), {"B": 3})
    inputs, params = random_feeds(graph)
    expected = interpret(graph, inputs, params)
    got = device_interpret(graph, {**inputs, **params}, np)
    np.testing.assert_allclose(got["y"], expected["y"], rtol=1e-6)


def test_the_device_interpreter_rounds_again_where_the_interpreter_does():
    """The conditioning measure of a check on the device moves the same values the same way
    as `interpret_rounded_again` (a hash of position and name, no generator state)."""
    graph = bind_for_run(graph_of(ROWS_GRAPH), {"B": 3})
    inputs, params = random_feeds(graph)
    exact = interpret(graph, inputs, params)["y"]
    host = interpret_rounded_again(graph, inputs, params)["y"]
    device = device_interpret(graph, {**inputs, **params}, np, rounded_again=True)["y"]
    assert (host != exact).mean() > 0.5  # the matmul's move and the softmax's own cancel in some
    np.testing.assert_allclose(device, host, rtol=1e-6)
    assert ((device > exact) == (host > exact))[host != exact].mean() > 0.9


@pytest.mark.parametrize("how", ["device", "rows", "host"])
def test_each_check_matches_a_correct_run(how):
    unbound = graph_of(ROWS_GRAPH)
    reference = bind_for_run(unbound, {"B": 6})
    result = rlxir.compile(reference, "cuda")
    plan = plan_device_check(reference, unbound, "B", 0, 1 << 30, 1 << 30)
    plan = type(plan)(how, sample_rows(6) if how == "rows" else (), "B", plan.figures)
    check = check_on_device(reference, unbound, {"B": 6}, result, plan, {}, {}, device="cpu")
    assert check.matched, check.summary()
    assert [output.name for output in check.outputs] == ["y"]
    if how == "rows":
        assert "batch rows 0, 3, 5" in check.scope


def test_a_sample_of_rows_refuses_a_graph_that_mixes_them():
    unbound = graph_of(MIXED_GRAPH)
    reference = bind_for_run(unbound, {"B": 6})
    result = rlxir.compile(reference, "cuda")
    plan = plan_device_check(reference, unbound, "B", 0, 1 << 30, 1 << 30)
    plan = type(plan)("rows", sample_rows(6), "B", plan.figures)
    with pytest.raises(DeviceCheckError, match="mixes batch rows"):
        check_on_device(reference, unbound, {"B": 6}, result, plan, {}, {}, device="cpu")


def test_a_wrong_value_in_the_sampled_rows_is_found(monkeypatch):
    """A run whose output is off in one sampled row does not match."""
    import rlxir.executor.device_check as device_check

    unbound = graph_of(ROWS_GRAPH)
    reference = bind_for_run(unbound, {"B": 6})
    result = rlxir.compile(reference, "cuda")
    real_run = device_check.run_in_arena

    def run_with_a_wrong_row(*args, **kwargs):
        run = real_run(*args, **kwargs)
        for value in run.outputs.values():
            value[5] += 1.0
        return run

    monkeypatch.setattr(device_check, "run_in_arena", run_with_a_wrong_row)
    plan = DeviceCheckPlan("rows", sample_rows(6), "B")
    check = check_on_device(reference, unbound, {"B": 6}, result, plan, {}, {}, device="cpu")
    assert not check.matched and check.cause == "defect"


def test_a_training_step_is_checked_with_the_outputs_on_the_host():
    graph = graph_of(TRAINING_GRAPH).bind({"B": 2})
    shown = training_graph(graph)
    result = compile_training(graph, "cuda", backward=shown)
    plan = DeviceCheckPlan("host")
    check = check_on_device(bind_for_run(shown), None, {}, result, plan, {}, {}, device="cpu")
    assert check.matched, check.summary()
    assert len(check.outputs) == len(shown.outputs)


NEAR_TIES = """
graph ties(B) {
  input %a : f32[B, 256]
  input %b : f32[B, 256]
  const %gain : f32[] = 1e9
  %d = sub(%a, %b) : f32[B, 256]
  %s = mul(%d, %gain) : f32[B, 256]
  %y = tanh(%s) : f32[B, 256]
  output %y
}
"""
STABLE = "graph g(B) {\n  input %x : f32[B, 8]\n  %y = tanh(%x) : f32[B, 8]\n  output %y\n}\n"


def near_ties_feeds() -> dict:
    """a, and b two units in the last place away from it, up or down."""
    generator = np.random.default_rng(0)
    a = generator.uniform(1, 2, (6, 256)).astype(np.float32)
    b = a.copy()
    for _ in range(2):
        b = np.where(generator.random(b.shape) < 0.5, np.nextafter(b, np.float32(np.inf)),
                     np.nextafter(b, np.float32(0)))
    return {"a": a, "b": b}


def flip_some_signs(value):
    value[:, :8] *= -1  # what one more rounding of a - b does to tanh(1e9 (a - b)) here


def add_half(value):
    value[0, 0] += 0.5


def check_with_planted_outputs(monkeypatch, text: str, feeds: dict, change, how: str, device: str = "cpu"):
    """`check_on_device` of `text` at B = 6 by the check `how`, with `change` applied to each
    output of the run in the arena (not to the reference)."""
    import rlxir.executor.device_check as device_check

    run_in_arena = device_check.run_in_arena

    def planted(*args, **kwargs):
        run = run_in_arena(*args, **kwargs)
        for value in run.outputs.values():
            change(value)
        return run

    monkeypatch.setattr(device_check, "run_in_arena", planted)
    unbound = graph_of(text)
    reference = bind_for_run(unbound, {"B": 6})
    result = rlxir.compile(reference, "cuda")
    plan = plan_device_check(reference, unbound, "B", 0, 1 << 30, 1 << 30)
    plan = type(plan)(how, sample_rows(6) if how == "rows" else (), "B", plan.figures)
    return check_on_device(reference, unbound, {"B": 6}, result, plan, feeds, {}, device=device)


@pytest.mark.parametrize("how", ["device", "rows", "host"])
def test_each_check_calls_a_difference_the_graph_makes_under_one_more_rounding_precision(monkeypatch, how):
    """tanh(1e9 (a - b)) with b two units in the last place from a: signs that one more
    rounding flips are precision, measured on whichever reference the check runs."""
    check = check_with_planted_outputs(monkeypatch, NEAR_TIES, near_ties_feeds(), flip_some_signs, how)
    (output,) = check.outputs
    assert output.max_abs_error >= 1.0 and output.sensitivity >= 1.0
    assert check.cause == "precision" and "ill-conditioned" in check.verdict


@pytest.mark.parametrize("how", ["device", "rows", "host"])
def test_each_check_keeps_a_wrong_value_on_a_stable_graph_a_defect(monkeypatch, how):
    check = check_with_planted_outputs(monkeypatch, STABLE, {}, add_half, how)
    (output,) = check.outputs
    assert output.sensitivity < 1e-5 and check.cause == "defect"
