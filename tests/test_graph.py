"""Graph: memoised type inference must not mix up values Python calls equal; binding keeps dims valid."""

from __future__ import annotations

import math

import pytest

import rlxir
from rlxir.pass_machinery.pipeline import run_pipeline


def _graph(*statements: str) -> str:
    body = "\n".join(f"  {statement}" for statement in statements)
    return f"graph g {{\n  input %x : f32[4, 3]\n{body}\n  output %x\n}}\n"


@pytest.mark.parametrize(
    "accepted, refused, words",
    [
        ("softmax(%x) {axis = 1}", "softmax(%x) {axis = true}", "must be an integer, got true"),
        ("gelu(%x) {approximate = true}", "gelu(%x) {approximate = 1}", "must be true or false, got 1"),
        ("slice(%x) {axis = 0, start = 1, len = 2}", "slice(%x) {axis = 0, start = 1.0, len = 2}", "must be an integer"),
        ("transpose(%x) {perm = [1, 0]}", "transpose(%x) {perm = [true, false]}", "must be a list of integers"),
    ],
)
def test_an_inferred_op_does_not_vouch_for_an_equal_looking_bad_attribute(accepted, refused, words):
    # True == 1 == 1.0 in Python; the second statement must be checked, not served from the cache.
    with pytest.raises(rlxir.IRTypeError, match=words) as caught:
        rlxir.parse(_graph(f"%a = {accepted}", f"%b = {refused}"))
    assert caught.value.line == 4


def test_negative_zero_keeps_its_sign():
    graph = rlxir.Graph("g")
    graph.add_input("x", rlxir.TensorType(rlxir.DType.f32, (4, 3)))
    positive = graph.add_op("layernorm", ["x", "x", "x"], {"axis": 0, "eps": 0.0})
    negative = graph.add_op("layernorm", ["x", "x", "x"], {"axis": 0, "eps": -0.0})
    assert math.copysign(1.0, graph.attrs(positive)["eps"]) == 1.0
    assert math.copysign(1.0, graph.attrs(negative)["eps"]) == -1.0


NEGATIVE_INPUT = "graph g(S) {\n  input %x : f32[S - 4, 2]\n  output %x\n}\n"
NEGATIVE_EXPAND = "graph g(S) {\n  input %one : f32[1]\n  %y = expand(%one) {shape = [S - 4, 2]}\n  output %y\n}\n"


@pytest.mark.parametrize(
    "text, line, words",
    [(NEGATIVE_INPUT, 2, "with S=3, dim S - 4 of %x is -1"), (NEGATIVE_EXPAND, 3, "expand dim -1 is negative")],
)
def test_binding_refuses_values_that_make_a_dim_negative(text, line, words):
    graph = rlxir.parse(text).main
    rlxir.verify(graph.bind(S=4))
    with pytest.raises(rlxir.RlxError, match=words) as caught:
        graph.bind(S=3)
    assert caught.value.line == line


def test_rename_moves_readers_outputs_schedule_and_view_roots():
    graph = rlxir.parse("graph g {\n  input %x : f32[4]\n  %a = relu(%x)\n  %b = add(%a, %a)\n"
                        "  %v = reshape(%b) {shape = [2, 2], view_of = \"%b\"}\n  output %b, %v\n}\n").main
    graph.rename("b", "sum")
    assert graph.schedule() == ["x", "a", "sum", "v"]
    assert graph.operands("sum") == ("a", "a") and graph.operands("v") == ("sum",)
    assert graph.users("a") == ["sum"] and graph.users("sum") == ["v"]
    assert graph.outputs == ["sum", "v"] and graph.attrs("v")["view_of"] == "%sum"
    assert "b" not in graph
    rlxir.verify(graph)
    with pytest.raises(rlxir.GraphError, match="already defined"):
        graph.rename("a", "x")


