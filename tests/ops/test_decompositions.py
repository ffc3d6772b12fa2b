"""Each decomposition preserves its op's semantics: interpret, unfuse, verify, interpret again."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlxir import Graph, RlxError, TensorType, interpret, parse, parse_file, print_graph, verify
from rlxir.dtypes import DType
from rlxir.executor.check import TOLERANCES, least_precise
from rlxir.interpreter import random_feeds
from rlxir.ops import get_op
from rlxir.ops.decompositions import unfuse_all, unfuse_node
from rlxir.testing.rejection import rejecting_gathers_out_of_range
from rlxir.testing.rounding import assert_close_within_rounding
from rlxir.testing.strategies import SUPPORTED_OPS, bindings_for, graphs

TOLERANCE = {"f32": dict(rtol=1e-4, atol=1e-5), "f16": dict(rtol=2e-2, atol=2e-2), "bf16": dict(rtol=5e-2, atol=5e-2)}


def outputs_in_order(graph: Graph, feeds, bindings=None) -> list[np.ndarray]:
    inputs, params = feeds
    results = interpret(graph, inputs, params, bindings=bindings)
    return [results[name] for name in graph.outputs]


def assert_unfuse_preserves(text: str, bindings=None, dtype: str = "f32") -> Graph:
    """Interpret, unfuse every fused op, verify, interpret again on the same data, compare;
    returns the unfused graph."""
    graph = parse(text).main
    feeds = random_feeds(graph, bindings, seed=7)
    before = outputs_in_order(graph, feeds, bindings)
    replaced = unfuse_all(graph)
    verify(graph)
    after = outputs_in_order(graph, feeds, bindings)
    assert replaced >= 1
    assert not [name for name in graph.ops() if get_op(graph.op(name)).has("fused")]
    for expected, actual in zip(before, after):
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        np.testing.assert_allclose(actual, expected, **TOLERANCE[dtype])
    return graph


def one_op(head: str, inputs: dict[str, str], statement: str) -> str:
    lines = [f"graph g{head} {{"]
    lines += [f"  input %{name} : {type_text}" for name, type_text in inputs.items()]
    lines += [f"  %y = {statement}", "  output %y", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("approximate", ["false", "true"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
def test_gelu(approximate, dtype):
    text = one_op("(B=2)", {"x": f"{dtype}[B, 16]"}, f"gelu(%x) {{approximate = {approximate}}}")
    assert_unfuse_preserves(text, dtype=dtype)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_on_any_axis(axis):
    assert_unfuse_preserves(one_op("(B=3)", {"x": "f32[B, 4, 5]"}, f"softmax(%x) {{axis = {axis}}}"))


def test_softmax_f16():
    assert_unfuse_preserves(one_op("", {"x": "f16[4, 5]"}, "softmax(%x)"), dtype="f16")


def test_linear_with_and_without_bias():
    assert_unfuse_preserves(one_op("(B)", {"x": "f32[B, 3, 8]", "w": "f32[8, 5]", "b": "f32[5]"}, "linear(%x, %w, %b)"),
                            bindings={"B": 2})
    assert_unfuse_preserves(one_op("", {"x": "f32[4, 8]", "w": "f32[8, 5]"}, "linear(%x, %w)"))


@pytest.mark.parametrize("axis, params", [(-1, "f32[6]"), (1, "f32[4, 6]")])
def test_layernorm(axis, params):
    text = one_op("(B=2)", {"x": "f32[B, 4, 6]", "g": params, "b": params}, f"layernorm(%x, %g, %b) {{axis = {axis}}}")
    assert_unfuse_preserves(text)


def test_layernorm_bf16():
    text = one_op("", {"x": "bf16[3, 8]", "g": "bf16[8]", "b": "bf16[8]"}, "layernorm(%x, %g, %b) {eps = 0.001}")
    assert_unfuse_preserves(text, dtype="bf16")


def test_rmsnorm():
    assert_unfuse_preserves(one_op("(B=2)", {"x": "f32[B, 4, 6]", "g": "f32[6]"}, "rmsnorm(%x, %g)"))


@pytest.mark.parametrize("x_type", ["f32[2, 3, 4, 5]", "f32[2, 3, 7]"])
def test_batchnorm_reshapes_its_parameters_per_channel(x_type):
    params = {name: "f32[3]" for name in ("s", "b", "m", "v")}
    graph = assert_unfuse_preserves(one_op("", {"x": x_type, **params}, "batchnorm(%x, %s, %b, %m, %v)"))
    reshaped = {graph.type(name).shape for name in graph.ops() if graph.op(name) == "reshape"}
    assert reshaped == {(1, 3) + (1,) * (len(x_type.split(",")) - 2)}


ATTENTION = {"q": "f32[B, 2, S, 4]", "k": "f32[B, 2, S, 4]", "v": "f32[B, 2, S, 3]"}


@pytest.mark.parametrize("attributes", ["", " {scale = 0.25}", " {causal = true}", " {causal = true, scale = 2.0}"])
def test_attention(attributes):
    assert_unfuse_preserves(one_op("(B=2, S=5)", ATTENTION, f"attention(%q, %k, %v){attributes}"))


def test_causal_attention_unfuses_with_a_symbolic_sequence_length():
    text = one_op("(B, S)", ATTENTION, "attention(%q, %k, %v) {causal = true}")
    graph = assert_unfuse_preserves(text, bindings={"B": 2, "S": 6})
    assert all(isinstance(graph.type(name).numel, int) or graph.type(name).symbols for name in graph)


def test_causal_attention_with_more_keys_than_queries():
    inputs = {"q": "f32[1, 2, 3, 4]", "k": "f32[1, 2, 5, 4]", "v": "f32[1, 2, 5, 4]"}
    assert_unfuse_preserves(one_op("", inputs, "attention(%q, %k, %v) {causal = true}"))


@pytest.mark.parametrize("mask", ["bool[S, S]", "f32[B, 1, S, S]"])
def test_attention_with_a_mask(mask):
    text = one_op("(B=2, S=4)", {**ATTENTION, "m": mask}, "attention(%q, %k, %v, %m)")
    assert_unfuse_preserves(text)


def test_attention_default_scale_needs_a_bound_head_dim():
    inputs = {"q": "f32[2, S, D]", "k": "f32[2, S, D]", "v": "f32[2, S, D]"}
    graph = parse(one_op("(S, D)", inputs, "attention(%q, %k, %v)")).main
    with pytest.raises(RlxError, match="head dim D"):
        unfuse_node(graph, "y")


SCAN = {"x": "f32[B, S, 3]", "d": "f32[B, S, 3]", "a": "f32[3, 4]", "bm": "f32[B, S, 4]", "c": "f32[B, S, 4]"}


def test_selective_scan_unrolls_over_the_sequence():
    text = one_op("(B=2, S=5)", SCAN, "selective_scan(%x, %d, %a, %bm, %c) {state_size = 4}")
    graph = assert_unfuse_preserves(print_graph(parse(text).main.bind(S=5)))  # B stays symbolic
    assert sum(graph.op(name) == "exp" for name in graph.ops()) == 4  # step 0 starts from a zero state
    assert [graph.op(name) for name in graph.ops()][-1] == "concat"
    assert len(graph.ops()) < 20 * 5


def test_selective_scan_needs_a_bound_sequence_length():
    graph = parse(one_op("(B, S)", SCAN, "selective_scan(%x, %d, %a, %bm, %c) {state_size = 4}")).main
    with pytest.raises(RlxError, match="sequence length S"):
        unfuse_node(graph, "y")
    assert_unfuse_preserves(print_graph(graph.bind(S=3)), bindings={"B": 2})


@pytest.mark.parametrize("activation", ["none", "gelu", "silu"])
def test_fused_matmul_bias_act(activation):
    text = one_op("(B=3)", {"x": "f32[B, 8]", "w": "f32[8, 5]", "b": "f32[5]"},
                  f'fused_matmul_bias_act(%x, %w, %b) {{activation = "{activation}"}}')
    graph = assert_unfuse_preserves(text)
    assert "expand" in {graph.op(name) for name in graph.ops()}


def test_fused_residual_norms():
    inputs = {"x": "f32[2, 3, 6]", "r": "f32[2, 3, 6]", "g": "f32[6]", "b": "f32[6]"}
    assert_unfuse_preserves(one_op("", inputs, "fused_residual_layernorm(%x, %r, %g, %b) {eps = 0.01}"))
    assert_unfuse_preserves(one_op("", inputs, "fused_residual_rmsnorm(%x, %r, %g)"))


def test_fused_elementwise_inlines_its_chain():
    chain = "mul($0, $1); gelu(%0) {approximate = true}; add(%1, $2); cast(%2) {to = f16}; exp(%3)"
    text = one_op("(B=2)", {"x": "f32[B, 6]", "w": "f32[B, 6]", "z": "f32[6]"},
                  f'fused_elementwise(%x, %w, %z) {{chain = "{chain}"}}')
    graph = assert_unfuse_preserves(text, dtype="f16")
    assert {"tanh", "cast", "exp"} <= {graph.op(name) for name in graph.ops()}


def test_new_nodes_inherit_location_and_provenance_and_go_before_the_fused_node():
    graph = parse(one_op("", {"x": "f32[4, 5]"}, "softmax(%x)")).main
    origin_loc = graph.location("y")
    graph.add_op("neg", ["y"], name="after")
    graph.set_outputs(["after"])
    # the last op of the decomposition (the div) is %y itself, rewritten in place
    assert unfuse_node(graph, "y") == "y" and graph.op("y") == "div"
    new_nodes = [name for name in graph.schedule() if name not in ("x", "after")]
    assert graph.schedule()[-2:] == ["y", "after"] and graph.operands("after") == ("y",)
    assert len(new_nodes) == 5 and not any(graph.op(name) == "softmax" for name in graph.schedule())
    assert all(graph.location(name) == origin_loc and graph.provenance(name) == ("y",) for name in new_nodes)


def test_a_decomposition_made_of_new_values_is_rewired_and_its_node_erased():
    # fused_elementwise's steps are all new values: the last replaces the node, which goes
    graph = parse(one_op("", {"x": "f32[4]"}, 'fused_elementwise(%x) {chain = "exp($0); neg(%0)"}')).main
    graph.add_op("tanh", ["y"], name="after")
    replacement = unfuse_node(graph, "y")
    assert replacement != "y" and "y" not in graph and graph.op(replacement) == "neg"
    assert graph.operands("after") == (replacement,)


def test_unfused_graphs_print_and_parse_back_equal():
    text = one_op("(B=2, S=4)", ATTENTION, "attention(%q, %k, %v) {causal = true}")
    graph = parse(text).main
    unfuse_all(graph)
    assert parse(print_graph(graph)).main.equals(graph)


def test_unfusing_an_op_without_a_decomposition_is_an_error():
    graph = parse(one_op("", {"x": "f32[4]"}, "exp(%x)")).main
    with pytest.raises(RlxError, match="no decomposition"):
        unfuse_node(graph, "y")


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
QUICK_EXAMPLE_PARAMS = 8_000_000  # run twice in well under a second each


def _quick_examples():
    quick = []
    for path in sorted(EXAMPLES.glob("*.rlx")) if EXAMPLES.is_dir() else []:
        graph = parse_file(path).main
        graph = graph.bind(small_sizes(graph))
        sizes = [graph.type(name).numel for name in graph.params()]
        if all(isinstance(size, int) for size in sizes) and sum(sizes) <= QUICK_EXAMPLE_PARAMS:
            quick.append(pytest.param(path, id=path.stem))
    assert quick, f"no example in {EXAMPLES} is small enough to interpret"
    return quick


def small_sizes(graph: Graph) -> dict[str, int]:
    """B = 2 and S = 8, for the graph's symbols of those names."""
    return {symbol: value for symbol, value in {"B": 2, "S": 8}.items() if symbol in graph.symbols}


