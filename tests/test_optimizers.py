"""The optimizer's update in the training step: the same numbers as the optimizer's formula
in NumPy over several steps, f32 state beside low-precision weights, and an arena whose
parts add up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.autodiff.arena_breakdown import PARTS
from rlxir.cli import main
from rlxir.errors import RlxError
from rlxir.autodiff.optimizers import Optimizer, add_optimizer_update, optimizer_from
from rlxir.autodiff.training import plan_training, training_graph

TINY = """\
graph tiny(B) {
  input %x : f32[B, 8]
  param %w : f32[8, 4]
  param %b : f32[4]
  %h = matmul(%x, %w)
  %z = add(%h, %b)
  %a = tanh(%z)
  %loss = reduce_mean(%a) {axes = [0, 1]}
  output %loss
}
"""

MIXED = """\
graph mixed(B) {
  input %x : f32[B, 16]
  param %w : bf16[16, 16]
  param %b : f32[16]
  %x16 = cast(%x) {to = bf16}
  %h = matmul(%x16, %w)
  %h32 = cast(%h) {to = f32}
  %z = add(%h32, %b)
  %a = tanh(%z)
  %loss = reduce_mean(%a) {axes = [0, 1]}
  output %loss
}
"""


def numpy_gradients(x, w, b):
    """d mean(tanh(x w + b)) / d(w, b), by hand."""
    a = np.tanh(x @ w + b)
    upstream = (1 - a * a) / a.size
    return x.T @ upstream, upstream.sum(axis=0)


def numpy_step(kind, weight, gradient, state, t, lr=1e-3, mu=0.9, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    """One step of torch.optim's `kind` (no dampening, Nesterov or amsgrad) in float64."""
    if kind == "sgd":
        return weight - lr * (gradient + wd * weight), state
    if kind == "momentum":
        buffer = mu * state["momentum"] + gradient + wd * weight
        return weight - lr * buffer, {"momentum": buffer}
    if kind == "adam":
        gradient = gradient + wd * weight
    m = b1 * state["m"] + (1 - b1) * gradient
    v = b2 * state["v"] + (1 - b2) * gradient * gradient
    direction = (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    if kind == "adamw":
        weight = weight * (1 - lr * wd)
    return weight - lr * direction, {"m": m, "v": v}


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam", "adamw"])
def test_the_update_is_the_optimizers_formula_over_several_steps(kind):
    optimizer = Optimizer(kind, lr=0.05, weight_decay=0.1)
    step = training_graph(rlxir.parse(TINY).main, optimizer=optimizer)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    weights = {"w": rng.standard_normal((8, 4)).astype(np.float32), "b": rng.standard_normal(4).astype(np.float32)}
    state = {name: {key: np.zeros_like(value) for key in optimizer.state_kinds()} for name, value in weights.items()}
    params = {f"opt.{key}.{name}": value for name, keys in state.items() for key, value in keys.items()}
    params.update(weights)
    if optimizer.uses_step:
        params["opt.step"] = np.float32(0)
    expected = {name: value.astype(np.float64) for name, value in weights.items()}
    for t in (1, 2, 3):
        outputs = interpret_step(step, x, params)
        gradients = dict(zip(("w", "b"), numpy_gradients(x, expected["w"], expected["b"])))
        for name in expected:
            expected[name], state[name] = numpy_step(kind, expected[name], gradients[name], state[name], t,
                                                     lr=0.05, wd=0.1)
            np.testing.assert_allclose(outputs[f"next.{name}"], expected[name], rtol=1e-5, atol=1e-6)
            for key, value in state[name].items():
                np.testing.assert_allclose(outputs[f"next.opt.{key}.{name}"], value, rtol=1e-4, atol=1e-7)
        params = {name.removeprefix("next."): value for name, value in outputs.items() if name != "loss"}
        if optimizer.uses_step:
            assert outputs["next.opt.step"] == t


def interpret_step(step, x, params):
    return rlxir.interpret(step, {"x": x}, params, {"B": 3})


def test_the_state_is_new_params_and_the_interface_is_documented():
    forward = rlxir.parse(TINY).main
    step = training_graph(forward, optimizer="adamw")
    assert step.inputs() == forward.inputs()
    assert step.params() == ["w", "b", "opt.step", "opt.m.w", "opt.v.w", "opt.m.b", "opt.v.b"]
    assert step.outputs == ["loss", "next.w", "next.b", "next.opt.step", "next.opt.m.w", "next.opt.v.w",
                            "next.opt.m.b", "next.opt.v.b"]
    for name in step.params()[2:]:
        assert step.type(f"next.{name}") == step.type(name)
    assert training_graph(forward, optimizer="none").outputs == ["loss", "grad.w", "grad.b"]
    rlxir.verify(step)


def test_a_mixed_precision_graph_keeps_f32_state_and_an_f32_master_copy():
    step = training_graph(rlxir.parse(MIXED).main, optimizer="adamw")
    assert step.type("w").dtype is rlxir.DType.bf16
    for name in ("opt.master.w", "opt.m.w", "opt.v.w", "opt.m.b", "opt.v.b", "opt.step"):
        assert step.type(name).dtype is rlxir.DType.f32, name
    assert "opt.master.b" not in step  # an f32 weight is its own master
    assert step.type("next.w").dtype is rlxir.DType.bf16 and step.op("next.w") == "cast"
    assert step.operands("next.w") == ("next.opt.master.w",)
    outputs = rlxir.interpret(step, bindings={"B": 2})
    np.testing.assert_array_equal(outputs["next.w"], rlxir.interpret(step, bindings={"B": 2})["next.w"])
    assert outputs["next.opt.master.w"].dtype == np.float32


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "gpu", "metal"])
@pytest.mark.parametrize("kind", ["none", "sgd", "adamw"])
def test_the_breakdown_adds_up_to_the_arena(target, kind):
    result = plan_training(rlxir.parse(MIXED).main, target, {"B": 4}, optimizer=kind)
    parts = result.breakdown
    assert set(parts) == {*PARTS, "unused"} and min(parts.values()) >= 0
    assert sum(parts.values()) == result.arena_bytes
    assert parts["weights"] >= result.weight_bytes
    assert parts["gradients"] > 0
    assert (parts["optimizer_state"] > 0) == (kind != "none")
    state = sum(buffer.size for buffer in result.backward.plan.buffers if buffer.value.startswith("opt.")
                and buffer.kind == "param")
    assert parts["optimizer_state"] >= state