def test_view_roots_follow_a_chain_of_renames_made_without_them():
    """`keep_output_names` renames many values with views=False, then updates the views in
    one scan: a name freed and taken again in between must still land on the right value."""
    graph = rlxir.parse("graph g {\n  input %x : f32[4]\n  %a = relu(%x)\n  %b = exp(%a)\n"
                        "  %va = reshape(%a) {shape = [2, 2], view_of = \"%a\"}\n"
                        "  %vb = reshape(%b) {shape = [2, 2], view_of = \"%b\"}\n  output %va, %vb\n}\n").main
    renames = [("a", "a.old"), ("b", "a")]  # %a's name goes to %b's value
    for old, new in renames:
        graph.rename(old, new, views=False)
    assert graph.attrs("va")["view_of"] == "%a"  # not followed yet
    graph.rename_view_roots(renames)
    assert graph.attrs("va")["view_of"] == "%a.old" and graph.attrs("vb")["view_of"] == "%a"
    rlxir.verify(graph)


def test_the_output_list_counts_its_members_through_every_change():
    import pickle

    from rlxir.ir.outputs import OutputList

    graph = rlxir.parse("graph g {\n  input %x : f32[4]\n  %a = relu(%x)\n  %b = exp(%a)\n  output %a, %b, %a\n}\n").main
    outputs = graph.outputs
    assert isinstance(outputs, OutputList) and outputs == ["a", "b", "a"] and outputs.count("a") == 2
    outputs[0] = "x"
    outputs.append("b")
    outputs[1:3] = ["x"]
    assert outputs == ["x", "x", "b"] and outputs.count("a") == 0 and "a" not in outputs and outputs.count("x") == 2
    del outputs[0]
    outputs.insert(0, "a")
    assert outputs.pop() == "b" and outputs.count("b") == 0 and outputs == ["a", "x"]
    assert outputs.replace("x", "b") == 1 and outputs == ["a", "b"] and "x" not in outputs
    copied = pickle.loads(pickle.dumps(outputs))
    assert copied == ["a", "b"] and copied.count("b") == 1 and isinstance(copied, OutputList)
    graph.outputs = ["b", "b"]  # a plain list assigned is counted too
    assert graph.outputs.count("b") == 2 and "a" not in graph.outputs


def test_values_stored_by_the_parser_join_the_schedule_in_one_go_after_others():
    graph = rlxir.parse("graph g {\n  input %x : f32[4]\n  %a = relu(%x)\n  output %a\n}\n").main
    graph.outputs = []
    x_type = graph.type("x")
    for name in ("p", "q"):
        graph.store_parsed(name, "neg", ("a",), rlxir.ir.graph_reading.NO_ATTRS, x_type, None)
    graph.append_to_schedule(["p", "q"])
    graph.add_op("relu", ["q"], name="r")  # an ordinary append after them
    assert graph.schedule() == ["x", "a", "p", "q", "r"]
    assert graph.comes_before("a", "p") and graph.comes_before("p", "q") and graph.comes_before("q", "r")
    graph.add_op("exp", ["p"], name="s", before="q")  # an insert between two appended at once
    assert graph.schedule() == ["x", "a", "p", "s", "q", "r"] and graph.comes_before("s", "q")
    graph.outputs = ["r"]
    rlxir.verify(graph)


def test_the_output_list_replaces_through_its_index_of_positions_after_any_change():
    from rlxir.ir.outputs import OutputList

    outputs = OutputList(["a", "b", "a", "c"])
    assert outputs.replace("a", "d") == 2 and outputs == ["d", "b", "d", "c"]  # builds the index
    outputs[-1] = "d"  # kept by the index
    assert outputs.replace("d", "e") == 3 and outputs == ["e", "b", "e", "e"]
    outputs.insert(1, "e")  # moves members: the index is dropped and rebuilt
    assert outputs.replace("e", "f") == 4 and outputs == ["f", "f", "b", "f", "f"]
    outputs.reverse()
    del outputs[0]
    outputs[0:2] = ["g", "b", "f"]
    assert outputs.replace("b", "h") == 1 and outputs == ["g", "h", "f", "f", "f"] and outputs.count("b") == 0
    outputs.sort()
    outputs.append("g")
    assert outputs.replace("g", "i") == 2 and outputs == ["f", "f", "f", "i", "h", "i"] and outputs.count("i") == 2


