"""legalize-or-rewrite: rewrites to a fixed point, and one error naming every offender."""

from __future__ import annotations

import attrs
import pytest

import rlxir
from rlxir.pass_machinery.pass_base import PassContext, PassError, make_pass
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.targets.target import get_target

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


LAYERS = """\
graph stack(B) {
  input %q : f32[B, 2, 6, 4]
  input %k : f32[B, 2, 6, 4]
  %a0 = attention(%q, %k, %k) {causal = true}
  %a1 = attention(%a0, %k, %k) {causal = true}
  %a2 = attention(%a1, %k, %k) {causal = true}
  output %a2
}
"""


def _op_counts(graph):
    counts = {}
    for node in graph.schedule():
        counts[graph.op(node)] = counts.get(graph.op(node), 0) + 1
    return counts


def test_shared_constants_are_what_cse_leaves_of_a_copy_per_layer():
    graph = rlxir.parse(LAYERS).main
    shared = run_pipeline(graph, "legalize-or-rewrite{target=gpu,share-constants=true}")
    copied = run_pipeline(graph, "legalize-or-rewrite{target=gpu}")
    # One causal mask (and one of each scalar) for the three layers, against one per layer.
    assert _op_counts(shared)["ge"] == 1 and _op_counts(copied)["ge"] == 3
    assert _op_counts(shared)["const"] < _op_counts(copied)["const"]
    mask = next(node for node in shared.schedule() if shared.op(node) == "ge")
    assert all(shared.comes_before(mask, node) for node in shared.users(mask))
    assert len(shared.users(mask)) == 3
    # cse makes the copies into the shared graph: same ops, same interface, same results.
    merged = run_pipeline(copied, "cse")
    assert _op_counts(merged) == _op_counts(run_pipeline(shared, "cse"))
    assert shared.outputs == graph.outputs
    assert_same_outputs(graph, shared, {"B": 2})


def test_a_shared_value_changed_since_is_made_again():
    from rlxir.ops.decompositions import sharing_constants, unfuse_node

    graph = rlxir.parse(LAYERS).main
    with sharing_constants(graph):
        unfuse_node(graph, "a0")
        mask = next(node for node in graph.schedule() if graph.op(node) == "ge")
        graph.set_operands(mask, tuple(reversed(graph.operands(mask))))  # no longer the causal mask
        unfuse_node(graph, "a1")
    masks = [node for node in graph.schedule() if graph.op(node) == "ge"]
    assert len(masks) == 2 and masks[0] == mask
    # Outside the context nothing is shared.
    unfuse_node(graph, "a2")
    assert len([node for node in graph.schedule() if graph.op(node) == "ge"]) == 3


def test_rocm_compiles_the_same_graph_with_and_without_sharing():
    from rlxir.compiler.compile import CompileOptions, plan_exec_graph, prepare_exec_graph

    graph = rlxir.parse(LAYERS).main
    rocm = get_target("rocm")
    assert "share-constants=true" in rocm.pipeline
    copying = attrs.evolve(rocm, name="rocm-copying", pipeline=rocm.pipeline.replace("{share-constants=true}", ""))
    options = CompileOptions()
    shared = prepare_exec_graph(graph, rocm, {"B": 2}, options)
    copied = prepare_exec_graph(graph, copying, {"B": 2}, options)
    assert _op_counts(shared.graph) == _op_counts(copied.graph)
    assert plan_exec_graph(shared, rocm, options).arena_bytes == plan_exec_graph(copied, copying, options).arena_bytes
