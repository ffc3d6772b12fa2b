"""The pattern rewriter: greedy fixed point, the convergence cap, one-shot walks."""

from __future__ import annotations

import pytest

import rlxir
from rlxir.pass_machinery.rewriter import Rule, RewriteDidNotConverge, rewrite_greedy, rewrite_once

TEXT = """\
graph g {
  input %x : f32[4]
  %a = neg(%x)
  %b = neg(%a)
  %c = neg(%b)
  %d = neg(%c)
  %e = exp(%d)
  output %e
}
"""


def cancel_double_neg(graph, node):
    (inner,) = graph.operands(node)
    if graph.op(inner) != "neg":
        return None
    (source,) = graph.operands(inner)
    users = graph.users(node)
    graph.replace_all_uses(node, source)
    graph.erase(node)
    if not graph.users(inner) and inner not in graph.outputs:
        graph.erase(inner)
    return users


def test_greedy_reaches_the_fixed_point():
    graph = rlxir.parse(TEXT).main
    count = rewrite_greedy(graph, [Rule("double-neg", "neg", cancel_double_neg)])
    assert count == 2
    assert rlxir.print_graph(graph).splitlines()[2] == "  %e = exp(%x) : f32[4]"
    rlxir.verify(graph)


def test_once_applies_at_most_one_rule_per_node():
    graph = rlxir.parse(TEXT).main
    assert rewrite_once(graph, [Rule("double-neg", ("neg",), cancel_double_neg)]) == 2


def test_predicate_rules_match_any_node():
    graph = rlxir.parse(TEXT).main
    seen = []
    rule = Rule("observe", lambda graph, node: graph.kind(node) == "op", lambda graph, node: seen.append(node))
    assert rewrite_greedy(graph, [rule]) == 0
    assert seen == ["a", "b", "c", "d", "e"]


def test_rules_that_undo_each_other_fail_loudly():
    graph = rlxir.parse("graph g {\n  input %x : f32[4]\n  %a = exp(%x)\n  output %a\n}").main

    def swap(to_op):
        def apply(graph, node):
            replacement = graph.add_op(to_op, graph.operands(node), before=node, origin=node)
            graph.replace_all_uses(node, replacement)
            graph.erase(node)
            return [replacement]
        return apply

    rules = [Rule("exp-to-log", "exp", swap("log")), Rule("log-to-exp", "log", swap("exp"))]
    with pytest.raises(RewriteDidNotConverge) as info:
        rewrite_greedy(graph, rules, max_rewrites=50)
    assert "did not converge after 50 rewrites" in info.value.message
    assert "exp-to-log" in info.value.message and "log-to-exp" in info.value.message
