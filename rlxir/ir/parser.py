"""Parse `.rlx` text into a `Module` of `Graph`s.

Lark's LALR parser runs with the grammar in ``grammar/rlx.lark`` and ``strict=True``; the
transformer is applied inside the parser, so each statement is added to its graph the
moment it is reduced and no parse tree is ever built. Every error is an `RlxError` located
at the offending token (or the exact character inside a coarse TYPE/ARGS token).
Nothing here evaluates input as code.
"""

from __future__ import annotations

import math
import os
import re
import sys
import threading
from importlib import resources
from pathlib import Path

import lark
from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput

from rlxir.dtypes import DType
from rlxir.errors import IRTypeError, Location, ParseError, RlxError, SourceText, VerifyError, close_names
from rlxir.ir.fills import FILL_ANNOTATIONS, annotate_fills
from rlxir.gcpause import fewer_collections
from rlxir.ir.graph import Graph, Module
from rlxir.ops import LEAF_KINDS, annotation_specs, get_op, registered_ops
from rlxir.ops.registry import ShapeError, format_attr_value
from rlxir.symbolic import DimSyntaxError, Expr, add, floordiv, free_symbols, mul, parse_dim, sub
from rlxir.ir.syntax_errors import decode_source, dtype_hint, end_of, loc_at as _loc_at, syntax_error
from rlxir.types import TensorType

_OPERAND = re.compile(r"%[A-Za-z0-9_.]+")
_COMMENT = re.compile(r"#[^\n]*")
_TRAILING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_NOT_IN_DIMS = re.compile(r"[%:={}]")  # characters that cannot occur between a type's brackets
_MAX_DIM = 2**63 - 1
_MAX_INT_DIGITS = 1000  # far past any int64; keeps int() clear of Python's digit limit
def _blank_comments(text: str) -> str:
    """`text` with each comment replaced by as many spaces (offsets into it stay valid)."""
    return _COMMENT.sub(lambda match: " " * len(match.group()), text)


class _Name:
    """A bare name in an attribute; what it means (dtype, symbol) depends on the attribute."""

    __slots__ = ("text", "token")

    def __init__(self, token: Token):
        self.text = str(token)
        self.token = token


