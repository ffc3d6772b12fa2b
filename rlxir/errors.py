"""Errors with locations.

Every error a user can cause is an `RlxError`: it carries where it happened (file, line,
column, the source line) and what was expected, and renders itself once, at the boundary
(the CLI), as ``file:line:col: error: message`` followed by the line and a caret.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs


@attrs.frozen(slots=True)
class SourceText:
    """The text of one parsed file, kept so a diagnostic can quote its line."""

    filename: str
    text: str = attrs.field(repr=False)

    def line(self, number: int) -> str:
        """Return source line `number` (1-based) without its newline, or '' past the end.

        Lines end at "\n" only, as they do for the lexer's line numbers (``str.splitlines``
        would also break at form feeds and other separators and shift the quoted line).
        """
        lines = self.text.split("\n")
        if 1 <= number <= len(lines):
            return lines[number - 1].removesuffix("\r")
        return ""


@attrs.frozen(slots=True)
class Location:
    """A position in a source file (1-based line and column)."""

    file: str
    line: int
    col: int
    source: SourceText | None = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def shifted(self, columns: int) -> Location:
        """The same position moved `columns` to the right on its line."""
        return attrs.evolve(self, col=self.col + columns)

    def source_line(self) -> str:
        return self.source.line(self.line) if self.source is not None else ""


class RlxError(Exception):
    """A user-facing error. `render()` gives the one diagnostic the CLI prints."""

    kind = "error"

    def __init__(self, message: str, loc: Location | None = None, expected: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.expected = expected

    @property
    def file(self) -> str | None:
        return self.loc.file if self.loc else None

    @property
    def line(self) -> int | None:
        return self.loc.line if self.loc else None

    @property
    def col(self) -> int | None:
        return self.loc.col if self.loc else None

    def with_location(self, loc: Location | None) -> RlxError:
        """Attach `loc` if this error has none yet (raise sites deep in shape rules know no file)."""
        if self.loc is None and loc is not None:
            self.loc = loc
        return self

    def render(self) -> str:
        message = self.message if len(self.message) <= 2000 else f"{self.message[:2000]}... (cut)"
        head = f"{self.loc}: {self.kind}: {message}" if self.loc else f"{self.kind}: {message}"
        parts = [head]
        text = self.loc.source_line() if self.loc else ""
        if text and self.loc:
            text, col = quoted_slice(text, self.loc.col)
            parts.append(f"  {text}")
            parts.append("  " + _caret_padding(text, col) + "^")
        if self.expected:
            parts.append(f"  expected: {self.expected}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


def close_names(word: str, names: Iterable[str], count: int = 2, cutoff: float = 0.75) -> list[str]:
    """The names close enough to `word` to be what was meant (a typo, not a guess):
    ``rleu`` -> ``relu``, ``frobnicate`` -> nothing. Three-letter names (dtypes) need a
    lower `cutoff`: one swapped pair already costs a third of the word."""
    import difflib

    return difflib.get_close_matches(word, list(names), n=count, cutoff=cutoff)


QUOTE_WIDTH = 120  # the most of a source line a diagnostic quotes


def quoted_slice(text: str, col: int, width: int = QUOTE_WIDTH) -> tuple[str, int]:
    """At most `width` characters of `text` around column `col` (1-based), with ``...``
    where it was cut, and the caret's column in the slice: a 1 MB line costs 1 MB of
    stderr otherwise."""
    if len(text) <= width:
        return text, col
    start = max(0, min(col - 1 - width // 2, len(text) - width))
    piece = text[start:start + width]
    head = "..." if start > 0 else ""
    tail = "..." if start + width < len(text) else ""
    return head + piece + tail, col - start + len(head)


def _caret_padding(text: str, col: int) -> str:
    # Keep tabs so the caret lines up under the same column in a terminal.
    prefix = text[: max(col - 1, 0)]
    return "".join("\t" if ch == "\t" else " " for ch in prefix)


class ParseError(RlxError):
    kind = "syntax error"


class IRTypeError(RlxError):
    """A type or shape that does not match what the op's rule infers."""

    kind = "type error"
    attribute: str | None = None
    """The attribute at fault, when one is (the parser points its caret there)."""


class VerifyError(RlxError):
    kind = "verify error"


class UnboundSymbolError(RlxError):
    """A computation needed a number for a symbol nobody bound."""

    kind = "error"

    def __init__(self, symbols: Iterable[str], loc: Location | None = None, context: str = ""):
        names = sorted(symbols)
        what = ", ".join(names)
        suffix = f" {context}" if context else ""
        super().__init__(
            f"unbound symbol{'s' if len(names) > 1 else ''} {what}{suffix}",
            loc,
            expected=f"bind {'them' if len(names) > 1 else 'it'} with -D {names[0]}=VALUE (or --batch N for B)",
        )
        self.symbols = tuple(names)
