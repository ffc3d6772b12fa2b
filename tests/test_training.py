"""compile_training / plan_training_arena_bytes: the forward plan fixes the weights, the
training step is planned around them, and fit sizes the step through the same path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.compiler.compile import ArenaTooLarge, CompileOptions, prepare_exec_graph
from rlxir.targets.target import get_target
from rlxir.interpreter import interpret, random_feeds
from rlxir.compiler.fit import fit_batch
from rlxir.planning import aligned_size
from rlxir.autodiff.training import plan_training, plan_training_arena_bytes, training_graph

MAMBA_LM = rlxir.parse_file(Path(__file__).resolve().parents[1] / "examples" / "mamba_lm.rlx").main
SMALL = {"B": 1, "S": 8}

TINY = """\
graph tiny(B) {
  input %x : f32[B, 16]
  param %w : f32[16, 16]
  param %spare : f32[64]
  %h = matmul(%x, %w)
  %a = tanh(%h)
  %loss = reduce_mean(%a) {axes = [0, 1]}
  output %loss
}
"""


@pytest.mark.parametrize("target", ["rocm", "cpu", "gpu"])
def test_the_training_step_holds_the_weights_at_their_forward_offsets(target):
    result = rlxir.compile_training(MAMBA_LM, target, SMALL)
    layout = result.forward.plan.weight_layout()
    params = [buffer for buffer in result.backward.plan.buffers if buffer.kind == "param"]
    weights = [buffer for buffer in params if not buffer.value.startswith("opt.")]
    assert {buffer.value: buffer.offset for buffer in weights} == layout
    assert len(weights) == len(MAMBA_LM.params()) == 122
    state = {buffer.value: buffer.offset for buffer in params if buffer.value.startswith("opt.")}
    assert state == result.optimizer_state and len(state) == 1 + 2 * 122  # AdamW: the step, m and v
    assert min(state.values()) >= result.forward_arena_bytes  # placed after the forward arena
    for buffer in result.backward.plan.buffers:
        if buffer.kind == "param":
            continue
        for weight in params:  # weights live for the whole step: nothing may share their bytes
            assert buffer.end_offset <= weight.offset or weight.end_offset <= buffer.offset, (buffer, weight)
    assert result.backward.plan.mode == "backward_activations_only"
    assert result.forward.plan.mode == "inference"
    assert result.arena_bytes == result.backward.arena_bytes >= result.backward.lower_bound_bytes
    assert result.total_bytes == result.arena_bytes + sum(result.side_buffers.values())
    assert result.weight_bytes == sum(buffer.size for buffer in result.forward.plan.buffers if buffer.kind == "param")
    assert len(result.backward.graph.outputs) == 1 + 122 + 245  # the loss, the updated weights and state


def test_plan_training_arena_bytes_is_what_compile_training_plans():
    backward = training_graph(MAMBA_LM)
    for target in ("rocm", "cuda", "metal"):
        compiled = rlxir.compile_training(MAMBA_LM, target, SMALL, backward=backward)
        assert rlxir.plan_training_arena_bytes(MAMBA_LM, target, SMALL) == compiled.arena_bytes


def test_a_training_step_past_the_ceiling_is_refused_with_the_numbers():
    arena = plan_training_arena_bytes(MAMBA_LM, "rocm", {"B": 8})
    assert arena > 4294967295
    with pytest.raises(ArenaTooLarge) as caught:
        rlxir.compile_training(MAMBA_LM, "rocm", {"B": 8})
    assert caught.value.arena_bytes == arena and str(arena) in caught.value.message


def test_planner_options_apply_to_both_plans():
    result = rlxir.compile_training(MAMBA_LM, "rocm", SMALL, CompileOptions(planner="liveness"))
    assert result.forward.plan.planner == result.backward.plan.planner == "liveness"
    bump = rlxir.compile_training(MAMBA_LM, "rocm", SMALL)
    assert result.arena_bytes < bump.arena_bytes


def test_params_only_one_graph_has_are_reconciled():
    forward = rlxir.parse(TINY).main
    backward = rlxir.grad(forward)
    backward.erase("spare")  # the forward layout holds it; the step must keep its range free
    backward.add_param("extra", rlxir.TensorType(rlxir.DType.f32, (8,)))  # the forward layout lacks it
    result = plan_training(forward, "cpu", {"B": 4}, backward=backward)
    layout = result.forward.plan.weight_layout()
    placed = {buffer.value: buffer.offset for buffer in result.backward.plan.buffers if buffer.kind == "param"}
    assert placed["spare"] == layout["spare"] and placed["w"] == layout["w"]
    assert result.appended_weights == {"extra": aligned_size(result.forward_arena_bytes, 64)}
    assert placed["extra"] == result.appended_weights["extra"]


def test_fit_sizes_the_training_step_through_the_same_path():
    backward = training_graph(MAMBA_LM)

    def build(batch: int) -> int:
        return plan_training_arena_bytes(MAMBA_LM, "rocm", {"B": batch, "S": 8}, backward=backward)

    result = fit_batch("rocm", 64, 0.6, build, vram=24 << 30)
    assert result.fits and 1 < result.batch < 64
    assert result.arena_bytes == rlxir.compile_training(MAMBA_LM, "rocm", {"B": result.batch, "S": 8}).arena_bytes
    assert build(result.batch + 1) > result.budget.bytes


def test_every_target_pipeline_computes_the_same_gradients():
    """The training step each target plans computes what the backward graph does (the
    gradient kernels survive every pipeline; gpu unrolls the scan gradients)."""
    wrt = ["embeddings.weight", "layers.0.mixer.A_log", "layers.0.mixer.conv1d.weight", "layers.11.mixer.D"]
    backward = rlxir.grad(MAMBA_LM, wrt).bind({"B": 1, "S": 3})
    feeds = random_feeds(backward)
    expected = interpret(backward, *feeds)
    for target in ("cpu", "cuda", "rocm", "metal", "gpu"):
        executed = prepare_exec_graph(backward, get_target(target)).graph
        actual = interpret(executed, *feeds)
        for mine, theirs in zip(backward.outputs, executed.outputs):
            scale = np.abs(expected[mine]).max()
            np.testing.assert_allclose(actual[theirs], expected[mine], rtol=1e-4, atol=1e-6 * scale)
