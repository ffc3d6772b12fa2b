"""Random graphs on every target: the compiled graph, run inside its planned arena, gives
the interpreter's outputs — or the run names the values the target's storage changed."""

from __future__ import annotations

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import rlxir
from rlxir.dtypes import DType
from rlxir.pass_machinery.pass_base import PassError
from rlxir.testing import strategies
from rlxir.testing.rejection import rejecting_gathers_out_of_range

TARGETS = ("cpu", "cuda", "rocm", "metal", "gpu", "vulkan")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def bound_graphs(draw, dtypes=(DType.f32,)):
    graph = draw(strategies.graphs(max_ops=12, symbols=("B", "S"), dtypes=dtypes))
    return graph.bind(draw(strategies.bindings_for(graph)))


def reference_or_reject(graph):
    with rejecting_gathers_out_of_range():
        return rlxir.reference_run(graph)


@SETTINGS
@given(graph=bound_graphs(), target=st.sampled_from(TARGETS))
def test_f32_graphs_run_in_their_arena_and_match(graph, target):
    reference = reference_or_reject(graph)
    check = rlxir.check_execution(graph, rlxir.compile(graph, target), reference=reference)
    assert check.run.poisoned_reads == ()
    assert check.matched, check.summary()


def compiled_or_reject(graph, target):
    try:
        return rlxir.compile(graph, target)
    except PassError as error:
        if "not supported" not in error.message:
            raise
        reject()  # the target has no kernels for a dtype the graph uses (metal: f64)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=bound_graphs(dtypes=(DType.f32, DType.i64, DType.f16, DType.f64)), target=st.sampled_from(TARGETS))
def test_mixed_dtype_graphs_match_or_name_the_storage_loss(graph, target):
    reference = reference_or_reject(graph)
    check = rlxir.check_execution(graph, compiled_or_reject(graph, target), reference=reference)
    assert check.run.poisoned_reads == ()
    assert check.matched or check.run.storage_losses, check.summary()
