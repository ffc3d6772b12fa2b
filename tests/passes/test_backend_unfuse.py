"""backend-unfuse: idempotence, options, and the scan_kernel annotation."""

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.pass_machinery.pipeline import parse_pipeline, run_pipeline

GRAPH = """graph g(B, S) {
  input %x : f32[B, S, 4]
  input %dt : f32[B, S, 4]
  param %A : f32[4, 2]
  input %bm : f32[B, S, 2]
  input %c : f32[B, S, 2]
  param %bias : f32[4]
  const %half : f32[] = 0.5
  %y = selective_scan(%x, %dt, %A, %bm, %c) {state_size = 2}
  %a = add(%y, %bias)
  %m = mul(%half, %a)
  %k = ge(%m, %half)
  %w = where(%k, %m, %half)
  output %w
}"""


def run(graph: rlxir.Graph, spec: str) -> rlxir.Graph:
    return run_pipeline(graph, spec, instruments=[VerifyEach(strict_claims=True)])


def test_every_broadcasting_operand_is_expanded_and_a_second_run_changes_nothing():
    once = run(rlxir.parse(GRAPH).main, "backend-unfuse")
    for node in once.ops():
        if once.op(node) in ("add", "mul", "ge", "where"):
            assert all(once.type(operand).shape == once.type(node).shape for operand in once.operands(node))
    twice = run(once, "backend-unfuse")  # strict claims: must return False, unchanged
    assert rlxir.print_graph(twice) == rlxir.print_graph(once)


def test_one_expand_per_operand_and_node():
    graph = run(rlxir.parse("""graph g {
      input %x : f32[3]
      input %m : f32[2, 3]
      %p = mul(%x, %x)
      %q = add(%m, %x)
      %r = sub(%x, %m)
      output %p, %q, %r
    }""").main, "backend-unfuse")
    assert [graph.op(node) for node in graph.ops()].count("expand") == 2


def test_scan_kernel_option():
    assert parse_pipeline("backend-unfuse{scan-kernel=true}").entries[0].instance.scan_kernel is True
    plain = run(rlxir.parse(GRAPH).main, "backend-unfuse")
    assert "scan_kernel" not in plain.attrs("y")
    marked = run(plain, "backend-unfuse{scan-kernel=true}")
    assert marked.attr("y", "scan_kernel") is True
    run(marked, "backend-unfuse{scan-kernel=true}")  # already marked: unchanged, returns False


def test_the_annotation_prints_and_parses_back():
    marked = run(rlxir.parse(GRAPH).main, "backend-unfuse{scan-kernel=true}")
    text = rlxir.print_graph(marked)
    assert "scan_kernel = true" in text
    assert rlxir.print_graph(rlxir.parse(text).main) == text
