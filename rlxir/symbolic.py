"""Symbolic dimensions: integer polynomials over named symbols, with exact floor division.

A dim is a plain ``int`` or an `Expr`. Expressions are kept in one canonical form (a sum of
monomials with integer coefficients, sorted), so equal dims compare equal however they were
written: ``2*L*B`` and ``B*L*2`` are the same `Expr`. Arithmetic that folds to a constant
returns an ``int``, so a fully known dim is always an ``int``.

Floor division by something that does not divide exactly stays symbolic as an opaque atom
(``(L + 1)//2``) that evaluates once its symbols are bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Union

from rlxir.errors import UnboundSymbolError

Dim = Union[int, "Expr"]
SymbolReader = Callable[[str, int], Dim]
"""``on_symbol(name, offset)``: checks a symbol read from dim text, returns its dim."""


class FloorDiv:
    """An atom ``numerator // denominator`` that could not be simplified."""

    __slots__ = ("numerator", "denominator", "_text")

    def __init__(self, numerator: Dim, denominator: Dim):
        self.numerator = numerator
        self.denominator = denominator
        self._text = f"{_operand_text(numerator)}//{_operand_text(denominator)}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloorDiv) and self._text == other._text

    def __hash__(self) -> int:
        return hash(("//", self._text))

    def __str__(self) -> str:
        return self._text

    def symbols(self) -> frozenset[str]:
        return free_symbols(self.numerator) | free_symbols(self.denominator)


Atom = Union[str, FloorDiv]
# A monomial is a sorted tuple of (atom, power) pairs; () is the constant monomial.
Monomial = tuple


def _atom_key(atom: Atom) -> tuple:
    return (0, atom) if isinstance(atom, str) else (1, str(atom))


def _monomial_key(monomial: Monomial) -> tuple:
    degree = sum(power for _, power in monomial)
    return (-degree, tuple((_atom_key(atom), -power) for atom, power in monomial))


class Expr:
    """A non-constant polynomial dim in canonical form. Immutable and hashable."""

    __slots__ = ("terms", "_hash")

    def __init__(self, terms: tuple):
        # `terms`: canonically sorted ((monomial, coefficient), ...), no zero coefficients.
        self.terms = terms
        self._hash = hash(terms)

    # --- construction -------------------------------------------------------------------
    @staticmethod
    def symbol(name: str) -> Expr:
        monomial = ((name, 1),)
        return Expr(((monomial, 1),))

    # --- comparisons --------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self._hash == other._hash and self.terms == other.terms

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        return True

    # --- arithmetic ---------------------------------------------------------------------
    def __add__(self, other: Dim) -> Dim:
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other: Dim) -> Dim:
        return sub(self, other)

    def __rsub__(self, other: Dim) -> Dim:
        return sub(other, self)

    def __mul__(self, other: Dim) -> Dim:
        return mul(self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other: Dim) -> Dim:
        return floordiv(self, other)

    def __rfloordiv__(self, other: Dim) -> Dim:
        return floordiv(other, self)

    def __neg__(self) -> Dim:
        return mul(self, -1)

    def __str__(self) -> str:
        return format_dim(self)

    def __repr__(self) -> str:
        return f"Expr({format_dim(self)!r})"


def _poly(dim: Dim) -> dict:
    if isinstance(dim, Expr):
        return dict(dim.terms)
    if isinstance(dim, int) and not isinstance(dim, bool):
        return {(): dim} if dim else {}
    raise TypeError(f"not a dim: {dim!r}")


def _make(poly: dict) -> Dim:
    items = [(monomial, coef) for monomial, coef in poly.items() if coef]
    if not items:
        return 0
    if len(items) == 1 and items[0][0] == ():
        return items[0][1]
    items.sort(key=lambda item: _monomial_key(item[0]))
    return Expr(tuple(items))


def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    poly = _poly(a)
    for monomial, coef in _poly(b).items():
        poly[monomial] = poly.get(monomial, 0) + coef
    return _make(poly)