class _Builder:
    """Per-parse state: the module being built and the graph being filled."""

    def __init__(self, source: SourceText):
        self.source = source
        self.module = Module(filename=source.filename)
        self.graph: Graph | None = None
        self.types: dict[str, TensorType] = {}
        self.defined_at: dict[str, Location] = {}
        self.output_seen: Location | None = None

    # --- locations ----------------------------------------------------------------------
    def loc(self, token: Token) -> Location:
        return Location(self.source.filename, token.line, token.column, self.source)

    def loc_in(self, token: Token, offset: int) -> Location:
        """The location of character `offset` inside a (possibly multi-line) token."""
        text = str(token)[:offset]
        newlines = text.count("\n")
        if not newlines:
            return Location(self.source.filename, token.line, token.column + offset, self.source)
        return Location(self.source.filename, token.line + newlines, offset - text.rfind("\n"), self.source)

    # --- types --------------------------------------------------------------------------
    def tensor_type(self, token: Token) -> TensorType:
        text = str(token)
        cached = self.types.get(text)
        if cached is not None:
            return cached
        if "#" in text:
            text = _blank_comments(text)
        bracket = text.index("[")
        dtype = DType.parse(text[1:bracket].strip())
        inner = text[bracket + 1:-1]
        if "\n" in inner and _NOT_IN_DIMS.search(inner):
            # The TYPE token ran on to a ']' of a later statement: this '[' was never closed.
            raise ParseError("unclosed '[' in type", self.loc_in(token, bracket), "']' to close this '['")
        dims = []
        if inner.strip():
            offset = bracket + 1
            for piece in inner.split(","):
                dims.append(self._dim(piece, token, offset))
                offset += len(piece) + 1
        result = TensorType(dtype, tuple(dims))
        self.types[text] = result
        return result

    def type_loc(self, token: Token) -> Location:
        """The location of a TYPE token's dtype (the token itself starts at its ':')."""
        text = str(token)
        return self.loc_in(token, len(text) - len(text[1:].lstrip()))

    def type_difference(self, token: Token, written: TensorType, inferred: TensorType) -> Location:
        """Where the TYPE token `written` first departs from `inferred`: its dtype or a dim."""
        text = str(token)
        if written.dtype != inferred.dtype or written.rank != inferred.rank or not written.rank:
            return self.type_loc(token)
        offset = text.index("[") + 1
        for piece, mine, theirs in zip(text[offset:-1].split(","), written.shape, inferred.shape):
            if mine != theirs:
                return self.loc_in(token, offset + len(piece) - len(piece.lstrip()))
            offset += len(piece) + 1
        return self.type_loc(token)

    def _dim(self, text: str, token: Token, offset: int):
        symbols = self.graph.symbols

        def on_symbol(name: str, at: int):
            if name not in symbols:
                declared = ", ".join(symbols) or "none"
                raise DimSyntaxError(f"unknown symbol {name!r}", at, f"a declared symbol ({declared}) or an integer")
            return Expr.symbol(name)

        lead = len(text) - len(text.lstrip())
        if not text.strip():  # the caret goes under the ',' or ']' that ends the empty dim
            raise ParseError("empty dim in type", self.loc_in(token, offset + lead),
                             "an integer, a symbol or an expression")
        try:
            dim = parse_dim(text, on_symbol)
        except DimSyntaxError as error:
            raise ParseError(error.message, self.loc_in(token, offset + error.offset), error.expected) from None
        except (ValueError, RecursionError):  # an integer of thousands of digits, or parentheses as deep
            raise ParseError("dim is too large or too deeply nested", self.loc_in(token, offset + lead),
                             "an integer, a symbol or an expression") from None
        if isinstance(dim, int) and not 0 <= dim <= _MAX_DIM:
            problem = "is negative" if dim < 0 else "does not fit in 64 bits"
            raise ParseError(f"dim {dim} {problem}", self.loc_in(token, offset + lead), f"a dim in [0, {_MAX_DIM}]")
        return dim

    # --- values -------------------------------------------------------------------------
    def define(self, token: Token, name: str | None = None) -> str:
        """Record the definition of a value (SSA: once per graph); returns its name."""
        name = name or str(token)[1:]
        previous = self.defined_at.get(name)
        if previous is not None:
            raise VerifyError(f"%{name} is already defined (at line {previous.line})", self.loc(token),
                              "a fresh value name (SSA: each value is defined once)")
        if self.output_seen is not None:
            raise VerifyError("statement after the output statement", self.loc(token),
                              "output to be the last statement of the graph")
        self.defined_at[name] = Location(self.source.filename, token.line, token.column, self.source)
        return name

    def use(self, name: str, loc: Location) -> str:
        if name in self.defined_at:
            return name
        if self._defined_later(name, loc):
            raise VerifyError(f"%{name} is used before its definition", loc, "a value defined on an earlier line")
        known = close_names(name, self.defined_at, 1)
        hint = f" (did you mean %{known[0]}?)" if known else ""
        raise VerifyError(f"use of undefined value %{name}{hint}", loc, "a value defined earlier in this graph")

    def _defined_later(self, name: str, loc: Location) -> bool:
        """Whether the rest of this graph's text defines `name` (for a better message)."""
        lines = self.source.text.split("\n")
        rest = "\n".join([lines[loc.line - 1][loc.col:]] + lines[loc.line:])
        next_graph = re.search(r"^\s*graph\s", rest, re.MULTILINE)
        if next_graph is not None:
            rest = rest[: next_graph.start()]
        pattern = r"(?<![A-Za-z0-9_.])%" + re.escape(name) + r"(?![A-Za-z0-9_.])\s*[=:]"
        return re.search(pattern, rest) is not None

    # --- attributes ---------------------------------------------------------------------
    def attributes(self, op: str, token: Token) -> tuple[dict, dict]:
        """The attributes of one ATTRS token, resolved for `op`: (values, key locations)."""
        raw = _ATTR_CACHE.get(str(token))
        if raw is None:
            raw = self._read_attributes(token)
        values, keys = {}, {}
        for key, offset, value in raw:
            if key in values:
                raise ParseError(f"attribute {key} is given twice", self.loc_in(token, offset), "each attribute once")
            kind = _attr_kind(op, key)
            values[key] = self._resolve(value, kind, token)
            keys[key] = offset
            self._check_symbols(values[key], token, offset)
        return values, keys

    def fill_facts(self, kind: str, token: Token | None) -> dict:
        """The attributes of an input or param statement: only its fill facts."""
        if token is None:
            return {}
        values, keys = self.attributes(kind, token)
        for key, value in values.items():
            spec = FILL_ANNOTATIONS.get(key)
            where = self.loc_in(token, keys[key])
            if spec is None:
                raise ParseError(f"unknown attribute {key!r} for {kind} statements", where,
                                 f"one of: {', '.join(FILL_ANNOTATIONS)}")
            if spec.kind == "int" and not (isinstance(value, Expr) or (type(value) is int and value >= 1)):
                raise ParseError(f"{key} must be a positive integer, got {format_attr_value(value)}", where,
                                 "an integer of at least 1")
            if spec.kind == "str" and value not in spec.choices:
                raise ParseError(f"{key} must be one of {', '.join(map(repr, spec.choices))}, got "
                                 f"{format_attr_value(value)}", where, " or ".join(f'"{c}"' for c in spec.choices))
        return values

    def _read_attributes(self, token: Token) -> list:
        text = str(token)
        try:
            raw = _parse_with(_AttrReader(SourceText("<attributes>", text)), text, "attr_block")
        except UnexpectedInput as error:
            relative = syntax_error(error, SourceText("<attributes>", text))
            raise ParseError(relative.message, self.loc_in(token, _offset_of(text, relative.loc)), relative.expected) from None
        except RlxError as error:
            error.loc = self.loc_in(token, _offset_of(text, error.loc)) if error.loc else self.loc(token)
            raise
        entries = [(str(key), key.start_pos, value) for key, value in raw]
        if len(_ATTR_CACHE) > 100_000:
            _ATTR_CACHE.clear()
        _ATTR_CACHE[text] = entries
        return entries

    def _resolve(self, value, kind, token: Token):
        """Turn bare names into what the attribute's kind wants (a dtype, a symbol)."""
        if isinstance(value, _Name):
            if kind == "dtype" and DType.parse(value.text) is not None:
                return DType.parse(value.text)
            if kind in ("float", "floats") and value.text in ("inf", "nan"):
                return float(value.text)
            if kind in ("dims", "int") or value.text in self.graph.symbols:
                return Expr.symbol(value.text)
            where = self.loc_in(token, value.token.start_pos)
            if kind == "dtype":
                raise ParseError(f"unknown dtype {value.text!r}{dtype_hint(value.text)}", where, "a dtype name")
            raise ParseError(f"unexpected name {value.text!r}", where,
                             "a number, a string in quotes, true/false or a list")
        if isinstance(value, tuple):
            item_kind = {"ints": "int", "floats": "float", "strs": "str", "dims": "dims"}.get(kind)
            return tuple(self._resolve(item, item_kind, token) for item in value)
        return value

    def _check_symbols(self, value, token: Token, offset: int) -> None:
        """Every symbol an attribute mentions must be declared by the graph."""
        dims = value if isinstance(value, tuple) else (value,)
        for dim in dims:
            if not isinstance(dim, Expr):
                continue
            for name in sorted(free_symbols(dim) - set(self.graph.symbols)):
                match = re.search(r"(?<![A-Za-z0-9_.])" + re.escape(name) + r"(?![A-Za-z0-9_.])", str(token)[offset:])
                where = offset + match.start() if match else offset
                declared = ", ".join(self.graph.symbols) or "none"
                raise ParseError(f"unknown symbol {name!r}", self.loc_in(token, where),
                                 f"a declared symbol ({declared}) or an integer")

    def symbol(self, token: Token) -> Expr:
        name = str(token)
        if name not in self.graph.symbols:
            declared = ", ".join(self.graph.symbols) or "none"
            raise ParseError(f"unknown symbol {name!r}", self.loc(token), f"a declared symbol ({declared}) or an integer")
        return Expr.symbol(name)


