"""rlxir.grad: the backward graph's shape, its refusals, the ops random graphs do not draw,
the gradient kernels, and the examples at small sizes against finite differences (f64)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.interpreter import bind_for_run, interpret, random_feeds
from rlxir.ops.decompositions import unfuse_node
from rlxir.passes.legalize_or_rewrite import legalize
from rlxir.targets.target import get_target
from rlxir.testing.gradcheck import check_gradients, in_float64, with_scalar_loss

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

MLP_LOSS = """\
graph mlp(B=2) {
  input %x : f64[B, 3]
  input %labels : f64[B, 4]
  param %w : f64[3, 4]
  param %b : f64[4]
  param %unused : f64[5]
  %h = linear(%x, %w, %b)
  %a = tanh(%h)
  %d = sub(%a, %labels)
  %sq = mul(%d, %d)
  %loss = reduce_mean(%sq) {axes = [0, 1]}
  output %loss
}
"""


def parse(text: str) -> rlxir.Graph:
    return rlxir.parse(text, "test.rlx").main


def assert_gradients_agree(graph: rlxir.Graph, **options) -> None:
    report = check_gradients(graph, **options)
    assert report.finite, report.explain()
    assert all(slope.smooth for slope in report.slopes), report.explain()
    assert report.agrees, report.explain()


def checked_grad(text: str) -> rlxir.Graph:
    """The backward graph of TEXT's graph, whose gradients agree with finite differences."""
    graph = parse(text)
    assert_gradients_agree(graph)
    return rlxir.grad(graph)


# --- the backward graph ----------------------------------------------------------------
def test_backward_graph_is_the_forward_graph_followed_by_the_backward_one():
    forward = parse(MLP_LOSS)
    backward = rlxir.grad(forward)
    assert backward.name == "mlp.grad"
    assert backward.schedule()[:len(forward)] == forward.schedule()
    assert backward.outputs == ["loss", "grad.w", "grad.b", "grad.unused"]
    for param in ("w", "b", "unused"):
        assert backward.type(f"grad.{param}") == forward.type(param)
    assert forward.outputs == ["loss"] and len(forward) == 10  # the argument is untouched
    rlxir.verify(backward)
    assert rlxir.parse(rlxir.print_graph(backward)).main.equals(backward)


def test_a_param_the_loss_ignores_gets_a_zero_gradient():
    backward = rlxir.grad(parse(MLP_LOSS))
    assert backward.kind("grad.unused") == "const"
    values = interpret(backward)
    assert not values["grad.unused"].any()


def test_wrt_picks_inputs_and_params_in_the_order_given():
    backward = rlxir.grad(parse(MLP_LOSS), wrt=["%b", "x"])
    assert backward.outputs == ["loss", "grad.b", "grad.x"]
    assert_gradients_agree(parse(MLP_LOSS), wrt=["x", "w", "b"])


def test_broadcast_operands_get_gradients_summed_back_to_their_shape():
    backward = checked_grad("""graph g {
  param %w : f64[1, 4]
  param %v : f64[3, 1]
  param %s : f64[]
  %a = mul(%w, %v)
  %b = add(%a, %s)
  %c = maximum(%b, %w)
  %loss = reduce_sum(%c) {axes = [0, 1]}
  output %loss
}""")
    assert [backward.type(name).shape for name in backward.outputs[1:]] == [(1, 4), (3, 1), ()]


def test_contributions_from_every_user_are_summed():
    backward = checked_grad("""graph g {
  param %w : f64[3]
  %a = mul(%w, %w)
  %b = sin(%w)
  %c = add(%a, %b)
  %loss = reduce_sum(%c) {axes = [0]}
  output %loss
}""")
    assert backward.op("grad.w") == "add"


def test_slices_of_one_value_share_one_concat():
    backward = checked_grad("""graph g {
  param %w : f64[2, 10]
  %left = slice(%w) {axis = 1, start = 0, len = 4}
  %right = slice(%w) {axis = 1, start = 6, len = 4}
  %again = slice(%w) {axis = 1, start = 2, len = 4}
  %l = exp(%left)
  %r = sin(%right)
  %sum = add(%l, %r)
  %all = add(%sum, %again)
  %loss = reduce_sum(%all) {axes = [0, 1]}
  output %loss
}""")
    concats = [name for name in backward.ops() if backward.op(name) == "concat"]
    # left and right share one concat (a zero gap between them); the overlapping slice has its own
    assert len(concats) == 2
    assert sorted(len(backward.operands(name)) for name in concats) == [3, 3]


