"""unfuse: options, refusals and what may remain."""

import pytest

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.ops import AttrSpec, OpDef, register_op
from rlxir.ops.core import unary_rule
from rlxir.pass_machinery.pass_base import PassContext, PassError, make_pass
from rlxir.pass_machinery.pipeline import PipelineError, parse_pipeline, run_pipeline

SCAN = """graph g(B, S) {
  input %x : f32[B, S, 4]
  input %dt : f32[B, S, 4]
  param %A : f32[4, 2]
  input %bm : f32[B, S, 2]
  input %c : f32[B, S, 2]
  %y = selective_scan(%x, %dt, %A, %bm, %c) {state_size = 2}
  output %y
}"""

MIXED = """graph g(B) {
  input %x : f32[B, 4]
  param %w : f32[4, 4]
  param %g : f32[4]
  %h = linear(%x, %w)
  %n = rmsnorm(%h, %g)
  %a = gelu(%n)
  %p = softmax(%a)
  output %p
}"""


def unfuse(text: str, spec: str = "unfuse") -> rlxir.Graph:
    return run_pipeline(rlxir.parse(text, "model.rlx").main, spec, instruments=[VerifyEach(strict_claims=True)])


def test_options_are_parsed_from_pipeline_text():
    entry = parse_pipeline("unfuse{ops=gelu:softmax,keep=attention}").entries[0]
    assert entry.instance.ops == ("gelu", "softmax")
    assert entry.instance.keep == ("attention",)
    assert entry.text() == "unfuse{ops=gelu:softmax,keep=attention}"


@pytest.mark.parametrize("spec", ["unfuse{ops=matmul}", "unfuse{keep=no_such_op}"])
def test_options_name_fused_ops_only(spec):
    with pytest.raises(PipelineError, match="is not a fused op"):
        parse_pipeline(spec)


def test_every_fused_op_goes_by_default():
    graph = unfuse(MIXED)
    assert not [node for node in graph.ops() if graph.opdef(node).has("fused")]


def test_ops_and_keep_select():
    ops = {unfuse(MIXED, "unfuse{ops=linear:gelu}").op(node) for node in unfuse(MIXED, "unfuse{ops=linear:gelu}").ops()}
    assert {"rmsnorm", "softmax", "matmul", "erf"} <= ops and not {"linear", "gelu"} & ops
    kept = unfuse(MIXED, "unfuse{keep=softmax:rmsnorm}")
    assert {kept.op(node) for node in kept.ops()} >= {"softmax", "rmsnorm"}
    assert "linear" not in {kept.op(node) for node in kept.ops()}


def test_nothing_fused_returns_false():
    graph = rlxir.parse("graph g { input %x : f32[2]\n %y = relu(%x)\n output %y }").main
    before = rlxir.print_graph(graph)
    assert make_pass("unfuse").run(graph, PassContext()) is False
    assert rlxir.print_graph(graph) == before


def test_a_symbolic_scan_is_refused_naming_the_symbol_and_the_node():
    with pytest.raises(PassError) as caught:
        unfuse(SCAN)
    error = caught.value
    assert "sequence length S" in error.message and "%y = selective_scan" in error.message
    assert (error.loc.file, error.loc.line) == ("model.rlx", 7)


def test_a_bound_scan_unfuses():
    graph = rlxir.parse(SCAN).main.bind(B=1, S=2)
    result = run_pipeline(graph, "unfuse", instruments=[VerifyEach(strict_claims=True)])
    assert "selective_scan" not in {result.op(node) for node in result.ops()}


def test_attention_without_scale_on_a_symbolic_head_dim_is_refused():
    with pytest.raises(PassError, match="head dim D"):
        unfuse("""graph g(D) {
          input %q : f32[1, 1, 2, D]
          %a = attention(%q, %q, %q)
          output %a
        }""")


def test_a_fused_op_without_a_decomposition_is_refused():
    register_op(OpDef("test_unfuse_opaque", 1, 1, unary_rule, {"k": AttrSpec("int", 0)}, frozenset({"fused"})),
                replace=True)
    with pytest.raises(PassError, match="has no decomposition"):
        unfuse("graph g { input %x : f32[2]\n %y = test_unfuse_opaque(%x)\n output %y }")
