"""fuse: caps, the buffers shared-input matmul adds, SwiGLU's gate, pattern selection, fused values' names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlxir
from rlxir.dtypes import DType
from rlxir.ops.chain import parse_chain
from rlxir.ops.decompositions import unfuse_all
from rlxir.pass_machinery.pass_base import PassContext, make_pass
from rlxir.pass_machinery.pipeline import PipelineError, parse_pipeline, run_pipeline
from rlxir.targets.target import get_target
from rlxir.types import TensorType

from same_outputs import assert_same_outputs

UNARY = ("neg", "exp", "tanh", "relu", "sigmoid")
BINARY = ("add", "mul", "sub", "maximum")


def elementwise_chain(length: int, inputs: int, choices) -> rlxir.Graph:
    """A chain of `length` elementwise ops; binary steps read one of `inputs` inputs."""
    graph = rlxir.Graph("chain")
    leaves = [graph.add_input(f"x{index}", TensorType(DType.f32, (4,))) for index in range(inputs)]
    value = leaves[0]
    for step, (binary, pick) in enumerate(choices[:length]):
        if binary:
            value = graph.add_op(BINARY[step % len(BINARY)], [value, leaves[pick % inputs]], name=f"s{step}")
        else:
            value = graph.add_op(UNARY[step % len(UNARY)], [value], name=f"s{step}")
    graph.set_outputs([value])
    return graph


@settings(max_examples=40, deadline=None)
@given(length=st.integers(1, 30), inputs=st.integers(1, 8), max_steps=st.integers(2, 6), max_inputs=st.integers(1, 4),
       choices=st.lists(st.tuples(st.booleans(), st.integers(0, 7)), min_size=30, max_size=30))
def test_regions_respect_the_caps(length, inputs, max_steps, max_inputs, choices):
    graph = elementwise_chain(length, inputs, choices)
    fused = run_pipeline(graph, f"fuse{{patterns=regions,max-region={max_steps},max-inputs={max_inputs}}}")
    for node in fused.ops():
        if fused.op(node) == "fused_elementwise":
            assert 2 <= len(parse_chain(fused.attr(node, "chain"))) <= max_steps
            assert len(set(fused.operands(node))) <= max_inputs
    assert_same_outputs(graph, fused)


def test_caps_default_to_the_target():
    graph = elementwise_chain(40, 1, [(False, 0)] * 40)
    fused = run_pipeline(graph, "fuse{target=gpu}")
    sizes = [len(parse_chain(fused.attr(node, "chain"))) for node in fused.ops()]
    assert sizes == [8, get_target("gpu").region_max_steps]


SHARED = """\
graph qkv(B, S) {
  input %x : f32[B, S, 64]
  param %wq : f32[64, 64]
  param %wk : f32[64, 16]
  param %wv : f32[64, 16]
  %q = matmul(%x, %wq)
  %k = matmul(%x, %wk)
  %v = matmul(%x, %wv)
  output %q, %k, %v
}
"""


def buffer_bytes(graph, bindings):
    return {node: graph.type(node).nbytes(bindings) for node in graph.schedule()}


def test_shared_input_matmul_adds_the_concatenated_weights_and_the_wide_result():
    graph = rlxir.parse(SHARED).main
    fused = run_pipeline(graph, "fuse{target=cuda,patterns=shared_input_matmul}")
    bindings = {"B": 2, "S": 8}
    ops = {fused.op(node): node for node in fused.ops()}
    assert [fused.op(node) for node in fused.ops()] == ["concat", "matmul", "slice", "slice", "slice"]
    assert str(fused.type(ops["concat"])) == "f32[64, 96]"
    assert str(fused.type(ops["matmul"])) == "f32[B, S, 96]"
    before, after = buffer_bytes(graph, bindings), buffer_bytes(fused, bindings)
    # The slices are the three old results again; the concat and the wide result are extra.
    extra = sum(after.values()) - sum(before.values())
    assert extra == 64 * 96 * 4 + 2 * 8 * 96 * 4
    assert_same_outputs(graph, fused, bindings)


@pytest.mark.parametrize("gate_first", [True, False])
def test_swiglu_keeps_the_gate_when_unfused(gate_first):
    product = "mul(%sg, %up)" if gate_first else "mul(%up, %sg)"
    text = f"""\
