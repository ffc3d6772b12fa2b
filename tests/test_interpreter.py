"""The reference interpreter: binding, feeding, filling, errors, lowered graphs, the examples."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir import AttrSpec, OpDef, RlxError, UnboundSymbolError, interpret, parse, parse_file
from rlxir.interpreter import random_feeds
from rlxir.ops import registry as registry_module
from rlxir.ops.core import unary_rule
from rlxir.pass_machinery.pass_base import PassContext
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.targets.target import available_targets, get_target

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SMALL_SIZES = {"B": 2, "S": 8}

MLP = """\
graph mlp(B, S=1) {
  input %x  : f32[B, 8]
  param %w1 : f32[8, 6]
  param %b1 : f32[6]
  const %half : f32[] = 0.5
  const %shift : f32[2, 3] = [1, 2, 3, 4, 5, 6]
  %h = linear(%x, %w1, %b1)
  %a = gelu(%h) {approximate = true}
  %s = mul(%a, %half)
  %r = reshape(%s) {shape = [-1, 2, 3]}
  %t = add(%r, %shift)
  %p = softmax(%h)
  output %p, %t
}
"""


def mlp():
    return parse(MLP).main


def test_runs_a_graph_on_given_data():
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 8)
    w1 = np.full((8, 6), 0.1, np.float32)
    b1 = np.arange(6, dtype=np.float32)
    results = interpret(mlp(), {"x": x}, {"%w1": w1, "b1": b1}, bindings={"B": 2})
    assert list(results) == ["p", "t"]
    h = x @ w1 + b1
    expected_p = np.exp(h - h.max(-1, keepdims=True))
    expected_p /= expected_p.sum(-1, keepdims=True)
    np.testing.assert_allclose(results["p"], expected_p, rtol=1e-6)
    gelu = 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
    expected_t = (gelu * 0.5).reshape(2, 2, 3) + np.arange(1, 7).reshape(2, 3)
    np.testing.assert_allclose(results["t"], expected_t, rtol=1e-5)
    assert results["t"].dtype == np.float32 and results["t"].shape == (2, 2, 3)


def test_missing_values_are_filled_deterministically_per_name():
    first = interpret(mlp(), bindings={"B": 2}, seed=3)
    again = interpret(mlp(), bindings={"B": 2}, seed=3)
    other = interpret(mlp(), bindings={"B": 2}, seed=4)
    np.testing.assert_array_equal(first["p"], again["p"])
    assert not np.array_equal(first["p"], other["p"])
    inputs, params = random_feeds(mlp(), {"B": 2}, seed=3)
    given_x = interpret(mlp(), {"x": inputs["x"]}, bindings={"B": 2}, seed=3)
    np.testing.assert_array_equal(given_x["p"], first["p"])  # giving x leaves the params' fill alone
    assert set(params) == {"w1", "b1"} and 0.3 < inputs["x"].std() < 0.7


def test_symbols_use_defaults_and_bindings():
    text = "graph g(B, S=3) {\n  input %x : f32[B, S]\n  %y = neg(%x)\n  output %y\n}\n"
    assert interpret(parse(text).main, bindings={"B": 2})["y"].shape == (2, 3)
    assert interpret(parse(text).main, bindings={"B": 2, "S": 5})["y"].shape == (2, 5)


def test_an_unbound_symbol_is_an_error_naming_it():
    with pytest.raises(UnboundSymbolError) as caught:
        interpret(mlp())
    assert caught.value.symbols == ("B",)
    assert "-D B=VALUE" in caught.value.render()


def test_a_wrong_shape_names_the_value():
    with pytest.raises(RlxError, match=r"input %x was given an array of shape \[2, 3\], but its type is f32\[2, 8\]"):
        interpret(mlp(), {"x": np.zeros((2, 3), np.float32)}, bindings={"B": 2})


def test_a_wrong_dtype_names_the_value():
    with pytest.raises(RlxError, match=r"param %w1 was given float64 data"):
        interpret(mlp(), params={"w1": np.zeros((8, 6))}, bindings={"B": 2})


def test_unknown_names_are_errors():
    with pytest.raises(RlxError, match="has no input %w1"):
        interpret(mlp(), {"w1": np.zeros((8, 6), np.float32)}, bindings={"B": 2})
    with pytest.raises(RlxError, match="has no symbol Q"):
        interpret(mlp(), bindings={"B": 2, "Q": 1})


def test_gather_indices_are_filled_within_the_table():
    text = """graph g(B=4, S=16) {
  input %ids : i32[B, S]
  input %flat : i64[B*S]
  param %table : f32[5, 3]
  %e = gather(%table, %ids)
  %shaped = reshape(%flat) {shape = [B, S]}
  %cols = gather(%table, %shaped) {axis = 1}
  output %e, %cols
}
"""
    graph = parse(text).main
    inputs, _ = random_feeds(graph, seed=1)
    assert inputs["ids"].dtype == np.int32 and set(np.unique(inputs["ids"])) == set(range(5))
    assert inputs["flat"].dtype == np.int64 and set(np.unique(inputs["flat"])) == set(range(3))
    results = interpret(graph, seed=1)
    assert results["e"].shape == (4, 16, 3) and results["cols"].shape == (5, 4, 16)


def test_fills_respect_the_sign_the_math_needs_and_bools_are_mixed():
    text = """graph g {
  input %x : f32[2, 3, 4, 4]
  param %scale : f32[3]
  param %bias : f32[3]
  param %mean : f32[3]
  param %var : f32[3]
  input %flags : bool[64]
  %y = batchnorm(%x, %scale, %bias, %mean, %var)
  %l = log(%var)
  output %y, %l, %flags
}
"""
    inputs, params = random_feeds(parse(text).main)
    assert (params["var"] > 0).all()
    assert inputs["flags"].dtype == np.bool_ and 0 < inputs["flags"].sum() < 64
    assert all(np.isfinite(value).all() for value in interpret(parse(text).main).values())


def test_bf16_values_carry_bf16_precision():
    text = "graph g {\n  input %x : bf16[64]\n  const %c : bf16[] = 0.1\n  %y = mul(%x, %c)\n  output %y\n}\n"
    result = interpret(parse(text).main)["y"]
    assert result.dtype == np.float32
    assert not np.any(result.view(np.uint32) & 0xFFFF)


def test_casts_between_dtypes():
    text = """graph g {
  const %x : f32[4] = [1.5, -2.25, 0.0, 3.75]
  %i = cast(%x) {to = i32}
  %h = cast(%x) {to = f16}
  %b = gt(%x, %x)
  output %i, %h, %b
}
"""
    results = interpret(parse(text).main)
    np.testing.assert_array_equal(results["i"], [1, -2, 0, 3])
    assert results["h"].dtype == np.float16 and results["b"].dtype == np.bool_


@pytest.fixture
def registry(monkeypatch):
    """Registers test ops and annotations for one test only."""
    class Scoped:
        @staticmethod
        def annotation(key, spec):
            monkeypatch.setitem(registry_module._ANNOTATIONS, key, spec)

        @staticmethod
        def op(opdef):
            monkeypatch.setitem(registry_module._OPS, opdef.name, opdef)

    return Scoped


def test_lowered_graphs_run_with_their_annotations(registry):
    registry.annotation("kernel", AttrSpec("str", doc="the kernel a backend runs"))
    registry.annotation("workspace", AttrSpec("int", doc="scratch bytes"))
    registry.annotation("view_of", AttrSpec("str", doc="the aliased buffer"))
    registry.annotation("view_offset", AttrSpec("int", doc="offset in the aliased buffer"))
    text = """graph g {
  input %x : f32[4, 8]
  param %w : f32[8, 6]
  %h = matmul(%x, %w) {kernel = "gemm", workspace = 4194304} : f32[4, 6]
  %v = reshape(%h) {shape = [24], view_of = "%h", view_offset = 0} : f32[24]
  output %v
}
"""
    plain = text.replace(' {kernel = "gemm", workspace = 4194304}', "").replace(', view_of = "%h", view_offset = 0', "")
    np.testing.assert_array_equal(interpret(parse(text).main)["v"], interpret(parse(plain).main)["v"])


def test_an_op_without_a_reference_is_a_located_error(registry):
    registry.op(OpDef("test_interpreter_opaque", 1, 1, unary_rule, traits={"elementwise"}))
    text = "graph g {\n  input %x : f32[3]\n  %y = test_interpreter_opaque(%x)\n  output %y\n}\n"
    with pytest.raises(RlxError, match="no NumPy reference") as caught:
        interpret(parse(text).main)
    assert caught.value.line == 3


def test_custom_ops_run_their_own_reference(registry):
    registry.op(OpDef("test_interpreter_double", 1, 1, unary_rule, reference=lambda inputs, attrs: inputs[0] * 2))
    text = "graph g {\n  const %x : f32[3] = [1, 2, 3]\n  %y = test_interpreter_double(%x)\n  output %y\n}\n"
    np.testing.assert_array_equal(interpret(parse(text).main)["y"], [2, 4, 6])


def test_a_failing_reference_is_reported_at_its_node():
    text = "graph g {\n  const %t : f32[3, 2] = 0.0\n  const %i : i32[2] = [0, 7]\n  %y = gather(%t, %i)\n  output %y\n}\n"
    with pytest.raises(RlxError, match="gather index 7 is out of range") as caught:
        interpret(parse(text).main)
    assert caught.value.line == 4


def test_is_exported_from_the_package():
    assert rlxir.interpret is interpret


def _example_graphs():
    files = sorted(EXAMPLES.glob("*.rlx"))
    assert files, f"no examples in {EXAMPLES}"
    return [pytest.param(path, id=path.stem) for path in files]


@pytest.mark.parametrize("path", _example_graphs())
def test_every_example_runs_at_small_sizes(path):
    for graph in parse_file(path):
        bindings = {symbol: value for symbol, value in SMALL_SIZES.items() if symbol in graph.symbols}
        results = interpret(graph, bindings=bindings)
        bound = graph.bind({**graph.bound_symbols(), **bindings})
        assert list(results) == list(dict.fromkeys(bound.outputs))
        for name, array in results.items():
            assert array.shape == bound.type(name).static_shape(), name
            assert array.dtype == bound.type(name).dtype.numpy, name
            assert np.isfinite(array).all() if array.dtype.kind in "fc" else True, name


PIPELINE_EXAMPLES = ("mlp", "gpt2_block", "mamba_block")


def _pipeline_cases():
    return [pytest.param(example, target, id=f"{example}-{target}")
            for example in PIPELINE_EXAMPLES for target in sorted(available_targets())]


@pytest.mark.parametrize("example, target", _pipeline_cases())
def test_a_targets_lowered_graph_computes_what_its_source_computes(example, target):
    graph = parse_file(EXAMPLES / f"{example}.rlx").main
    graph = graph.bind({symbol: value for symbol, value in SMALL_SIZES.items() if symbol in graph.symbols})
    inputs, params = random_feeds(graph)
    lowered = run_pipeline(graph, get_target(target).pipeline, ctx=PassContext(target=get_target(target)))
    expected = interpret(graph, inputs, params).values()
    actual = interpret(lowered, inputs, params).values()  # outputs keep their order through rewrites
    for want, got in zip(expected, actual):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


ROUNDED = """\
graph rounded() {
  input %x : f32[64]
  const %k : f32[16] = [0.1, 0.7, 1.3, 2.9, -0.4, 5.5, 3.3, 0.01, 0.25, -1.7, 0.9, 4.1, -2.2, 0.33, 1.01, -0.05]
  const %kh : f16[16] = [0.1, 0.7, 1.3, 2.9, -0.4, 5.5, 3.3, 0.01, 0.25, -1.7, 0.9, 4.1, -2.2, 0.33, 1.01, -0.05]
  const %kb : bf16[16] = [0.1, 0.7, 1.3, 2.9, -0.4, 5.5, 3.3, 0.01, 0.25, -1.7, 0.9, 4.1, -2.2, 0.33, 1.01, -0.05]
  %e = exp(%k) : f32[16]
  %g = tanh(%kh) : f16[16]
  %c = tanh(%kb) : bf16[16]
  %f = floor(%e) : f32[16]
  %t = transpose(%x) {perm = [0]} : f32[64]
  %u = transpose(%e) {perm = [0]} : f32[16]
  output %e, %g, %c, %f, %t, %u
}
"""


def _ulps_apart(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """How many representable values of their dtype lie between two arrays' elements."""
    unsigned = {2: np.int16, 4: np.int32, 8: np.int64}[first.dtype.itemsize]
    return np.abs(first.view(unsigned).astype(np.int64) - second.view(unsigned).astype(np.int64))


