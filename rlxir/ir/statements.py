"""The grammar callbacks of the .rlx parser: a Lark `Transformer` applied inside the LALR
parser (`rlxir.ir.parser`), so each statement is added to its graph through the parse's
`GraphBuilder` the moment it is reduced and no parse tree is ever built. Literal values are
checked against their types here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from lark import Token, Transformer

from rlxir.dtypes import DType
from rlxir.errors import IRTypeError, Location, ParseError, RlxError, VerifyError, close_names
from rlxir.ir.fills import annotate_fills
from rlxir.ir.graph import Graph
from rlxir.ir.inference import infer_result
from rlxir.ir.graph_builder import (MAX_DIM, MAX_INT_DIGITS, OPERAND, TRAILING_NAME, BareName, GraphBuilder,
                                    blank_comments)
from rlxir.ops import LEAF_KINDS, get_op, registered_ops
from rlxir.ops.registry import ShapeError
from rlxir.symbolic import Expr, add, floordiv, mul, sub
from rlxir.ir.syntax_errors import end_of, loc_at as _loc_at
from rlxir.types import TensorType

# `OPERAND` with the name after the % as its group: `findall` then gives the bare names.
_OPERAND_NAME = re.compile(OPERAND.pattern.replace("%", "%(", 1) + ")")


class StatementTransformer(Transformer):
    """Grammar callbacks; they forward to the `GraphBuilder` of the parse under way."""

    def __init__(self):
        super().__init__(visit_tokens=False)
        self.builder: GraphBuilder | None = None
        self.parts: re.Pattern | None = None
        """The STMT terminal split into named parts, made from the grammar's own terminals
        once the parser is built (`rlxir.ir.parser`)."""
        self.run_parts: re.Pattern | None = None
        """One statement of a RUN token and the gap after it, split into named parts (also
        made from the grammar by `rlxir.ir.parser`)."""

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
        builder.values = graph.data_by_name()
        builder.resolved = {}
        builder.inferred = {}
        builder.defined_at = {}
        builder.names = {}
        builder.output_seen = None
        return graph

    def symbols(self, children):
        return children

    def symbol(self, children):
        token = children[0]
        if len(children) < 2:
            return token, None
        default = _int(children[1], self.builder.loc(children[1]))
        if default > MAX_DIM:
            raise ParseError(f"symbol default {default} does not fit in 64 bits", self.builder.loc(children[1]),
                             f"a default in [0, {MAX_DIM}]")
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
        first = children[0]
        if first.type == "STMT":  # one whole statement: its parts located inside it
            found = self.parts.match(str(first))
            children = _statement_parts(found, first, ("DEF", "ARGS", "ATTRS", "TYPE"))
        self._op(children)

    def statement_run(self, children):
        """A RUN token: plainly written op, input and param statements, read one by one.

        Each statement is first read from its strings alone (`_quick_op`, `_quick_leaf`),
        which change nothing until every check has passed; a statement they cannot take
        (a name defined twice, an unknown op or operand, a type or attribute block not read
        before, any error) is read again as located parts by the same code as a statement
        lexed on its own, which gives the error its exact place."""
        self.read_run(children[0])

    def read_run(self, run: Token, but_the_last: bool = False) -> None:
        """Read the statements of a RUN token (`but_the_last`: all but its last one)."""
        text = str(run)
        line, newline = run.line, None  # `newline`: the run's last '\n' before the statement
        stored: list[str] = []  # values stored by the quick reader, not yet in the schedule
        builder = self.builder
        schedule = builder.graph.append_to_schedule
        # After the output statement every statement is an error: the located reading says so.
        quick_op = self._quick_op_reader(stored) if builder.output_seen is None else None
        try:
            for found in self.run_parts.finditer(text):
                start, following = found.start(), found.end()
                if but_the_last and following == len(text):
                    return
                column = start - newline if newline is not None else run.column + start
                if found.start("DEF") >= 0:
                    if quick_op is None or not quick_op(found, line, column):
                        schedule(stored)
                        stored.clear()
                        where = _Statement(run.start_pos + start, line, column)
                        self._op(_statement_parts(found, where, ("DEF", "ARGS", "ATTRS", "TYPE")))
                elif quick_op is None or not self._quick_leaf(found, line, column, stored):
                    schedule(stored)
                    stored.clear()
                    where = _Statement(run.start_pos + start, line, column)
                    value, type_, attrs = _statement_parts(found, where, ("VALUE", "LEAF_TYPE", "LEAF_ATTRS"))
                    self._interface_value([value, type_, attrs], found.group("KEY"))
                newlines = text.count("\n", start, following)
                if newlines:
                    line += newlines
                    newline = text.rfind("\n", start, following)
        finally:
            schedule(stored)

    def _quick_op_reader(self, stored: list[str]) -> Callable[[re.Match, int, int], bool]:
        """The reader of one op statement of a run from its strings alone: it stores the
        value (its name joins `stored`, for the schedule) and returns True when every check
        passes; else it returns False and has changed nothing, for the located reading.
        A closure over the graph's tables, since it runs once per statement."""
        builder = self.builder
        defined_at, names, values, inferred_for = builder.defined_at, builder.names, builder.values, builder.inferred
        types_read, infer = builder.types, self._infer
        filename, source, store = builder.source.filename, builder.source, builder.graph.store_parsed
        operand_names = _OPERAND_NAME.findall

        def quick_op(found: re.Match, line: int, column: int) -> bool:
            name, op, args, attrs_text, type_text = found.group("NAME", "OP", "ARGS", "ATTRS", "TYPE")
            if name in defined_at:
                return False
            operands = tuple(map(names.get, operand_names(args)))
            if None in operands:
                return False
            key = (op, attrs_text, tuple([values[operand].type for operand in operands]))
            result = inferred_for.get(key)
            if result is None:
                result = infer(op, attrs_text, key[2])
                if result is None:
                    return False
                inferred_for[key] = result
            opname, attrs, inferred = result
            if type_text is not None and types_read.get(type_text) != inferred:
                return False
            loc = Location(filename, line, column, source)
            store(name, opname, operands, attrs, inferred, loc)
            defined_at[name] = loc
            names[name] = name
            stored.append(name)
            return True

        return quick_op

    def _infer(self, op: str, attrs_text: str | None, types: tuple) -> tuple | None:
        """(the registry's op name, canonical attributes, result type) of `op` on operands
        of `types` with the attribute block `attrs_text` as already read in this graph;
        None when the op, the block or the inference needs the located reading."""
        opdef = get_op(op)
        attr_values = {} if attrs_text is None else self.builder.resolved.get((op, attrs_text))
        if opdef is None or attr_values is None or not opdef.accepts_arity(len(types)):
            return None
        try:
            attrs, inferred = infer_result(opdef, types, attr_values)
        except RlxError:
            return None
        return opdef.name, attrs, inferred

    def _quick_leaf(self, found: re.Match, line: int, column: int, stored: list[str]) -> bool:
        """Store the input or param statement `found` (without fill facts; its name joins
        `stored`) if every check passes on its strings; False (and nothing changed) otherwise.
        Called only before the output statement (`read_run` sends the rest to the located
        reading)."""
        builder = self.builder
        value_start = found.start("VALUE")
        name, type_text = found.group("LEAF_NAME", "LEAF_TYPE")
        type_ = builder.types.get(type_text)
        if type_ is None or found.start("LEAF_ATTRS") >= 0 or name in builder.defined_at:
            return False
        inside = found.string[found.start():value_start]
        newline = inside.rfind("\n")
        if newline >= 0:
            line, column = line + inside.count("\n"), len(inside) - newline
        else:
            column += len(inside)
        loc = Location(builder.source.filename, line, column, builder.source)
        builder.graph.store_parsed(name, "input" if found.group("KEY") == "input" else "param", (), {}, type_, loc)
        builder.defined_at[name] = loc
        builder.names[name] = name
        stored.append(name)
        return True

    def _op(self, children):
        builder = self.builder
        head, args = children[0], children[1]
        attrs, result = None, None
        for extra in children[2:]:
            if extra is not None and extra.type == "ATTRS":
                attrs = extra
            elif extra is not None:
                result = extra
        text = str(head)
        if "#" in text:  # a comment inside the head may itself hold '='
            name = OPERAND.match(text).group()[1:]
            op = TRAILING_NAME.search(text).group()
        else:
            equals = text.index("=")
            name = text[:equals].rstrip()[1:]
            op = text[equals + 1:].lstrip()
        name = builder.define(head, name)
        if get_op(op) is None:
            raise _unknown_op(op, builder.loc_in(head, len(text) - len(op)))
        operands, offsets = [], []
        args_text = str(args)
        names = builder.names
        for match in OPERAND.finditer(blank_comments(args_text) if "#" in args_text else args_text):
            operand = names.get(match.group()[1:])
            if operand is None:
                operand = builder.use(match.group()[1:], builder.loc_in(args, match.start()))
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
        if isinstance(value, BareName):
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
        if isinstance(value, BareName):
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