class _AttrReader(_Builder):
    """Reads one attribute block on its own; symbols are checked later, per graph."""

    def symbol(self, token: Token) -> Expr:
        return Expr.symbol(str(token))


_ATTR_CACHE: dict[str, list] = {}


def _attr_kind(op: str, key: str) -> str | None:
    opdef = get_op(op)
    spec = opdef.attributes.get(key) if opdef else None
    if spec is None:
        spec = annotation_specs().get(key)
    return spec.kind if spec else None


def _offset_of(text: str, loc: Location) -> int:
    """The 0-based offset in `text` of a 1-based (line, col) position."""
    lines = text.split("\n")
    return sum(len(line) + 1 for line in lines[: loc.line - 1]) + loc.col - 1


class _Callbacks(Transformer):
    """Grammar callbacks; they forward to the `_Builder` of the parse under way."""

    def __init__(self):
        super().__init__(visit_tokens=False)
        self.builder: _Builder | None = None

    # --- graphs -------------------------------------------------------------------------
    def start(self, graphs):
        return self.builder.module

    def graph_header(self, children):
        builder = self.builder
        name_token = children[0]
        symbols: dict[str, int | None] = {}
        for item in (children[1] if len(children) > 1 else []):
            if item is None:
                continue
            token, default = item
            if str(token) in symbols:
                raise ParseError(f"symbol {token} is declared twice", builder.loc(token), "distinct symbol names")
            if DType.parse(str(token)) is not None:
                raise ParseError(f"{token} is a dtype name, not a symbol", builder.loc(token), "a symbol name")
            symbols[str(token)] = default
        graph = Graph(str(name_token), symbols)
        graph.loc = builder.loc(name_token)
        if graph.name in builder.module.graphs:
            raise VerifyError(f"graph {graph.name} is defined twice", graph.loc, "distinct graph names")
        builder.graph = graph
        builder.types = {}
        builder.defined_at = {}
        builder.output_seen = None
        return graph

    def symbols(self, children):
        return children

    def symbol(self, children):
        token = children[0]
        if len(children) < 2:
            return token, None
        default = _int(children[1], self.builder.loc(children[1]))
        if default > _MAX_DIM:
            raise ParseError(f"symbol default {default} does not fit in 64 bits", self.builder.loc(children[1]),
                             f"a default in [0, {_MAX_DIM}]")
        return token, default

    def graph(self, children):
        builder = self.builder
        graph = builder.graph
        if builder.output_seen is None:
            raise VerifyError(f"graph {graph.name} has no output statement", builder.loc(children[-1]),
                              "output %VALUE, ... as the last statement")
        annotate_fills(graph)  # what default fills need, known from the graph as written
        builder.module.add(graph)
        builder.graph = None
        return graph

    # --- statements ---------------------------------------------------------------------
    def input_stmt(self, children):
        self._interface_value(children, "input")

    def param_stmt(self, children):
        self._interface_value(children, "param")

    def _interface_value(self, children, kind: str) -> None:
        """``input``/``param %NAME : TYPE [fill facts]``: define the name, add the value."""
        builder = self.builder
        value, type_token, *facts = children
        name = builder.define(value)
        add = builder.graph.add_input if kind == "input" else builder.graph.add_param
        add(name, builder.tensor_type(type_token), builder.defined_at[name],
            builder.fill_facts(kind, facts[0] if facts else None))

    def const_stmt(self, children):
        builder = self.builder
        value, type_token, literal = children
        name = builder.define(value)
        type_ = builder.tensor_type(type_token)
        payload = _check_literal(literal, type_, builder, type_token)
        builder.graph.add_const(name, type_, payload, builder.defined_at[name])

    def op_stmt(self, children):
        builder = self.builder
        if children[0].type == "STMT":
            children = _statement_parts(children[0])
        head, args = children[0], children[1]
        attrs, result = None, None
        for extra in children[2:]:
            if extra is not None and extra.type == "ATTRS":
                attrs = extra
            elif extra is not None:
                result = extra
        text = str(head)
        if "#" in text:  # a comment inside the head may itself hold '='
            name = _OPERAND.match(text).group()[1:]
            op = _TRAILING_NAME.search(text).group()
        else:
            equals = text.index("=")
            name = text[:equals].rstrip()[1:]
            op = text[equals + 1:].lstrip()
        name = builder.define(head, name)
        if get_op(op) is None:
            raise _unknown_op(op, builder.loc_in(head, len(text) - len(op)))
        operands, offsets = [], []
        args_text = str(args)
        for match in _OPERAND.finditer(_blank_comments(args_text) if "#" in args_text else args_text):
            operand = match.group()[1:]
            if operand not in builder.defined_at:
                builder.use(operand, builder.loc_in(args, match.start()))
            operands.append(operand)
            offsets.append(match.start())
        attr_values, attr_keys = builder.attributes(op, attrs) if attrs is not None else ({}, {})
        type_ = builder.tensor_type(result) if result is not None else None
        try:
            builder.graph.add_op(op, operands, attr_values, name=name, loc=builder.defined_at[name])
        except ShapeError as error:
            # At the operand the rule blames; else at the attributes (a rule that blames no
            # operand is rejecting axes, bounds, a shape or a chain); else at the op.
            index = error.operand
            if index is not None and index < len(offsets):
                where = builder.loc_in(args, offsets[index])
            elif attrs is not None:
                where = builder.loc(attrs)
            else:
                where = builder.loc_in(head, len(text) - len(op))
            raise IRTypeError(error.message, where, error.expected) from None
        except IRTypeError as error:
            attribute = getattr(error, "attribute", None)
            if attribute in attr_keys:
                error.loc = builder.loc_in(attrs, attr_keys[attribute])
            elif " takes " in error.message:
                error.loc = builder.loc(args)
            else:
                error.loc = builder.loc_in(head, len(text) - len(op))
            raise error from None
        if type_ is not None:
            inferred = builder.graph.type(name)
            if inferred != type_:
                raise IRTypeError(f"result type {type_} differs from the inferred {inferred}",
                                  builder.type_difference(result, type_, inferred), str(inferred))

    def output_stmt(self, children):
        builder = self.builder
        keyword = children[0]
        if builder.output_seen is not None:
            raise VerifyError("second output statement", builder.loc(keyword),
                              f"one output statement per graph (the first is at line {builder.output_seen.line})")
        outputs = [builder.use(str(token)[1:], builder.loc(token)) for token in children[1:]]
        builder.graph.set_outputs(outputs)
        builder.graph.output_loc = builder.loc(keyword)
        builder.output_seen = builder.loc(keyword)

    # --- attributes ---------------------------------------------------------------------
    def attr_block(self, children):
        return [child for child in children if child is not None and not isinstance(child, Token)]

    def attr(self, children):
        key, value = children
        return key, _attr_value(value)

    def list(self, children):
        items = tuple(_attr_value(child) for child in children if child is not None)
        # No attribute takes nested lists; one level still reaches the kind check (and its
        # message), deeper ones stop here rather than in a recursion limit.
        if any(isinstance(item, tuple) and any(isinstance(inner, tuple) for inner in item) for item in items):
            raise ParseError("attribute lists nest too deeply", None, "a flat list [1, 2, ...]")
        return items

    def add(self, children):
        return self._arith(children, add)

    def sub(self, children):
        return self._arith(children, sub)

    def mul(self, children):
        return self._arith(children, mul)

    def floordiv(self, children):
        left, right = children
        if _attr_value(right) == 0:
            raise ParseError("division by zero in a dim", self.builder.loc(_first_token(right)), "a non-zero divisor")
        return self._arith(children, floordiv)

    def neg_float(self, children):
        return -_attr_value(children[0])

    def neg(self, children):
        value = _attr_value(children[0])
        if isinstance(value, _Name):
            if value.text in ("inf", "nan"):
                return -float(value.text)
            if value.text in ("true", "false") or DType.parse(value.text) is not None:
                raise ParseError("'-' applies to numbers and dims only", self.builder.loc(value.token), "a number")
            value = self.builder.symbol(value.token)
        if isinstance(value, (int, float, Expr)) and not isinstance(value, bool):
            return -value
        raise ParseError("'-' applies to numbers and dims only", self.builder.loc(_first_token(children[0])), "a number")

    def _arith(self, children, operation):
        left, right = (self._dim_operand(child) for child in children)
        return operation(left, right)

    def _dim_operand(self, child):
        value = _attr_value(child)
        if isinstance(value, _Name):
            return self.builder.symbol(value.token)
        if isinstance(value, int) and not isinstance(value, bool) or isinstance(value, Expr):
            return value
        raise ParseError("dim arithmetic takes integers and symbols", self.builder.loc(_first_token(child)),
                         "an integer or a symbol")

    # --- const literals -----------------------------------------------------------------
    def literal_list(self, children):
        return [child for child in children if child is not None]

    def int_scalar(self, children):
        return ("int", _int(children[0], self.builder.loc(children[0])), children[0])

    def neg_int_scalar(self, children):
        return ("int", -_int(children[0], self.builder.loc(children[0])), children[0])

    def float_scalar(self, children):
        return ("float", float(children[0]), children[0])

    def neg_float_scalar(self, children):
        return ("float", -float(children[0]), children[0])

    def name_scalar(self, children):
        return ("name", str(children[0]), children[0])

    def neg_name_scalar(self, children):
        return ("-name", str(children[0]), children[0])

    def true_scalar(self, children):
        return ("bool", True, children[0])

    def false_scalar(self, children):
        return ("bool", False, children[0])

