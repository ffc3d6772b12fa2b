"""unfuse-regions: regions only, steps as written, claims."""

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.pass_machinery.pipeline import run_pipeline


def run(text: str) -> rlxir.Graph:
    return run_pipeline(rlxir.parse(text).main, "unfuse-regions", instruments=[VerifyEach(strict_claims=True)])


def test_regions_are_inlined_in_chain_order():
    graph = run("""graph g {
      input %x : f32[4]
      input %y : f32[4]
      %r = fused_elementwise(%x, %y) {chain = "add($0, $1); gelu(%0); mul(%1, %0); neg(%2)"}
      %s = fused_elementwise(%r) {chain = "exp($0)"}
      output %s
    }""")
    assert [graph.op(node) for node in graph.ops()] == ["add", "gelu", "mul", "neg", "exp"]
    # each region's last step is the region's value itself, rewritten in place
    assert graph.ops()[-2:] == ["r", "s"] and graph.op("r") == "neg" and graph.operands("s") == ("r",)
    assert graph.outputs == ["s"]


def test_a_graph_without_regions_is_unchanged():
    text = "graph g { input %x : f32[2]\n %y = gelu(%x)\n output %y }"
    assert rlxir.print_graph(run(text)) == rlxir.print_graph(rlxir.parse(text).main)


def test_a_region_nested_in_a_chain_is_inlined_too():
    graph = run(r"""graph g {
      input %x : f32[4]
      %r = fused_elementwise(%x) {chain = "neg($0); fused_elementwise(%0, $0) {chain = \"mul($0, $1); exp(%0)\"}"}
      output %r
    }""")
    assert [graph.op(node) for node in graph.ops()] == ["neg", "mul", "exp"]
    assert graph.ops()[-1] == "r" and graph.outputs == ["r"]  # the nested region, last, inlined into %r itself
