"""compile / plan_arena_bytes: one path per target, ceilings, bindings, derived targets."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlxir
from rlxir.compiler.compile import (ArenaTooLarge, CompileOptions, compile, plan_arena_bytes, plan_compile,
                                    prepare_exec_graph)
from rlxir.planning import validate_plan
from rlxir.targets.target import available_targets, get_target
from rlxir.testing.strategies import bindings_for, graphs

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
TARGETS = sorted(available_targets())
SMALL = {"mlp": {"B": 2}, "gpt2_block": {"B": 2, "S": 16}, "mamba_block": {"B": 2, "S": 8}, "resnet": {"B": 1}}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("example", sorted(SMALL))
def test_examples_compile_and_probe_agree(example, target):
    graph = rlxir.parse_file(EXAMPLES / f"{example}.rlx").main
    result = compile(graph, target, SMALL[example])
    assert result.arena_bytes == plan_arena_bytes(graph, target, SMALL[example])
    assert result.lower_bound_bytes <= result.arena_bytes
    assert result.plan.unshared_bytes >= result.arena_bytes or result.plan.planner == "bump"
    rlxir.verify(result.graph)
    assert [stage.spec for stage in result.stages] == [entry.text() for entry in
                                                       rlxir.pass_machinery.pipeline.parse_pipeline(get_target(target).pipeline)]


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_probe_equals_compile_on_random_graphs(data):
    graph = data.draw(graphs(max_ops=10, symbols=("B",)))
    bindings = data.draw(bindings_for(graph))
    for target in TARGETS:
        try:
            result = compile(graph, target, bindings)
        except ArenaTooLarge:
            continue
        assert plan_arena_bytes(graph, target, bindings) == result.arena_bytes
        buffers_ok = {buffer.name: buffer.offset for buffer in result.plan.buffers}
        assert all(offset % result.plan.alignment == 0 for offset in buffers_ok.values())


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_a_graph_handed_over_compiles_to_what_a_copy_compiles_to(data):
    """`reuse_graph` binds and transforms the graph given itself: the same graph and plan as
    the compile of a copy, which leaves the graph given as it was."""
    graph = data.draw(graphs(max_ops=10, symbols=("B",)))
    bindings = data.draw(bindings_for(graph))
    target = data.draw(st.sampled_from(TARGETS))
    written = rlxir.print_graph(graph)
    copied = plan_compile(graph, target, bindings)
    assert rlxir.print_graph(graph) == written and copied.graph is not graph
    handed = rlxir.parse(written).main
    reused = plan_compile(handed, target, bindings, CompileOptions(reuse_graph=True))
    assert reused.graph is handed
    assert rlxir.print_graph(reused.graph) == rlxir.print_graph(copied.graph)
    assert [(b.name, b.offset, b.size) for b in reused.plan.buffers] == [(b.name, b.offset, b.size)
                                                                        for b in copied.plan.buffers]

    def counts(stages):
        return [(s.spec, s.nodes_before, s.nodes_after, s.changed) for s in stages]

    assert counts(reused.stages) == counts(copied.stages)


@pytest.mark.parametrize("example", sorted(SMALL))
def test_an_example_handed_over_compiles_to_what_a_copy_compiles_to(example):
    path = EXAMPLES / f"{example}.rlx"
    copied = compile(rlxir.parse_file(path).main, "cpu", SMALL[example])
    reused = compile(rlxir.parse_file(path).main, "cpu", SMALL[example], CompileOptions(reuse_graph=True))
    assert rlxir.print_graph(reused.graph) == rlxir.print_graph(copied.graph)
    assert reused.arena_bytes == copied.arena_bytes
    assert [b.offset for b in reused.plan.buffers] == [b.offset for b in copied.plan.buffers]


def test_bump_is_the_rlx_rule_on_a_graph():
    # Every non-aliased value gets ceil(elements * 4 / 16) * 16 bytes at the cursor.
    graph = rlxir.parse("""graph g {
  input %x : f16[3, 5]
  param %w : f16[5, 7]
  %h = matmul(%x, %w)
  %r = reshape(%h) {shape = [21]}
  %c = cast(%r) {to = f32}
  %y = exp(%c)
  output %y
}""").main
    result = compile(graph, "cuda")
    sizes = [15 * 4, 35 * 4, 21 * 4, 21 * 4]  # x, w, h, y; reshape and cast alias
    assert result.arena_bytes == sum(-(-size // 16) * 16 for size in sizes)
    assert [buffer.value for buffer in result.plan.buffers][:3] == ["x", "w", "h"] and len(result.plan.buffers) == 4


def test_ceiling_refusal_names_bytes_ceiling_and_target():
    graph = rlxir.parse("graph big(N) {\n  input %x : f32[N]\n  %y = exp(%x)\n  output %y\n}").main
    with pytest.raises(ArenaTooLarge) as info:
        compile(graph, "rocm", {"N": 600_000_000})
    message = info.value.message
    assert "rocm" in message and "4800000000 B" in message and "4294967295 B" in message
    assert compile(graph, "cuda", {"N": 600_000_000}).arena_bytes == 4_800_000_000


def test_unbound_symbol_is_named():
    graph = rlxir.parse("graph g(B, S) {\n  input %x : f32[B, S]\n  output %x\n}").main
    with pytest.raises(rlxir.UnboundSymbolError) as info:
        compile(graph, "cpu", {"B": 2})
    assert info.value.symbols == ("S",) and "unbound symbol S" in info.value.message


def test_defaults_bind_symbols():
    graph = rlxir.parse("graph g(B, S=3) {\n  input %x : f32[B, S]\n  %y = exp(%x)\n  output %y\n}").main
    assert prepare_exec_graph(graph, get_target("cpu"), {"B": 2}).bindings == {"B": 2, "S": 3}


def test_a_derived_target_plans_with_its_own_planner(scoped_target):
    rocm = get_target("rocm")
    derived = rocm.derive("rocm-liveness-test", planner="liveness")
    scoped_target(derived)
    graph = rlxir.parse_file(EXAMPLES / "gpt2_block.rlx").main
    bump = compile(graph, "rocm", {"B": 2, "S": 16})
    reuse = compile(graph, "rocm-liveness-test", {"B": 2, "S": 16})
    assert reuse.plan.planner == "liveness" and reuse.arena_bytes < bump.arena_bytes
    assert len(reuse.graph) == len(bump.graph)


def test_options_override_the_planner_and_validation_runs():
    graph = rlxir.parse_file(EXAMPLES / "mlp.rlx").main
    result = compile(graph, "cuda", {"B": 4}, CompileOptions(planner="best", time_budget=0.5))
    buffers, _ = rlxir.compiler.lifetimes.graph_buffers(result.graph, "f32", "lir")
    validate_plan(buffers, {b.name: b.offset for b in result.plan.buffers}, 16, result.arena_bytes)
    assert result.plan.planner == "best"


@pytest.mark.parametrize("example", sorted(SMALL) + ["gpt2_small"])
def test_liveness_is_within_one_percent_of_the_lower_bound_on_the_examples(example):
    graph = rlxir.parse_file(EXAMPLES / f"{example}.rlx").main
    bindings = SMALL.get(example, {"B": 2})
    for target in ("cpu", "metal", "gpu"):
        plan = compile(graph, target, bindings).plan
        assert plan.planner == "liveness" and plan.arena_bytes <= 1.01 * plan.lower_bound_bytes, target
