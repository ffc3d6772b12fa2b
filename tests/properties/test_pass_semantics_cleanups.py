"""dce and cse preserve what a graph computes, on random valid graphs with dead ops and
repeated subexpressions planted (their strategies in `rlxir.testing.pass_graphs`)."""

from __future__ import annotations

from hypothesis import given

from test_pass_semantics_rewrites import EXACT, SETTINGS, bound_graphs, check_preserved


@SETTINGS
@given(bound_graphs("dce"))
def test_dce(drawn):
    graph, bindings = drawn
    result = check_preserved(graph, bindings, "dce", EXACT)
    assert all(result.users(name) or name in result.outputs or result.kind(name) in ("input", "param")
               for name in result.schedule())


@SETTINGS
@given(bound_graphs("cse"))
def test_cse(drawn):
    graph, bindings = drawn
    result = check_preserved(graph, bindings, "cse", EXACT)
    again = check_preserved(result, bindings, "cse", EXACT)
    assert len(again) == len(result), "cse reaches its fixed point in one run"
