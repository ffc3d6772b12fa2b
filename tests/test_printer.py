"""The printer writes one canonical text (IR.md, docs/language.md "Canonical printing")."""

from __future__ import annotations

import math

from rlxir import AttrSpec, DType, Graph, Module, TensorType, parse, print_graph, print_module, register_annotation
from rlxir.symbolic import parse_dim

register_annotation("test_note", AttrSpec("str", None, doc="free text, for tests"))


def f32(*shape) -> TensorType:
    return TensorType(DType.f32, tuple(parse_dim(dim) if isinstance(dim, str) else dim for dim in shape))


def assert_prints_and_reads_back(graph: Graph, *fragments: str) -> None:
    """The printed text holds every fragment and parses back to an equal graph."""
    text = print_graph(graph)
    for fragment in fragments:
        assert fragment in text
    assert parse(text).main.equals(graph)


def mlp() -> Graph:
    graph = Graph("mlp", {"B": None, "S": 1})
    graph.add_input("x", f32("B", 784))
    graph.add_param("w1", f32(784, 512))
    graph.add_param("b1", f32(512))
    graph.add_const("half", f32(), 0.5)
    graph.add_op("linear", ["x", "w1", "b1"], name="h")
    graph.add_op("gelu", ["h"], {"approximate": True}, name="a")
    graph.add_op("mul", ["a", "half"], name="s")
    graph.add_op("softmax", ["s"], {"axis": -1}, name="p")
    graph.set_outputs(["p"])
    return graph


def test_a_graph_prints_in_canonical_form():
    assert print_graph(mlp()) == """\
graph mlp(B, S=1) {
  input %x : f32[B, 784]
  param %w1 : f32[784, 512]
  param %b1 : f32[512]
  const %half : f32[] = 0.5
  %h = linear(%x, %w1, %b1) : f32[B, 512]
  %a = gelu(%h) {approximate = true} : f32[B, 512]
  %s = mul(%a, %half) : f32[B, 512]
  %p = softmax(%s) : f32[B, 512]
  output %p
}
"""


def test_a_graph_without_symbols_has_no_parentheses():
    graph = Graph("g")
    graph.add_input("x", f32(2))
    graph.set_outputs(["x"])
    assert print_graph(graph).startswith("graph g {\n")


def test_attributes_print_in_schema_order_whatever_order_they_were_given_in():
    orders = ({"len": 2, "start": 1, "axis": 0}, {"axis": 0, "start": 1, "len": 2}, {"start": 1, "len": 2, "axis": 0})
    texts = set()
    for attrs in orders:
        graph = Graph("g")
        graph.add_input("x", f32(4))
        graph.add_op("slice", ["x"], attrs, name="y")
        graph.set_outputs(["y"])
        texts.add(print_graph(graph))
    assert len(texts) == 1
    assert "%y = slice(%x) {axis = 0, start = 1, len = 2} : f32[2]" in texts.pop()


def test_annotations_print_after_the_schema_attributes():
    graph = Graph("g")
    graph.add_input("x", f32(4))
    graph.add_op("cumsum", ["x"], {"test_note": "n", "axis": 0}, name="y")
    graph.set_outputs(["y"])
    assert '%y = cumsum(%x) {axis = 0, test_note = "n"} : f32[4]' in print_graph(graph)


def test_floats_print_shortest_exact_and_always_as_floats():
    graph = Graph("g")
    graph.add_input("x", f32(2, 2))
    graph.add_const("c", f32(2, 3), (1.0, 1e-5, -2.5, math.inf, -math.inf, 0.1))
    graph.add_op("layernorm", ["x", "x", "x"], {"eps": 1e-3, "axis": 0}, name="n")
    graph.set_outputs(["n"])
    assert_prints_and_reads_back(graph, "const %c : f32[2, 3] = [1.0, 1e-05, -2.5, inf, -inf, 0.1]",
                                 "{axis = 0, eps = 0.001}")


def test_nan_prints_as_nan():
    graph = Graph("g")
    graph.add_const("c", f32(), math.nan)
    graph.set_outputs(["c"])
    assert "const %c : f32[] = nan" in print_graph(graph)


def test_int_bool_and_dtype_values():
    graph = Graph("g")
    graph.add_const("i", TensorType(DType.i8, (3,)), (-128, 0, 127))
    graph.add_const("b", TensorType(DType.bool, ()), True)
    graph.add_op("cast", ["i"], {"to": DType.f16}, name="c")
    graph.set_outputs(["c", "b"])
    text = print_graph(graph)
    assert "const %i : i8[3] = [-128, 0, 127]" in text
    assert "const %b : bool[] = true" in text
    assert "%c = cast(%i) {to = f16} : f16[3]" in text
    assert "output %c, %b" in text


def test_strings_are_escaped_and_read_back():
    graph = Graph("g")
    graph.add_input("x", f32(1))
    graph.add_op("relu", ["x"], {"test_note": 'say "hi"\\there\nnext'}, name="y")
    graph.set_outputs(["y"])
    assert_prints_and_reads_back(graph, r'{test_note = "say \"hi\"\\there\nnext"}')


def test_dims_print_in_canonical_form():
    graph = Graph("g", {"B": None, "L": None})
    graph.add_input("x", f32("L*2*B", "(L+1)//2", "B - 1 + 1"))
    graph.add_op("reshape", ["x"], {"shape": [parse_dim("B*L"), -1]}, name="r")
    graph.set_outputs(["r"])
    assert_prints_and_reads_back(graph, "input %x : f32[2*B*L, (L + 1)//2, B]", "{shape = [B*L, -1]}")


def test_the_schedule_not_insertion_order_decides_the_line_order():
    graph = Graph("g")
    graph.add_input("x", f32(2))
    graph.add_op("relu", ["x"], name="y")
    graph.add_param("w", f32(2), before="y")
    graph.set_outputs(["y"])
    assert [line.split()[1] for line in print_graph(graph).splitlines()[1:3]] == ["%x", "%w"]


def test_a_module_prints_its_graphs_in_order_separated_by_a_blank_line():
    first, second = mlp(), Graph("tail")
    second.add_input("x", TensorType(DType.i32, (3,)))
    second.set_outputs(["x"])
    text = print_module(Module([first, second]))
    assert text == print_graph(first) + "\n" + print_graph(second)
    assert list(parse(text).graphs) == ["mlp", "tail"]


def test_printing_is_a_fixed_point_of_parsing():
    text = print_graph(mlp())
    assert print_graph(parse(text).main) == text
    assert parse(text).main.equals(mlp())