def _structure(graph) -> tuple:
    """Everything a replacement touches, edge order included: each value's operands and
    readers (in their dicts' order), the outputs."""
    return ([(name, graph.operands(name), list(graph.edge_targets(name)), list(graph.edge_sources(name)))
             for name in graph.schedule()], list(graph.outputs))


REPLACED = """\
graph g(B) {
  input %x : f32[B, 4]
  %a = exp(%x)
  %b = exp(%x)
  %c = exp(%x)
  %d = neg(%x)
  %e = neg(%x)
  %cat = concat(%a, %b, %d, %c, %e, %b) {axis = 1}
  %s = add(%b, %e)
  output %cat, %s, %c
}
"""


def test_replacing_many_values_at_once_is_replacing_them_one_by_one():
    one_by_one, at_once = rlxir.parse(REPLACED).main, rlxir.parse(REPLACED).main
    mapping = {"b": "a", "c": "a", "e": "d"}
    for old, new in mapping.items():
        one_by_one.replace_all_uses(old, new)
    at_once.replace_uses(mapping)
    assert _structure(at_once) == _structure(one_by_one)
    assert at_once.operands("cat") == ("a", "a", "d", "a", "d", "a") and list(at_once.outputs) == ["cat", "s", "a"]


def test_replacing_a_value_by_one_that_is_replaced_too_is_refused():
    graph = rlxir.parse(REPLACED).main
    with pytest.raises(rlxir.GraphError, match="both replaced and a replacement"):
        graph.replace_uses({"b": "a", "a": "d"})


def test_cse_merges_thousands_of_operands_of_one_reader_in_order():
    text = ("graph g(B) {\n  input %x : f32[B, 2]\n" + "".join(
        f"  %e{i} = {'sin' if i % 3 else 'cos'}(%x)\n" for i in range(3000))
        + "  %cat = concat(" + ", ".join(f"%e{i}" for i in range(3000)) + ") {axis = 1}\n  output %cat\n}\n")
    merged = run_pipeline(rlxir.parse(text).main, "cse")
    assert merged.operands("cat") == tuple("e0" if i % 3 == 0 else "e1" for i in range(3000))
    assert len(merged) == 4


def _records(graph) -> list:
    """Every value's record fields, readers and sources in their dicts' order, the schedule."""
    return [(name, data.op, data.operands, dict(data.attrs), data.type, data.loc, data.provenance,
             list(graph.edge_targets(name)), list(graph.edge_sources(name)))
            for name, data in ((name, graph.data(name)) for name in graph.schedule())]


BOUND_IN_PLACE = """\
graph g(B, S = 8) {
  input %x : f32[B, S, 4]
  param %w : f32[4, 4]
  const %c : f32[4] = [1.0, 2.0, 3.0, 4.0]
  %h = matmul(%x, %w)
  %a = add(%h, %c)
  %r = reshape(%a) {shape = [B * S, 4]}
  %e = expand(%c) {shape = [B, 4]}
  %s = expand(%c) {shape = [S - 4, 4]}
  output %r, %s, %e
}
"""


@pytest.mark.parametrize("bindings", [{"B": 3}, {"B": 2, "S": 6}])
def test_binding_in_place_gives_what_the_copy_gives_and_returns_the_graph_itself(bindings):
    written, reused = rlxir.parse(BOUND_IN_PLACE).main, rlxir.parse(BOUND_IN_PLACE).main
    assert written.fresh_name("h") == reused.fresh_name("h") == "h.1"  # counted in the graph as written
    copied = written.bind(bindings)
    assert copied is not written and "B" in written.symbols  # the copy leaves the graph as written
    bound = reused.bind(bindings, in_place=True)
    assert bound is reused
    assert _records(bound) == _records(copied) and bound.equals(copied)
    assert bound.symbols == copied.symbols and list(bound.outputs) == list(copied.outputs)
    assert bound.interface_leaves() == copied.interface_leaves()  # the leaves' new types, not cached old ones
    assert bound.type("e").shape == (bindings["B"], 4) and ("S" in bound.symbols) == ("S" not in bindings)
    rlxir.verify(bound)
    # the passes name new values as they would in the copy
    assert bound.fresh_name("h") == copied.fresh_name("h") == "h.1"


