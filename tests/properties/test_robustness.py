"""Bad input never escapes as anything but a located `RlxError`; printing never depends on
hash order; the parser never evaluates its input.

Mutants are made from the files under examples/, a few texts below, and printed random
graphs: tokens deleted, duplicated, swapped or replaced, the text truncated, characters
inserted. A mutant either parses to graphs that verify and round-trip, or fails with an
`RlxError` located inside the text.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import rlxir.errors
import rlxir.ops.chain
import rlxir.ir.graph_builder
import rlxir.ir.parser
import rlxir.ir.statements
import rlxir.ir.printer
import rlxir.symbolic
import rlxir.ir.syntax_errors
from rlxir import AttrSpec, RlxError, parse, print_graph, print_module, register_annotation, verify
from rlxir.testing.strategies import graphs

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.rlx"))

OWN_TEXTS = (
    """\
# A two-layer MLP. B is the batch.
graph mlp(B, S=1) {
  input %x  : f32[B, 784]
  param %w1 : f32[784, 512]
  param %b1 : f32[512]
  param %w2 : f32[512, 10]
  const %half : f32[] = 0.5
  %h = linear(%x, %w1, %b1)        : f32[B, 512]
  %a = gelu(%h) {approximate = true} : f32[B, 512]
  %s = mul(%a, %half)              : f32[B, 512]
  %y = matmul(%s, %w2)             : f32[B, 10]
  %p = softmax(%y) {axis = -1}     : f32[B, 10]
  output %p
}
""",
    """\
