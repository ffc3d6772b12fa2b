"""The per-parse state of the .rlx parser (`rlxir.ir.parser`): the module being built and
the graph being filled, names defined and used, located types, and attribute blocks read
and resolved against the op registry. The grammar callbacks (`rlxir.ir.statements`) hand
each reduced statement to a `GraphBuilder`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
import re

from lark import Token
from lark.exceptions import UnexpectedInput

from rlxir.dtypes import DType
from rlxir.errors import Location, ParseError, RlxError, SourceText, VerifyError, close_names
from rlxir.ir.fills import FILL_ANNOTATIONS
from rlxir.ir.graph import Graph, Module
from rlxir.ops import annotation_specs, get_op
from rlxir.ops.registry import format_attr_value
from rlxir.symbolic import DimSyntaxError, Expr, free_symbols, parse_dim
from rlxir.ir.syntax_errors import dtype_hint, syntax_error
from rlxir.types import TensorType, canonical_type

OPERAND = re.compile(r"%[A-Za-z0-9_.]+")
_COMMENT = re.compile(r"#[^\n]*")
TRAILING_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*$")
_NOT_IN_DIMS = re.compile(r"[%:={}]")  # characters that cannot occur between a type's brackets
MAX_DIM = 2**63 - 1
MAX_INT_DIGITS = 1000  # far past any int64; keeps int() clear of Python's digit limit
BlockParser = Callable[["GraphBuilder", str, str], Any]
"""Runs the grammar on a text from a start rule, with a builder receiving the callbacks."""


def blank_comments(text: str) -> str:
    """`text` with each comment replaced by as many spaces (offsets into it stay valid)."""
    return _COMMENT.sub(lambda match: " " * len(match.group()), text)


class BareName:
    """A bare name in an attribute; what it means (dtype, symbol) depends on the attribute."""

    __slots__ = ("text", "token")

    def __init__(self, token: Token):
        self.text = str(token)
        self.token = token


class GraphBuilder:
    """Per-parse state: the module being built and the graph being filled."""

    def __init__(self, source: SourceText, parse_block: BlockParser):
        self.source = source
        self.parse_block = parse_block
        """The parser itself, for an attribute block read on its own (`rlxir.ir.parser`)."""
        self.module = Module(filename=source.filename)
        self.graph: Graph | None = None
        self.types: dict[str, TensorType] = {}
        self.values: Mapping[str, Any] = {}
        """The graph's values by name (`Graph.data_by_name`), read for operand types."""
        self.defined_at: dict[str, Location] = {}
        self.names: dict[str, str] = {}
        """Each defined name to itself: operands read from the text are swapped for the
        defining string, so a graph holds one string per name, not one per use."""
        self.output_seen: Location | None = None
        self.resolved: dict[tuple[str, str], dict] = {}
        """(op, attribute block text) -> the block's values resolved for that op in this
        graph, for a block already read without error (blocks repeat across layers)."""
        self.inferred: dict[tuple, tuple] = {}
        """(op, attribute block text or None, operand types) -> (the registry's op name,
        canonical attributes, result type): what the op statements of this graph inferred."""

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
            text = blank_comments(text)
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
        result = canonical_type(TensorType(dtype, tuple(dims)))
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
        if isinstance(dim, int) and not 0 <= dim <= MAX_DIM:
            problem = "is negative" if dim < 0 else "does not fit in 64 bits"
            raise ParseError(f"dim {dim} {problem}", self.loc_in(token, offset + lead), f"a dim in [0, {MAX_DIM}]")
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
        self.names[name] = name
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
        self.resolved[(op, str(token))] = values
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
            raw = self.parse_block(AttrReader(SourceText("<attributes>", text), self.parse_block), text, "attr_block")
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
        if isinstance(value, BareName):
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


class AttrReader(GraphBuilder):
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


