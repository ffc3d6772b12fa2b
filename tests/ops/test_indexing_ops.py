"""gather_elements, scatter_elements, topk, mod/fmod, floor/ceil: NumPy semantics, and every target compiles them."""

from __future__ import annotations

import numpy as np
import pytest

from rlxir import RlxError, interpret, parse
from rlxir.compiler.compile import compile

SOURCE = """
graph indexing(B) {
  input %x : f32[B, 6]
  input %i : i64[B, 3]
  const %x3 : f32[] = -3.0
  %g = gather_elements(%x, %i) {axis = 1} : f32[B, 3]
  %s = scatter_elements(%x, %i, %g) {axis = 1, reduction = "add"} : f32[B, 6]
  %t = topk(%s) {k = 2} : i64[B, 2]
  %v = gather_elements(%s, %t) {axis = 1} : f32[B, 2]
  %m = mod(%v, %x3) : f32[B, 2]
  %f = fmod(%v, %x3) : f32[B, 2]
  %fl = floor(%f) : f32[B, 2]
  %c = ceil(%m) : f32[B, 2]
  output %g, %s, %t, %v, %m, %f, %fl, %c
}
"""


def _graph():
    return parse(SOURCE).main


def test_references_follow_numpy_semantics():
    x = np.array([[1, 5, 2, 4, 3, 0]], np.float32)
    i = np.array([[1, 1, 3]])
    out = interpret(_graph(), {"x": x, "i": i}, bindings={"B": 1})
    values = list(out.values()) if isinstance(out, dict) else list(out)
    g, s, t, v, m, f = values[:6]
    np.testing.assert_array_equal(g, [[5, 5, 4]])
    np.testing.assert_array_equal(s, [[1, 15, 2, 8, 3, 0]])  # repeated indices all add
    np.testing.assert_array_equal(t, [[1, 3]])
    np.testing.assert_array_equal(v, [[15, 8]])
    np.testing.assert_array_equal(m, np.mod(v, -3.0))
    np.testing.assert_array_equal(f, np.fmod(v, -3.0))


def test_out_of_range_index_is_an_error():
    with pytest.raises(RlxError, match="out of range"):
        interpret(_graph(), {"x": np.zeros((1, 6), np.float32), "i": np.array([[0, 6, 1]])}, bindings={"B": 1})


@pytest.mark.parametrize("target", ["cpu", "cuda", "rocm", "metal", "gpu", "vulkan"])
def test_every_target_compiles_the_new_ops(target):
    result = compile(_graph(), target, {"B": 2})
    assert result is not None