def test_symbolic_graphs_differentiate_without_binding():
    graph = rlxir.parse_file(EXAMPLES / "mamba_block.rlx").main
    loss_graph = rlxir.parse(rlxir.print_graph(graph).replace(
        "  output %out", "  %loss = reduce_mean(%out) {axes = [0, 1, 2]}\n  output %loss")).main
    backward = rlxir.grad(loss_graph)
    assert backward.symbols == {"B": None, "S": None}
    assert "selective_scan_grad" in {backward.op(name) for name in backward.ops()}
    assert len(backward.outputs) == 1 + len(graph.params())
    rlxir.verify(backward.bind({"B": 2, "S": 5}))


# --- refusals ---------------------------------------------------------------------------
@pytest.mark.parametrize("output, words", [
    ("output %h", "the loss %h is f64[B, 4], not a floating-point scalar"),
    ("output %loss, %h", "has 2 outputs; differentiating it needs exactly one"),
])
def test_the_loss_must_be_one_float_scalar(output, words):
    text = MLP_LOSS.replace("  output %loss", "  " + output)
    with pytest.raises(rlxir.RlxError, match=re.escape(words)):
        rlxir.grad(parse(text))


@pytest.mark.parametrize("wrt, words", [
    (["nope"], "has no input or param %nope"),
    (["sq"], "has no input or param %sq"),
    (["w", "w"], "%w is named twice"),
])
def test_wrt_names_must_be_float_leaves(wrt, words):
    with pytest.raises(rlxir.RlxError, match=words):
        rlxir.grad(parse(MLP_LOSS), wrt)


def test_an_integer_input_has_no_gradient():
    graph = parse("graph g {\n  input %i : i32[3]\n  %f = cast(%i) {to = f32}\n"
                  "  %loss = reduce_sum(%f) {axes = [0]}\n  output %loss\n}")
    with pytest.raises(rlxir.RlxError, match="%i is i32\\[3\\]: only floating-point values have gradients"):
        rlxir.grad(graph, ["i"])


def test_a_comparison_on_the_gradient_path_is_refused_at_its_line():
    graph = parse("""graph g {
  param %w : f32[4]
  const %zero : f32[] = 0.0
  %big = gt(%w, %zero)
  %mask = cast(%big) {to = f32}
  %loss = reduce_sum(%mask) {axes = [0]}
  output %loss
}""")
    with pytest.raises(rlxir.RlxError) as caught:
        rlxir.grad(graph)
    error = caught.value
    assert "cannot differentiate %big = gt: gt has no gradient" in error.message
    assert "path from %w to the loss %loss" in error.message
    assert error.loc.line == 4 and error.file == "test.rlx"


def test_a_cast_to_an_integer_on_the_gradient_path_is_refused():
    graph = parse("""graph g {
  param %w : f32[4]
  %i = cast(%w) {to = i32}
  %f = cast(%i) {to = f32}
  %loss = reduce_sum(%f) {axes = [0]}
  output %loss
}""")
    with pytest.raises(rlxir.RlxError, match="cannot differentiate %i = cast: its result i32\\[4\\] is not floating"):
        rlxir.grad(graph)


def test_a_comparison_that_only_feeds_a_where_condition_is_fine():
    graph = parse("""graph g {
  param %w : f64[5]
  input %v : f64[5]
  const %zero : f64[] = 0.0
  %positive = gt(%w, %zero)
  %picked = where(%positive, %w, %v)
  %e = exp(%picked)
  %loss = reduce_sum(%e) {axes = [0]}
  output %loss
}""")
    backward = rlxir.grad(graph, ["w", "v"])
    assert backward.outputs == ["loss", "grad.w", "grad.v"]
    assert_gradients_agree(graph)