def sub(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    return add(a, mul(b, -1))


def _mul_monomials(left: Monomial, right: Monomial) -> Monomial:
    powers = dict(left)
    for atom, power in right:
        powers[atom] = powers.get(atom, 0) + power
    return tuple(sorted(powers.items(), key=lambda item: _atom_key(item[0])))


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    result: dict = {}
    for left, left_coef in _poly(a).items():
        for right, right_coef in _poly(b).items():
            monomial = _mul_monomials(left, right)
            result[monomial] = result.get(monomial, 0) + left_coef * right_coef
    return _make(result)


def exact_div(a: Dim, b: Dim) -> Dim | None:
    """``a / b`` when `b` divides `a` exactly as polynomials (b a single term), else None."""
    if isinstance(b, int):
        if b == 0:
            return None
        poly = _poly(a)
        if all(coef % b == 0 for coef in poly.values()):
            return _make({monomial: coef // b for monomial, coef in poly.items()})
        return None
    if len(b.terms) != 1:
        return _divide_by_polynomial(a, b)
    (divisor, divisor_coef), = b.terms
    divisor_powers = dict(divisor)
    quotient: dict = {}
    for monomial, coef in _poly(a).items():
        powers = dict(monomial)
        if coef % divisor_coef:
            return None
        for atom, power in divisor_powers.items():
            if powers.get(atom, 0) < power:
                return None
            powers[atom] -= power
        reduced = tuple(sorted(((atom, p) for atom, p in powers.items() if p), key=lambda it: _atom_key(it[0])))
        quotient[reduced] = quotient.get(reduced, 0) + coef // divisor_coef
    return _make(quotient)


def _divide_by_polynomial(a: Dim, b: Expr) -> Dim | None:
    # A multi-term divisor divides exactly only in the common case a == k * b.
    for monomial, coef in b.terms:
        a_coef = _poly(a).get(monomial)
        if a_coef is None or a_coef % coef:
            return None
        factor = a_coef // coef
        return factor if mul(b, factor) == a else None
    return None


def floordiv(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("dim division by zero")
        return a // b
    if b == 0:
        raise ZeroDivisionError("dim division by zero")
    if b == 1:
        return a
    exact = exact_div(a, b)
    if exact is not None:
        return exact
    if isinstance(a, Expr) and isinstance(b, int) and b > 0:  # int // int returned above
        return _floordiv_by_positive_int(a, b)
    return _floordiv_atom(a, b)


def _floordiv_atom(a: Dim, b: Dim) -> Expr:
    monomial = ((FloorDiv(a, b), 1),)
    return Expr(((monomial, 1),))


def _floordiv_by_positive_int(a: Expr, divisor: int) -> Dim:
    """``a // divisor`` in one form per value: whole multiples of `divisor` come out of the
    floor and a factor common to what stays and the divisor cancels, so ``(H - 2)//2 + 1``
    and ``H//2`` are one dim, as are ``(H - 1)//2 + 1`` and ``(H + 1)//2``.

    Sound because every monomial takes integer values: ``(q*d + r)*m // d == q*m + r*m // d``.
    """
    whole: dict = {}
    rest: dict = {}
    for monomial, coef in a.terms:
        quotient, remainder = divmod(coef, divisor)
        whole[monomial] = quotient
        if remainder:
            rest[monomial] = remainder
    common = math.gcd(divisor, *rest.values())
    inner = _make({monomial: coef // common for monomial, coef in rest.items()})
    # Not exact, so some remainder is left, and it is not a multiple of the divisor.
    divisor //= common
    return add(_make(whole), inner // divisor if isinstance(inner, int) else _floordiv_atom(inner, divisor))


def free_symbols(dim: Dim) -> frozenset[str]:
    """The symbol names a dim mentions."""
    if not isinstance(dim, Expr):
        return frozenset()
    names: set[str] = set()
    for monomial, _ in dim.terms:
        for atom, _ in monomial:
            names.update((atom,) if isinstance(atom, str) else atom.symbols())
    return frozenset(names)


def substitute(dim: Dim, bindings: Mapping[str, Dim]) -> Dim:
    """Replace bound symbols by their values; unbound symbols stay symbolic."""
    if not isinstance(dim, Expr):
        return dim
    total: Dim = 0
    for monomial, coef in dim.terms:
        value: Dim = coef
        for atom, power in monomial:
            base = _substitute_atom(atom, bindings)
            for _ in range(power):
                value = mul(value, base)
        total = add(total, value)
    return total


def _substitute_atom(atom: Atom, bindings: Mapping[str, Dim]) -> Dim:
    if isinstance(atom, str):
        return bindings.get(atom, Expr.symbol(atom))
    return floordiv(substitute(atom.numerator, bindings), substitute(atom.denominator, bindings))


def evaluate(dim: Dim, bindings: Mapping[str, int], context: str = "") -> int:
    """The integer value of `dim`; raises `UnboundSymbolError` naming what is missing."""
    value = substitute(dim, bindings)
    if isinstance(value, Expr):
        raise UnboundSymbolError(free_symbols(value), context=context)
    return value


def never_negative(dim: Dim) -> bool:
    """Whether `dim` is at least 0 for every value of its symbols (dims are never negative):
    true when every coefficient is, and every atom is a plain symbol (a floor division of a
    difference could be negative, so one proves nothing)."""
    for monomial, coef in _poly(dim).items():
        if coef < 0 or any(not isinstance(atom, str) for atom, _ in monomial):
            return False
    return True


def is_static(dim: Dim) -> bool:
    return isinstance(dim, int)


# --- text -------------------------------------------------------------------------------
def _atom_text(atom: Atom, alone: bool) -> str:
    if isinstance(atom, str):
        return atom
    return str(atom) if alone else f"({atom})"


def _operand_text(dim: Dim) -> str:
    """A dim as an operand of ``//``: parenthesised unless it is a lone atom or integer."""
    if isinstance(dim, int):
        return str(dim) if dim >= 0 else f"({dim})"
    if len(dim.terms) == 1:
        (monomial, coef), = dim.terms
        if coef == 1 and len(monomial) == 1 and monomial[0][1] == 1 and isinstance(monomial[0][0], str):
            return monomial[0][0]
    return f"({format_dim(dim)})"


def _monomial_text(monomial: Monomial, coef: int, after_unary_minus: bool = False) -> str:
    factors = [atom for atom, power in monomial for _ in range(power)]
    # A lone floor-division atom goes bare, except after a leading '-': the reader (like
    # Python) binds unary minus tighter than '//', so "-B//2" would read back as (-B)//2.
    alone = len(factors) == 1 and coef == 1 and not after_unary_minus
    texts = [_atom_text(atom, alone) for atom in factors]
    if coef != 1 or not texts:
        texts.insert(0, str(coef))
    return "*".join(texts)


def format_dim(dim: Dim) -> str:
    """Canonical text of a dim, re-parseable by `parse_dim`."""
    if isinstance(dim, int):
        return str(dim)
    out = []
    for index, (monomial, coef) in enumerate(dim.terms):
        if index == 0:
            out.append("-" + _monomial_text(monomial, -coef, True) if coef < 0 else _monomial_text(monomial, coef))
        elif coef < 0:
            out.append(" - " + _monomial_text(monomial, -coef))
        else:
            out.append(" + " + _monomial_text(monomial, coef))
    return "".join(out)


class DimSyntaxError(ValueError):
    """Bad dim text; `offset` is the 0-based position of the problem in the text."""

    def __init__(self, message: str, offset: int, expected: str):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.expected = expected


class _DimReader:
    """Recursive descent over ``expr := term (('+'|'-') term)*``,
    ``term := unary (('*'|'//') unary)*``, ``unary := '-' unary | INT | NAME | '(' expr ')'``."""

    def __init__(self, text: str, on_symbol: SymbolReader):
        self.text = text
        self.pos = 0
        self.on_symbol = on_symbol

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t\r\n":
            self.pos += 1

    def _peek(self, token: str) -> bool:
        self._skip()
        return self.text.startswith(token, self.pos)

    def read(self) -> Dim:
        value = self._expr()
        self._skip()
        if self.pos != len(self.text):
            raise DimSyntaxError(f"unexpected {self.text[self.pos]!r} in dim", self.pos, "an operator + - * // or the end of the dim")
        return value

    def _expr(self) -> Dim:
        value = self._term()
        while True:
            if self._peek("+"):
                self.pos += 1
                value = add(value, self._term())
            elif self._peek("-"):
                self.pos += 1
                value = sub(value, self._term())
            else:
                return value

    def _term(self) -> Dim:
        value = self._unary()
        while True:
            if self._peek("//"):
                self.pos += 2
                offset = self.pos
                divisor = self._unary()
                if divisor == 0:
                    raise DimSyntaxError("division by zero in dim", offset, "a non-zero divisor")
                value = floordiv(value, divisor)
            elif self._peek("*"):
                self.pos += 1
                value = mul(value, self._unary())
            else:
                return value

    def _unary(self) -> Dim:
        if self._peek("-"):
            self.pos += 1
            return mul(self._unary(), -1)
        self._skip()
        start = self.pos
        text = self.text
        if start >= len(text):
            raise DimSyntaxError("dim ends too early", start, "an integer, a symbol or '('")
        char = text[start]
        if char == "(":
            self.pos += 1
            value = self._expr()
            if not self._peek(")"):
                raise DimSyntaxError("unclosed '(' in dim", self.pos, "')'")
            self.pos += 1
            return value
        if char.isdigit():
            while self.pos < len(text) and text[self.pos].isdigit():
                self.pos += 1
            return int(text[start:self.pos])
        if char.isalpha() or char == "_":
            while self.pos < len(text) and (text[self.pos].isalnum() or text[self.pos] in "_."):
                self.pos += 1
            name = text[start:self.pos]
            return self.on_symbol(name, start)
        raise DimSyntaxError(f"unexpected {char!r} in dim", start, "an integer, a symbol or '('")


def parse_dim(text: str, on_symbol: SymbolReader | None = None) -> Dim:
    """Parse dim text such as ``B*S`` or ``(L+1)//2``.

    `on_symbol(name, offset)` may check a symbol (and raise `DimSyntaxError`) and returns
    the dim to use for it; by default every name is a free symbol.
    """
    reader = _DimReader(text, on_symbol or (lambda name, offset: Expr.symbol(name)))
    return reader.read()
