"""legalize-or-rewrite: rewrites to a fixed point, and one error naming every offender."""

from __future__ import annotations

import pytest

import rlxir
from rlxir.pass_base import PassContext, PassError, make_pass
from rlxir.pipeline import run_pipeline
from rlxir.target import get_target

from same_outputs import assert_same_outputs

OFFENDERS = """\
graph model(B, S) {
  input %x : f64[B, 8]
  param %w : f64[8, 8]
  input %u : f32[B, S, 4]
  input %delta : f32[B, S, 4]
  param %A : f32[4, 2]
  input %Bm : f32[B, S, 2]
  input %C : f32[B, S, 2]
  %h = matmul(%x, %w)
  %y = selective_scan(%u, %delta, %A, %Bm, %C) {state_size = 2}
  %e = exp(%h)
  output %e, %y
}
"""


def legalize(graph, target):
    return run_pipeline(graph, f"legalize-or-rewrite{{target={target}}}")


def test_the_error_lists_every_offender_with_its_location():
    graph = rlxir.parse(OFFENDERS, "model.rlx").main
    with pytest.raises(PassError) as caught:
        legalize(graph, "metal")
    message = caught.value.message
    assert message.startswith("4 values cannot run on metal: ")
    for item in ("%x = input (f64 not supported) at model.rlx:2:9",
                 "%w = param (f64 not supported) at model.rlx:3:9",
                 "%h = matmul (f64 not supported) at model.rlx:9:3",
                 "%e = exp (f64 not supported) at model.rlx:11:3"):
        assert item in message
    # metal claims selective_scan: the only f32 node is not an offender.
    assert "%y" not in message
    assert (caught.value.line, caught.value.col) == (2, 9)


def test_an_op_that_cannot_be_unfused_says_why():
    graph = rlxir.parse(OFFENDERS.replace("f64", "f32"), "model.rlx").main
    with pytest.raises(PassError) as caught:
        legalize(graph, "gpu")  # wgpu has no scan kernel, and S is unbound: no unrolling
    message = caught.value.message
    assert message.startswith("1 op cannot run on gpu: %y = selective_scan (not in the gpu op set; cannot unfuse")
    assert "sequence length S bound" in message and message.endswith("at model.rlx:10:3")


def test_an_op_outside_the_set_without_a_decomposition_is_an_offender(monkeypatch):
    from rlxir.ops import OpDef
    from rlxir.ops import registry
    from rlxir.ops.core import unary_rule

    monkeypatch.setitem(registry._OPS, "test_opaque", OpDef("test_opaque", 1, 1, unary_rule))
    text = "graph g {\n  input %x : f32[3]\n  %y = test_opaque(%x)\n  %z = test_opaque(%y)\n  output %z\n}\n"
    with pytest.raises(PassError) as caught:
        legalize(rlxir.parse(text, "m.rlx").main, "cuda")
    assert caught.value.message == (
        "2 ops cannot run on cuda: %y = test_opaque (not in the cuda op set) at m.rlx:3:3, "
        "%z = test_opaque (not in the cuda op set) at m.rlx:4:3")


def test_a_fixed_point_is_reached():
    text = """\
graph g(B) {
  input %x : f32[B, 3, 4, 5]
  param %w : f32[5, 5]
  param %b : f32[5]
  %l = linear(%x, %w, %b)
  %a = attention(%l, %l, %l) {causal = true}
  %s = softmax(%a) {axis = 1}
  %r = reduce_mean(%s) {axes = [0, 2]}
  output %r
}
"""
    graph = rlxir.parse(text).main
    for target_name in ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan"):
        target = get_target(target_name)
        once = legalize(graph, target_name)
        for node in once.ops():
            assert target.claims(once.op(node)), node
        again = once.copy()
        assert make_pass("legalize-or-rewrite", {"target": target_name}).run(again, PassContext()) is False
        assert rlxir.print_graph(again) == rlxir.print_graph(once)
        assert_same_outputs(graph, once, {"B": 2})


def test_the_target_comes_from_the_pipeline_when_the_option_is_empty():
    graph = rlxir.parse("graph g {\n  input %x : f32[2, 3]\n  %r = reduce_sum(%x) {axes = [0]}\n  output %r\n}").main
    changed = make_pass("legalize-or-rewrite").run(graph, PassContext(target=get_target("rocm")))
    assert changed and [graph.op(node) for node in graph.ops()] == ["transpose", "reduce_sum"]
    with pytest.raises(PassError, match="needs a target"):
        make_pass("legalize-or-rewrite").run(graph, PassContext())
