"""Custom ops through the public API: `register_op(OpDef(...))`, then parse, verify, print."""

from __future__ import annotations

import pytest

import rlxir
from rlxir import AttrSpec, OpDef, ShapeError, TensorType, register_op
from rlxir.ops import registry as registry_module
from rlxir.symbolic import exact_div

SWIGLU_GRAPH = """graph g(B, S) {
  input %x : f32[B, S, 8]
  %y = test.swiglu(%x) : f32[B, S, 4]
  %z = test.swiglu(%y) {limit = 2.5} : f32[B, S, 2]
  output %z
}
"""


@pytest.fixture(autouse=True)
def scoped_registry(monkeypatch):
    """Every op registered by a test here is gone after it."""
    monkeypatch.setattr(registry_module, "_OPS", dict(registry_module._OPS))


def swiglu_rule(types, attrs) -> TensorType:
    """silu(a) * b for the two halves a, b of the last axis: the last dim halves."""
    x = types[0]
    half = exact_div(x.shape[-1], 2) if x.rank else None
    if half is None:
        raise ShapeError(f"swiglu splits the last axis in two halves, got {x}", operand=0, expected="an even last dim")
    return x.with_shape(x.shape[:-1] + (half,))


def swiglu() -> OpDef:
    return OpDef(
        "test.swiglu", 1, 1, swiglu_rule,
        {"limit": AttrSpec("float", 0.0, doc="clamp bound; 0 for none")},
        frozenset({"fused"}), ("x",), "gated linear unit with a SiLU gate",
    )


def test_a_registered_op_parses_verifies_and_prints():
    register_op(swiglu())
    module = rlxir.parse(SWIGLU_GRAPH)
    graph = module.main
    rlxir.verify(graph)
    assert str(graph.type("z")) == "f32[B, S, 2]"
    printed = rlxir.print_module(module)
    assert "%z = test.swiglu(%y) {limit = 2.5} : f32[B, S, 2]" in printed
    assert "%y = test.swiglu(%x) : f32[B, S, 4]" in printed  # the default is not written
    assert rlxir.parse(printed).equals(module)
    rlxir.verify(graph.bind(B=2, S=3))


def test_a_registered_op_is_listed_with_its_definition():
    opdef = register_op(swiglu())
    assert rlxir.get_op("test.swiglu") is opdef
    assert rlxir.registered_ops()["test.swiglu"].has("fused")


def test_a_custom_shape_rule_error_points_at_its_operand():
    register_op(swiglu())
    text = "graph g {\n  input %x : f32[3, 7]\n  %y = test.swiglu(%x)\n  output %y\n}\n"
    with pytest.raises(rlxir.IRTypeError, match="splits the last axis in two halves") as caught:
        rlxir.parse(text)
    assert (caught.value.line, caught.value.col) == (3, 20)
    assert caught.value.expected == "an even last dim"


def test_custom_attributes_are_checked_against_the_schema():
    register_op(swiglu())
    text = "graph g {\n  input %x : f32[4]\n  %y = test.swiglu(%x) {limit = true}\n  output %y\n}\n"
    with pytest.raises(rlxir.IRTypeError, match="attribute 'limit' of 'test.swiglu' must be a number"):
        rlxir.parse(text)
    with pytest.raises(rlxir.IRTypeError, match="unknown attribute 'axis'"):
        rlxir.parse(text.replace("limit = true", "axis = 1"))


def test_custom_arity_is_checked():
    register_op(swiglu())
    text = "graph g {\n  input %x : f32[4]\n  %y = test.swiglu(%x, %x)\n  output %y\n}\n"
    with pytest.raises(rlxir.IRTypeError, match="test.swiglu takes 1 operand, got 2"):
        rlxir.parse(text)


def test_a_second_op_of_the_same_name_is_refused():
    first = register_op(swiglu())
    with pytest.raises(ValueError, match="'test.swiglu' is already registered"):
        register_op(swiglu())
    assert rlxir.get_op("test.swiglu") is first


def test_a_core_op_cannot_be_shadowed_by_accident():
    add = rlxir.get_op("add")
    with pytest.raises(ValueError, match="'add' is already registered"):
        register_op(OpDef("add", 2, 2, swiglu_rule))
    assert rlxir.get_op("add") is add


def test_replace_swaps_the_definition():
    register_op(swiglu())
    replacement = OpDef("test.swiglu", 1, 1, lambda types, attrs: types[0])
    assert register_op(replacement, replace=True) is replacement
    text = "graph g {\n  input %x : f32[3]\n  %y = test.swiglu(%x)\n  output %y\n}\n"
    assert str(rlxir.parse(text).main.type("y")) == "f32[3]"


@pytest.mark.parametrize("keyword", ["input", "param", "const"])
def test_statement_keywords_are_not_op_names(keyword):
    with pytest.raises(ValueError, match="statement keyword"):
        register_op(OpDef(keyword, 1, 1, swiglu_rule))


def test_an_unregistered_op_is_a_located_error():
    text = "graph g {\n  input %x : f32[4]\n  %y = test.swiglu(%x)\n  output %y\n}\n"
    with pytest.raises(rlxir.IRTypeError, match="unknown op 'test.swiglu'") as caught:
        rlxir.parse(text)
    assert caught.value.line == 3