graph heads(B, S, L=4) {   # symbols with and without defaults
  input %x : f32[B, S, 2*L]
  param %g : f32[2*L]
  const %idx : i32[3] = [0, -1, 2]
  const %neg : f32[] = -inf
  %n = layernorm(%x, %g, %g) {eps = 1e-5} : f32[B, S, 2*L]
  %r = reshape(%n) {shape = [B*S, L, -1]} : f32[B*S, L, 2]
  %t = transpose(%r) {perm = [1, 0, 2]}
  %h = slice(%t) {axis = 2, start = 0, len = 1} : f32[L, B*S, 1]
  %e = expand(%h) {shape = [3, L, B*S, (L + 1)//2]}
  %f = fused_elementwise(%e, %neg) {chain = "add($0, $1); gelu(%0) {approximate = true}"}
  %c = concat(%f, %f) {axis = -1}
  output %c, %t
}

graph tail {
  input %a : bool[2, 2]
  input %b : i64[2, 2]
  %w = where(%a, %b, %b) : i64[2, 2]
  %s = reduce_sum(%w) {axes = [0, 1], keepdims = true} : i64[1, 1]
  output %s
}
""",
)

# Tokens as a user sees them: values, names, numbers, strings, comments, space, the rest.
_TOKEN = re.compile(r'%[\w.]+|\$\d+|[A-Za-z_][\w.]*|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|"(?:\\.|[^"\\\n])*"|//'
                    r"|#[^\n]*|\s+|.", re.S)
_REPLACEMENTS = ("{", "}", "(", ")", "[", "]", ",", ":", "=", "%", "%x", "-", "//", "*", "output", "input", "graph",
                 "const", "f32", "f33", '"', "#", "\\", ";", "$0", "1e999", "-1", "99999999999999999999999", "nan",
                 "true", "\n", "\t", "\x0c", "é", "\u2028")
_CHARACTERS = st.sampled_from("{}[]()%:=,;\"\\#-+*/$@.\n\t 0aZ_é\x00") | st.characters()


def _sources():
    texts = [path.read_text(encoding="utf-8") for path in EXAMPLES] + list(OWN_TEXTS)
    return st.sampled_from(texts) | graphs(max_ops=6, symbols=("B",)).map(print_graph)


@st.composite
def mutants(draw) -> str:
    tokens = _TOKEN.findall(draw(_sources()))
    for _ in range(draw(st.integers(1, 3))):
        solid = [index for index, token in enumerate(tokens) if not token.isspace()] or [0]
        move = draw(st.sampled_from(("delete", "duplicate", "swap", "replace", "truncate", "insert")))
        at = draw(st.sampled_from(solid))
        if move == "delete" and tokens:
            del tokens[at]
        elif move == "duplicate" and tokens:
            tokens.insert(at, tokens[at])
        elif move == "swap" and tokens:
            other = draw(st.sampled_from(solid))
            tokens[at], tokens[other] = tokens[other], tokens[at]
        elif move == "replace" and tokens:
            tokens[at] = draw(st.sampled_from(_REPLACEMENTS))
        else:
            text = "".join(tokens)
            cut = draw(st.integers(0, len(text)))
            insertion = "" if move == "truncate" else draw(st.text(_CHARACTERS, min_size=1, max_size=3))
            tokens = _TOKEN.findall(text[:cut] + insertion + ("" if move == "truncate" else text[cut:]))
    return "".join(tokens)


def _check_mutant(text: str) -> None:
    try:
        module = parse(text, "mutant.rlx")
    except RlxError as error:
        lines = text.split("\n")
        assert error.loc is not None and error.file == "mutant.rlx", error
        assert 1 <= error.line <= len(lines), error.render()
        assert 1 <= error.col <= len(lines[error.line - 1]) + 1, error.render()
        assert error.render().startswith(f"mutant.rlx:{error.line}:{error.col}: ")
        return
    for graph in module:
        verify(graph)
    printed = print_module(module)
    assert print_module(parse(printed)) == printed


@settings(max_examples=400, deadline=None)
@given(mutants())
def test_a_mutated_file_parses_or_fails_with_a_located_error(text):
    _check_mutant(text)


@settings(max_examples=150, deadline=None)
@given(st.text(_CHARACTERS, max_size=60))
def test_arbitrary_text_parses_or_fails_with_a_located_error(text):
    _check_mutant(text)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(OWN_TEXTS), st.data())
def test_every_prefix_fails_with_a_located_error(text, data):
    cut = data.draw(st.integers(0, len(text) - 2))
    _check_mutant(text[:cut])


# --- determinism ------------------------------------------------------------------------
_PRINT_IN_A_FRESH_PROCESS = """\
import json, sys
import rlxir
texts = json.load(open(sys.argv[1], encoding="utf-8"))
out = []
for text in texts:
    module = rlxir.parse(text)
    bound = [rlxir.print_graph(graph.bind({symbol: 3 for symbol in graph.symbols})) for graph in module]
    out.append([rlxir.print_module(module), bound])
sys.stdout.write(json.dumps(out))
"""


def test_printing_does_not_depend_on_the_hash_seed(tmp_path):
    texts = [path.read_text(encoding="utf-8") for path in EXAMPLES] + list(OWN_TEXTS)

    @settings(max_examples=25, deadline=None, database=None)
    @given(graphs(max_ops=12, symbols=("B", "S", "L")))
    def collect(graph):
        texts.append(print_graph(graph))

    collect()
    corpus = tmp_path / "texts.json"
    corpus.write_text(json.dumps(texts), encoding="utf-8")
    script = tmp_path / "print_all.py"
    script.write_text(_PRINT_IN_A_FRESH_PROCESS, encoding="utf-8")
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, str(script), str(corpus)], capture_output=True, env=env, check=True)
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    printed_here = [print_module(parse(text)) for text in texts]
    assert [printed for printed, _ in json.loads(outputs[0])] == printed_here


# --- nothing is evaluated ---------------------------------------------------------------
_EVALUATING_CALLS = {"eval", "exec", "compile", "__import__", "breakpoint", "input"}
_EVALUATING_METHODS = {"literal_eval", "loads", "load", "import_module", "system", "popen", "run", "Popen"}


def test_the_parser_has_no_call_that_could_evaluate_input():
    for module in (rlxir.ir.parser, rlxir.ir.statements, rlxir.ir.graph_builder, rlxir.ir.syntax_errors, rlxir.symbolic, rlxir.errors, rlxir.ir.printer, rlxir.ops.chain):
        calls = [node.func for node in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(node, ast.Call)]
        names = {call.id for call in calls if isinstance(call, ast.Name)}
        methods = {call.attr for call in calls if isinstance(call, ast.Attribute)}
        assert not names & _EVALUATING_CALLS, module.__name__
        assert not methods & _EVALUATING_METHODS, module.__name__


def test_code_in_strings_and_names_stays_text(tmp_path):
    register_annotation("test_note", AttrSpec("str", None, doc="free text, for tests"))
    marker = tmp_path / "evaluated"
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    escaped = payload.replace("\\", "\\\\").replace('"', '\\"')
    text = f'graph __import__ {{\n  input %x : f32[2]\n  %y = relu(%x) {{test_note = "{escaped}"}}\n  output %y\n}}\n'
    graph = parse(text).main
    assert graph.attrs("y")["test_note"] == payload
    assert graph.name == "__import__"
    assert not marker.exists()
