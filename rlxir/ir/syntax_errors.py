"""Turn Lark's syntax errors into located, explained `ParseError`s.

Lark reports the token it could not use and the terminals it wanted. That is enough for
most statements, but three terminals are coarse (an operand list, a type, an attribute
block are one token each, see ``grammar/rlx.lark``): when one of them fails to lex, Lark
only knows that, say, an ``ARGS`` token did not start at ``(``. The readers below rescan
the text from that point and name the exact character that broke it. They run only after
a parse has failed, so they cost nothing on good input.
"""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from rlxir.dtypes import DTYPE_NAMES, DType
from rlxir.errors import Location, ParseError, SourceText, close_names

# What each terminal means to a user, for "expected ..." lines.
TERMINAL_TEXT = {
    "VALUE": "a value like %x", "NAME": "a name", "TYPE": "a type like f32[B, 16]",
    "ARGS": "an operand list like (%a, %b)", "ATTRS": "an attribute block like {axis = 1}",
    "DEF": "a definition like %y = relu(%x)", "INT": "an integer", "FLOAT": "a number",
    "STRING": 'a string "..."', "TRUE": "true", "FALSE": "false", "OUTPUT": "output",
    "RBRACE": "'}'", "LBRACE": "'{'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "SEMICOLON": "';'", "PLUS": "'+'", "MINUS": "'-'",
    "STAR": "'*'", "SLASH": "'/'", "__ANON_0": "'//'", "OPERAND_REF": "an operand like $0", "$END": "end of input",
    "GRAPH": "graph", "INPUT": "input", "PARAM": "param", "CONST": "const",
}
_TOKEN_NOUN = {
    "NAME": "name", "VALUE": "value", "INT": "integer", "FLOAT": "number", "STRING": "string", "TYPE": "type",
    "ARGS": "operand list", "ATTRS": "attribute block", "DEF": "definition", "STMT": "statement",
}
_STATEMENT_TERMINALS = frozenset({"INPUT", "PARAM", "CONST", "DEF", "OUTPUT"})
_WHOLE_STATEMENTS = frozenset({"STMT", "RUN"})  # the grammar's one-token statements; DEF stands for them
_STATEMENT_TEXT = "a statement (input, param, const, %v = OP(...) or output)"
_KEYWORDS = ("graph", "input", "param", "const", "output")
_OPERAND = re.compile(r"%[A-Za-z0-9_.]+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_STRING_ESCAPES = '"\\n'


def syntax_error(error: UnexpectedInput, source: SourceText) -> ParseError:
    """The one diagnostic for a failed parse of `source`."""
    if isinstance(error, UnexpectedEOF) or (isinstance(error, UnexpectedToken) and error.token.type == "$END"):
        expected = getattr(error, "expected", None) or getattr(error, "accepts", None) or ()
        return ParseError("unexpected end of input", end_of(source), expected_text(expected))
    if isinstance(error, UnexpectedCharacters):
        return _bad_character(source, error.pos_in_stream, set(error.allowed or ()))
    return _bad_token(source, error.token, set(error.accepts or error.expected or ()))


def end_of(source: SourceText) -> Location:
    """The position just after the last character of the last non-empty line."""
    lines = source.text.rstrip(" \t\r\n").split("\n")
    return Location(source.filename, len(lines), len(lines[-1]) + 1, source)


def decode_source(data: bytes, filename: str) -> str:
    """The text of a source file's bytes: UTF-8, a leading byte-order mark dropped; a byte
    that is not UTF-8 is a located error (line and column, not a byte offset)."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        good = data[:error.start].decode("utf-8")
        text = good + data[error.start:].decode("utf-8", errors="replace")
        loc = loc_at(SourceText(filename, text), len(good))
        raise ParseError(f"byte 0x{data[error.start]:02x} is not UTF-8 ({error.reason})", loc,
                         "a UTF-8 file (re-save it as UTF-8)") from None


def loc_at(source: SourceText, offset: int) -> Location:
    """The location of character `offset` (0-based) of `source`."""
    line = source.text.count("\n", 0, offset) + 1
    col = offset - (source.text.rfind("\n", 0, offset) + 1) + 1
    return Location(source.filename, line, col, source)


def expected_text(names) -> str:
    names = set(names) - _WHOLE_STATEMENTS
    texts = []
    if _STATEMENT_TERMINALS <= names:
        names -= _STATEMENT_TERMINALS
        texts.append(_STATEMENT_TEXT)
    texts += sorted({TERMINAL_TEXT.get(name, name.lower()) for name in names})
    return " or ".join(texts) if texts else "something else"


def token_text(token: Token) -> str:
    """``value '%y'``, ``integer '3'``, or the quoted text of a punctuation token."""
    noun = _TOKEN_NOUN.get(token.type)
    text = str(token) if len(token) <= 40 else f"{token[:40]}..."  # a 1 MB token is not worth quoting whole
    return f"{noun} {text!r}" if noun else repr(text)


# --- dispatch ---------------------------------------------------------------------------
def _bad_character(source: SourceText, pos: int, allowed: set) -> ParseError:
    """No terminal matched at `pos`: explain a broken coarse token, else name the character."""
    char = source.text[pos]
    coarse = _coarse_token_error(source, pos, allowed)
    if coarse is not None:
        return coarse
    if char == '"':
        return _string_error(source, pos) or ParseError("unexpected string", loc_at(source, pos),
                                                        expected_text(allowed))
    if char == "%":
        name_error = _bad_value_name(source, pos)
        if name_error is not None:
            return name_error
    return ParseError(f"unexpected character {char!r}", loc_at(source, pos), expected_text(allowed))


def _bad_value_name(source: SourceText, pos: int) -> ParseError | None:
    """``%ü``: the name after ``%`` has a character a value name cannot hold (they are ASCII)."""
    match = re.match(r"%([^\s,()\[\]{}:=#]+)", source.text[pos:pos + 200])
    if match is None:
        return None
    offending = next((index for index, ch in enumerate(match.group(1)) if not _VALUE_NAME_CHAR.fullmatch(ch)), None)
    if offending is None:
        return None
    char = match.group(1)[offending]
    return ParseError(f"value name %{match.group(1)} has the character {char!r} (U+{ord(char):04X}), which a name "
                      "cannot hold", loc_at(source, pos + 1 + offending),
                      "a name of ASCII letters, digits, '_' and '.', e.g. %y or %layer.0.out")


_VALUE_NAME_CHAR = re.compile(r"[A-Za-z0-9_.]", re.ASCII)


def _bad_token(source: SourceText, token: Token, expected: set) -> ParseError:
    """A token lexed (by the context-free lexer) where the grammar did not want it."""
    pos = token.start_pos
    coarse = _coarse_token_error(source, pos, expected)
    if coarse is not None:
        return coarse
    loc = loc_at(source, pos)
    if token.type == "VALUE" and "DEF" in expected:
        return _definition_error(source, token)
    if token.type == "NAME" and "TYPE" in expected and DType.parse(str(token)) is not None:
        return ParseError(f"missing ':' before the type {token}", loc, "': TYPE', as in %x : f32[B, 16]")
    if token.type == "NAME":
        hint = _keyword_hint(str(token), expected)
        if hint:
            return ParseError(f"unexpected name {str(token)!r} ({hint})", loc, expected_text(expected))
    return ParseError(f"unexpected {token_text(token)}", loc, expected_text(expected))


def _coarse_token_error(source: SourceText, pos: int, wanted: set) -> ParseError | None:
    char = source.text[pos]
    if char == "(" and "ARGS" in wanted:
        return _operand_list_error(source, pos)
    if char == ":" and "TYPE" in wanted:
        return _type_error(source, pos)
    if char == "{" and "ATTRS" in wanted:
        return _attribute_block_error(source, pos)
    return None


def dtype_hint(word: str) -> str:
    """`` (did you mean f32?)`` for a word close to a dtype name, else nothing."""
    close = close_names(word, DTYPE_NAMES, 1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _keyword_hint(word: str, expected: set) -> str:
    keywords = [keyword for keyword in _KEYWORDS if keyword.upper() in expected]
    close = close_names(word, keywords, 1)
    return f"did you mean {close[0]}?" if close else ""


# --- statements -------------------------------------------------------------------------
def _definition_error(source: SourceText, token: Token) -> ParseError:
    """``%y`` starts a statement but no ``%y = OP`` head follows: say which part is missing."""
    text = source.text
    after = _skip_space(text, token.end_pos)
    if after >= len(text) or text[after] != "=":
        return ParseError(f"missing '=' after {token}", loc_at(source, after) if after < len(text) else end_of(source),
                          f"{token} = OP(...), or a statement keyword")
    name_at = _skip_space(text, after + 1)
    if name_at >= len(text):
        return ParseError(f"missing op name after '{token} ='", end_of(source), "an op name, as in %y = relu(%x)")
    return ParseError(f"expected an op name after '{token} =', found {text[name_at]!r}", loc_at(source, name_at),
                      "an op name, as in %y = relu(%x)")


def _skip_space(text: str, pos: int) -> int:
    """The offset of the first character at or after `pos` that is neither space nor comment."""
    while pos < len(text) and text[pos] in " \t\r\n#":
        pos = _line_end(text, pos) if text[pos] == "#" else pos + 1
    return pos


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


# --- operand lists ----------------------------------------------------------------------
def _operand_list_error(source: SourceText, start: int) -> ParseError:
    """Find the exact bad character inside an operand list ``(%a, %b)`` opening at `start`."""
    text, pos = source.text, start + 1
    expect_value = True
    while pos < len(text):
        char = text[pos]
        if char in " \t\r\n":
            pos += 1
            continue
        if char == "#":
            pos = _line_end(text, pos)
            continue
        if expect_value and char == ")" and not text[start + 1:pos].strip():
            break
        if expect_value:
            match = _OPERAND.match(text, pos)
            if match is None:
                return _operand_list_char(source, start, pos, "a value like %x")
            pos, expect_value = match.end(), False
            continue
        if char == ",":
            pos, expect_value = pos + 1, True
            continue
        if char == ")":
            break
        return _operand_list_char(source, start, pos, "',' or ')'")
    if pos >= len(text):
        return ParseError("unclosed operand list", loc_at(source, start), "')' to close this '('")
    return ParseError("malformed operand list", loc_at(source, start), "an operand list like (%a, %b)")


def _operand_list_char(source: SourceText, start: int, pos: int, expected: str) -> ParseError:
    # A bad character on a later line than the '(' means the list was never closed.
    if "\n" in source.text[start:pos] and source.text[pos] != ")":
        return ParseError("unclosed operand list", loc_at(source, start), "')' to close this '('")
    return ParseError(f"unexpected {source.text[pos]!r} in operand list", loc_at(source, pos), expected)


# --- types ------------------------------------------------------------------------------
def _type_error(source: SourceText, colon: int) -> ParseError:
    """Explain why ``: TYPE`` starting at `colon` is not a type."""
    text = source.text
    start = _skip_space(text, colon + 1)
    match = _WORD.match(text, start)
    if match is None:
        found = repr(text[start]) if start < len(text) else "the end of input"
        loc = loc_at(source, start) if start < len(text) else end_of(source)
        return ParseError(f"expected a type after ':', found {found}", loc, "a type like f32[B, 16]")
    word = match.group()
    if DType.parse(word) is None:
        return ParseError(f"unknown dtype {word!r}{dtype_hint(word)}", loc_at(source, start),
                          "a dtype: " + ", ".join(dtype.value for dtype in DType))
    after = match.end()
    if after < len(text) and text[after] in " \t" and text.startswith("[", _skip_space(text, after)):
        return ParseError(f"space between {word} and '['", loc_at(source, after), f"{word}[...] with no space")
    if after >= len(text) or text[after] != "[":
        return ParseError(f"type {word} needs a shape in brackets", loc_at(source, after) if after < len(text)
                          else end_of(source), f"'[', as in {word}[B, 16] or {word}[]")
    return ParseError("unclosed '[' in type", loc_at(source, after), "']' to close this '['")


# --- attribute blocks and strings -------------------------------------------------------
def _attribute_block_error(source: SourceText, start: int) -> ParseError:
    """Explain why the attribute block opening at `start` is not one ATTRS token."""
    text, pos = source.text, start + 1
    while pos < len(text):
        char = text[pos]
        if char == '"':
            error = _string_error(source, pos)
            if error is not None:
                return error
            pos = _string_end(text, pos)
            continue
        if char == "#":
            pos = _line_end(text, pos)
            continue
        if char == "}":
            break
        if char == "{":
            return ParseError("unexpected '{' inside an attribute block", loc_at(source, pos),
                              "a value: a number, a string, true/false, a dtype or a list [...]")
        if char == "%":
            # Values never appear in attributes: after a line break this is the next statement.
            if "\n" in text[start:pos]:
                return ParseError("unclosed attribute block", loc_at(source, start), "'}' to close this '{'")
            value = _OPERAND.match(text, pos)
            what = repr(value.group()) if value else "'%'"
            return ParseError(f"unexpected {what} in an attribute block", loc_at(source, pos),
                              'a string, as in {view_of = "%h"}')
        pos += 1
    if pos >= len(text):
        return ParseError("unclosed attribute block", loc_at(source, start), "'}' to close this '{'")
    return ParseError("malformed attribute block", loc_at(source, start), "an attribute block like {axis = 1}")


def _string_end(text: str, quote: int) -> int:
    """The offset just after the string that opens at `quote` (assumed well formed)."""
    pos = quote + 1
    while text[pos] != '"':
        pos += 2 if text[pos] == "\\" else 1
    return pos + 1


def _string_error(source: SourceText, quote: int) -> ParseError | None:
    """What is wrong with the string literal opening at `quote`, or None if nothing is."""
    text, pos = source.text, quote + 1
    while pos < len(text) and text[pos] not in '"\n':
        if text[pos] == "\\":
            escaped = text[pos + 1] if pos + 1 < len(text) else ""
            if not escaped or escaped not in _STRING_ESCAPES:
                return ParseError(f"unknown escape {text[pos:pos + 2]!r} in string", loc_at(source, pos),
                                  'one of \\" \\\\ \\n')
            pos += 2
            continue
        pos += 1
    if pos >= len(text) or text[pos] == "\n":
        return ParseError("unterminated string", loc_at(source, quote), 'a closing " on the same line')
    return None
