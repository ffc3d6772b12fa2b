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
    for name, value in on_cpu.run.outputs.items():
        np.testing.assert_allclose(on_gpu.run.outputs[name], value, rtol=1e-4, atol=1e-5)
    assert on_gpu.run.device == "gpu" and on_gpu.run.poisoned_reads == ()
    assert on_gpu.run.outside_peak_bytes <= 0.10 * on_gpu.run.arena_bytes, on_gpu.run.summary()
