"""rlxir.testing.strategies: every drawn graph is valid, and the options mean what they say."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir import DType, find_errors, verify
from rlxir.ops import LEAF_KINDS
from rlxir.testing.motifs import FLOAT_MOTIFS, MOTIFS
from rlxir.testing.strategies import SUPPORTED_OPS, bindings_for, graphs, modules


@settings(max_examples=60, deadline=None)
@given(graphs(max_ops=20, symbols=("B", "S"), dtypes=(DType.f32, DType.i32, DType.f16)))
def test_the_verifier_accepts_every_drawn_graph(graph):
    assert find_errors(graph) == []
    assert graph.outputs and set(graph.outputs) <= set(graph.schedule())


@pytest.mark.parametrize("op", SUPPORTED_OPS)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_every_supported_op_draws_valid_graphs_on_its_own(op, data):
    graph = data.draw(graphs(ops=[op], max_ops=3, symbols=("B",), dtypes=(DType.f32, DType.i32)))
    verify(graph)
    assert {graph.op(name) for name in graph.ops()} == {op}


@pytest.mark.parametrize("motif", MOTIFS)
@settings(max_examples=4, deadline=None)
@given(data=st.data())
def test_every_motif_draws_valid_graphs_on_its_own(motif, data):
    dtypes = (DType.f32,) if motif in FLOAT_MOTIFS else (DType.i32, DType.f16)
    graph = data.draw(graphs(motifs=[motif], min_ops=2, max_ops=4, symbols=("B",), dtypes=dtypes))
    assert find_errors(graph) == []


@settings(max_examples=30, deadline=None)
@given(graphs(min_ops=3, max_ops=3, ops=["add", "matmul", "reshape"]))
def test_ops_and_op_counts_are_respected(graph):
    assert len(graph.ops()) == 3
    assert {graph.op(name) for name in graph.ops()} <= {"add", "matmul", "reshape"}


@settings(max_examples=40, deadline=None)
@given(graphs(max_ops=12, float_only=True, dtypes=(DType.f32, DType.i32, DType.f16)))
def test_float_only_graphs_hold_only_floats(graph):
    assert all(graph.type(name).dtype.is_float for name in graph)


@settings(max_examples=30, deadline=None)
@given(graphs(max_ops=6, symbols=False))
def test_without_symbols_every_type_is_static(graph):
    assert graph.symbols == {}
    assert all(graph.type(name).is_static for name in graph)


@settings(max_examples=30, deadline=None)
@given(graphs(max_ops=8, leaves_first=True, symbols=("B",)))
def test_leaves_first_puts_every_leaf_before_the_first_op(graph):
    kinds = [graph.kind(name) in LEAF_KINDS for name in graph.schedule()]
    assert kinds == sorted(kinds, reverse=True)


@settings(max_examples=20, deadline=None)
@given(st.data())
def test_bindings_cover_every_declared_symbol(data):
    graph = data.draw(graphs(max_ops=4, symbols=("B", "S", "T")))
    values = data.draw(bindings_for(graph, min_value=2, max_value=3))
    assert set(values) == {"B", "S", "T"} and all(2 <= value <= 3 for value in values.values())


@settings(max_examples=15, deadline=None)
@given(modules(min_graphs=2, max_graphs=3, max_ops=3))
def test_module_graphs_have_distinct_names(module):
    assert 2 <= len(module) <= 3
    for graph in module:
        verify(graph)


@pytest.mark.parametrize("options, message", [
    ({"ops": ["frobnicate"]}, "cannot draw frobnicate"),
    ({"dtypes": (DType.bool,)}, "no usable dtype"),
    ({"dtypes": (DType.i32,), "float_only": True}, "no usable dtype"),
    ({"dtypes": (DType.i32,), "ops": ["softmax"]}, "none of the ops"),
    ({"symbols": ("f32",)}, "cannot name a symbol"),
    ({"min_ops": 3, "max_ops": 2}, "min_ops"),
    ({"motifs": ["duplicate", "tangle"]}, "has no motif tangle; it plants: duplicate, dead"),
    ({"motifs": ["bias_act"], "dtypes": (DType.i32,)}, "motifs bias_act need a floating-point dtype"),
])
def test_bad_options_fail_at_once(options, message):
    with pytest.raises(ValueError, match=message):
        graphs(**options)
