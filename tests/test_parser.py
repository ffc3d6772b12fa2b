"""The parser accepts what IR.md specifies and builds the graph it describes.

Malformed input is tests/malformed/ (test_malformed.py); random input is
tests/properties/test_robustness.py.
"""

from __future__ import annotations

import math

import pytest

from rlxir import (AttrSpec, DType, Expr, ParseError, RlxError, TensorType, parse, parse_file, print_graph,
                   register_annotation)
from rlxir.symbolic import parse_dim

register_annotation("test_note", AttrSpec("str", None, doc="free text, for tests"))


def dim(text: str):
    return parse_dim(text)


def only_graph(text: str):
    module = parse(text)
    assert len(module) == 1
    return module.main


# --- files and graphs -------------------------------------------------------------------
def test_a_file_holds_several_graphs_in_order_and_the_first_is_main():
    module = parse("""\
graph first { input %x : f32[2]  output %x }
graph second(N) {
  input %x : f32[N]
  %y = relu(%x)
  output %y
}
""")
    assert list(module.graphs) == ["first", "second"]
    assert module.main.name == "first"
    assert module["second"].symbols == {"N": None}
    assert module["second"].type("x") == TensorType(DType.f32, (Expr.symbol("N"),))
    with pytest.raises(RlxError, match="no graph named 'third'"):
        module["third"]


def test_value_names_are_per_graph():
    module = parse("graph a { input %x : f32[1] output %x }\ngraph b { input %x : i32[2] output %x }")
    assert module["a"].type("x").dtype is DType.f32 and module["b"].type("x").dtype is DType.i32


def test_a_header_may_omit_parentheses_or_leave_them_empty():
    assert parse("graph g { input %x : f32[] output %x }").main.symbols == {}
    assert parse("graph g() { input %x : f32[] output %x }").main.symbols == {}


def test_symbols_with_defaults():
    graph = only_graph("graph g(B, S=1, L=128) { input %x : f32[B, S, L] output %x }")
    assert graph.symbols == {"B": None, "S": 1, "L": 128}
    assert graph.bound_symbols() == {"S": 1, "L": 128}
    assert print_graph(graph).startswith("graph g(B, S=1, L=128) {")


def test_comments_go_anywhere_whitespace_does():
    graph = only_graph("""\
# leading comment
graph g(B, # the batch
        S=1) { # body
  input %x : # a type follows
    f32[B, # rows
        4] # columns
  %y # the result
    = # the op follows
    add(%x, # a comment may hold %z, ) or = signs
        %x
       ) { # an attribute block: { and " in a comment are fine
       } : f32[B, 4]
  %s = softmax(%y) {axis = 0 # % } {
  }
  output %y, # first
         %s
} # after the graph
""")
    assert graph.operands("y") == ("x", "x")
    assert graph.attrs("s") == {"axis": 0}
    assert graph.outputs == ["y", "s"]


def test_statement_order_is_the_schedule_and_leaves_may_come_late():
    graph = only_graph("""\
graph g {
  input %a : f32[2]
  %b = relu(%a)
  param %w : f32[2]
  %c = add(%b, %w)
  output %c
}""")
    assert graph.schedule() == ["a", "b", "w", "c"]
    assert graph.kind("w") == "param"


def test_value_names_may_be_digits_dots_and_underscores():
    graph = only_graph("graph g { input %0 : f32[1]\n %h.1 = neg(%0)\n %_t = abs(%h.1)\n output %_t }")
    assert graph.schedule() == ["0", "h.1", "_t"]


def test_the_result_type_is_optional_and_inferred():
    graph = only_graph("graph g(B) { input %x : f32[B, 3]\n param %w : f32[3, 5]\n %y = matmul(%x, %w)\n output %y }")
    assert graph.type("y") == TensorType(DType.f32, (Expr.symbol("B"), 5))


def test_parse_file_names_the_file_in_errors(tmp_path):
    path = tmp_path / "bad.rlx"
    path.write_text("graph g {\n  input %x : f32[2]\n  output %q\n}\n")
    with pytest.raises(RlxError) as caught:
        parse_file(path)
    assert caught.value.file == str(path)
    assert caught.value.render().startswith(f"{path}:3:10: verify error: use of undefined value %q")


def test_unreadable_files_are_rlx_errors(tmp_path):
    with pytest.raises(RlxError, match="cannot read"):
        parse_file(tmp_path / "missing.rlx")
    binary = tmp_path / "binary.rlx"
    binary.write_bytes(b"graph g {\xff\xfe}")
    with pytest.raises(RlxError, match=r"binary.rlx:1:10: syntax error: byte 0xff is not UTF-8"):
        parse_file(binary)


# --- types and dims ---------------------------------------------------------------------
def test_scalar_types_and_every_dtype():
    text = "graph g {\n" + "".join(f"  input %{d.value} : {d.value}[]\n" for d in DType) + "  output %f32\n}"
    graph = only_graph(text)
    assert [graph.type(name).dtype for name in graph] == list(DType)
    assert all(graph.type(name).shape == () for name in graph)


def test_dims_are_expressions_in_canonical_form():
    graph = only_graph("graph g(B, L) { input %x : f32[2*L*B, (L+1)//2, B - 1 + 1] output %x }")
    assert graph.type("x").shape == (dim("B*L*2"), dim("(L + 1)//2"), Expr.symbol("B"))


