"""lower: the LIR round-trips, workspaces per target, views resolved through chains."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rlxir
from rlxir.errors import UnboundSymbolError
from rlxir.pass_machinery.pass_base import PassContext, PassError, make_pass
from rlxir.pass_machinery.pipeline import run_pipeline
from rlxir.targets.target import available_targets

from same_outputs import assert_same_outputs

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")

MODEL = """\
graph model(B=2, S=6) {
  input %x : f32[B, S, 16]
  input %img : f16[B, 3, 12, 12]
  param %k : f16[8, 3, 3, 3]
  param %w : f32[16, 16]
  param %b : f32[16]
  param %A : f32[16, 4]
  input %Bm : f32[B, S, 4]
  input %C : f32[B, S, 4]
  %q = reshape(%x) {shape = [B, S, 2, 8]}
  %qt = transpose(%q) {perm = [0, 2, 1, 3]}
  %a = attention(%qt, %qt, %qt)
  %back = transpose(%a) {perm = [0, 2, 1, 3]}
  %flat = reshape(%back) {shape = [B, S, 16]}
  %h = fused_matmul_bias_act(%flat, %w, %b) {activation = "silu"}
  %y = selective_scan(%h, %h, %A, %Bm, %C) {state_size = 4, scan_kernel = true}
  %first = slice(%y) {axis = 0, start = 1, len = 1}
  %rows = reshape(%first) {shape = [S, 16]}
  %mid = slice(%rows) {axis = 0, start = 2, len = 3}
  %cv = conv2d(%img, %k) {padding = [1, 1, 1, 1]}
  %same = cast(%cv) {to = f16}
  output %mid, %same
}
"""


def lowered(target: str, text: str = MODEL) -> rlxir.Graph:
    return run_pipeline(rlxir.parse(text).main, f"lower{{target={target}}}")


@pytest.mark.parametrize("target", TARGETS)
def test_the_lir_prints_and_parses_back_to_an_equal_graph(target):
    lir = lowered(target)
    text = rlxir.print_graph(lir)
    again = rlxir.parse(text).main
    assert again.equals(lir)
    assert rlxir.print_graph(again) == text
    rlxir.verify(again)


@pytest.mark.parametrize("target", TARGETS)
def test_lowering_preserves_semantics_and_is_idempotent(target):
    graph = rlxir.parse(MODEL).main
    lir = lowered(target)
    assert_same_outputs(graph, lir)
    assert make_pass("lower", {"target": target}).run(lir, PassContext()) is False


def workspaces(graph: rlxir.Graph) -> dict[str, int]:
    return {node: graph.attrs(node)["workspace"] for node in graph.ops() if "workspace" in graph.attrs(node)}


@pytest.mark.parametrize("target, expected", [
    # attention: B*H*S*2*4 = 2*2*6*8; im2col: N*C*KH*KW*OH*OW*e = 2*3*3*3*12*12*e;
    # the scan trajectory: B*S*H*N*e = 2*6*16*4*e.
    ("cpu", {"a": 192, "y": 768 * 4}),
    ("metal", {"a": 192, "y": 768 * 4, "cv": 7776 * 2}),
    ("cuda", {"a": 192, "y": 768 * 4, "cv": 7776 * 4}),
    ("rocm", {"a": 192, "y": 768 * 4, "cv": 7776 * 4}),
    ("gpu", {"a": 192, "y": 768 * 4, "cv": 7776 * 4}),
    ("vulkan", {"a": 192, "y": 768 * 4, "cv": 7776 * 4}),
])
def test_workspace_sizes_per_target(target, expected):
    assert workspaces(lowered(target)) == expected


@pytest.mark.parametrize("target", TARGETS)
def test_side_buffers_follow_the_target_declaration(target):
    lir = lowered(target)
    declared = dict(available_targets()[target].side_buffers)
    recorded = {node: lir.attrs(node)["side_buffer"] for node in lir.ops() if "side_buffer" in lir.attrs(node)}
    if not declared:
        assert recorded == {}
    else:
        assert recorded == {"h": "blas_workspace", "cv": "dnn_workspace"}


@pytest.mark.parametrize("target, element", [("cpu", 4), ("cuda", 4), ("metal", 4)])
def test_views_resolve_through_chains_to_their_root(target, element):
    lir = lowered(target)
    views = {node: lir.attrs(node) for node in lir.ops() if lir.attrs(node)["kernel_family"] == "view"}
    assert set(views) == {"q", "flat", "first", "rows", "mid", "same"}
    for attrs in views.values():
        root = attrs["view_of"].removeprefix("%")
        assert lir.kind(root) != "op" or lir.attrs(root)["kernel_family"] != "view"
    # %mid = rows 2.. of %rows, which is batch 1 of %y: 1*S*16 + 2*16 elements into %y.
    assert views["mid"]["view_of"] == "%y"
    assert views["mid"]["view_offset"] == (6 * 16 + 2 * 16) * element
    assert views["same"]["view_of"] == "%cv" and views["same"]["view_offset"] == 0
    assert views["q"]["view_of"] == "%x" and views["flat"]["view_of"] == "%back"


def test_f32_sizing_counts_four_bytes_for_f16_rows():
    text = "graph g {\n  input %x : f16[4, 8]\n  %s = slice(%x) {axis = 0, start = 3, len = 1}\n  output %s\n}\n"
    assert lowered("cpu", text).attrs("s")["view_offset"] == 3 * 8 * 2
    assert lowered("rocm", text).attrs("s")["view_offset"] == 3 * 8 * 4


def test_an_unbound_symbol_in_a_workspace_is_named():
    text = MODEL.replace("graph model(B=2, S=6)", "graph model(B, S=6)")
    with pytest.raises(UnboundSymbolError) as caught:
        lowered("cuda", text)
    assert caught.value.symbols == ("B",)
    assert "softmax row statistics of %a = attention" in caught.value.message
    assert caught.value.line == 12
    graph = rlxir.parse(text).main
    lir = run_pipeline(graph, "lower{target=cuda}", ctx=PassContext(bindings={"B": 2}))
    assert workspaces(lir)["a"] == 192


def test_lir_keys_clashing_with_an_op_schema_are_refused(monkeypatch):
    from rlxir.ops import AttrSpec, OpDef
    from rlxir.ops import registry
    from rlxir.ops.core import unary_rule

    opdef = OpDef("test_windowed", 1, 1, unary_rule, {"workspace": AttrSpec("int", 0)})
    monkeypatch.setitem(registry._OPS, "test_windowed", opdef)
    text = "graph g {\n  input %x : f32[3]\n  %y = test_windowed(%x)\n  output %y\n}\n"
    with pytest.raises(PassError, match="attribute 'workspace' is also an LIR key"):
        lowered("cpu", text)


def test_the_example_in_docs_lir_md_is_what_lower_writes():
    document = (Path(__file__).parents[2] / "docs" / "lir.md").read_text()
    example = re.search(r"```\n(graph block.*?)```", document, re.DOTALL).group(1)
    annotated = rlxir.parse(example).main
    plain = re.sub(r"(, )?(kernel_family|view_of|view_offset|side_buffer) = (\"[^\"]*\"|\d+)", "", example)
    plain = plain.replace(" {}", "").replace("{, ", "{")
    assert rlxir.print_graph(lowered("cuda", plain)) == rlxir.print_graph(annotated)


REPEATS = """\
graph repeats(B=2) {
  input %x : f32[B, 8]
  param %w : f32[8, 8]
  %m1 = matmul(%x, %w)
  %r1 = relu(%m1)
  %m2 = matmul(%r1, %w)
  %r2 = relu(%m2)
  %s0 = slice(%r2) {axis = 0, start = 1, len = 1}
  %s1 = slice(%r2) {axis = 1, start = 1, len = 4}
  %s2 = slice(%r1) {axis = 1, start = 1, len = 4}
  %c0 = cast(%s1) {to = f32}
  %c1 = cast(%s2) {to = f16}
  %t = reshape(%s0) {shape = [8]}
  output %t, %c0, %c1
}
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("text", [MODEL, REPEATS], ids=["model", "repeats"])
def test_each_node_gets_the_lir_its_own_annotation_gives(target, text):
    # lower reuses an op's LIR across nodes outside NODE_DEPENDENT and memoises per shared
    # attributes; each node must still carry exactly what annotating it alone gives.
    from rlxir.passes.lower import LIR_ANNOTATIONS, _Sizer, annotations
    from rlxir.targets.target import get_target

    graph = rlxir.parse(text).main
    done = lowered(target, text)
    roots: dict = {}
    sizer = _Sizer(graph, {})
    for node in graph.schedule():
        if graph.kind(node) != "op":
            roots[node] = (node, 0)
            continue
        alone = annotations(graph, node, get_target(target), sizer, roots)
        written = {key: value for key, value in done.attrs(node).items() if key in LIR_ANNOTATIONS}
        assert written == alone, node
