"""Pattern rewriting: rules as data, a greedy worklist driver and a one-shot walk.

A rule is ``Rule(name, match, apply)``: `match` is an op name, a tuple of op names, or a
predicate ``(graph, node) -> bool``; ``apply(graph, node)`` rewrites around `node` and
returns None/False when it did nothing, or an iterable of value names to look at again
(new nodes, changed users; the driver also revisits the users of every value it is
given). Rules must leave the graph valid after each application.

`rewrite_greedy` applies rules until none matches (a fixed point), and fails loudly with
`RewriteDidNotConverge`, naming the rules applied last, when a cap on rewrites is hit.
`rewrite_once` walks the schedule once and applies the first matching rule per node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

import attrs

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph


@attrs.frozen
class Rule:
    """One rewrite: `match` (an op name, a tuple of op names, or a predicate on (graph,
    node)) picks the nodes, `apply(graph, node)` rewrites one; `rewrite_greedy` applies a
    list of rules to a fixed point."""

    name: str
    match: str | tuple | Callable
    apply: Callable

    def matches(self, graph: Graph, node: str) -> bool:
        if isinstance(self.match, str):
            return graph.op(node) == self.match
        if isinstance(self.match, tuple):
            return graph.op(node) in self.match
        return bool(self.match(graph, node))


class RewriteDidNotConverge(RlxError):
    """The greedy driver hit its rewrite cap: the rules keep undoing each other."""


def _index_rules(rules: Sequence[Rule]) -> tuple[dict, list]:
    """Rules keyed by the op names they match; predicate rules apply to every node."""
    by_op: dict[str, list[Rule]] = {}
    general: list[Rule] = []
    for rule in rules:
        if isinstance(rule.match, str):
            by_op.setdefault(rule.match, []).append(rule)
        elif isinstance(rule.match, tuple):
            for op in rule.match:
                by_op.setdefault(op, []).append(rule)
        else:
            general.append(rule)
    return by_op, general


def _try_rules(graph: Graph, node: str, by_op: dict, general: list):
    """Apply the first rule that rewrites `node`; returns (rule, revisit) or (None, None)."""
    indexed = by_op.get(graph.op(node), ())
    for rule in [*indexed, *general] if general else indexed:
        if general and rule not in indexed and not rule.matches(graph, node):  # indexed rules matched by op
            continue
        result = rule.apply(graph, node)
        if result:
            return rule, (() if result is True else result)
    return None, None


def rewrite_greedy(graph: Graph, rules: Sequence[Rule], max_rewrites: int | None = None) -> int:
    """Apply `rules` to a fixed point; returns the number of rewrites made.

    `max_rewrites` defaults to 10 per node plus 1000. Past it, `RewriteDidNotConverge`
    names the last rules applied.
    """
    by_op, general = _index_rules(rules)
    cap = max_rewrites if max_rewrites is not None else 10 * len(graph) + 1000
    nodes = graph.data_by_name()
    # Without general rules, a node whose op no rule names is skipped whenever it is taken
    # from the worklist: it starts without them (most nodes of a big graph), and a rewrite
    # that makes one queues it, to be skipped as before.
    worklist = deque(graph.schedule() if general else graph.values_with_op(by_op))
    queued = set(worklist)
    rewrites, recent = 0, deque(maxlen=8)
    while worklist:
        node = worklist.popleft()
        queued.discard(node)
        data = nodes.get(node)
        if data is None:  # erased by an earlier rewrite
            continue
        if not general and data.op not in by_op:  # most nodes: no rule looks at them
            continue
        users_before = list(graph.edge_targets(node))
        rule, revisit = _try_rules(graph, node, by_op, general)
        if rule is None:
            continue
        rewrites += 1
        recent.append(rule.name)
        if rewrites > cap:
            raise RewriteDidNotConverge(
                f"rewriting did not converge after {cap} rewrites; rules applied last: {', '.join(recent)}",
                graph.location(node) if node in graph else None,
                "rules that reach a fixed point (each rewrite must make progress)",
            )
        _enqueue(graph, worklist, queued, [node, *users_before, *revisit])
    return rewrites


def _enqueue(graph: Graph, worklist: deque, queued: set, names: Iterable[str]) -> None:
    for name in names:
        if name not in graph:
            continue
        # Users in edge order (deterministic, no sort); `graph.users` would sort them by
        # schedule position on every call.
        for candidate in (name, *graph.edge_targets(name)):
            if candidate not in queued:
                queued.add(candidate)
                worklist.append(candidate)


def rewrite_once(graph: Graph, rules: Sequence[Rule]) -> int:
    """One walk over the schedule; at most one rule per node. Returns rewrites made.
    Without predicate rules, the walk visits the nodes whose op a rule names when it
    starts (`values_with_op`), in schedule order."""
    by_op, general = _index_rules(rules)
    rewrites = 0
    nodes = graph.data_by_name()
    for node in graph.schedule() if general else graph.values_with_op(by_op):
        data = nodes.get(node)
        if data is None or (not general and data.op not in by_op):
            continue  # erased by an earlier rewrite, or no rule looks at its op
        if _try_rules(graph, node, by_op, general)[0] is not None:
            rewrites += 1
    return rewrites
