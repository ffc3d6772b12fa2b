"""The schedule is the order of the graph's linked list through every kind of change:
inserts before the first value, after the last, between two, moves, erases and renames,
including the relabelling when the labels between two values run out; so are the values
of given ops (`values_with_op`) and any values sorted by it (`in_schedule_order`)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlxir
from rlxir.ir import labels
from rlxir.ir.graph_reading import SCHEDULE_END, GraphError

START = "graph g() {\n  input %x : f32[4]\n  %y = relu(%x) : f32[4]\n  output %y\n}\n"
STEPS = st.lists(st.tuples(st.sampled_from(["before", "after", "end", "move", "erase", "rename"]),
                           st.integers(0, 10**6)), max_size=120)


def walked(graph) -> list[str]:
    """The values in the order of the linked list itself."""
    order, cursor = [], graph._next[SCHEDULE_END]
    while cursor != SCHEDULE_END:
        order.append(cursor)
        cursor = graph._next[cursor]
    return order


@settings(max_examples=150, deadline=None)
@given(STEPS)
def test_the_schedule_is_the_linked_lists_order(steps):
    graph = rlxir.parse(START, "g.rlx").main
    made = 0
    for kind, pick in steps:
        names = graph.schedule()
        anchor = names[pick % len(names)]
        if kind in ("before", "after", "end"):
            made += 1
            where = {"before": {"before": anchor}, "after": {"after": anchor}, "end": {}}[kind]
            graph.add_op("neg" if made % 3 == 0 else "exp", ["x"], name=f"n{made}", **where)
        elif kind == "move" and graph.kind(anchor) == "op":
            other = names[(pick // 7) % len(names)]
            if other != anchor and graph.kind(other) == "op" and not graph.users(anchor):
                graph.move_before(anchor, other)
        elif kind == "erase" and graph.kind(anchor) == "op" and not graph.users(anchor) and anchor not in graph.outputs:
            graph.erase(anchor)
        elif kind == "rename" and graph.kind(anchor) == "op":
            made += 1
            graph.rename(anchor, f"r{made}")
        # The values of some ops, read from storage before the schedule is ordered again.
        for ops in ({"neg"}, ("neg", "input"), {"relu", "exp"}):
            assert graph.values_with_op(ops) == [name for name in walked(graph) if graph.op(name) in ops]
        assert graph.schedule() == walked(graph)
        # Any values, given in any order, come back in the schedule's order.
        some = graph.schedule()[pick % 3::2][::-1]
        assert graph.in_schedule_order(some) == [name for name in walked(graph) if name in some]
        # A stretch of the schedule, read along the links, is the same slice of it.
        order = walked(graph)
        first, last = order[pick % len(order)], order[(pick // 5) % len(order)]
        expected = order[order.index(first):order.index(last) + 1]
        assert graph.schedule_span(first, last) == expected


def test_labels_run_out_and_are_given_again_in_the_same_order(monkeypatch):
    graph = rlxir.parse(START, "g.rlx").main
    relabels = []
    for name in ("relabel_around", "relabel_all"):
        original = getattr(labels, name)
        monkeypatch.setattr(labels, name, lambda *args, original=original: (relabels.append(1), original(*args))[1])
    for index in range(100):  # alternating anchors: each insert takes the middle of the gap left
        graph.add_op("exp", ["x"], name=f"n{index}", before="y" if index % 2 else graph.schedule()[-2])
    assert relabels
    assert graph.schedule() == walked(graph)
    for index in range(100):  # before the first value: labels below the first, and below zero
        graph.add_op("exp", ["x"], name=f"head{index}", before=graph.schedule()[0])
    assert graph.schedule() == walked(graph)
    assert graph.schedule()[:2] == ["head99", "head98"]


def test_in_schedule_order_and_schedule_span_name_a_value_the_graph_does_not_hold():
    graph = rlxir.parse(START, "g.rlx").main
    assert graph.in_schedule_order(["y", "x"]) == ["x", "y"]
    with pytest.raises(GraphError, match="no value %gone"):
        graph.in_schedule_order(["y", "gone"])
    with pytest.raises(GraphError, match="no value %gone"):
        graph.schedule_span("x", "gone")


def test_inserts_that_keep_returning_to_one_place_relabel_only_around_it(monkeypatch):
    """An optimizer puts each state param before the first op while appending its update
    at the end: a gap halved every time, used up every ~32 params. The stretch around it
    is relabelled, never the whole schedule, and the order holds throughout."""
    text = "graph g() {\n  input %x : f32[4]\n" + "".join(f"  %a{i} = exp(%x)\n" for i in range(50)) + \
        "  output %a49\n}\n"
    graph = rlxir.parse(text, "g.rlx").main
    whole = []
    monkeypatch.setattr(labels, "relabel_all", lambda *args: whole.append(1))
    for index in range(2000):
        graph.add_param(f"state{index}", rlxir.TensorType(rlxir.DType.f32, (4,)), before="a0")
        graph.add_op("exp", ["x"], name=f"update{index}")
    order = walked(graph)
    assert graph.schedule() == order
    assert all(graph._label[first] < graph._label[second] for first, second in zip(order, order[1:]))
    assert order[1:2001] == [f"state{index}" for index in range(2000)] and not whole