def test_a_concat_along_a_symbolic_axis_needs_its_sizes_bound():
    graph = parse("""graph g(S) {
  param %a : f32[S, 2]
  param %b : f32[3, 2]
  %c = concat(%a, %b) {axis = 0}
  %loss = reduce_sum(%c) {axes = [0, 1]}
  output %loss
}""")
    with pytest.raises(rlxir.RlxError, match="cannot differentiate %c = concat") as caught:
        rlxir.grad(graph)
    assert caught.value.loc.line == 4
    rlxir.grad(graph.bind({"S": 4}))


# --- ops the float-only random graphs do not draw ---------------------------------------
def test_gather_adds_repeated_rows_into_the_table():
    graph = parse("""graph g {
  param %table : f64[6, 3]
  input %idx : i64[2, 4]
  %rows = gather(%table, %idx)
  %t = tanh(%rows)
  %loss = reduce_sum(%t) {axes = [0, 1, 2]}
  output %loss
}""")
    indices = np.array([[0, 2, 2, 5], [2, 0, 1, 1]])
    backward = rlxir.grad(graph)
    assert backward.op(backward.operands("grad.table")[0]) == "gather_grad"
    table = np.random.default_rng(0).normal(size=(6, 3))
    gradient = interpret(backward, {"idx": indices}, {"table": table})["grad.table"]
    derivative = 1 - np.tanh(table) ** 2
    counts = np.bincount(indices.ravel(), minlength=6)[:, np.newaxis]
    np.testing.assert_allclose(gradient, counts * derivative)


def test_gather_along_an_inner_axis():
    graph = parse("""graph g {
  param %table : f64[3, 5, 2]
  input %idx : i32[4]
  %rows = gather(%table, %idx) {axis = 1}
  %s = sin(%rows)
  %loss = reduce_sum(%s) {axes = [0, 1, 2]}
  output %loss
}""")
    assert_gradients_agree(graph, wrt=["table"])


def test_gather_elements_adds_each_picked_gradient_back_where_it_was_picked():
    """A cross-entropy-style pick of one logit per row (torch's `gather`), an index picked
    twice counting twice."""
    graph = parse("""graph g {
  param %logits : f64[3, 4]
  input %labels : i64[3, 2]
  %picked = gather_elements(%logits, %labels) {axis = 1}
  %e = exp(%picked)
  %loss = reduce_sum(%e) {axes = [0, 1]}
  output %loss
}""")
    labels = np.array([[1, 1], [0, 3], [2, 0]])
    logits = np.random.default_rng(1).normal(size=(3, 4))
    gradient = interpret(rlxir.grad(graph), {"labels": labels}, {"logits": logits})["grad.logits"]
    expected = np.zeros((3, 4))
    for row, picks in enumerate(labels):
        for column in picks:
            expected[row, column] += np.exp(logits[row, column])
    np.testing.assert_allclose(gradient, expected)
    assert_gradients_agree(graph, wrt=["logits"])


def test_casts_between_float_types_pass_the_gradient_through():
    graph = parse("""graph g {
  param %w : f64[4]
  %narrow = cast(%w) {to = f32}
  %wide = cast(%narrow) {to = f64}
  %e = exp(%wide)
  %loss = reduce_sum(%e) {axes = [0]}
  output %loss
}""")
    values = interpret(rlxir.grad(graph), params={"w": np.linspace(-1, 1, 4)})
    np.testing.assert_allclose(values["grad.w"], np.exp(np.linspace(-1, 1, 4)), rtol=1e-6)


def test_attention_is_differentiated_through_its_decomposition():
    graph = parse("""graph g {
  input %q : f64[1, 2, 3, 4]
  param %k : f64[1, 2, 3, 4]
  param %v : f64[1, 2, 3, 4]
  %o = attention(%q, %k, %v) {causal = true}
  %loss = reduce_sum(%o) {axes = [0, 1, 2, 3]}
  output %loss
}""")
    backward = rlxir.grad(graph)
    assert "attention" not in {backward.op(name) for name in backward.ops()}
    assert_gradients_agree(graph)


