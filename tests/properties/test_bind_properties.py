"""Binding symbols: the bound graph verifies, is static, and binding commutes with printing
and with binding one symbol at a time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir import parse, print_graph, verify
from rlxir.testing.strategies import bindings_for, graphs

SYMBOLIC = graphs(max_ops=12, symbols=("B", "S", "L"))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_bound_graph_verifies_and_is_static(data):
    graph = data.draw(SYMBOLIC)
    values = data.draw(bindings_for(graph))
    bound = graph.bind(values)
    verify(bound)
    assert bound.symbols == {}
    assert all(bound.type(name).is_static for name in bound)
    assert bound.schedule() == graph.schedule() and bound.outputs == graph.outputs


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_binding_commutes_with_printing(data):
    graph = data.draw(SYMBOLIC)
    values = data.draw(bindings_for(graph))
    bound = graph.bind(values)
    assert parse(print_graph(graph)).main.bind(values).equals(bound)
    assert parse(print_graph(bound)).main.equals(bound)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_binding_one_symbol_at_a_time_equals_binding_all(data):
    graph = data.draw(SYMBOLIC)
    values = data.draw(bindings_for(graph))
    stepwise = graph
    for symbol, value in values.items():
        stepwise = stepwise.bind({symbol: value})
        verify(stepwise)
    assert stepwise.equals(graph.bind(values))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_partial_binding_keeps_the_other_symbols(data):
    graph = data.draw(SYMBOLIC)
    values = data.draw(bindings_for(graph))
    first = next(iter(values))
    partial = graph.bind({first: values[first]})
    verify(partial)
    assert set(partial.symbols) == set(graph.symbols) - {first}
    assert parse(print_graph(partial)).main.equals(partial)