def _statement_parts(statement: Token) -> list:
    """A STMT token split into its DEF, ARGS, ATTRS and TYPE parts (None where absent)."""
    text = str(statement)
    match = _PARTS.match(text)
    head_end, args_start, args_end = match.end("DEF"), match.start("ARGS"), match.end("ARGS")
    parts = [_Part("DEF", text[:head_end], statement, text, 0),
             _Part("ARGS", text[args_start:args_end], statement, text, args_start)]
    for kind in ("ATTRS", "TYPE"):
        start = match.start(kind)
        parts.append(None if start < 0 else _Part(kind, text[start:match.end(kind)], statement, text, start))
    return parts


class _Part:
    """One part of a STMT token, read like the token it would have been on its own: `str()`
    gives its text; `line`, `column` and `start_pos` its position (computed when asked,
    since only error messages ask)."""

    __slots__ = ("type", "text", "statement", "statement_text", "offset")

    def __init__(self, kind: str, text: str, statement: Token, statement_text: str, offset: int):
        self.type, self.text = kind, text
        self.statement, self.statement_text, self.offset = statement, statement_text, offset

    def __str__(self) -> str:
        return self.text

    @property
    def start_pos(self) -> int:
        return self.statement.start_pos + self.offset

    @property
    def line(self) -> int:
        return self.statement.line + self.statement_text.count("\n", 0, self.offset)

    @property
    def column(self) -> int:
        newline = self.statement_text.rfind("\n", 0, self.offset)
        return self.statement.column + self.offset if newline < 0 else self.offset - newline


