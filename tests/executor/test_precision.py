"""Each output is checked within the tolerance of its precision, and a mismatch says its
cause: a precision difference is never reported as a planner defect, and a defect still is.

The precision of an output is the least precise float dtype among the values it depends on
in the original graph and the dtypes the target executes them in: an f32 output computed
from bf16 values carries bf16's rounding, and rocm (f32-exec) does not round where the
interpreter rounds to bf16.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.dtypes import DType
from rlxir.executor.check import output_precisions
from rlxir.executor.kernels import KERNELS
from rlxir.ops.reference import round_to_bf16
from rlxir.targets.target import get_target

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")
EXAMPLES = Path(__file__).parents[2] / "examples"

CANCELS = """
graph cancel() {
  input %a : bf16[64]
  input %b : bf16[64]
  input %c : bf16[64]
  %p = mul(%a, %b) : bf16[64]
  %d = sub(%p, %c) : bf16[64]
  %o = cast(%d) {to = f32} : f32[64]
  output %o
}
"""


def cancelling_feeds() -> dict:
    """%c is the bf16-rounded product, so the interpreter's difference is 0 and f32
    execution's is the rounding of a*b (up to half a bf16 step near 16: 0.03)."""
    rng = np.random.default_rng(0)
    a = round_to_bf16(rng.uniform(3, 4, 64).astype(np.float32))
    b = round_to_bf16(rng.uniform(3, 4, 64).astype(np.float32))
    return {"a": a, "b": b, "c": round_to_bf16(a * b)}


@pytest.fixture(scope="module")
def bf16_block():
    graph = rlxir.parse_file(EXAMPLES / "bf16_block.rlx").main.bind({"B": 2, "S": 32})
    return graph, rlxir.reference_run(graph)


@pytest.mark.parametrize("target", TARGETS)
def test_the_bf16_example_matches_on_every_target(bf16_block, target):
    graph, reference = bf16_block
    check = rlxir.check_execution(graph, rlxir.compile(graph, target), reference=reference)
    assert check.matched, check.verdict
    (logits,) = check.outputs
    assert logits.dtype == "f32" and logits.precision == "bf16" and (logits.rtol, logits.atol) == (2e-2, 1e-2)
    assert logits.relative_error <= logits.rtol


def test_precision_follows_the_least_precise_ancestor_and_the_execution_dtype():
    graph = rlxir.parse("""
graph mixed() {
  input %x : bf16[4]
  input %y : f64[4]
  input %i : i64[4]
  %xf = cast(%x) {to = f32} : f32[4]
  %yy = mul(%y, %y) : f64[4]
  %j = add(%i, %i) : i64[4]
  output %xf, %yy, %j
}
""").main
    on_cpu = output_precisions(graph, get_target("cpu"))
    assert on_cpu == {"xf": DType.bf16, "yy": DType.f64, "j": None}
    on_cuda = output_precisions(graph, get_target("cuda"))  # f32 sizing holds f64 as float32
    assert on_cuda == {"xf": DType.bf16, "yy": DType.f32, "j": None}


def test_a_bounded_difference_beyond_tolerance_is_precision_not_a_defect():
    graph = rlxir.parse(CANCELS).main
    feeds = cancelling_feeds()
    assert rlxir.check_execution(graph, rlxir.compile(graph, "cpu"), inputs=feeds).matched  # bf16 as the reference
    check = rlxir.check_execution(graph, rlxir.compile(graph, "rocm"), inputs=feeds)  # f32-exec: no rounding of a*b
    assert not check.matched and check.cause == "precision"
    (output,) = check.outputs
    assert output.precision == "bf16" and output.rtol < output.relative_error <= 0.5
    assert "precision beyond tolerance on %o: relative error" in check.verdict
    assert "bf16 tolerance rtol 0.02, atol 0.01" in check.verdict and "defect" not in check.verdict