def half_precision_tolerance(precision, expected: np.ndarray) -> dict:
    """f32's tolerance; for a graph holding f16 or bf16 values, which round at other points
    once unfused, the arena check's tolerance of that precision (atol times the output's
    largest magnitude, at least 1)."""
    if precision not in (DType.f16, DType.bf16):
        return TOLERANCE["f32"]
    rtol, atol = TOLERANCES[precision]
    scale = max(1.0, float(np.max(np.abs(expected)))) if np.size(expected) else 1.0
    return dict(rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("path", _quick_examples())
def test_unfusing_an_example_preserves_its_outputs(path):
    graph = parse_file(path).main
    graph = graph.bind(small_sizes(graph))
    feeds = random_feeds(graph)
    before = outputs_in_order(graph, feeds)
    precision = least_precise(graph.type(name).dtype for name in graph.schedule()
                              if graph.type(name).dtype.is_float)
    unfuse_all(graph)
    verify(graph)
    for expected, actual in zip(before, outputs_in_order(graph, feeds)):
        np.testing.assert_allclose(actual, expected, **half_precision_tolerance(precision, expected))


# --- properties ------------------------------------------------------------------------
@st.composite
def fused_op_graphs(draw) -> Graph:
    """A one-op graph: a random fused op on random small static shapes and attributes."""
    graph = Graph("g")
    dims = st.integers(1, 4)
    rows, width = draw(dims), draw(dims)

    def add_input(name, *shape):
        return graph.add_input(name, TensorType(DType.f32, shape))

    kind = draw(st.sampled_from(["gelu", "softmax", "linear", "layernorm", "rmsnorm", "batchnorm", "attention",
                                 "selective_scan", "bias_act", "residual", "region"]))
    if kind == "gelu":
        result = graph.add_op("gelu", [add_input("x", rows, width)], {"approximate": draw(st.booleans())})
    elif kind == "softmax":
        result = graph.add_op("softmax", [add_input("x", rows, width, 3)], {"axis": draw(st.integers(-3, 2))})
    elif kind == "linear":
        operands = [add_input("x", rows, width), add_input("w", width, 3)]
        result = graph.add_op("linear", operands + ([add_input("b", 3)] if draw(st.booleans()) else []))
    elif kind in ("layernorm", "rmsnorm"):
        axis = draw(st.sampled_from([-1, 1, -2]))
        operands = [add_input("x", rows, 2, width), add_input("g", *((width,) if axis == -1 else (2, width)))]
        operands += [add_input("b", width)] if kind == "layernorm" else []
        result = graph.add_op(kind, operands, {"axis": axis})
    elif kind == "batchnorm":
        channels = draw(dims)
        operands = [add_input("x", rows, channels, width)] + [add_input(name, channels) for name in "sbmv"]
        result = graph.add_op("batchnorm", operands, {"eps": draw(st.sampled_from([1e-5, 0.1]))})
    elif kind == "attention":
        queries, keys = draw(dims), draw(dims)
        operands = [add_input("q", rows, queries, width), add_input("k", rows, keys, width), add_input("v", rows, keys, 2)]
        result = graph.add_op("attention", operands, {"causal": draw(st.booleans()) and queries <= keys})
    elif kind == "selective_scan":
        steps, state = draw(dims), draw(dims)
        operands = [add_input("x", rows, steps, width), add_input("d", rows, steps, width), add_input("a", width, state),
                    add_input("bm", rows, steps, state), add_input("c", rows, steps, state)]
        result = graph.add_op("selective_scan", operands, {"state_size": state})
    elif kind == "bias_act":
        operands = [add_input("x", rows, width), add_input("w", width, 3), add_input("b", 3)]
        result = graph.add_op("fused_matmul_bias_act", operands,
                              {"activation": draw(st.sampled_from(["none", "gelu", "silu"]))})
    elif kind == "residual":
        operands = [add_input("x", rows, width), add_input("r", rows, width), add_input("g", width), add_input("b", width)]
        result = graph.add_op("fused_residual_layernorm", operands)
    else:
        unary = draw(st.lists(st.sampled_from(["exp", "tanh", "gelu", "silu", "neg", "sigmoid"]), min_size=1, max_size=4))
        chain = "add($0, $1)" + "".join(f"; {op}(%{index})" for index, op in enumerate(unary))
        result = graph.add_op("fused_elementwise", [add_input("x", rows, width), add_input("y", width)], {"chain": chain})
    graph.set_outputs([result])
    return graph


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=fused_op_graphs(), seed=st.integers(0, 1000))
def test_unfusing_random_fused_ops_preserves_outputs(graph, seed):
    inputs, _ = random_feeds(graph, seed=seed)
    before = interpret(graph, inputs)[graph.outputs[0]]
    unfuse_all(graph)
    verify(graph)
    after = interpret(graph, inputs)[graph.outputs[0]]
    np.testing.assert_allclose(after, before, **TOLERANCE["f32"])


