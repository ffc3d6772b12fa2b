"""legalize-or-rewrite, fuse and lower preserve what a graph computes, on every target;
so does each target's whole pipeline."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from rlxir.dtypes import DType
from rlxir.errors import RlxError
from rlxir.graph import Graph
from rlxir.interpreter import interpret, random_feeds
from rlxir.pass_base import PassContext
from rlxir.pipeline import parse_pipeline, run_pipeline
from rlxir.target import get_target
from rlxir.types import TensorType
from rlxir.verifier import verify
from rlxir.testing import strategies

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def bound_graphs(draw):
    """Random graphs with every symbol bound: unrolling a scan and sizing a workspace need numbers."""
    graph = draw(strategies.graphs(max_ops=10, symbols=("B", "S")))
    return graph.bind(draw(strategies.bindings_for(graph)))


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
    assert len(actual) == len(expected)
    for before, after in zip(expected, actual):
        np.testing.assert_allclose(after, before, rtol=1e-4, atol=1e-4, equal_nan=True)


@SETTINGS
@given(graph=bound_graphs(), target=st.sampled_from(TARGETS))
def test_legalize_or_rewrite_preserves_outputs(graph, target):
    check_preserved(graph, f"legalize-or-rewrite{{target={target}}}", target)


@SETTINGS
@given(graph=bound_graphs(), target=st.sampled_from(TARGETS))
def test_fuse_preserves_outputs(graph, target):
    check_preserved(graph, f"fuse{{target={target}}}", target)


@SETTINGS
@given(graph=bound_graphs(), target=st.sampled_from(TARGETS), max_region=st.integers(2, 5),
       max_inputs=st.integers(1, 4))
def test_fuse_with_small_caps_preserves_outputs(graph, target, max_region, max_inputs):
    check_preserved(graph, f"fuse{{target={target},max-region={max_region},max-inputs={max_inputs}}}", target)


MOTIFS = ("bias_act", "residual_norm", "shared_input", "swiglu", "elementwise")


@st.composite
def block_graphs(draw):
    """Transformer-like graphs built from the motifs `fuse` looks for, with variations it
    must refuse (a reused intermediate, a broadcasting bias, the tanh gelu, ...)."""
    graph = Graph("block")
    width = 4
    row = TensorType(DType.f32, (2, 3, width))
    params = iter(range(1000))

    def param(shape):
        return graph.add_param(f"p{next(params)}", TensorType(DType.f32, shape))

    def matmul(value):
        return graph.add_op("matmul", [value, param((width, width))])

    x = graph.add_input("x", row)
    kept = [x]
    for motif in draw(st.lists(st.sampled_from(MOTIFS), min_size=1, max_size=6)):
        if motif == "bias_act":
            product = matmul(x)
            bias = param(draw(st.sampled_from([(width,), (3, width)])))
            total = graph.add_op("add", [product, bias] if draw(st.booleans()) else [bias, product])
            act = draw(st.sampled_from(["none", "gelu", "gelu_tanh", "silu"]))
            x = total if act == "none" else graph.add_op(act.removesuffix("_tanh"), [total],
                                                        {"approximate": True} if act == "gelu_tanh" else {})
        elif motif == "residual_norm":
            total = graph.add_op("add", [x, kept[draw(st.integers(0, len(kept) - 1))]])
            norm = draw(st.sampled_from(["layernorm", "rmsnorm"]))
            gains = [param((width,))] + ([param((width,))] if norm == "layernorm" else [])
            x = graph.add_op(norm, [total, *gains])
            if draw(st.booleans()):
                kept.append(total)  # the residual stream read again: must stay unfused
        elif motif == "shared_input":
            products = [matmul(x) for _ in range(draw(st.integers(2, 3)))]
            x = products[0]
            for product in products[1:]:
                x = graph.add_op("add", [x, product])
        elif motif == "swiglu":
            gate = graph.add_op("silu", [matmul(x)])
            up = matmul(x)
            x = graph.add_op("mul", [gate, up] if draw(st.booleans()) else [up, gate])
        else:
            for op in draw(st.lists(st.sampled_from(["exp", "tanh", "neg", "add", "mul", "maximum"]), max_size=5)):
                x = graph.add_op(op, [x, kept[-1]] if op in ("add", "mul", "maximum") else [x])
        kept.append(x)
    graph.set_outputs(dict.fromkeys([x, kept[len(kept) // 2]]))
    return graph


@SETTINGS
@given(graph=block_graphs(), target=st.sampled_from(TARGETS), caps=st.sampled_from([(0, 0), (3, 2)]))
def test_fuse_preserves_outputs_of_pattern_rich_blocks(graph, target, caps):
    max_region, max_inputs = caps
    check_preserved(graph, f"fuse{{target={target},max-region={max_region},max-inputs={max_inputs}}}", target)


@SETTINGS
@given(graph=bound_graphs(), target=st.sampled_from(TARGETS))
def test_lower_preserves_outputs(graph, target):
    check_preserved(graph, f"lower{{target={target}}}", target)


def test_every_target_pipeline_names_only_passes_that_exist():
    """A pipeline naming a missing pass fails here (a `PipelineError`), never skips a target."""
    for target in TARGETS:
        assert parse_pipeline(get_target(target).pipeline).names(), target


@SETTINGS
@given(graph=st.one_of(bound_graphs(), block_graphs()), target=st.sampled_from(TARGETS))
def test_every_target_pipeline_preserves_outputs(graph, target):
    try:
        check_preserved(graph, parse_pipeline(get_target(target).pipeline), target)
    except RlxError as error:
        if "cannot run on" in error.message:
            reject()  # a legal refusal (an op the target has no kernel for), not a wrong rewrite
        raise
