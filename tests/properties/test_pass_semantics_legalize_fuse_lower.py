"""legalize-or-rewrite, fuse and lower preserve what a graph computes, on every target;
so does each target's whole pipeline. Graphs come from each pass's strategy
(`rlxir.testing.pass_graphs`), which plants what the pass rewrites and binds every symbol
(unrolling a scan and sizing a workspace need numbers)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rlxir.errors import RlxError
from rlxir.interpreter import interpret, random_feeds
from rlxir.pass_machinery.pass_base import PassContext
from rlxir.pass_machinery.pipeline import parse_pipeline, run_pipeline
from rlxir.targets.target import get_target
from rlxir.testing.pass_graphs import pass_graphs
from rlxir.testing.rounding import assert_close_within_rounding
from rlxir.ir.verifier import verify

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outputs(graph, feeds):
    values = interpret(graph, *feeds)
    return [values[name] for name in graph.outputs]


def check_preserved(graph, spec: str, target: str) -> None:
    feeds = random_feeds(graph)
    try:
        expected = outputs(graph, feeds)
    except RlxError as error:
        if "gather index" not in error.message:
            raise
        reject()  # the graph's own integer arithmetic indexes out of its table
    result = run_pipeline(graph, spec, ctx=PassContext(target=get_target(target)))
    verify(result)
    actual = outputs(result, feeds)
    assert_close_within_rounding(graph, feeds, expected, actual, rtol=1e-4, atol=1e-4)


@SETTINGS
@given(graph=pass_graphs("legalize-or-rewrite"), target=st.sampled_from(TARGETS), share=st.booleans())
def test_legalize_or_rewrite_preserves_outputs(graph, target, share):
    options = f"target={target},share-constants=true" if share else f"target={target}"
    check_preserved(graph, f"legalize-or-rewrite{{{options}}}", target)


@SETTINGS
@given(graph=pass_graphs("fuse"), target=st.sampled_from(TARGETS))
def test_fuse_preserves_outputs(graph, target):
    check_preserved(graph, f"fuse{{target={target}}}", target)


@SETTINGS
@given(graph=pass_graphs("fuse"), target=st.sampled_from(TARGETS), max_region=st.integers(2, 5),
       max_inputs=st.integers(1, 4))
def test_fuse_with_small_caps_preserves_outputs(graph, target, max_region, max_inputs):
    check_preserved(graph, f"fuse{{target={target},max-region={max_region},max-inputs={max_inputs}}}", target)


@SETTINGS
@given(graph=pass_graphs("lower"), target=st.sampled_from(TARGETS))
def test_lower_preserves_outputs(graph, target):
    check_preserved(graph, f"lower{{target={target}}}", target)


def test_every_target_pipeline_names_only_passes_that_exist():
    """A pipeline naming a missing pass fails here (a `PipelineError`), never skips a target."""
    for target in TARGETS:
        assert parse_pipeline(get_target(target).pipeline).names(), target


@SETTINGS
@given(graph=st.one_of(pass_graphs("lower"), pass_graphs("fuse"), pass_graphs("legalize-or-rewrite")),
       target=st.sampled_from(TARGETS))
def test_every_target_pipeline_preserves_outputs(graph, target):
    try:
        check_preserved(graph, parse_pipeline(get_target(target).pipeline), target)
    except RlxError as error:
        if "cannot run on" in error.message:
            reject()  # a legal refusal (an op the target has no kernel for), not a wrong rewrite
        raise