def test_rounding_again_moves_each_computed_float_by_one_or_two_units_in_the_last_place():
    """A value's spacing at 1 times the value is 1 to 2 of its own units in the last place, so
    the move is never lost to rounding back (a half-unit move of a float32 is, half the time)."""
    graph = parse(ROUNDED).main
    exact, moved = interpret(graph), rlxir.interpreter.interpret_rounded_again(graph)
    for name in ("e", "g", "t"):  # t: the input %x moved (inputs and params round too), then only moved about
        fractional = exact[name] != np.round(exact[name])  # tanh(5.5) is 1.0 in f16: whole, so exact
        apart = _ulps_apart(exact[name], moved[name])[fractional]
        assert apart.min() >= 1 and apart.max() <= 2, name
        assert (moved[name] > exact[name]).any() and (moved[name] < exact[name]).any()  # up and down
    # bf16 is held as float32 on bf16's grid: the move is one or two bf16 units, still on the grid
    bf16_units = (_ulps_apart(exact["c"], moved["c"]) >> 16)[exact["c"] != np.round(exact["c"])]
    assert bf16_units.min() >= 1 and bf16_units.max() <= 2
    assert not (moved["c"].view(np.uint32) & 0xFFFF).any()


def test_rounding_again_leaves_whole_numbers_and_moved_elements_as_they_are():
    """floor's results are whole numbers (exact: no rounding moves them); a transpose moves
    elements without computing, so it holds its operand's already-moved values unchanged;
    consts are as written."""
    graph = parse(ROUNDED).main
    exact, moved = interpret(graph), rlxir.interpreter.interpret_rounded_again(graph)
    np.testing.assert_array_equal(moved["f"], exact["f"])
    np.testing.assert_array_equal(moved["u"], moved["e"])
    assert rlxir.interpreter.interpret_rounded_again(graph, seed=1)["e"].tolist() != moved["e"].tolist()