def test_values_no_rounding_explains_are_a_defect(monkeypatch):
    graph = rlxir.parse("""
graph g() {
  input %x : f32[8, 8]
  %y = tanh(%x) : f32[8, 8]
  output %y
}
""").main
    tanh = KERNELS["tanh"]

    def wrong(xp, args, attrs, out, workspace):
        result = tanh(xp, args, attrs, out, workspace)
        result[0, 0] += 3.0  # far beyond any rounding
        return result

    monkeypatch.setitem(KERNELS, "tanh", wrong)
    check = rlxir.check_execution(graph, rlxir.compile(graph, "cpu"))
    assert check.cause == "defect" and check.outputs[0].cause == "wrong"
    assert "wrong values on %y" in check.verdict and "a defect in the target's pipeline or planner" in check.verdict


def test_nan_where_the_reference_has_none_is_a_defect(monkeypatch):
    graph = rlxir.parse("graph g() {\n  input %x : bf16[16]\n  %y = exp(%x) : bf16[16]\n  output %y\n}\n").main
    exp = KERNELS["exp"]

    def poisoned(xp, args, attrs, out, workspace):
        result = exp(xp, args, attrs, out, workspace)
        result[3] = np.nan
        return result

    monkeypatch.setitem(KERNELS, "exp", poisoned)
    check = rlxir.check_execution(graph, rlxir.compile(graph, "rocm"))
    assert check.cause == "defect" and check.outputs[0].nonfinite == 1


NEAR_TIES = """
graph ties() {
  input %a : f32[256]
  input %b : f32[256]
  const %gain : f32[] = 1e9
  %d = sub(%a, %b) : f32[256]
  %s = mul(%d, %gain) : f32[256]
  %y = tanh(%s) : f32[256]
  output %y
}
"""


def test_an_ill_conditioned_graph_differs_by_precision_not_a_defect(monkeypatch):
    """tanh(1e9 (a - b)) with b a few units in the last place from a: one rounding more in
    the target's subtraction flips outputs from -1 to 1. The reference moves as much when
    its inputs move by one rounding, so the verdict is precision, with the figure."""
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 2, 256).astype(np.float32)
    b = a.copy()
    for _ in range(2):
        b = np.where(rng.random(256) < 0.5, np.nextafter(b, np.float32(np.inf)), np.nextafter(b, np.float32(0)))
    sub = KERNELS["sub"]

    def rounds_once_more(xp, args, attrs, out, workspace):
        return sub(xp, [np.nextafter(args[0], np.float32(np.inf)), args[1]], attrs, out, workspace)

    monkeypatch.setitem(KERNELS, "sub", rounds_once_more)
    graph = rlxir.parse(NEAR_TIES).main
    check = rlxir.check_execution(graph, rlxir.compile(graph, "cpu"), inputs={"a": a, "b": b})
    (output,) = check.outputs
    assert not check.matched and output.max_abs_error >= 1.0  # far beyond any single rounding of the output
    assert output.ill_conditioned and output.sensitivity >= 1.0
    assert check.cause == "precision" and "ill-conditioned" in check.verdict and "defect" not in check.verdict


def test_a_well_conditioned_graph_keeps_its_defects(monkeypatch):
    """The conditioning measure does not excuse a wrong value where the graph is stable."""
    graph = rlxir.parse("graph g() {\n  input %x : f32[8, 8]\n  %y = tanh(%x) : f32[8, 8]\n  output %y\n}\n").main
    tanh = KERNELS["tanh"]

    def wrong(xp, args, attrs, out, workspace):
        result = tanh(xp, args, attrs, out, workspace)
        result[0, 0] += 0.5
        return result

    monkeypatch.setitem(KERNELS, "tanh", wrong)
    check = rlxir.check_execution(graph, rlxir.compile(graph, "cpu"))
    (output,) = check.outputs
    assert output.sensitivity is not None and output.sensitivity < 1e-5 and not output.ill_conditioned
    assert check.cause == "defect"
