"""Buffers and lifetimes of a lowered graph (docs/lir.md, "Buffers")."""

from __future__ import annotations

import pytest

import rlxir
from rlxir.errors import RlxError
from rlxir.compiler.lifetimes import graph_buffers

LIR = """\
graph g {
  input %x : f32[4, 8]
  param %w : f32[8, 8]
  %h = matmul(%x, %w) {kernel_family = "gemm"} : f32[4, 8]
  %v = reshape(%h) {shape = [32], kernel_family = "view", view_of = "%h", view_offset = 0} : f32[32]
  %c = cast(%h) {to = f16, kernel_family = "elementwise"} : f16[4, 8]
  %a = relu(%c) {kernel_family = "elementwise", workspace = 100} : f16[4, 8]
  %e = exp(%v) {kernel_family = "elementwise"} : f32[32]
  output %a, %e
}
"""


def spans(buffers):
    return {buffer.name: (buffer.start, buffer.end, buffer.size) for buffer in buffers}


def test_lifetimes_follow_the_schedule_and_views():
    graph = rlxir.parse(LIR).main
    buffers, info = graph_buffers(graph, "dtype", "lir")
    assert spans(buffers) == {
        "x": (0, 7, 128), "w": (0, 7, 256),
        "h": (2, 7, 128),  # read through its view %v by %e at step 6, and %v is not an output
        "c": (4, 6, 64),
        "a": (5, 7, 64), "a.workspace": (5, 6, 100),
        "e": (6, 7, 128),
    }
    assert [info[name].kind for name in ("x", "w", "h", "a", "a.workspace")] == [
        "input", "param", "activation", "output", "workspace"]


def test_f32_sizing_counts_four_bytes_per_element():
    buffers, _ = graph_buffers(rlxir.parse(LIR).main, "f32", "lir")
    assert spans(buffers)["c"][2] == 4 * 32


def test_bump_rule_aliases_every_cast_and_reshape():
    buffers, _ = graph_buffers(rlxir.parse(LIR).main, "f32", "bump")
    names = [buffer.name for buffer in buffers]
    assert "c" not in names and "v" not in names
    assert names == ["x", "w", "h", "a", "a.workspace", "e"]


def test_backward_mode_pins_params_to_the_forward_layout():
    graph = rlxir.parse(LIR).main
    buffers, _ = graph_buffers(graph, "dtype", "lir", mode="backward_activations_only", weight_layout={"w": 512})
    (weight,) = [buffer for buffer in buffers if buffer.name == "w"]
    assert (weight.fixed_offset, weight.start, weight.end) == (512, 0, 7)
    with pytest.raises(RlxError, match="param %w has no offset in the forward weight layout"):
        graph_buffers(graph, "dtype", "lir", mode="backward_activations_only", weight_layout={})


def test_unknown_mode_is_refused():
    with pytest.raises(RlxError, match="unknown planning mode"):
        graph_buffers(rlxir.parse(LIR).main, "dtype", "lir", mode="training")


def test_unbound_symbols_are_named():
    graph = rlxir.parse("graph g(B) {\n  input %x : f32[B, 4]\n  %y = exp(%x)\n  output %y\n}").main
    with pytest.raises(rlxir.UnboundSymbolError, match="unbound symbol B"):
        graph_buffers(graph, "dtype", "lir")