graph mlp(B) {{
  input %gate : f32[B, 8]
  input %up : f32[B, 8]
  %sg = silu(%gate)
  %y = {product}
  output %y
}}
"""
    graph = rlxir.parse(text).main
    fused = run_pipeline(graph, "fuse{target=metal,patterns=swiglu}")
    (node,) = fused.ops()
    assert fused.operands(node) == ("gate", "up")
    assert parse_chain(fused.attr(node, "chain"))[0].op == "silu"
    unfused = fused.copy()
    unfuse_all(unfused)
    silu = next(node for node in unfused.ops() if unfused.op(node) == "silu")
    assert unfused.operands(silu) == ("gate",)
    assert_same_outputs(graph, fused, {"B": 3})
    assert_same_outputs(graph, unfused, {"B": 3})


def test_patterns_a_target_cannot_run_are_skipped():
    graph = rlxir.parse(SHARED.replace("%q = matmul(%x, %wq)", "%m = matmul(%x, %wq)\n  %q = exp(%m)")).main
    bare = get_target("cuda").derive("cuda-no-regions",
                                     claimed_ops=get_target("cuda").claimed_ops - {"fused_elementwise"})
    ctx = PassContext(target=bare)
    changed = make_pass("fuse", {"patterns": ("regions",)}).run(graph, ctx)
    assert not changed


def test_unknown_patterns_are_refused_when_the_pipeline_is_built():
    with pytest.raises(PipelineError, match="unknown fuse pattern swirl"):
        parse_pipeline("fuse{patterns=bias_act:swirl}")


def test_without_a_target_the_default_list_runs():
    text = """\
graph g(B) {
  input %x : f32[B, 8]
  param %w : f32[8, 8]
  param %b : f32[8]
  %m = matmul(%x, %w)
  %a = add(%m, %b)
  %g = gelu(%a)
  %e = exp(%g)
  %t = tanh(%e)
  output %t
}
"""
    graph = rlxir.parse(text).main
    fused = run_pipeline(graph, "fuse")
    assert [fused.op(node) for node in fused.ops()] == ["fused_matmul_bias_act", "fused_elementwise"]
    assert_same_outputs(graph, fused, {"B": 2})


INTERLEAVED = """\
graph qkv(B) {
  input %h0 : f32[B, 8]
  param %wq0 : f32[8, 8]
  %q0 = matmul(%h0, %wq0)
  param %wk0 : f32[8, 4]
  param %bias0 : f32[8]
  %k0 = matmul(%h0, %wk0)
  param %wv0 : f32[8, 4]
  %v0 = matmul(%h0, %wv0)
  %kv0 = concat(%k0, %v0) {axis = 1}
  %s0 = add(%q0, %kv0)
  %h1 = add(%s0, %bias0)
  param %wq1 : f32[8, 8]
  %q1 = matmul(%h1, %wq1)
  param %wk1 : f32[8, 8]
  %k1 = matmul(%h1, %wk1)
  %y = add(%q1, %k1)
  output %y
}
"""


def test_weights_defined_after_the_first_matmul_move_up_with_the_params_between():
    graph = rlxir.parse(INTERLEAVED).main
    fused = run_pipeline(graph, "fuse{target=cuda,patterns=shared_input_matmul}")
    concats = [node for node in fused.schedule() if fused.op(node) == "concat" and fused.attr(node, "axis") == 1
               and fused.kind(fused.operands(node)[0]) == "param"]
    assert [fused.operands(node) for node in concats] == [("wq0", "wk0", "wv0"), ("wq1", "wk1")]
    # Every param of a group (and %bias0, defined among them) now comes before its concat,
    # and the params keep their order: the graph's interface.
    schedule = fused.schedule()
    for concat in concats:
        assert all(schedule.index(weight) < schedule.index(concat) for weight in fused.operands(concat))
    assert schedule.index("bias0") < schedule.index(concats[0])
    assert fused.values_of_kind("param") == graph.values_of_kind("param")
    assert_same_outputs(graph, fused, {"B": 3})


KEEPS_NAMES = """\
graph g(B) {
  input %x : f32[B, 8]
  param %w : f32[8, 8]
  param %b : f32[8]
  %m = matmul(%x, %w)
  %t = add(%m, %b)
  %h = gelu(%t)
  %e = exp(%h)
  %n = neg(%e)
  %s = reduce_sum(%n) {axes = [-1], keepdims = true}
  %r = add(%n, %s)
  output %r, %h
}
"""


def test_a_fused_value_keeps_the_name_readers_and_place_of_the_value_it_computes():
    graph = rlxir.parse(KEEPS_NAMES).main
    fused = run_pipeline(rlxir.parse(KEEPS_NAMES).main, "fuse")
    assert fused.schedule() == ["x", "w", "b", "h", "n", "s", "r"]
    assert fused.op("h") == "fused_matmul_bias_act" and fused.operands("h") == ("x", "w", "b")
    # the region exp -> neg is rooted at %n: it reads %h in place of %e, and keeps %n's readers
    assert fused.op("n") == "fused_elementwise" and fused.operands("n") == ("h",)
    assert fused.users("h") == ["n"] and fused.users("n") == graph.users("n") == ["s", "r"]
    assert list(fused.outputs) == ["r", "h"]
    assert fused.provenance("h") == ("m", "t", "h") and fused.location("h") == graph.location("h")
    assert_same_outputs(graph, fused, bindings={"B": 3})
