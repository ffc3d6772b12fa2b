"""Printing and parsing are inverse (IR.md, "Round trip"): on any valid graph,
``parse(print(g))`` equals ``g`` and printing that again gives the same bytes."""

from __future__ import annotations

from hypothesis import given, settings

from rlxir import DType, parse, print_graph, print_module
from rlxir.testing.strategies import graphs, modules

DATA_DTYPES = (DType.f32, DType.f16, DType.bf16, DType.f64, DType.i32, DType.i64, DType.i8, DType.u8)


@settings(max_examples=120, deadline=None)
@given(graphs(max_ops=15, dtypes=DATA_DTYPES, symbols=("B", "S"), special_floats=True))
def test_parse_of_print_equals_the_graph(graph):
    text = print_graph(graph)
    parsed = parse(text, "<printed>").main
    assert parsed.equals(graph), text
    assert print_graph(parsed) == text


@settings(max_examples=40, deadline=None)
@given(graphs(max_ops=8))
def test_static_graphs_round_trip(graph):
    text = print_graph(graph)
    assert parse(text).main.equals(graph), text


@settings(max_examples=30, deadline=None)
@given(modules(max_graphs=3, max_ops=6, symbols=("N",)))
def test_modules_round_trip_in_order(module):
    text = print_module(module)
    parsed = parse(text)
    assert list(parsed.graphs) == list(module.graphs)
    assert parsed.equals(module), text
    assert print_module(parsed) == text


@settings(max_examples=40, deadline=None)
@given(graphs(max_ops=10, symbols=("B", "S")))
def test_a_copy_prints_like_the_original(graph):
    assert print_graph(graph.copy()) == print_graph(graph)
