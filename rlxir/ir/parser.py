"""Parse `.rlx` text into a `Module` of `Graph`s.

Lark's LALR parser runs with the grammar in ``grammar/rlx.lark`` and ``strict=True``; the
transformer (`rlxir.ir.statements`) is applied inside the parser, so each statement is
added to its graph (through `rlxir.ir.graph_builder`) the moment it is reduced and no
parse tree is ever built. Every error is an `RlxError` located
at the offending token (or the exact character inside a coarse TYPE/ARGS token).
Nothing here evaluates input as code.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
from importlib import resources
from pathlib import Path

import lark
from lark import Lark, Token
from lark.exceptions import UnexpectedInput

from rlxir.errors import ParseError, RlxError, SourceText
from rlxir.gcpause import no_collections
from rlxir.ir.graph import Module
from rlxir.ir.graph_builder import GraphBuilder
from rlxir.ir.statements import StatementTransformer
from rlxir.ir.syntax_errors import decode_source, end_of, syntax_error

_LOCK = threading.RLock()
_PARSER: Lark | None = None
_GAP = r"[ \t\r\n]*(?:#[^\n]*\n[ \t\r\n]*)*"
_CALLBACKS = StatementTransformer()


def grammar_text() -> str:
    return resources.files("rlxir.grammar").joinpath("rlx.lark").read_text(encoding="utf-8")


def _lark() -> Lark:
    global _PARSER
    if _PARSER is None:
        grammar = grammar_text()
        parser = Lark(grammar, parser="lalr", strict=True, start=["start", "attr_block"],
                      transformer=_CALLBACKS, maybe_placeholders=True, cache=_grammar_cache_path(grammar))
        _CALLBACKS.parts = _parts_pattern(parser)
        _CALLBACKS.run_parts = _run_parts_pattern(grammar)
        _PARSER = parser
    return _PARSER


def _grammar_cache_path(grammar: str | None = None) -> str | bool:
    """Where Lark keeps the analysed grammar between processes (building the LALR tables
    takes about 0.2 s, loading them a few ms): the user's own cache directory, never a
    shared temporary one, since Lark's cache is a pickle. Lark keys the file on the
    grammar's hash and rebuilds it when stale or unreadable; False when there is no
    writable place for it. The file name holds the grammar's hash."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "rlxir")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    # The grammar's own hash in the name: two versions of rlxir on one machine (two virtual
    # environments, an upgrade) keep a file each instead of rebuilding one in turn.
    digest = hashlib.sha256((grammar or grammar_text()).encode("utf-8")).hexdigest()[:16]
    return os.path.join(folder, f"grammar-{digest}-lark{lark.__version__}-py{sys.version_info[0]}"
                                f"{sys.version_info[1]}.cache")


def _parts_pattern(parser: Lark) -> re.Pattern:
    """The STMT terminal with a named group per part, built from the grammar's own
    terminals so that it splits exactly what the lexer matched."""
    def regexp(name: str) -> str:
        return parser.get_terminal(name).pattern.to_regexp()

    gap = _GAP  # the grammar's GAP, which Lark keeps only inside STMT
    return re.compile(f"(?P<DEF>{regexp('DEF')}){gap}(?P<ARGS>{regexp('ARGS')})"
                      f"(?:{gap}(?P<ATTRS>{regexp('ATTRS')}))?(?:{gap}(?P<TYPE>{regexp('TYPE')}))?")


def _run_parts_pattern(grammar: str) -> re.Pattern:
    """One statement of a RUN token, then the gap after it, with a named group per part.

    Composed from the QUICK_ terminals as the grammar file writes them, in the order its
    QUICK_OP and QUICK_LEAF compose them (Lark keeps only the terminals its rules name, and
    RUN names these only inside itself), so that it splits a run exactly where the lexer's
    RUN matched: a run is a sequence of these statements."""
    terminals = dict(re.findall(r"^(QUICK_[A-Z]+|SPACE|GAP): /(.*)/$", grammar, re.MULTILINE))
    space, name, type_, attrs = (terminals[key] for key in ("SPACE", "QUICK_NAME", "QUICK_TYPE", "QUICK_ATTRS"))
    op = (f"(?P<DEF>%(?P<NAME>{name}){space}={space}(?P<OP>{terminals['QUICK_OPNAME']}))"
          f"{space}(?P<ARGS>{terminals['QUICK_ARGS']})(?:{space}(?P<ATTRS>{attrs}))?(?:{space}(?P<TYPE>{type_}))?")
    leaf = (f"(?P<KEY>{terminals['QUICK_KEY']}){space}(?P<VALUE>%(?P<LEAF_NAME>{name})){space}"
            f"(?P<LEAF_TYPE>{type_})(?:{space}(?P<LEAF_ATTRS>{attrs}))?")
    return re.compile(f"(?:{op}|{leaf}){terminals['GAP']}")


def _parse_with(builder: GraphBuilder, text: str, start: str):
    """Run the LALR parser on `text` from rule `start`, with `builder` receiving callbacks."""
    with _LOCK:
        previous = _CALLBACKS.builder
        _CALLBACKS.builder = builder
        try:
            return _lark().parse(text, start=start)
        except UnexpectedInput as error:
            _read_pending_run(error)
            raise
        finally:
            _CALLBACKS.builder = previous


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse rlx text into a `Module`; raises a located `RlxError` on any bad input."""
    source = SourceText(filename, text)
    try:
        with no_collections():  # a parse makes no garbage cycles; collecting costs 8-10 % of it
            module = _parse_with(GraphBuilder(source, _parse_with), text, "start")
    except UnexpectedInput as error:
        raise syntax_error(_first_statement_of_run(error), source) from None
    if not module.graphs:
        raise ParseError("no graph in this file", end_of(source), "graph NAME(SYMBOLS) { ... }")
    return module


def _read_pending_run(error: UnexpectedInput) -> None:
    """Read the RUN token the parser had shifted when the text after it failed to lex or
    parse. The grammar reduces it only on seeing the next token, so none of its statements
    were read; lexed one by one, all but the last would have been (the last, a STMT token,
    waits for the next token as the run does), and an error among them comes earlier in the
    text than the one that stopped the parse: it is the one reported."""
    interactive = getattr(error, "interactive_parser", None)
    stack = interactive.parser_state.value_stack if interactive is not None else ()
    if stack and isinstance(stack[-1], Token) and stack[-1].type == "RUN":
        run = stack[-1]
        _CALLBACKS.read_run(run, but_the_last=True)
        last = list(_CALLBACKS.run_parts.finditer(str(run)))[-1]
        if last.start("KEY") >= 0 and last.start("LEAF_ATTRS") < 0:
            # Lexed on its own, an input or param statement the run ends with, without its
            # optional attribute block, still waits for one: the message names it as expected.
            for choices in ("expected", "accepts", "allowed"):
                if isinstance(getattr(error, choices, None), set):
                    getattr(error, choices).add("ATTRS")


def _first_statement_of_run(error: UnexpectedInput) -> UnexpectedInput:
    """A RUN token the grammar did not want stands for its first statement in the message:
    the keyword of an input or param statement, else the op statement (as a STMT token)."""
    token = getattr(error, "token", None)
    if token is None or token.type != "RUN":
        return error
    found = _CALLBACKS.run_parts.match(str(token))
    if found.start("KEY") >= 0:
        error.token = Token.new_borrow_pos(found.group("KEY").upper(), found.group("KEY"), token)
    else:
        end = max(found.end(part) for part in ("ARGS", "ATTRS", "TYPE"))
        error.token = Token.new_borrow_pos("STMT", str(token)[:end], token)
    return error


def parse_file(path: str | Path) -> Module:
    """Parse a `.rlx` file. An unreadable file is an `RlxError`, not an OSError."""
    if str(path) == "-":  # standard input, as in `rlxir check - < model.rlx`
        if sys.stdin is None:
            raise RlxError("cannot read standard input: it is closed", expected="rlxir COMMAND - < model.rlx")
        return parse(decode_source(sys.stdin.buffer.read(), "<stdin>"), "<stdin>")
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise RlxError(f"cannot read {path}: {error.strerror or error}") from None
    return parse(decode_source(data, str(path)), str(path))