def test_adamw_state_is_twice_the_weights_in_f32_on_a_large_model():
    mamba = rlxir.parse_file(Path(__file__).resolve().parents[1] / "examples" / "mamba_lm.rlx").main
    result = plan_training(mamba, "cpu", {"B": 1, "S": 8}, optimizer="adamw")
    state = sum(buffer.size for buffer in result.backward.plan.buffers
                if buffer.kind == "param" and buffer.value.startswith("opt."))
    assert abs(state - 2 * result.weight_bytes) <= 64 * (2 * len(mamba.params()) + 1)
    assert sum(result.breakdown.values()) == result.arena_bytes


def test_bad_hyper_parameters_are_clear_errors():
    with pytest.raises(RlxError, match="unknown optimizer 'lamb'"):
        Optimizer("lamb")
    with pytest.raises(RlxError, match="beta2 1.5 is outside"):
        Optimizer("adam", beta2=1.5)
    with pytest.raises(RlxError, match="lr 0.0 is not positive"):
        Optimizer("sgd", lr=0.0)
    with pytest.raises(RlxError, match="given without an optimizer"):
        optimizer_from("none", {"lr": 0.1})
    with pytest.raises(RlxError, match="no gradient outputs"):
        add_optimizer_update(rlxir.parse(TINY).main, Optimizer())


@pytest.mark.parametrize("kind", ["sgd", "momentum", "adam", "adamw"])
def test_run_training_checks_each_optimizer_on_the_cpu_target(kind, tmp_path, capsys):
    path = tmp_path / "mixed.rlx"
    path.write_text(MIXED)
    code = main(["run", str(path), "--target", "cpu", "--batch", "2", "--training", "--optimizer", kind])
    out = capsys.readouterr().out
    assert code == 0 and "check     ran, matched" in out
    assert "%next.w  bf16[16, 16]" in out and "%next.b  f32[16]" in out
    backward = rlxir.grad(rlxir.parse(TINY).main)
    backward.set_outputs(["loss", "h"])
    with pytest.raises(RlxError, match="not the gradient of a param"):
        add_optimizer_update(backward, Optimizer())


def test_a_value_named_like_the_update_is_refused_at_its_line():
    graph = rlxir.parse(TINY.replace("%h", "%next.h")).main
    with pytest.raises(RlxError, match="name the optimizer's update keeps") as caught:
        training_graph(graph)
    assert caught.value.loc is not None and caught.value.loc.line == 5


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "gpu", "metal"])
@pytest.mark.parametrize("graph", [TINY, MIXED])
def test_the_update_is_written_over_the_weights_and_state_it_replaces(target, graph):
    """Each updated weight and state tensor takes its param's bytes: the arena holds each
    once, as an in-place update does, and no plan buffer is the updated value's own."""
    result = plan_training(rlxir.parse(graph).main, target, {"B": 4}, optimizer="adamw")
    step = result.backward.graph
    updated = [output for output in step.outputs if output.startswith("next.")]
    roots = {buffer.value for buffer in result.backward.plan.buffers}
    for output in updated:
        over = step.attrs(output).get("in_place_of")
        view = step.attrs(output).get("view_of")
        assert over == "%" + output[len("next."):] or output not in roots and view is None, output
    assert not roots & set(updated)
    state = sum(buffer.size for buffer in result.backward.plan.buffers
                if buffer.kind == "param" and buffer.value.startswith("opt."))
    assert result.breakdown["weights"] == result.weight_bytes
    assert result.breakdown["optimizer_state"] == state


@pytest.mark.parametrize("target", ["cuda", "rocm", "metal", "gpu"])
def test_an_update_in_place_runs_and_matches_on_other_targets(target, tmp_path, capsys):
    path = tmp_path / "mixed.rlx"
    path.write_text(MIXED)
    code = main(["run", str(path), "--target", target, "--batch", "2", "--training", "--optimizer", "adamw"])
    assert code == 0 and "check     ran, matched" in capsys.readouterr().out


def test_an_update_read_after_it_is_written_is_not_made_in_place():
    from rlxir.autodiff.training import update_in_place

    graph = rlxir.parse("""graph g {
  param %p : f32[4]
  param %q : f32[4]
  input %g : f32[4]
  %next.p = sub(%p, %g)
  %late = mul(%p, %g)
  %next.q = sub(%q, %late)
  output %next.p, %next.q
}""").main
    assert update_in_place(graph, "lir") == ["next.q"]
    assert graph.attrs("next.q")["in_place_of"] == "%q" and "in_place_of" not in graph.attrs("next.p")