# --- gradient kernels ---------------------------------------------------------------------
SCAN_GRAD = """graph g {
  input %x : f64[2, 4, 3]
  input %delta : f64[2, 4, 3]
  input %A : f64[3, 2]
  input %Bm : f64[2, 4, 2]
  input %C : f64[2, 4, 2]
  input %dy : f64[2, 4, 3]
  %r = selective_scan_grad(%x, %delta, %A, %Bm, %C, %dy) {state_size = 2, operand = OPERAND}
  output %r
}"""


@pytest.mark.parametrize("operand", range(5))
def test_selective_scan_grad_decomposition_computes_its_reference(operand):
    graph = parse(SCAN_GRAD.replace("OPERAND", str(operand)))
    feeds = random_feeds(graph, seed=operand)
    expected = interpret(graph, *feeds)["r"]
    unfuse_node(graph, "r")
    assert "selective_scan_grad" not in {graph.op(name) for name in graph.ops()}
    actual = interpret(graph, *feeds)[graph.outputs[0]]
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-12)


def test_targets_claim_the_backward_kernels_of_the_ops_they_claim():
    rocm, gpu = get_target("rocm"), get_target("gpu")
    assert rocm.claims("selective_scan_grad") and rocm.claims("conv2d_grad_weight") and rocm.claims("gather_grad")
    assert not gpu.claims("selective_scan_grad") and gpu.claims("conv2d_grad_input")
    graph = parse(SCAN_GRAD.replace("OPERAND", "1"))
    assert not legalize(graph.copy(), rocm)
    unrolled = graph.copy()
    assert legalize(unrolled, gpu)
    assert "selective_scan_grad" not in {unrolled.op(name) for name in unrolled.ops()}


# --- the examples, at small sizes, in f64 ---------------------------------------------------
@pytest.mark.parametrize("name, bindings, wrt", [
    ("mlp", {"B": 2}, None),
    ("gpt2_block", {"B": 1, "S": 3}, None),
    ("mamba_block", {"B": 1, "S": 3}, None),
    # every op of the model is on the way to these; all 122 params would cost minutes in f64
    ("mamba_lm", {"B": 1, "S": 2}, ["embeddings.weight", "layers.0.mixer.A_log", "layers.0.mixer.conv1d.weight",
                                    "layers.0.mixer.dt_proj.bias", "layers.11.mixer.D", "norm_f.weight"]),
])
def test_example_gradients_match_finite_differences(name, bindings, wrt):
    graph = in_float64(bind_for_run(rlxir.parse_file(EXAMPLES / f"{name}.rlx").main, bindings))
    if graph.type(graph.outputs[0]).rank:
        graph = with_scalar_loss(graph)
    assert_gradients_agree(graph, wrt=wrt, joint=True, step=1e-6)


def _custom(name: str, decompose=None) -> None:
    from rlxir.ops import OpDef, register_op
    from rlxir.ops.core import unary_rule

    register_op(OpDef(name, 1, 1, unary_rule, decompose=decompose, reference=lambda inputs, attrs: inputs[0]),
                replace=True)


def _custom_loss(op: str) -> rlxir.Graph:
    return parse(f"graph g {{\n  param %w : f32[3]\n  %y = {op}(%w)\n"
                 "  %loss = reduce_sum(%y) {axes = [0]}\n  output %loss\n}")


def test_a_custom_op_without_a_rule_or_a_decomposition_is_refused():
    _custom("autodiff_test_opaque")
    with pytest.raises(rlxir.RlxError, match="%y = autodiff_test_opaque: autodiff_test_opaque has no gradient"):
        rlxir.grad(_custom_loss("autodiff_test_opaque"))


def test_a_custom_op_is_differentiated_through_its_decomposition_but_not_forever():
    def into_exp(graph, name):
        return graph.add_op("exp", graph.operands(name), before=name, origin=name)

    def into_itself(graph, name):
        return graph.add_op("autodiff_test_loop", graph.operands(name), before=name, origin=name)

    _custom("autodiff_test_exp", decompose=into_exp)
    backward = rlxir.grad(_custom_loss("autodiff_test_exp"))
    assert "autodiff_test_exp" not in {backward.op(name) for name in backward.ops()}
    _custom("autodiff_test_loop", decompose=into_itself)
    with pytest.raises(rlxir.RlxError, match="still leave ops without a gradient rule after 8 rounds"):
        rlxir.grad(_custom_loss("autodiff_test_loop"))