def _first_token(child) -> Token:
    if isinstance(child, _Name):
        return child.token
    return child if isinstance(child, Token) else Token("NAME", "", 0, 1, 1)


def _int(token: Token, loc: Location) -> int:
    if len(token) > _MAX_INT_DIGITS:
        raise ParseError(f"an integer of {len(token)} digits is too large", loc, "an integer that fits in 64 bits")
    return int(token)


def _attr_value(child):
    """Convert a leaf token of an attribute value to Python; computed values pass through."""
    if not isinstance(child, Token):
        return child
    kind = child.type
    if kind == "INT":
        # Attribute blocks are parsed on their own; the caller moves this location into the file.
        return _int(child, Location("<attributes>", child.line, child.column))
    if kind == "FLOAT":
        return float(child)
    if kind == "TRUE":
        return True
    if kind == "FALSE":
        return False
    if kind == "STRING":
        return _unescape(str(child)[1:-1])
    return _Name(child)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda match: "\n" if match.group(1) == "n" else match.group(1), text)


def _unknown_op(op: str, loc: Location) -> IRTypeError:
    if op in LEAF_KINDS:
        return IRTypeError(f"{op!r} is a statement, not an op", loc, f"{op} %NAME : TYPE")
    close = close_names(op, registered_ops(), 3)
    hint = ("did you mean " + " or ".join(close) + "?") if close else "a registered op (`rlxir ops` lists them)"
    return IRTypeError(f"unknown op {op!r}", loc, hint)


