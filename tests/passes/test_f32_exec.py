"""f32-exec: idempotence, the interface, and agreement with computing everything in f32."""

import numpy as np
import pytest

import rlxir
from rlxir.dtypes import DType
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.interpreter import interpret, random_feeds
from rlxir.pass_machinery.pipeline import run_pipeline

GRAPH = """graph g(B) {
  input %x : f16[B, 4]
  param %w : bf16[4, 4]
  const %half : f16[] = 0.5
  %r = reshape(%x) {shape = [B, 2, 2]}
  %t = transpose(%r) {perm = [0, 2, 1]}
  %f = reshape(%t) {shape = [B, 4]}
  %s = mul(%f, %half)
  %wc = cast(%w) {to = f16}
  %m = matmul(%s, %wc)
  %g = gelu(%m)
  %o = cast(%g) {to = bf16}
  output %o, %g, %t
}"""


def run(graph: rlxir.Graph) -> rlxir.Graph:
    return run_pipeline(graph, "f32-exec", instruments=[VerifyEach(strict_claims=True)])


def test_computing_ops_are_f32_and_the_outputs_keep_their_types():
    before = rlxir.parse(GRAPH).main
    after = run(before)
    assert [after.type(value) for value in after.outputs] == [before.type(value) for value in before.outputs]
    low = {node for node in after.ops() if after.type(node).dtype.is_low_precision}
    assert low == {"r", "t", "f", *after.outputs[:2]}
    assert after.attr("wc", "to") is DType.f32


def test_a_second_run_changes_nothing():
    once = run(rlxir.parse(GRAPH).main)
    assert rlxir.print_graph(run(once)) == rlxir.print_graph(once)


def test_results_are_what_computing_in_f32_gives():
    before = rlxir.parse(GRAPH).main
    after = run(before)
    inputs, params = random_feeds(before, {"B": 3}, seed=2)
    low, high = interpret(before, inputs, params, {"B": 3}), interpret(after, inputs, params, {"B": 3})
    for old, new in zip(before.outputs, after.outputs):
        assert high[new].dtype == low[old].dtype
        np.testing.assert_allclose(high[new].astype(np.float32), low[old].astype(np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("dtype", ["f32", "f64", "i32"])
def test_graphs_without_low_precision_are_unchanged(dtype):
    text = f"""graph g {{
      input %x : {dtype}[3]
      %y = add(%x, %x)
      %z = cast(%y) {{to = f32}}
      output %z
    }}"""
    assert rlxir.print_graph(run(rlxir.parse(text).main)) == rlxir.print_graph(rlxir.parse(text).main)
