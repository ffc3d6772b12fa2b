"""const-fold, simplify, unfuse, backend-unfuse, legalize-broadcast, unfuse-regions,
f32-exec and scan-unroll preserve what a graph computes, on random valid graphs drawn
from each pass's strategy (`rlxir.testing.pass_graphs`: its pattern planted, so most
draws are rewritten; test_pass_budgets.py checks that they are).

Each pass runs with the verify-each instrument (strict change claims), and the graph is
interpreted before and after on the same feeds (drawn once from the original: the random
fill depends on a value's readers, which rewrites change); outputs compare by position.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.interpreter import interpret, random_feeds
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.testing.pass_graphs import pass_graphs
from rlxir.testing.strategies import bindings_for

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXACT = {"rtol": 1e-6, "atol": 1e-6}
"""Rewrites that compute every element the same way (expands, inlined chains, folds)."""
REASSOCIATED = {"rtol": 1e-3, "atol": 1e-4}
"""Decompositions compute the same math in other steps (x * (1/sqrt 2) for x / sqrt 2)."""


@st.composite
def bound_graphs(draw, pass_name: str):
    """A graph from the strategy of `pass_name`, with values for its symbols."""
    graph = draw(pass_graphs(pass_name))
    return graph, draw(bindings_for(graph))


def outputs(graph: Graph, feeds, bindings) -> list[np.ndarray]:
    values = interpret(graph, *feeds, bindings=bindings)
    return [values[name] for name in graph.outputs]


def run(graph: Graph, spec: str) -> Graph:
    return run_pipeline(graph, spec, instruments=[VerifyEach(strict_claims=True)])


def check_preserved(graph: Graph, bindings: dict, spec: str, tolerance: dict, finite_only: bool = False) -> Graph:
    """Run `spec` and compare outputs; `finite_only` compares where the original is finite
    (x * 0 is 0 after simplify even where x is inf or nan)."""
    feeds = random_feeds(graph, bindings)
    try:
        expected = outputs(graph, feeds, bindings)
    except RlxError as error:
        if "gather index" not in error.message:
            raise
        reject()  # the graph's own integer arithmetic indexes out of its table
    result = run(graph, spec)
    actual = outputs(result, feeds, bindings)
    assert len(actual) == len(expected)
    for before, after in zip(expected, actual):
        assert after.dtype == before.dtype and after.shape == before.shape
        if finite_only and before.dtype.kind in "fc":
            keep = np.isfinite(before)
            before, after = before[keep], after[keep]
        np.testing.assert_allclose(after, before, equal_nan=True, **tolerance)
    return result


@SETTINGS
@given(bound_graphs("const-fold"))
def test_const_fold(drawn):
    check_preserved(*drawn, "const-fold{max-elements=64}", EXACT)


@SETTINGS
@given(bound_graphs("simplify"))
def test_simplify(drawn):
    check_preserved(*drawn, "simplify", EXACT, finite_only=True)


@SETTINGS
@given(bound_graphs("unfuse"))
def test_unfuse(drawn):
    result = check_preserved(*drawn, "unfuse", REASSOCIATED, finite_only=True)
    assert not [node for node in result.ops() if result.opdef(node).has("fused")]


@SETTINGS
@given(st.data(), st.sampled_from(["backend-unfuse", "legalize-broadcast"]))
def test_explicit_broadcasts(data, spec):
    result = check_preserved(*data.draw(bound_graphs(spec)), spec, EXACT)
    assert rlxir_text(run(result, spec)) == rlxir_text(result)  # idempotent


@SETTINGS
@given(bound_graphs("unfuse-regions"))
def test_unfuse_regions(drawn):
    result = check_preserved(*drawn, "unfuse-regions", EXACT)
    assert "fused_elementwise" not in {result.op(node) for node in result.ops()}


@SETTINGS
@given(bound_graphs("scan-unroll"), st.integers(1, 6))
def test_scan_unroll(drawn, max_steps):
    # finite_only: the reference's first step computes exp(delta * A) * 0, nan where the
    # exp overflows; the unrolled first step has no decay term (the state starts at zero).
    check_preserved(*drawn, f"scan-unroll{{max-steps={max_steps}}}", REASSOCIATED, finite_only=True)


@SETTINGS
@given(bound_graphs("f32-exec"))
def test_f32_exec_computes_what_all_f32_computes(drawn):
    """f32-exec keeps low-precision leaves and layout ops and widens the rest; that is
    exactly computing every op in f32 from the same leaf values, cast back at the outputs."""
    graph, bindings = drawn
    feeds = random_feeds(graph, bindings)
    try:
        expected = outputs(widened_everywhere(graph), feeds, bindings)
    except RlxError as error:
        if "gather index" not in error.message:
            raise
        reject()
    result = run(graph, "f32-exec")
    assert rlxir_text(run(result, "f32-exec")) == rlxir_text(result)  # idempotent
    assert [result.type(name) for name in result.outputs] == [graph.type(name) for name in graph.outputs]
    for value, reference in zip(outputs(result, feeds, bindings), expected):
        np.testing.assert_allclose(value, reference, rtol=1e-6, atol=0, equal_nan=True)


def widened_everywhere(graph: Graph) -> Graph:
    """The oracle: every low-precision leaf read through a cast to f32, every cast to
    f16/bf16 made f32, every op re-inferred, each output cast back to its declared type."""
    oracle = graph.copy()
    declared = {value: oracle.type(value) for value in oracle.outputs}
    for node in oracle.schedule():
        if oracle.kind(node) != "op":
            if oracle.type(node).dtype.is_low_precision and oracle.user_count(node):
                cast = oracle.add_op("cast", [node], {"to": DType.f32}, after=node)
                for user in list(oracle.edge_targets(node)):
                    if user != cast:
                        oracle.set_operands(user, [cast if value == node else value for value in oracle.operands(user)])
            continue
        attrs = dict(oracle.attrs(node))
        if oracle.op(node) == "cast" and attrs["to"].is_low_precision:
            attrs["to"] = DType.f32
        if oracle.op(node) == "fused_elementwise":
            for low in ("f16", "bf16"):
                attrs["chain"] = attrs["chain"].replace(f"to = {low}}}", "to = f32}")
        oracle.set_attrs(node, attrs)
        oracle.set_type(node, oracle.infer_type(oracle.op(node), oracle.operands(node), attrs))
    oracle.set_outputs([value if oracle.type(value) == declared[value] else
                        oracle.add_op("cast", [value], {"to": declared[value].dtype}) for value in oracle.outputs])
    return oracle


def rlxir_text(graph: Graph) -> str:
    from rlxir.ir.printer import print_graph

    return print_graph(graph)