def _check_literal(literal, type_: TensorType, builder: _Builder, type_token: Token):
    """The const payload (scalar or tuple) after checking it against the declared type."""
    items = literal if isinstance(literal, list) else None
    if items is None:
        return _scalar_value(literal, type_.dtype, builder)
    numel = type_.numel
    if not isinstance(numel, int):
        raise ParseError(f"a const list needs a static type, got {type_}", builder.type_loc(type_token),
                         "a type without symbols, or a scalar splat")
    if len(items) != numel:
        bracket = builder.source.text.find("[", type_token.end_pos)
        where = end_of(builder.source) if bracket < 0 else _loc_at(builder.source, bracket)
        raise IRTypeError(f"const list has {len(items)} elements, but {type_} holds {numel}", where,
                          f"{numel} elements")
    return tuple(_scalar_value(item, type_.dtype, builder) for item in items)


_INT_RANGES = {
    DType.i8: (-(2**7), 2**7 - 1), DType.i16: (-(2**15), 2**15 - 1), DType.i32: (-(2**31), 2**31 - 1),
    DType.i64: (-(2**63), 2**63 - 1), DType.u8: (0, 2**8 - 1), DType.u32: (0, 2**32 - 1),
}


def _a(dtype: DType) -> str:
    """The dtype's name with its article, as it is read aloud: "an f32", "a u8"."""
    return ("an " if dtype.value[0] in "fi" else "a ") + dtype.value


