"""Default fills depend only on (seed, name, type) and the fill facts recorded on the value,
so a graph and its compiled or optimised form compute the same outputs without feeds."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import rlxir
from rlxir.cli.main import main
from rlxir.dtypes import DType
from rlxir.executor.check import TOLERANCES, output_precisions
from rlxir.interpreter import random_feeds, random_fill
from rlxir.targets.target import available_targets

EXAMPLES = sorted(Path(__file__).resolve().parents[1].joinpath("examples").glob("*.rlx"))
SMALL = {"B": 1, "S": 4, "N": 2}

LOG_AND_GATHER = """graph g(B) {
  input %x : f32[B, 4]
  input %ids : i32[B]
  param %table : f32[5, 4]
  param %w : f32[4, 4]
  %pos = log(%x)
  %row = gather(%table, %ids)
  %h = matmul(%row, %w)
  %y = add(%h, %pos)
  %o = relu(%y)
  %p = softmax(%o)
  output %o, %p
}
"""


def test_a_fill_does_not_depend_on_the_readers():
    read_by_matmul = rlxir.parse("graph a {\n  input %x : f32[2, 8]\n  param %w : f32[8, 3]\n"
                                 "  %y = matmul(%x, %w)\n  output %y\n}\n").main
    read_by_add = rlxir.parse("graph b {\n  param %w : f32[8, 3]\n  %y = add(%w, %w)\n  output %y\n}\n").main
    assert np.array_equal(random_fill(read_by_matmul, "w", 3), random_fill(read_by_add, "w", 3))


def test_a_param_takes_lecun_scale_from_its_own_shape():
    graph = rlxir.parse("graph g {\n  param %w : f32[400, 300]\n  param %b : f32[300]\n"
                        "  %y = add(%w, %b)\n  output %y\n}\n").main
    assert np.std(random_fill(graph, "w")) == pytest.approx(1 / 20, rel=0.02)
    assert np.std(random_fill(graph, "b")) == pytest.approx(0.5, rel=0.15)


def test_the_parser_records_what_index_and_signed_fills_need():
    graph = rlxir.parse(LOG_AND_GATHER).main
    assert graph.attrs("ids") == {"fill_limit": 5} and graph.attrs("x") == {"fill_sign": "positive"}
    assert graph.attrs("w") == {} and graph.attrs("table") == {}
    inputs, _ = random_feeds(graph, {"B": 64})
    assert inputs["ids"].min() >= 0 and inputs["ids"].max() < 5 and inputs["x"].min() > 0


def test_the_indices_of_gather_elements_and_scatter_elements_are_bounded_by_their_axis():
    graph = rlxir.parse("""graph g {
  input %logits : f32[8, 7]
  input %labels : i64[8, 1]
  input %where : i64[3, 5]
  input %updates : f32[3, 5]
  %picked = gather_elements(%logits, %labels) {axis = 1}
  %into = scatter_elements(%logits, %where, %updates) {axis = 0, reduction = "add"}
  output %picked, %into
}""").main
    assert graph.attrs("labels") == {"fill_limit": 7} and graph.attrs("where") == {"fill_limit": 8}
    inputs, _ = random_feeds(graph, {})
    assert inputs["labels"].max() < 7 and inputs["where"].max() < 8


def test_recorded_facts_survive_printing_compiling_and_binding():
    graph = rlxir.parse(LOG_AND_GATHER).main
    compiled = rlxir.compile(graph, "cuda", bindings={"B": 2}).graph
    reparsed = rlxir.parse(rlxir.print_graph(compiled)).main
    for value in (compiled, reparsed):
        assert value.attrs("ids") == {"fill_limit": 5} and value.attrs("x") == {"fill_sign": "positive"}


def _run(arguments: list[str]) -> str:
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(arguments)
    assert code in (0, None), stderr.getvalue()
    return stdout.getvalue()


def test_run_gives_the_same_outputs_before_and_after_opt(tmp_path):
    source = tmp_path / "g.rlx"
    source.write_text(LOG_AND_GATHER, encoding="utf-8")
    optimised = tmp_path / "opt.rlx"
    _run(["opt", str(source), "--pipeline", "unfuse,fuse,dce", "--target", "cuda", "-o", str(optimised)])
    assert "fused" in optimised.read_text(encoding="utf-8")
    before = _run(["run", str(source), "-D", "B=3"])
    after = _run(["run", str(optimised), "-D", "B=3"])
    assert before == after and "%o" in before and "%p" in before


def tolerance(precision, expected: np.ndarray) -> dict:
    """rtol 2e-3 / atol 2e-4; an output computed from f16 or bf16 values, which a target
    rounds at other points (or computes in f32), within the arena check's tolerance of that
    precision (atol times the output's largest magnitude, at least 1)."""
    if precision not in (DType.f16, DType.bf16):
        return dict(rtol=2e-3, atol=2e-4)
    rtol, atol = TOLERANCES[precision]
    scale = max(1.0, float(np.max(np.abs(expected)))) if np.size(expected) else 1.0
    return dict(rtol=rtol, atol=atol * scale)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_every_example_computes_the_same_after_each_target_pipeline(path):
    """With default fills on both sides: the compiled graph's fills are the source's, array
    for array, and so are its outputs (each side run on its own default fills)."""
    graph = rlxir.parse_file(path).main
    bound = graph.bind({symbol: value for symbol, value in SMALL.items() if symbol in graph.symbols})
    expected_inputs, expected_params = random_feeds(bound)
    expected = rlxir.interpret(bound, expected_inputs, expected_params)
    for target in available_targets():
        result = rlxir.compile(bound, target)
        compiled = result.graph
        precisions = output_precisions(bound, result.target)
        inputs, params = random_feeds(compiled)
        for wanted, actual in ((expected_inputs, inputs), (expected_params, params)):
            assert list(actual) == list(wanted), f"{path.stem} on {target}"
            for name, array in wanted.items():
                assert np.array_equal(actual[name], array), f"%{name} of {path.stem} on {target}"
        outputs = rlxir.interpret(compiled, inputs, params)
        assert list(outputs) == list(expected), f"{path.stem} on {target}"
        for name, value in expected.items():
            np.testing.assert_allclose(outputs[name], value, **tolerance(precisions[name], value),
                                       err_msg=f"%{name} of {path.stem} on {target}")
