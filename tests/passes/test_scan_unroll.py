"""scan-unroll: the max-steps boundary, symbolic lengths, claims."""

import pytest

import rlxir
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.pass_machinery.pipeline import parse_pipeline, run_pipeline


def scan_graph(steps) -> str:
    return f"""graph g(S) {{
      input %x : f32[1, {steps}, 2]
      input %dt : f32[1, {steps}, 2]
      param %A : f32[2, 2]
      input %bm : f32[1, {steps}, 2]
      input %c : f32[1, {steps}, 2]
      %y = selective_scan(%x, %dt, %A, %bm, %c) {{state_size = 2}}
      output %y
    }}"""


def ops_after(text: str, spec: str) -> set[str]:
    graph = run_pipeline(rlxir.parse(text).main, spec, instruments=[VerifyEach(strict_claims=True)])
    return {graph.op(node) for node in graph.ops()}


@pytest.mark.parametrize("steps, unrolled", [(1, True), (3, True), (4, False), ("S", False)])
def test_unrolls_static_scans_up_to_max_steps(steps, unrolled):
    ops = ops_after(scan_graph(steps), "scan-unroll{max-steps=3}")
    assert ("selective_scan" not in ops) is unrolled


def test_default_and_parsed_max_steps():
    assert parse_pipeline("scan-unroll").entries[0].instance.max_steps == 8
    assert parse_pipeline("scan-unroll{max-steps=2}").entries[0].instance.max_steps == 2
    assert "selective_scan" not in ops_after(scan_graph(8), "scan-unroll")
    assert "selective_scan" in ops_after(scan_graph(9), "scan-unroll")


def test_a_marked_scan_kernel_unrolls_too():
    assert "selective_scan" not in ops_after(scan_graph(2), "backend-unfuse{scan-kernel=true},scan-unroll")