# --- literals ---------------------------------------------------------------------------
@pytest.mark.parametrize("literal, value", [
    ("1e-5", 1e-5), ("0.5", 0.5), (".5", 0.5), ("2.", 2.0), ("-2.5e3", -2500.0), ("3", 3.0), ("-4", -4.0),
    ("inf", math.inf), ("-inf", -math.inf),
])
def test_float_literals_in_consts_and_attributes(literal, value):
    graph = only_graph(f"graph g {{ const %c : f32[] = {literal}\n"
                       f" %y = attention(%c, %c, %c) {{scale = {literal}}}\n output %y }}".replace("f32[]", "f32[1, 1]"))
    assert graph.attrs("c")["value"] == value
    assert graph.attr("y", "scale") == value


def test_nan_in_consts_and_attributes():
    graph = only_graph("graph g { input %x : f32[2, 2]\n const %c : f32[2] = [nan, -nan]\n"
                       " %y = layernorm(%x, %c, %c) {eps = nan}\n output %y }")
    assert all(math.isnan(item) for item in graph.attrs("c")["value"])
    assert math.isnan(graph.attr("y", "eps"))


def test_negative_float_attributes_read_back():
    graph = only_graph("graph g { input %x : f32[2, 2]\n %y = attention(%x, %x, %x) {scale = -0.25}\n output %y }")
    assert graph.attr("y", "scale") == -0.25
    assert "{scale = -0.25}" in print_graph(graph)


def test_const_lists_and_splats():
    graph = only_graph("""graph g {
  const %f : f32[2, 2] = [1, -2.5, 1e3, -inf]
  const %i : i8[3] = [-128, 0, 127]
  const %b : bool[2] = [true, false]
  const %s : u32[4] = 7
  output %f
}""")
    assert graph.attrs("f")["value"] == (1.0, -2.5, 1000.0, -math.inf)
    assert graph.attrs("i")["value"] == (-128, 0, 127)
    assert graph.attrs("b")["value"] == (True, False)
    assert graph.attrs("s")["value"] == 7


def test_strings_with_escapes():
    graph = only_graph(r'graph g { input %x : f32[1] %y = relu(%x) {test_note = "a \"quoted\" \\ path\nline 2"} output %y }')
    assert graph.attrs("y")["test_note"] == 'a "quoted" \\ path\nline 2'
    assert parse(print_graph(graph)).main.equals(graph)


def test_a_chain_is_a_string_parsed_as_steps():
    graph = only_graph('graph g { input %x : f32[4]\n param %b : f32[4]\n'
                       ' %y = fused_elementwise(%x, %b) {chain = "mul($0, $1); gelu(%0) {approximate = true}; add(%1, $1)"}\n'
                       ' output %y }')
    assert graph.type("y") == TensorType(DType.f32, (4,))


# --- attributes -------------------------------------------------------------------------
def test_attribute_lists_of_dims_take_symbols_expressions_and_minus_one():
    graph = only_graph("""graph g(B, S) {
  input %x : f32[B, S, 8]
  %r = reshape(%x) {shape = [B*S, 2, -1]}
  %e = expand(%r) {shape = [3, B*S, 2, 4]}
  output %e
}""")
    assert graph.attrs("r")["shape"] == (dim("B*S"), 2, -1)
    assert graph.type("r").shape == (dim("B*S"), 2, 4)
    assert graph.attrs("e")["shape"] == (3, dim("B*S"), 2, 4)


def test_attributes_equal_to_their_defaults_are_not_stored():
    graph = only_graph("graph g { input %x : f32[2, 3]\n %y = softmax(%x) {axis = -1}\n"
                       " %z = reduce_sum(%x) {axes = [1], keepdims = false}\n output %y }")
    assert graph.attrs("y") == {}
    assert graph.attrs("z") == {"axes": (1,)}


def test_dtype_attributes_and_ints_to_floats():
    graph = only_graph("graph g { input %x : f32[2, 2]\n %c = cast(%x) {to = bf16}\n"
                       " %n = layernorm(%x, %x, %x) {axis = 0, eps = 1}\n output %c }")
    assert graph.attrs("c")["to"] is DType.bf16
    assert graph.attrs("n")["eps"] == 1.0 and isinstance(graph.attrs("n")["eps"], float)


def test_a_repeated_attribute_block_is_checked_against_each_graph_symbols():
    block = "{shape = [B, -1]}"
    good = f"graph a(B) {{ input %x : f32[B, 4]\n %y = reshape(%x) {block}\n output %y }}\n"
    parse(good)
    with pytest.raises(ParseError, match="unknown symbol 'B'") as caught:
        parse(good + f"graph b {{ input %x : f32[2, 4]\n %y = reshape(%x) {block}\n output %y }}\n")
    assert (caught.value.line, caught.value.col) == (5, 29)


def test_errors_render_file_line_column_the_line_a_caret_and_what_was_expected():
    with pytest.raises(RlxError) as caught:
        parse("graph g(B) {\n\tinput %x : f32[B, T]\n  output %x\n}\n", "tabs.rlx")
    assert caught.value.render() == (
        "tabs.rlx:2:20: syntax error: unknown symbol 'T'\n"
        "  \tinput %x : f32[B, T]\n"
        "  \t" + " " * 18 + "^\n"
        "  expected: a declared symbol (B) or an integer"
    )