@st.composite
def bound_random_graphs(draw) -> Graph:
    # conv2d has no decomposition: leaving it out loses nothing for this property.
    ops = [op for op in SUPPORTED_OPS if op != "conv2d"]
    graph = draw(graphs(max_ops=12, dtypes=(DType.f32, DType.i32), symbols=("B", "S"), ops=ops))
    return graph.bind(draw(bindings_for(graph)))  # selective_scan unrolls only with S bound


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=bound_random_graphs())
def test_unfusing_every_fused_op_of_a_random_graph_preserves_outputs(graph):
    feeds = random_feeds(graph)
    with rejecting_gathers_out_of_range():
        before = outputs_in_order(graph, feeds)
    unfused = graph.copy()
    unfuse_all(unfused)
    verify(unfused)
    after = outputs_in_order(unfused, feeds)
    assert_close_within_rounding(graph, feeds, before, after, rtol=1e-4, atol=1e-5)


CANCELLING_RESIDUAL = """\
graph cancelling() {
  input %w : f32[1]
  input %gamma : f32[1]
  const %c : f32[1] = -2.5
  %n = rmsnorm(%c, %w) : f32[1]
  %y = fused_residual_rmsnorm(%n, %w, %gamma) : f32[1]
  output %y
}
"""


def test_a_difference_the_graph_itself_makes_under_one_more_rounding_is_not_a_broken_decomposition():
    """rmsnorm over one element is w (1 - 8e-8): %n + %w cancels to one or two units in the
    last place of w, and the fused norm then scales that by 1/sqrt(eps). Unfused, the first
    norm rounds differently, and the output halves: a fixed tolerance calls that a broken
    decomposition, but the fused graph moves as far when its values are rounded once more."""
    graph = parse(CANCELLING_RESIDUAL).main
    feeds = ({"w": np.array([-0.80193144], np.float32), "gamma": np.array([-1.3243589], np.float32)}, {})
    before = outputs_in_order(graph, feeds)
    unfused = graph.copy()
    unfuse_all(unfused)
    after = outputs_in_order(unfused, feeds)
    assert not np.allclose(after[0], before[0], rtol=1e-4, atol=1e-5)
    assert_close_within_rounding(graph, feeds, before, after, rtol=1e-4, atol=1e-5)


def test_a_difference_beyond_the_graphs_own_rounding_still_fails():
    feeds = ({"w": np.array([0.75], np.float32), "gamma": np.array([1.5], np.float32)}, {})
    stable = parse(CANCELLING_RESIDUAL.replace("const %c : f32[1] = -2.5", "const %c : f32[1] = 2.5")).main
    before = outputs_in_order(stable, feeds)  # w + w: nothing cancels
    with pytest.raises(AssertionError, match="one more rounding"):
        assert_close_within_rounding(stable, feeds, before, [before[0] * 1.01], rtol=1e-4, atol=1e-5)