def test_binding_in_place_refuses_what_the_copy_refuses_at_the_same_place():
    for in_place in (False, True):
        graph = rlxir.parse(BOUND_IN_PLACE).main
        with pytest.raises(rlxir.RlxError, match="expand dim -1 is negative") as caught:
            graph.bind({"B": 2, "S": 3}, in_place=in_place)
        assert caught.value.line == 9


FUSED = """\
graph g(B) {
  input %x : f32[B, 4]
  param %w : f32[4, 4]
  param %b : f32[4]
  %m = matmul(%x, %w)
  %t = add(%m, %b)
  %g = gelu(%t)
  %late = exp(%x)
  %u = mul(%g, %g)
  %v = neg(%g)
  output %u, %g, %v
}
"""


def _sorted_structure(graph) -> tuple:
    """`_structure` with each value's readers and sources as sets (a replacement made by a
    new value lists it last among its readers' sources; rewriting in place leaves them)."""
    return ([(name, graph.op(name), graph.operands(name), graph.type(name), sorted(graph.edge_targets(name)),
              sorted(graph.edge_sources(name))) for name in graph.schedule()], list(graph.outputs))


def test_rewriting_in_place_is_replacing_by_a_new_value_that_takes_the_old_name():
    in_place, replaced = rlxir.parse(FUSED).main, rlxir.parse(FUSED).main
    assert in_place.rewrite_in_place("g", "fused_matmul_bias_act", ["x", "w", "b"], {"activation": "gelu"},
                                     provenance=("m", "t", "g")) == "g"
    new = replaced.add_op("fused_matmul_bias_act", ["x", "w", "b"], {"activation": "gelu"}, before="g", origin="g",
                          provenance=("m", "t", "g"))
    replaced.replace_all_uses("g", new)
    replaced.erase("g")
    replaced.rename(new, "g")
    assert _sorted_structure(in_place) == _sorted_structure(replaced)
    assert list(in_place.edge_targets("g")) == ["u", "v"] and in_place.outputs == ["u", "g", "v"]
    assert in_place.provenance("g") == ("m", "t", "g") and in_place.location("g").line == 7
    # the values only the old op read are left for the caller to erase; networkx sees the new edges
    assert in_place.user_count("t") == 0 and sorted(in_place.nx.predecessors("g")) == ["b", "w", "x"]
    for name in ("t", "m"):
        in_place.erase(name)
    rlxir.verify(in_place)


@pytest.mark.parametrize("name, op, operands, attributes, error, words", [
    ("x", "exp", ["w"], None, rlxir.GraphError, "%x is a leaf \\(input\\), not an op value"),
    ("g", "exp", ["late"], None, rlxir.GraphError, "%late does not come before %g"),
    ("g", "exp", ["g"], None, rlxir.GraphError, "%g does not come before %g"),
    ("g", "exp", ["nowhere"], None, rlxir.GraphError, "operand %nowhere of exp is not defined"),
    ("g", "exp", ["b"], None, rlxir.IRTypeError, "exp gives f32\\[4\\], not the type of %g"),
    ("g", "no_such_op", ["x"], None, rlxir.IRTypeError, "unknown op 'no_such_op'"),
    ("g", "exp", ["x", "x"], None, rlxir.IRTypeError, "exp takes"),
    ("g", "softmax", ["x"], {"axis": 7}, rlxir.RlxError, "axis 7 is out of range for rank 2"),
    ("nowhere", "exp", ["x"], None, rlxir.GraphError, "no value %nowhere"),
])
def test_rewriting_in_place_refuses_what_would_break_the_graph_and_changes_nothing(name, op, operands, attributes,
                                                                                  error, words):
    graph = rlxir.parse(FUSED).main
    before = _records(graph)
    with pytest.raises(error, match=words):
        graph.rewrite_in_place(name, op, operands, attributes)
    assert _records(graph) == before
