"""Symbolic dims: canonical form, text, exact and floor division, evaluation and binding."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlxir
from rlxir import DType, Expr, TensorType, UnboundSymbolError, format_dim, parse_dim
from rlxir.symbolic import (
    DimSyntaxError,
    add,
    evaluate,
    exact_div,
    floordiv,
    free_symbols,
    is_static,
    mul,
    sub,
    substitute,
)

B, S, L = Expr.symbol("B"), Expr.symbol("S"), Expr.symbol("L")


# --- canonical form ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "left, right",
    [
        ("2*L*B", "B*L*2"),
        ("B + S", "S + B"),
        ("(B + 1)*(B - 1)", "B*B - 1"),
        ("B*(S + 2)", "2*B + S*B"),
        ("B - S + S", "B"),
        ("B*S*768//(12*B)", "64*S"),
    ],
)
def test_equal_polynomials_are_equal_dims(left, right):
    assert parse_dim(left) == parse_dim(right)
    assert hash(parse_dim(left)) == hash(parse_dim(right))
    assert format_dim(parse_dim(left)) == format_dim(parse_dim(right))


def test_built_and_parsed_dims_agree():
    assert mul(mul(2, L), B) == parse_dim("B*L*2")
    assert add(B, 1) == parse_dim("1 + B")
    assert sub(S, B) == parse_dim("S - B")


@pytest.mark.parametrize("text, value", [("B - B", 0), ("B*0 + 7", 7), ("B*S - S*B + 4", 4), ("(B + S)//(S + B)", 1)])
def test_dims_that_fold_to_a_constant_are_ints(text, value):
    dim = parse_dim(text)
    assert dim == value
    assert type(dim) is int
    assert is_static(dim)


def test_different_polynomials_differ():
    assert parse_dim("B*S") != parse_dim("B + S")
    assert parse_dim("2*B") != parse_dim("B")
    assert parse_dim("B") != 1
    assert parse_dim("B*(S//2)") != parse_dim("B*S//2")


# --- text -------------------------------------------------------------------------------
def assert_canonical(text: str, canonical: str):
    """TEXT parses to a dim that prints as CANONICAL, which parses back to the same dim."""
    dim = parse_dim(text)
    assert format_dim(dim) == canonical
    assert parse_dim(canonical) == dim
    return dim


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("S*B*2", "2*B*S"),
        ("B*S + 1 + B", "B*S + B + 1"),
        ("(B+1)*(B-1)", "B*B - 1"),
        ("S - B", "-B + S"),
        ("(L+1)//2", "(L + 1)//2"),
        ("2*((L+1)//2)", "2*((L + 1)//2)"),
        ("((L+1)//2)*B", "B*((L + 1)//2)"),
        ("B*S//2", "(B*S)//2"),
        ("B*(S//2)", "B*(S//2)"),
        ("(L//2)//2", "(L//2)//2"),
        ("6//B", "6//B"),
        ("-(B//2)", "-(B//2)"),
        ("-(B//2) + S", "S - B//2"),
        ("(-B)//2", "-B + B//2"),
        ("h.dim * 2", "2*h.dim"),
    ],
)
def test_canonical_text_reads_back_to_the_same_dim(text, canonical):
    assert_canonical(text, canonical)


def test_a_negated_floor_division_keeps_its_parentheses():
    # Unary minus binds tighter than // (as in Python), so -(B//2) must not print as -B//2.
    negated = mul(floordiv(B, 2), -1)
    assert format_dim(negated) == "-(B//2)"
    assert parse_dim(format_dim(negated)) == negated
    assert evaluate(negated, {"B": 3}) == -1
    assert evaluate(parse_dim("-B//2"), {"B": 3}) == -2


@pytest.mark.parametrize(
    "text, offset",
    [("B +", 3), ("(B", 2), ("B $", 2), ("", 0), ("B//0", 3), ("2 B", 2)],
)
def test_bad_dim_text_is_a_located_error(text, offset):
    with pytest.raises(DimSyntaxError) as caught:
        parse_dim(text)
    assert caught.value.offset == offset
    assert caught.value.expected


def test_a_symbol_check_can_refuse_names():
    def only_b(name, offset):
        if name != "B":
            raise DimSyntaxError(f"unknown symbol {name!r}", offset, "B")
        return Expr.symbol(name)

    assert parse_dim("2*B", only_b) == mul(2, B)
    with pytest.raises(DimSyntaxError) as caught:
        parse_dim("B*S", only_b)
    assert caught.value.offset == 2


def test_dims_print_canonically_in_parsed_graph_types():
    text = "graph g(B, S) {\n  input %x : f32[S*B*2, (S+1)//2]\n  output %x\n}\n"
    module = rlxir.parse(text)
    assert "f32[2*B*S, (S + 1)//2]" in rlxir.print_module(module)
    assert rlxir.parse(rlxir.print_module(module)).equals(module)


# --- division ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "numerator, denominator, quotient",
    [
        ("2*B*S", "B", "2*S"),
        ("768*B*S", "12*B", "64*S"),
        ("B*S + B", "B", "S + 1"),
        ("4*B + 6", "2", "2*B + 3"),
        ("2*B + 2", "B + 1", "2"),
        ("0", "B", "0"),
    ],
)
def test_exact_division(numerator, denominator, quotient):
    assert exact_div(parse_dim(numerator), parse_dim(denominator)) == parse_dim(quotient)
    assert floordiv(parse_dim(numerator), parse_dim(denominator)) == parse_dim(quotient)


@pytest.mark.parametrize(
    "numerator, denominator",
    [("B + 1", "2"), ("3*B", "2"), ("B", "S"), ("6", "B"), ("B*B + 2*B + 1", "B + 1"), ("B", "0")],
)
def test_inexact_division_is_refused(numerator, denominator):
    assert exact_div(parse_dim(numerator), parse_dim(denominator)) is None


def test_inexact_floor_division_is_an_opaque_atom():
    half = floordiv(add(L, 1), 2)
    assert isinstance(half, Expr)
    assert format_dim(half) == "(L + 1)//2"
    assert free_symbols(half) == {"L"}
    assert half == parse_dim("(1 + L)//2")
    assert mul(half, 2) != add(L, 1)  # (L+1)//2*2 is not L+1 for even L
    assert [evaluate(half, {"L": value}) for value in (0, 1, 4, 5)] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("(H - 2)//2 + 1", "H//2"),
        ("(H - 1)//2 + 1", "(H + 1)//2"),
        ("(H + 2 - 3)//2 + 1", "(H + 1)//2"),
        ("(2*H)//4", "H//2"),
        ("(6*H + 3)//4", "H + (2*H + 3)//4"),
        ("(2*H + 2*S + 1)//2", "H + S"),
        ("(3*H - 7)//3", "H - 3"),
    ],
)
def test_floor_division_by_an_integer_has_one_form_per_value(text, canonical):
    # Whole multiples of the divisor leave the floor and common factors cancel, so spellings
    # of one value (a conv's (H + 2*pad - k)//stride + 1 among them) compare equal.
    dim = assert_canonical(text, canonical)
    for value in (-3, 0, 1, 2, 7, 10):
        assert evaluate(dim, {"H": value, "S": 5}) == eval(text.replace("H", f"({value})").replace("S", "5"))


def test_floor_division_atoms_combine_like_symbols():
    half = floordiv(L, 2)
    assert add(half, half) == mul(2, half)
    assert sub(half, half) == 0
    assert free_symbols(mul(half, B)) == {"L", "B"}


def test_division_by_zero_is_refused():
    with pytest.raises(ZeroDivisionError):
        floordiv(B, 0)
    with pytest.raises(ZeroDivisionError):
        floordiv(6, 0)


# --- evaluation and binding -------------------------------------------------------------
def test_evaluate_and_substitute():
    dim = parse_dim("B*S + (S + 1)//2")
    assert evaluate(dim, {"B": 3, "S": 5}) == 18
    partial = substitute(dim, {"S": 5})
    assert partial == parse_dim("5*B + 3")
    assert substitute(dim, {}) == dim
    assert evaluate(7, {}) == 7


def test_unbound_symbol_error_names_the_symbol():
    with pytest.raises(UnboundSymbolError) as caught:
        evaluate(parse_dim("B*S*L"), {"B": 2}, context="sizing %x")
    error = caught.value
    assert error.symbols == ("L", "S")
    assert "unbound symbols L, S sizing %x" in error.message
    assert "-D L=VALUE" in error.expected


def test_unbound_symbol_inside_a_floor_division_is_named():
    with pytest.raises(UnboundSymbolError) as caught:
        evaluate(parse_dim("(L + 1)//2 + B"), {"B": 1})
    assert caught.value.symbols == ("L",)


def test_tensor_type_binding_and_sizes():
    type_ = TensorType(DType.f16, (B, parse_dim("S//2"), 64))
    assert type_.numel == parse_dim("64*B*(S//2)")
    assert type_.symbols == {"B", "S"}
    bound = type_.bind({"B": 8, "S": 33})
    assert bound == TensorType(DType.f16, (8, 16, 64))
    assert bound.nbytes() == 8 * 16 * 64 * 2
    assert type_.nbytes({"B": 8, "S": 33}, itemsize=4) == 8 * 16 * 64 * 4
    with pytest.raises(UnboundSymbolError) as caught:
        type_.nbytes({"B": 8})
    assert caught.value.symbols == ("S",)


def test_graph_bind_specialises_every_type():
    text = (
        "graph g(B, S=4) {\n"
        "  input %x : f32[B, S, 8]\n"
        "  %y = reshape(%x) {shape = [B*S, -1]}\n"
        "  output %y\n"
        "}\n"
    )
    graph = rlxir.parse(text).main
    assert str(graph.type("y")) == "f32[B*S, 8]"
    bound = graph.bind(B=3)
    rlxir.verify(bound)
    assert bound.symbols == {"S": 4}
    assert str(bound.type("y")) == "f32[3*S, 8]"
    assert str(graph.bind(B=3, S=5).type("y")) == "f32[15, 8]"
    assert graph.bound_symbols({"B": 3}) == {"B": 3, "S": 4}


@pytest.mark.parametrize("bindings, message", [({"T": 2}, "has no symbol T"), ({"B": -1}, "non-negative integer")])
def test_graph_bind_refuses_bad_bindings(bindings, message):
    graph = rlxir.parse("graph g(B) {\n  input %x : f32[B]\n  output %x\n}\n").main
    with pytest.raises(rlxir.RlxError, match=message):
        graph.bind(bindings)


# --- properties -------------------------------------------------------------------------
SYMBOLS = ("B", "S", "L", "h.d")


def _dims(max_leaves: int = 8):
    leaves = st.one_of(st.integers(-9, 40), st.sampled_from(SYMBOLS).map(Expr.symbol))

    def _divide(pair):
        numerator, denominator = pair
        return numerator if denominator == 0 else floordiv(numerator, denominator)

    def _combine(children):
        pairs = st.tuples(children, children)
        return st.one_of(
            pairs.map(lambda pair: add(*pair)),
            pairs.map(lambda pair: sub(*pair)),
            pairs.map(lambda pair: mul(*pair)),
            pairs.map(_divide),
        )

    return st.recursive(leaves, _combine, max_leaves=max_leaves)


BINDINGS = st.fixed_dictionaries({symbol: st.integers(-4, 40) for symbol in SYMBOLS})
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _value(dim, bindings):
    try:
        return evaluate(dim, bindings)
    except ZeroDivisionError:  # a floor-division atom whose divisor is 0 at these values
        assume(False)


@PROPERTY
@given(_dims())
def test_text_round_trip(dim):
    text = format_dim(dim)
    assert parse_dim(text) == dim
    assert format_dim(parse_dim(text)) == text


@PROPERTY
@given(_dims(), _dims(), BINDINGS)
def test_evaluation_commutes_with_arithmetic(left, right, bindings):
    left_value, right_value = _value(left, bindings), _value(right, bindings)
    assert evaluate(add(left, right), bindings) == left_value + right_value
    assert evaluate(sub(left, right), bindings) == left_value - right_value
    assert evaluate(mul(left, right), bindings) == left_value * right_value
    if right_value != 0:
        assert evaluate(floordiv(left, right), bindings) == left_value // right_value


@PROPERTY
@given(_dims(), BINDINGS)
def test_substituting_everything_equals_evaluating(dim, bindings):
    value = _value(dim, bindings)
    assert substitute(dim, bindings) == value
    assert evaluate(parse_dim(format_dim(dim)), bindings) == value


def test_never_negative_holds_only_where_every_value_of_the_symbols_agrees():
    from rlxir.symbolic import never_negative

    b, s = Expr.symbol("B"), Expr.symbol("S")
    assert never_negative(3 * b) and never_negative(b * s + 2) and never_negative(0)
    assert not never_negative(b - 1) and not never_negative(s - b) and not never_negative(-2)
    assert not never_negative(floordiv(s - 8, 2))  # a floor division of a difference proves nothing
