"""bitcast and reduce_xor: bit patterns read exactly, XOR over axes, the u64 dtype in text."""

from __future__ import annotations

import numpy as np

from rlxir import interpret, parse, print_graph
from rlxir.dtypes import DType
from rlxir.ops import check_attributes, get_op

SOURCE = """
graph g {
  input %x : f32[2, 3]
  %w = cast(%x) {to = f64} : f64[2, 3]
  %b = bitcast(%w) {to = u64} : u64[2, 3]
  %h = reduce_xor(%b) {axes = [1]} : u64[2]
  const %k : u64[] = 18446744073709551615
  %m = reduce_xor(%b) {axes = [0, 1], keepdims = true} : u64[1, 1]
  output %h, %m, %k
}
"""


def reference(op: str, *inputs, **attrs) -> np.ndarray:
    _, full = check_attributes(get_op(op), attrs)
    return get_op(op).reference([np.asarray(value) for value in inputs], full)


def test_bitcast_reads_the_ieee_pattern():
    got = reference("bitcast", np.array([1.5, -0.0, np.inf]), to=DType.u64)
    assert got.dtype == np.uint64
    assert [hex(int(value)) for value in got] == ["0x3ff8000000000000", "0x8000000000000000", "0x7ff0000000000000"]
    assert reference("bitcast", np.array(-1, np.int32), to=DType.u32) == 0xFFFFFFFF  # a 0-d value stays 0-d
    assert reference("bitcast", np.array(-1, np.int32), to=DType.u32).shape == ()


def test_bitcast_there_and_back_is_the_identity_nan_payloads_included():
    values = np.array([np.nan, -np.nan, 1e-310, 3.0]).view(np.uint64) | np.array([5, 0, 0, 0], np.uint64)
    floats = values.view(np.float64)
    back = reference("bitcast", reference("bitcast", floats, to=DType.u64), to=DType.f64)
    np.testing.assert_array_equal(back.view(np.uint64), values)


def test_reduce_xor_over_axes_and_its_identity():
    x = np.array([[1, 2, 4], [7, 7, 0]], np.uint64)
    np.testing.assert_array_equal(reference("reduce_xor", x, axes=[1]), [7, 0])
    np.testing.assert_array_equal(reference("reduce_xor", x, axes=[0, 1], keepdims=True), [[7]])
    np.testing.assert_array_equal(reference("reduce_xor", np.zeros((0, 3), np.int64), axes=[0]), [0, 0, 0])


def test_text_roundtrip_and_interpretation_with_u64():
    graph = parse(SOURCE).main
    text = print_graph(graph)
    assert "u64[1, 1]" in text and print_graph(parse(text).main) == text
    x = np.array([[1.5, 2.0, 1.5], [0.25, -3.0, 8.0]], np.float32)
    out = interpret(graph, {"x": x})
    bits = x.astype(np.float64).view(np.uint64)
    np.testing.assert_array_equal(out["h"], np.bitwise_xor.reduce(bits, axis=1))
    assert out["h"][0] == bits[0, 1]  # the two 1.5s cancel
    assert out["k"] == 2 ** 64 - 1