def _statement_parts(found: re.Match, statement, groups: tuple[str, ...]) -> list:
    """The parts of one statement matched by `found` (from the statement's first
    character), one `_Part` per named group in `groups` (None where absent), each located
    through `statement`: the STMT token itself, or a `_Statement` of a RUN token."""
    base = found.start()
    text = found.string[base:found.end()]
    parts = []
    for group in groups:
        start = found.start(group)
        parts.append(None if start < 0 else _Part(group.rpartition("_")[2], text[start - base:found.end(group) - base],
                                                  statement, text, start - base))
    return parts


class _Statement:
    """Where one statement of a RUN token starts in the file (what `_Part` asks of a token)."""

    __slots__ = ("start_pos", "line", "column")

    def __init__(self, start_pos: int, line: int, column: int):
        self.start_pos, self.line, self.column = start_pos, line, column


class _Part:
    """One part of a STMT or RUN token, read like the token it would have been on its own: `str()`
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
    if isinstance(child, BareName):
        return child.token
    return child if isinstance(child, Token) else Token("NAME", "", 0, 1, 1)


def _int(token: Token, loc: Location) -> int:
    if len(token) > MAX_INT_DIGITS:
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
    return BareName(child)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda match: "\n" if match.group(1) == "n" else match.group(1), text)


def _unknown_op(op: str, loc: Location) -> IRTypeError:
    if op in LEAF_KINDS:
        return IRTypeError(f"{op!r} is a statement, not an op", loc, f"{op} %NAME : TYPE")
    close = close_names(op, registered_ops(), 3)
    hint = ("did you mean " + " or ".join(close) + "?") if close else "a registered op (`rlxir ops` lists them)"
    return IRTypeError(f"unknown op {op!r}", loc, hint)


def _check_literal(literal, type_: TensorType, builder: GraphBuilder, type_token: Token):
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
    DType.i64: (-(2**63), 2**63 - 1), DType.u8: (0, 2**8 - 1), DType.u32: (0, 2**32 - 1), DType.u64: (0, 2**64 - 1),
}


def _a(dtype: DType) -> str:
    """The dtype's name with its article, as it is read aloud: "an f32", "a u8"."""
    return ("an " if dtype.value[0] in "fi" else "a ") + dtype.value


def _scalar_value(item, dtype: DType, builder: GraphBuilder):
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


