"""On a CUDA GPU (skipped without one): the cuda target's compiled graph runs with CuPy in one
device allocation of its arena, with the same kernels, and gives the NumPy run's outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.executor.runner import gpu_unavailable_reason

pytestmark = pytest.mark.skipif(gpu_unavailable_reason() is not None, reason="needs CuPy and a CUDA device (rlxir[cuda])")

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.rlx"))


@pytest.mark.parametrize("target", ["cuda", "rocm", "cpu"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_gpu_run_equals_the_numpy_run(path, target):
    graph = rlxir.parse_file(path).main
    graph = graph.bind({symbol: 1 if symbol == "B" else 16 for symbol in graph.symbols})
    result = rlxir.compile(graph, target)
    on_cpu = rlxir.check_execution(graph, result)
    on_gpu = rlxir.check_execution(graph, result, device="gpu")
    assert on_cpu.matched and on_gpu.matched, on_gpu.summary()
    for output, (name, value) in zip(on_gpu.outputs, on_cpu.run.outputs.items()):
        # the same plan on both devices, within the output's precision (cuBLAS sums in another order)
        np.testing.assert_allclose(on_gpu.run.outputs[name], value, rtol=max(output.rtol, 1e-4),
                                   atol=max(output.atol, 1e-5))
    assert on_gpu.run.device == "gpu" and on_gpu.run.poisoned_reads == ()
    # beyond the arena: a tenth of it, or the f32 temporaries that decode one op's values
    # (two operands and a result) where the arena is small
    largest = max(result.graph.type(name).nbytes(itemsize=4) for name in result.graph.schedule())
    assert on_gpu.run.outside_peak_bytes <= max(0.10 * on_gpu.run.arena_bytes, 3 * largest), on_gpu.run.summary()


@pytest.mark.parametrize("free", [1 << 40, 1], ids=["device", "rows"])
def test_a_gpu_run_is_checked_on_the_gpu(free):
    """The whole reference on the GPU when it fits; a sample of rows when the card is full."""
    from rlxir.executor.device_check import check_on_device, plan_device_check
    from rlxir.interpreter import bind_for_run

    unbound = rlxir.parse_file(Path(__file__).parents[2] / "examples" / "gpt2_block.rlx").main
    bindings = {symbol: 4 if symbol == "B" else 16 for symbol in unbound.symbols}
    reference = bind_for_run(unbound, bindings)
    result = rlxir.compile(reference, "cuda")
    plan = plan_device_check(reference, unbound, "B", result.arena_bytes, free, 1 << 40)
    check = check_on_device(reference, unbound, bindings, result, plan, {}, {})
    assert check.matched, check.summary()
    assert not isinstance(next(iter(check.run.outputs.values())), np.ndarray)  # the outputs stayed on the device
    assert plan.how == ("device" if free > 1 else "rows")


def test_the_gpu_reference_rounds_again_as_the_numpy_one_does():
    """The conditioning measure on the GPU moves the same elements the same way as on the
    host (a hash of position and name, no generator state), within the kernels' own ulps."""
    import cupy

    from rlxir.executor.device_check import device_interpret
    from rlxir.interpreter import interpret_rounded_again, random_feeds

    graph = rlxir.parse("graph g() {\n  input %x : f32[4096]\n  input %h : f16[4096]\n  %e = exp(%x) : f32[4096]\n"
                        "  %t = tanh(%h) : f16[4096]\n  %f = floor(%e) : f32[4096]\n  output %e, %t, %f\n}\n").main
    inputs, _ = random_feeds(graph)
    exact = rlxir.interpret(graph, inputs)
    host = interpret_rounded_again(graph, inputs)
    device = {name: cupy.asnumpy(value) for name, value in device_interpret(graph, inputs, cupy, rounded_again=True).items()}
    for name in ("e", "t"):
        moved = host[name] != exact[name]
        assert moved.mean() > 0.5  # the input's move and the result's own cancel in some
        np.testing.assert_allclose(device[name], host[name], rtol=4 * float(np.finfo(host[name].dtype).eps))
        assert ((device[name] > exact[name]) == (host[name] > exact[name]))[moved].mean() > 0.9
    np.testing.assert_array_equal(device["f"], host["f"])


@pytest.mark.parametrize("how", ["device", "rows", "host"])
@pytest.mark.parametrize("case", ["ill-conditioned", "stable"])
def test_on_the_gpu_each_check_tells_conditioning_from_a_defect(monkeypatch, how, case):
    """The checks' conditioning measure on the card: a sign flip one more rounding makes is
    precision, a wrong value on a stable graph a defect (tests/executor/test_device_check.py
    runs the same with NumPy)."""
    from test_device_check import (NEAR_TIES, STABLE, add_half, check_with_planted_outputs, flip_some_signs,
                                   near_ties_feeds)

    if case == "ill-conditioned":
        check = check_with_planted_outputs(monkeypatch, NEAR_TIES, near_ties_feeds(), flip_some_signs, how, "gpu")
        assert check.cause == "precision" and check.outputs[0].sensitivity >= 1.0, check.verdict
    else:
        check = check_with_planted_outputs(monkeypatch, STABLE, {}, add_half, how, "gpu")
        assert check.cause == "defect" and check.outputs[0].sensitivity < 1e-5, check.verdict
