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
