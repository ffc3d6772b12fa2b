"""No pass and no target pipeline changes a graph's interface: input, param and output
names, order and types stay as they were (random valid graphs, and every example)."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import rlxir
from rlxir.cli.main import main
from rlxir.dtypes import DType
from rlxir.pass_machinery.instruments import VerifyEach
from rlxir.ir.interface import Interface
from rlxir.pass_machinery.pass_base import PassContext, PassError, available_passes
from rlxir.pass_machinery.pipeline import Pipeline
from rlxir.targets.target import available_targets, get_target
from rlxir.testing.strategies import graphs

EXAMPLES = sorted(Path(__file__).resolve().parents[2].joinpath("examples").glob("*.rlx"))
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RANDOM_GRAPHS = graphs(max_ops=10, dtypes=(DType.f32, DType.f16, DType.i32))
BUILTIN_PASSES = sorted(name for name, cls in available_passes().items() if cls.__module__.startswith("rlxir."))
FUSE_PATTERNS = ("bias_act", "residual_norm", "shared_input_matmul", "swiglu", "regions")
PASS_SPECS = BUILTIN_PASSES + [f"fuse{{patterns={pattern}}}" for pattern in FUSE_PATTERNS]


def _run_alone(graph, spec: str, target: str):
    """`spec` on a copy of `graph` for `target`, or None when the pass refuses the graph."""
    try:
        return Pipeline.parse(spec).run(graph.copy(), PassContext(target=get_target(target)))
    except rlxir.RlxError:
        return None  # a refusal (an op the target cannot run, a scan too long to unroll)


def test_the_pass_list_covers_every_builtin_pass():
    assert {"fuse", "unfuse", "lower", "cse", "dce", "simplify"} <= set(BUILTIN_PASSES)


@pytest.mark.parametrize("spec", PASS_SPECS)
@SETTINGS
@given(graph=RANDOM_GRAPHS)
def test_every_pass_keeps_the_interface(spec, graph):
    before = Interface.of(graph)
    for target in ("cpu", "rocm"):
        result = _run_alone(graph, spec, target)
        if result is not None:
            assert before.differences(Interface.of(result)) == [], f"{spec} on {target}"


@pytest.mark.parametrize("target", sorted(available_targets()))
@SETTINGS
@given(graph=RANDOM_GRAPHS)
def test_every_target_pipeline_keeps_the_interface(target, graph):
    try:
        compiled = rlxir.compile(graph, target).graph
    except rlxir.RlxError:
        return  # refused (an op the target cannot run, an arena past its ceiling)
    assert Interface.of(graph).differences(Interface.of(compiled)) == []


def _bound(path: Path):
    graph = rlxir.parse_file(path).main
    return graph.bind({symbol: 2 for symbol in graph.symbols})


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_every_target_keeps_the_interface_of_every_example(path):
    graph = _bound(path)
    for target in available_targets():
        compiled = rlxir.compile(graph, target).graph
        assert Interface.of(graph).differences(Interface.of(compiled)) == [], target


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.stem)
def test_opt_unfuse_fuse_keeps_the_output_names_of_every_example(path, tmp_path):
    graph = rlxir.parse_file(path).main
    defines = [arg for symbol in graph.symbols for arg in ("-D", f"{symbol}=2")]
    written = tmp_path / "out.rlx"
    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        code = main(["opt", str(path), "--pipeline", "unfuse,fuse", *defines, "-o", str(written)])
    assert code in (0, None), stderr.getvalue()
    result = rlxir.parse_file(written).main
    assert result.outputs == graph.outputs
    assert result.inputs() == graph.inputs() and result.params() == graph.params()


def test_a_pass_that_renames_an_output_is_reported_by_verify_each():
    graph = rlxir.parse("graph g() {\n  input %x : f32[4]\n  %y = relu(%x) : f32[4]\n  output %y\n}\n", "g.rlx").main

    class OutputTheInput:
        name = "output-the-input"

        def text(self):
            return self.name

    changed = graph.copy()
    verify = VerifyEach(check_claims=False)
    verify.before_pass(0, OutputTheInput(), changed, None)
    changed.set_outputs(["x"])
    with pytest.raises(PassError, match=r"pass output-the-input changed the interface .*outputs were \(%y\), now \(%x\)"):
        verify.after_pass(0, OutputTheInput(), changed, None, True, 0.0)
