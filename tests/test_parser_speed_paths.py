"""The parser's fast paths (one token per well-formed op statement, the cached grammar)
give the same graphs and the same error locations as the part-by-part route."""

from __future__ import annotations

import pytest

import rlxir.ir.parser as parser_module
from rlxir import IRTypeError, ParseError, VerifyError, parse, print_graph

SPREAD = """\
graph g(B) {
  input %x : f32[B, 4]
  %y = # the head
    slice(
          # the operand list, over lines
          %x)
    {axis = 1, # attributes
     start = 0, len = 2}
    : f32[B,
          3]
  output %y
}
"""

VALID = SPREAD.replace("3]", "2]")


def test_a_statement_spread_over_lines_reports_the_differing_dim_where_it_stands():
    with pytest.raises(IRTypeError) as caught:
        parse(SPREAD)
    assert (caught.value.line, caught.value.col) == (10, 11)
    assert "differs from the inferred f32[B, 2]" in caught.value.message


def test_an_undefined_operand_on_a_later_line_of_a_statement_is_located_there():
    text = VALID.replace("          %x)", "          %nope)")
    with pytest.raises(VerifyError) as caught:
        parse(text)
    assert (caught.value.line, caught.value.col) == (6, 11)


def test_an_attribute_error_inside_a_one_token_statement_points_into_the_block():
    with pytest.raises(ParseError) as caught:
        parse("graph g {\n  input %x : f32[4]\n  %y = softmax(%x) {axis = 1, axis = 0} : f32[4]\n  output %y\n}\n")
    assert (caught.value.line, caught.value.col) == (3, 31)


def test_a_malformed_block_after_a_good_head_is_explained_as_before():
    with pytest.raises(ParseError) as caught:
        parse("graph g {\n  input %x : f32[4]\n  %y = softmax(%x) {axis = 1 : f32[4]\n  output %y\n}\n")
    assert caught.value.line == 3 and "STMT" not in caught.value.render()


def test_a_valid_spread_statement_parses_to_its_one_node():
    graph = parse(VALID).main
    assert graph.op("y") == "slice" and graph.operands("y") == ("x",) and str(graph.type("y")) == "f32[B, 2]"


def test_statements_with_and_without_their_parts_round_trip():
    text = ("graph g(B) {\n  input %x : f32[B, 4]\n  %a = relu(%x)\n  %b = softmax(%a) {axis = 1}\n"
            "  %c = add(%a, %b) : f32[B, 4]\n  %d = slice(%c) {axis = 1, start = 1, len = 2} : f32[B, 2]\n"
            "  output %d\n}\n")
    graph = parse(text).main
    assert [graph.op(name) for name in graph.ops()] == ["relu", "softmax", "add", "slice"]
    assert print_graph(parse(print_graph(graph)).main) == print_graph(graph)


@pytest.fixture
def fresh_grammar(monkeypatch, tmp_path):
    """The grammar loaded again, with its cache under `tmp_path`."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(parser_module, "_PARSER", None)
    yield tmp_path / "rlxir"
    monkeypatch.setattr(parser_module, "_PARSER", None)


def test_a_corrupt_grammar_cache_is_rebuilt(fresh_grammar):
    cache = fresh_grammar / parser_module._grammar_cache_path().rsplit("/", 1)[1]
    cache.write_bytes(b"not a pickle\n")
    assert parse(VALID).main.type("y").shape[1] == 2
    assert cache.read_bytes() != b"not a pickle\n"


def test_no_place_for_the_cache_still_parses(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(parser_module, "_PARSER", None)
    try:
        assert parser_module._grammar_cache_path() is False
        assert len(parse(VALID).main) == 2
    finally:
        monkeypatch.setattr(parser_module, "_PARSER", None)


def test_a_parse_leaves_the_collector_as_it_found_it():
    import gc

    assert gc.isenabled()
    parse(VALID)
    assert gc.isenabled()
    gc.disable()
    try:
        parse(VALID)
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
    with pytest.raises(IRTypeError):
        parse(SPREAD)
    assert gc.isenabled()  # also after a failed parse