def _scalar_value(item, dtype: DType, builder: _Builder):
    kind, value, token = item
    loc = builder.loc(token)
    if kind in ("name", "-name"):
        if value not in ("inf", "nan") or not dtype.is_float:
            raise ParseError(f"unexpected {value!r} in a const", loc, f"{_a(dtype)} literal")
        number = float(value)
        return -number if kind == "-name" else number
    if dtype is DType.bool:
        if kind != "bool":
            raise IRTypeError(f"a bool const takes true or false, got {value}", loc, "true or false")
        return value
    if kind == "bool":
        raise IRTypeError(f"{_a(dtype)} const cannot hold {str(value).lower()}", loc, f"{_a(dtype)} number")
    if dtype.is_integer:
        if kind != "int":
            raise IRTypeError(f"an integer const cannot hold {value}", loc, f"an integer in {dtype.value}'s range")
        low, high = _INT_RANGES[dtype]
        if not low <= value <= high:
            raise IRTypeError(f"{value} does not fit in {dtype.value}", loc, f"an integer in [{low}, {high}]")
        return value
    number = float(value)
    if math.isinf(number) and kind == "float":
        raise IRTypeError(f"{token} overflows a float", loc, "a finite number, inf or -inf")
    return number


# --- the parser -------------------------------------------------------------------------
_LOCK = threading.RLock()
_PARSER: Lark | None = None
_PARTS: re.Pattern | None = None
_GAP = r"(?:[ \t\r\n]|#[^\n]*\n)*"
_CALLBACKS = _Callbacks()


def grammar_text() -> str:
    return resources.files("rlxir.grammar").joinpath("rlx.lark").read_text(encoding="utf-8")


def _lark() -> Lark:
    global _PARSER, _PARTS
    if _PARSER is None:
        parser = Lark(grammar_text(), parser="lalr", strict=True, start=["start", "attr_block"],
                      transformer=_CALLBACKS, maybe_placeholders=True, cache=_grammar_cache_path())
        _PARTS = _parts_pattern(parser)
        _PARSER = parser
    return _PARSER


def _grammar_cache_path() -> str | bool:
    """Where Lark keeps the analysed grammar between processes (building the LALR tables
    takes about 0.2 s, loading them a few ms): the user's own cache directory, never a
    shared temporary one, since Lark's cache is a pickle. Lark keys the file on the
    grammar's hash and rebuilds it when stale or unreadable; False when there is no
    writable place for it."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "rlxir")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    return os.path.join(folder, f"grammar-lark{lark.__version__}-py{sys.version_info[0]}{sys.version_info[1]}.cache")


def _parts_pattern(parser: Lark) -> re.Pattern:
    """The STMT terminal with a named group per part, built from the grammar's own
    terminals so that it splits exactly what the lexer matched."""
    def regexp(name: str) -> str:
        return parser.get_terminal(name).pattern.to_regexp()

    gap = _GAP  # the grammar's GAP, which Lark keeps only inside STMT
    return re.compile(f"(?P<DEF>{regexp('DEF')}){gap}(?P<ARGS>{regexp('ARGS')})"
                      f"(?:{gap}(?P<ATTRS>{regexp('ATTRS')}))?(?:{gap}(?P<TYPE>{regexp('TYPE')}))?")


def _parse_with(builder: _Builder, text: str, start: str):
    """Run the LALR parser on `text` from rule `start`, with `builder` receiving callbacks."""
    with _LOCK:
        previous = _CALLBACKS.builder
        _CALLBACKS.builder = builder
        try:
            return _lark().parse(text, start=start)
        finally:
            _CALLBACKS.builder = previous


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse rlx text into a `Module`; raises a located `RlxError` on any bad input."""
    source = SourceText(filename, text)
    try:
        with fewer_collections():  # roughly halves the parse time of big files
            module = _parse_with(_Builder(source), text, "start")
    except UnexpectedInput as error:
        raise syntax_error(error, source) from None
    if not module.graphs:
        raise ParseError("no graph in this file", end_of(source), "graph NAME(SYMBOLS) { ... }")
    return module


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


