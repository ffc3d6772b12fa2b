"""Pipelines as text: parsing, printing, errors with carets, insertion, ordering checks."""

from __future__ import annotations

import attrs
import pytest

import rlxir
from rlxir.pass_machinery.pass_base import Pass, option, register_pass
from rlxir.pass_machinery.pipeline import Pipeline, PipelineError, parse_pipeline, run_pipeline

from inline_passes import register_test_pass


@register_pass
@attrs.frozen
class _Configurable(Pass):
    """A pass with one option of each kind, for pipeline text tests."""

    name = "test-configurable"
    steps: int = option(3, "an int")
    ratio: float = option(0.5, "a float")
    strict: bool = option(False, "a bool")
    mode: str = option("fast", "a string")
    ops: tuple = option((), "a colon-separated list")

    def run(self, graph, ctx) -> bool:
        return False


register_test_pass("test-needs-cse", "Declares that cse must run earlier.", requires=("cse",))
register_test_pass("test-before-dce", "Declares that it must run before dce.", must_precede=("dce",))


def test_text_round_trips():
    spec = "cse,test-configurable{steps=5,strict=true,ops=gelu:softmax},dce"
    pipeline = parse_pipeline(spec)
    assert pipeline.names() == ["cse", "test-configurable", "dce"]
    assert pipeline.text() == spec
    configured = pipeline.entries[1].instance
    assert (configured.steps, configured.strict, configured.ops, configured.ratio) == (5, True, ("gelu", "softmax"), 0.5)


def test_options_may_be_separated_by_spaces():
    pipeline = parse_pipeline("test-configurable{steps=7 mode=slow}")
    assert pipeline.entries[0].instance.mode == "slow"
    assert pipeline.text() == "test-configurable{steps=7,mode=slow}"


@pytest.mark.parametrize(
    "spec, column, message",
    [
        ("cse,dcee", 5, "unknown pass 'dcee'"),
        ("cse,test-configurable{stepz=1}", 23, "has no option 'stepz'"),
        ("test-configurable{steps=many}", 25, "option steps takes int"),
        ("test-configurable{strict=yes}", 26, "option strict takes bool"),
        ("test-configurable{steps}", 19, "needs a value"),
        ("test-configurable{steps=1,steps=2}", 27, "option steps of test-configurable is given twice"),
        ("cse,,dce", 5, "expected a pass name"),
        ("cse dce", 5, "unexpected 'd'"),
    ],
)
def test_errors_point_at_the_bad_part(spec, column, message):
    with pytest.raises(PipelineError) as info:
        parse_pipeline(spec)
    assert info.value.col == column
    assert message in info.value.message
    rendered = info.value.render()
    assert spec in rendered and "\n  " + " " * (column - 1) + "^" in rendered


def test_insert_before_and_after_named_passes():
    pipeline = parse_pipeline("cse,dce")
    assert pipeline.insert_before("dce", "test-configurable{steps=1}").text() == "cse,test-configurable{steps=1},dce"
    assert pipeline.insert_after("cse", parse_pipeline("dce,cse")).text() == "cse,dce,cse,dce"
    assert pipeline.text() == "cse,dce", "insertion returns a new pipeline"
    with pytest.raises(PipelineError, match="has no pass 'fuse-nothing'"):
        pipeline.insert_after("fuse-nothing", "dce")


def test_ordering_requirements_name_both_passes():
    assert parse_pipeline("cse,test-needs-cse").names() == ["cse", "test-needs-cse"]
    with pytest.raises(PipelineError, match="test-needs-cse requires cse"):
        parse_pipeline("test-needs-cse,cse")
    with pytest.raises(PipelineError, match="test-before-dce must run before dce"):
        parse_pipeline("dce,test-before-dce")
    with pytest.raises(PipelineError, match="requires cse"):
        parse_pipeline("dce").insert_after("dce", "test-needs-cse")


def test_run_pipeline_leaves_the_input_alone_and_records_stats():
    graph = rlxir.parse("graph g { input %x : f32[2]\n %a = exp(%x)\n %b = exp(%x)\n %c = add(%a, %b)\n output %c }").main
    ctx = rlxir.pass_machinery.pass_base.PassContext()
    result = run_pipeline(graph, "cse,dce", ctx=ctx)
    assert len(graph) == 4 and len(result) == 3
    assert [(stat.spec, stat.nodes_before, stat.nodes_after, stat.changed) for stat in ctx.stats] == [
        ("cse", 4, 3, True), ("dce", 3, 3, False)]


def test_empty_pipeline_is_the_identity():
    graph = rlxir.parse("graph g { input %x : f32[2]\n output %x }").main
    assert run_pipeline(graph, "").equals(graph)
    assert Pipeline().text() == ""

