"""A RUN token (a body of plainly written statements lexed as one token and read from its
strings) must give exactly what the same text gives when every statement is lexed on its
own: the same graphs, the same locations on every value, the same error at the same place."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from lark import Lark

import rlxir.ir.parser as parser_module
from rlxir import RlxError, parse, print_module
from rlxir.testing.fuzz import mutated_rlx
from rlxir.testing.strategies import modules

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.rlx"))
TEXTS = [path.read_text() for path in EXAMPLES if path.stat().st_size < 200_000]

sys.path.insert(0, str(ROOT / "bench"))

from generators import GENERATORS  # noqa: E402  (bench/generators.py: comments between statements, no types, ...)

GENERATED = [make(80, seed) for make in GENERATORS.values() for seed in (0, 1)]


def _grammar_without_runs() -> str:
    text = parser_module.grammar_text()
    lines = [line for line in text.split("\n") if not line.startswith(("statement_run:", "RUN."))]
    text = "\n".join(lines).replace(" | statement_run", "")
    rules = [line for line in text.split("\n") if not line.startswith("//")]
    assert not any("statement_run" in line or "RUN" in line for line in rules)
    return text


@pytest.fixture(scope="module")
def statement_by_statement():
    """A parser of the same grammar less its RUN token, with the same callbacks."""
    parser_module._lark()  # the callbacks' part patterns are set up by the real parser
    return Lark(_grammar_without_runs(), parser="lalr", strict=True, start=["start", "attr_block"],
                transformer=parser_module._CALLBACKS, maybe_placeholders=True)


def _outcome(text: str):
    """What a parse gives: the printed module and every value's location, or the error."""
    try:
        module = parse(text, "m.rlx")
    except RlxError as error:
        return ("error", type(error).__name__, error.message, error.line, error.col, error.expected)
    locations = [(graph.name, name, (data.loc.line, data.loc.col) if data.loc else None)
                 for graph in module.graphs.values() for name, data in graph.data_by_name().items()]
    return ("ok", print_module(module), locations)


def _both(text: str, other: Lark) -> tuple:
    with_runs = _outcome(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(parser_module, "_PARSER", other)
        without = _outcome(text)
    return with_runs, without


def test_run_is_the_possessive_composition_of_the_quick_terminals():
    grammar = parser_module.grammar_text()
    terminals = dict(re.findall(r"^(QUICK_[A-Z]+|SPACE|GAP|NOT_A_PART): /(.*)/$", grammar, re.MULTILINE))
    space = terminals["SPACE"]
    op = (f"%{terminals['QUICK_NAME']}{space}={space}{terminals['QUICK_OPNAME']}{space}{terminals['QUICK_ARGS']}"
          f"(?:{space}{terminals['QUICK_ATTRS']})?(?:{space}{terminals['QUICK_TYPE']})?")
    leaf = (f"{terminals['QUICK_KEY']}{space}%{terminals['QUICK_NAME']}{space}{terminals['QUICK_TYPE']}"
            f"(?:{space}{terminals['QUICK_ATTRS']})?")
    written = re.search(r"^RUN\.3: /(.*)/$", grammar, re.MULTILINE).group(1)
    assert written == f"(?:(?:{op}|{leaf}){terminals['NOT_A_PART']}{terminals['GAP']})++"
    # ... and QUICK_OP / QUICK_LEAF, which document it, compose the same parts in that order
    assert '"%" QUICK_NAME SPACE "=" SPACE QUICK_OPNAME SPACE QUICK_ARGS (SPACE QUICK_ATTRS)? (SPACE QUICK_TYPE)?' in grammar
    assert "QUICK_KEY SPACE \"%\" QUICK_NAME SPACE QUICK_TYPE (SPACE QUICK_ATTRS)?" in grammar


def test_the_grammar_without_runs_still_reads_every_example(statement_by_statement):
    for text in TEXTS + GENERATED:
        with_runs, without = _both(text, statement_by_statement)
        assert with_runs == without
        assert with_runs[0] == "ok"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(module=modules(max_graphs=2))
def test_printed_graphs_read_the_same_either_way(module, statement_by_statement):
    text = print_module(module)
    with_runs, without = _both(text, statement_by_statement)
    assert with_runs == without


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_rlx(TEXTS + GENERATED))
def test_broken_texts_fail_the_same_way_either_way(text, statement_by_statement):
    with_runs, without = _both(text, statement_by_statement)
    assert with_runs == without


SPACING = """\
graph g(B) {
  input   %x :f32[B, 4]
  param %w: f32[4,4]
  param %b
     : f32[4]
  %h =linear( %x ,%w,
     %b )   # a comment between statements
  %y = softmax(%h) {axis = 1}:f32[B, 4]
  %z = slice(%y) {axis = 1, start = 0, len = 2}
  output %z
}
"""


def test_odd_spacing_and_line_breaks_inside_run_statements_keep_their_locations(statement_by_statement):
    with_runs, without = _both(SPACING, statement_by_statement)
    assert with_runs == without and with_runs[0] == "ok"
    locations = {name: where for _, name, where in with_runs[2]}
    assert locations == {"x": (2, 11), "w": (3, 9), "b": (4, 9), "h": (6, 3), "y": (8, 3), "z": (9, 3)}


@pytest.mark.parametrize("edit, where", [
    (("%w,\n", "%v,\n"), (6, 19)),                  # an undefined operand, on the run's own line
    (("softmax(%h) {axis = 1}", "softmax(%h) {axis = 3}"), (8, 20)),  # an axis out of range: at the block
    (("{axis = 1}:f32[B, 4]", "{axis = 1}:f32[B, 5]"), (8, 38)),     # a result type that differs, at its dim
    (("param %b\n", "param %x\n"), (4, 9)),          # a name defined twice
])
def test_errors_inside_a_run_are_located_as_without_it(edit, where, statement_by_statement):
    text = SPACING.replace(*edit)
    with_runs, without = _both(text, statement_by_statement)
    assert with_runs == without
    assert with_runs[0] == "error" and with_runs[3:5] == where
