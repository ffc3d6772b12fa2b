"""A chain written by `format_chain` reads back as the very steps it was written from, and
`parse_chain` serves the remembered steps only where reading would give the same."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.ops import ShapeError
from rlxir.ops.chain import _WRITTEN, ChainStep, _read_chain, format_chain, parse_chain
from rlxir.ops.registry import registered_ops
from rlxir.symbolic import Expr

ELEMENTWISE = sorted(name for name, opdef in registered_ops().items()
                     if opdef.has("elementwise") and name != "fused_elementwise")
KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
LEAVES = st.one_of(
    st.booleans(),
    st.integers(min_value=-(10**19) + 1, max_value=10**19 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.sampled_from(list(DType)),
)
VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)


@st.composite
def chains(draw) -> tuple[ChainStep, ...]:
    steps = []
    for index in range(draw(st.integers(1, 5))):
        refs = st.one_of(st.tuples(st.just("$"), st.integers(0, 4)),
                         *([st.tuples(st.just("%"), st.integers(0, index - 1))] if index else []))
        args = tuple(draw(st.lists(refs, min_size=1, max_size=3)))
        attributes = draw(st.dictionaries(KEYS, VALUES, max_size=3))
        steps.append(ChainStep(draw(st.sampled_from(ELEMENTWISE)), args, tuple(attributes.items())))
    return tuple(steps)


@settings(max_examples=300, deadline=None)
@given(chains())
def test_a_written_chain_reads_back_as_its_steps(steps):
    text = format_chain(steps)
    _WRITTEN.pop(text, None)
    assert _read_chain(text) == steps  # the reader itself, not the remembered steps
    assert parse_chain(format_chain(steps)) == steps


def test_parse_chain_serves_the_written_steps_without_reading():
    steps = (ChainStep("mul", (("$", 0), ("$", 1)), ()), ChainStep("gelu", (("%", 0),), (("approximate", True),)))
    text = format_chain(steps)
    assert parse_chain(text) is _WRITTEN[text]


@pytest.mark.parametrize("value", [[1, 2], Expr.symbol("B"), math.nan, 10**19, 2.5j])
def test_values_the_text_cannot_give_back_are_read_from_the_text(value):
    steps = (ChainStep("add", (("$", 0), ("$", 1)), (("alpha", value),)),)
    text = format_chain(steps)
    assert text not in _WRITTEN
    try:
        read = parse_chain(text)
    except ShapeError:
        return  # a symbolic size or an oversized integer: refused as before
    assert read[0].attrs[0][0] == "alpha"
    assert read != steps or isinstance(value, float)


@pytest.mark.parametrize("steps, words", [
    ((ChainStep("softmax", (("$", 0),), ()),), "not an elementwise op"),
    ((ChainStep("exp", (("%", 0),), ()),), "reads %0 before it is computed"),
])
def test_steps_that_are_no_chain_are_not_remembered(steps, words):
    text = format_chain(steps)
    assert text not in _WRITTEN
    with pytest.raises(ShapeError, match=words):
        parse_chain(text)
