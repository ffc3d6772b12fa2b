"""The verifier catches graphs broken behind the Graph API's back, located at the node."""

from __future__ import annotations

import pytest

from rlxir import DType, Expr, TensorType, VerifyError, find_errors, parse, verify

TEXT = """\
graph g(B) {
  input %x : f32[B, 4]
  param %w : f32[4, 8]
  %h = matmul(%x, %w) : f32[B, 8]
  %a = relu(%h) : f32[B, 8]
  %s = softmax(%a) {axis = 1} : f32[B, 8]
  output %s
}
"""


@pytest.fixture
def graph():
    return parse(TEXT, "g.rlx").main


def only_error(graph) -> VerifyError:
    errors = find_errors(graph)
    assert len(errors) >= 1
    with pytest.raises(VerifyError) as caught:
        verify(graph)
    assert caught.value.message == errors[0].message
    return errors[0]


def test_a_parsed_graph_verifies(graph):
    assert find_errors(graph) == []
    verify(graph)


def test_a_type_changed_behind_its_back(graph):
    graph.set_type("a", TensorType(DType.f32, (Expr.symbol("B"), 9)))
    error = only_error(graph)
    assert "%a = relu has type f32[B, 9], but its operands give f32[B, 8]" in error.message
    assert error.expected == "f32[B, 8]"
    assert (error.file, error.line) == ("g.rlx", 5)


def test_a_changed_leaf_type_shows_up_at_its_readers(graph):
    graph.set_type("w", TensorType(DType.f32, (5, 8)))
    error = only_error(graph)
    assert error.message.startswith("%h = matmul: matmul contracts 4 against 5")
    assert error.line == 4


def test_an_operand_defined_later_in_the_schedule(graph):
    graph.move_after("h", "a")
    error = only_error(graph)
    assert "%a reads %h before its definition in the schedule" in error.message
    assert error.line == 5


def test_edges_inconsistent_with_operands(graph):
    graph.nx.add_edge("w", "a")
    assert "%a: graph edges disagree with its operands" in only_error(graph).message


def test_a_missing_edge(graph):
    graph.nx.remove_edge("x", "h")
    assert "%h: graph edges disagree with its operands" in only_error(graph).message


def test_an_operand_that_does_not_exist(graph):
    graph.data("a")["operands"] = ("ghost",)
    assert "%a reads undefined value %ghost" in only_error(graph).message


def test_an_unknown_op(graph):
    graph.data("a")["op"] = "frobnicate"
    error = only_error(graph)
    assert "%a uses unknown op 'frobnicate'" in error.message
    assert error.line == 5


def test_a_wrong_arity(graph):
    graph.set_operands("a", ["h", "h"])
    assert "%a: relu takes 1 operand, got 2" in only_error(graph).message


def test_an_invalid_attribute(graph):
    graph.data("s")["attrs"] = {"axis": 7}
    error = only_error(graph)
    assert "%s = softmax: axis 7 is out of range for rank 2" in error.message


def test_missing_outputs(graph):
    graph.outputs = []
    error = only_error(graph)
    assert "graph g has no outputs" in error.message
    assert error.line == 7


def test_an_undefined_output(graph):
    graph.outputs = ["s", "nope"]
    assert "output %nope is not defined" in only_error(graph).message


def test_a_value_missing_from_the_schedule(graph):
    graph.nx.add_node("stray", op="input", operands=(), attrs={}, type=TensorType(DType.f32, ()), loc=None,
                      provenance=())
    assert "the schedule does not list every value exactly once" in only_error(graph).message


def test_an_undeclared_symbol_in_a_type(graph):
    graph.symbols = {}
    error = only_error(graph)
    assert "%x: type f32[B, 4] mentions undeclared symbol B" in error.message
    assert error.line == 2


def test_const_payloads_are_checked():
    graph = parse("graph g { const %c : f32[3] = [1, 2, 3]\n output %c }").main
    graph.data("c")["attrs"]["value"] = (1.0, 2.0)
    assert "const %c has 2 elements for 3" in only_error(graph).message


def test_a_leaf_with_operands(graph):
    graph.data("w")["operands"] = ("x",)
    graph.nx.add_edge("x", "w")
    assert "param %w cannot have operands" in only_error(graph).message


def test_find_errors_lists_every_error_in_schedule_order_up_to_a_limit(graph):
    graph.set_type("a", TensorType(DType.f32, (1,)))
    graph.data("s")["op"] = "frobnicate"
    graph.outputs = ["nope"]
    messages = [error.message for error in find_errors(graph)]
    assert len(messages) == 3
    assert messages[0].startswith("%a = relu") and messages[1].startswith("%s uses") and "nope" in messages[2]
    assert len(find_errors(graph, limit=2)) == 2
