"""`Interface.of` after every pass reuses the names and order it read last time while no
input or param was stored, dropped, renamed or moved; every change to an input or a param,
through the graph's methods, its records or `graph.nx`, is still seen."""

from __future__ import annotations

import pytest

import rlxir
from rlxir.ir.interface import Interface

TEXT = """graph g(B) {
  input %x : f32[B, 4]
  param %w : f32[4, 4]
  param %b : f32[4]
  input %y : f32[B, 4]
  param %unused : f32[2]
  %h = matmul(%x, %w) : f32[B, 4]
  %o = add(%h, %b) : f32[B, 4]
  %p = add(%o, %y) : f32[B, 4]
  output %p
}
"""


def read_afresh(graph) -> Interface:
    """The interface from the graph's schedule, with no remembered rows."""
    def signature(kind):
        return tuple((name, graph.type(name)) for name in graph.schedule()
                     if name in graph and graph.kind(name) == kind)  # graph.nx removes no schedule entry
    return Interface(signature("input"), signature("param"), tuple((name, graph.type(name)) for name in graph.outputs))


def set_record_type(graph):
    graph.data("w").type = graph.type("x")


def make_input_a_param(graph):
    graph.data("y").op = "param"


CHANGES = {
    "set_type": lambda graph: graph.set_type("b", graph.type("unused")),
    "a record's type": set_record_type,
    "a record's op": make_input_a_param,
    "move_before": lambda graph: graph.move_before("b", "w"),
    "move_after": lambda graph: graph.move_after("x", "y"),
    "rename": lambda graph: graph.rename("w", "weight"),
    "erase": lambda graph: graph.erase("unused"),
    "remove through graph.nx": lambda graph: graph.nx.remove_node("unused"),
    "add_param": lambda graph: graph.add_param("extra", graph.type("b")),
    "add_input": lambda graph: graph.add_input("more", graph.type("b")),
}


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_a_change_after_a_snapshot_is_seen(change):
    graph = rlxir.parse(TEXT, "g.rlx").main
    before = Interface.of(graph)
    assert Interface.of(graph) == before == read_afresh(graph)  # the second read reuses the rows
    CHANGES[change](graph)
    after = Interface.of(graph)
    assert after == read_afresh(graph)
    assert after != before


def test_changes_elsewhere_reuse_the_rows_and_keep_the_answer():
    graph = rlxir.parse(TEXT, "g.rlx").main
    before = Interface.of(graph)
    graph.add_op("relu", ["p"])
    graph.add_const("c", graph.type("b"), 0.0)
    graph.erase("c")
    assert Interface.of(graph) == before == read_afresh(graph)


def test_consts_coming_and_going_keep_the_snapshot():
    # Passes store, move and erase consts all the time; the interface holds none, so its
    # names and order are not read again (on a 60,000-param graph that read costs about
    # 0.1 s a pass).
    graph = rlxir.parse(TEXT, "g.rlx").main
    first = graph.interface_leaves()
    graph.add_const("c", graph.type("b"), 0.0)
    graph.move_before("c", "x")
    graph.erase("c")
    assert graph.interface_leaves() is first
    graph.add_param("extra", graph.type("b"))
    assert graph.interface_leaves() is not first
    assert Interface.of(graph) == read_afresh(graph)
