"""A derived target is what it declares: every field of `Target.derive` changes the compile.

Each test derives a target from a built-in one with one field changed and shows the compile
differs in the way that field promises (the passes read the target from the context, so no
pipeline text can pin them to the base target).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import rlxir
from rlxir.compiler.compile import ArenaTooLarge, compile
from rlxir.dtypes import DType
from rlxir.pass_machinery.pass_base import PassError
from rlxir.targets.target import ALL_DTYPES, available_targets, get_target

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GPT2 = {"B": 2, "S": 16}
CUDA = get_target("cuda")


def example(name: str) -> rlxir.Graph:
    return rlxir.parse_file(EXAMPLES / f"{name}.rlx").main


def op_counts(result) -> Counter:
    return Counter(result.graph.op(node) for node in result.graph.ops())


def graph_of(body: str, dtype: str = "f32") -> rlxir.Graph:
    """A one-input graph over `dtype`[4, 8]; `body` writes ops on %x and ends in `output`."""
    return rlxir.parse(f"graph g() {{\n  input %x : {dtype}[4, 8]\n{body}\n}}\n").main


def test_no_backend_pipeline_names_a_target():
    for target in available_targets().values():
        assert "target=" not in target.pipeline, target.name


def test_fuse_patterns():
    base = compile(example("gpt2_block"), CUDA, GPT2)
    unfused = compile(example("gpt2_block"), CUDA.derive("cuda-nofuse", fuse_patterns=()), GPT2)
    assert op_counts(base)["fused_matmul_bias_act"] == 4
    assert not any(op.startswith("fused") for op in op_counts(unfused))
    assert (len(base.graph), base.arena_bytes) == (34, 30_910_464)
    assert (len(unfused.graph), unfused.arena_bytes) == (42, 32_679_936)


def test_claimed_ops():
    without_layernorm = CUDA.derive("cuda-no-layernorm", claimed_ops=CUDA.claimed_ops - {"layernorm"})
    base = op_counts(compile(example("gpt2_block"), CUDA, GPT2))
    derived = op_counts(compile(example("gpt2_block"), without_layernorm, GPT2))
    assert base["layernorm"] == 2
    assert "layernorm" not in derived and derived["reduce_mean"] == 4  # decomposed: mean and variance


CHAIN = "  %a = exp(%x) : f32[4, 8]\n  %b = neg(%a) : f32[4, 8]\n  %c = tanh(%b) : f32[4, 8]\n" \
        "  %d = abs(%c) : f32[4, 8]\n  output %d"


def test_region_max_steps():
    base = compile(graph_of(CHAIN), CUDA)
    capped = compile(graph_of(CHAIN), CUDA.derive("cuda-short-regions", region_max_steps=2))
    assert op_counts(base) == Counter({"fused_elementwise": 1})
    assert op_counts(capped) == Counter({"fused_elementwise": 2})


def test_region_max_inputs():
    body = "\n".join([f"  input %x{index} : f32[4, 8]" for index in range(3)] + [
        "  %a = add(%x, %x0) : f32[4, 8]", "  %b = add(%a, %x1) : f32[4, 8]", "  %c = add(%b, %x2) : f32[4, 8]",
        "  output %c"])
    base = compile(graph_of(body), CUDA)
    capped = compile(graph_of(body), CUDA.derive("cuda-narrow-regions", region_max_inputs=2))
    assert op_counts(base) == Counter({"fused_elementwise": 1})
    assert sum(op_counts(capped).values()) > 1
    for node in capped.graph.ops():
        assert len(capped.graph.operands(node)) <= 2


def test_dtypes_refuse_what_is_left_out():
    graph = graph_of("  %y = exp(%x) : f32[4, 8]\n  output %y")
    compile(graph, CUDA)
    with pytest.raises(PassError, match="cannot run on cuda-no-f32"):
        compile(graph, CUDA.derive("cuda-no-f32", dtypes=ALL_DTYPES - {DType.f32}))


def test_dtypes_accept_what_is_added():
    graph = graph_of("  %y = exp(%x) : f64[4, 8]\n  output %y", dtype="f64")
    metal = get_target("metal")
    with pytest.raises(PassError, match="cannot run on metal"):
        compile(graph, metal)
    assert compile(graph, metal.derive("metal-f64", dtypes=ALL_DTYPES)).arena_bytes > 0


def test_last_axis_reductions():
    graph = graph_of("  %y = reduce_sum(%x) {axes = [0]} : f32[8]\n  output %y")
    base = op_counts(compile(graph, CUDA))
    any_axis = op_counts(compile(graph, CUDA.derive("cuda-any-axis", last_axis_reductions=False)))
    assert base["transpose"] == 1  # the reduced axis moved last
    assert any_axis == Counter({"reduce_sum": 1})


def test_conv_im2col():
    base = compile(example("resnet"), CUDA, {"B": 1})
    direct = compile(example("resnet"), CUDA.derive("cuda-direct-conv", conv_im2col=False), {"B": 1})
    workspaces = [buffer for buffer in base.plan.buffers if buffer.kind == "workspace"]
    assert workspaces and not [buffer for buffer in direct.plan.buffers if buffer.kind == "workspace"]
    assert direct.arena_bytes < base.arena_bytes


def test_planner():
    base = compile(example("gpt2_block"), CUDA, GPT2)
    reuse = compile(example("gpt2_block"), CUDA.derive("cuda-liveness", planner="liveness"), GPT2)
    assert (base.plan.planner, reuse.plan.planner) == ("bump", "liveness")
    assert reuse.arena_bytes < base.arena_bytes and len(reuse.graph) == len(base.graph)


def test_alignment():
    wide = compile(example("gpt2_block"), CUDA.derive("cuda-4k", alignment=4096), GPT2)
    assert wide.plan.alignment == 4096
    assert all(buffer.offset % 4096 == 0 for buffer in wide.plan.buffers)
    assert wide.arena_bytes > compile(example("gpt2_block"), CUDA, GPT2).arena_bytes


def test_sizing():
    graph = graph_of("  %y = exp(%x) : f16[4, 8]\n  %z = neg(%y) : f16[4, 8]\n  output %z", dtype="f16")
    as_f32 = compile(graph, CUDA.derive("cuda-unfused", fuse_patterns=()))
    as_dtype = compile(graph, CUDA.derive("cuda-f16-sized", fuse_patterns=(), sizing="dtype"))
    assert {buffer.size for buffer in as_f32.plan.buffers} == {4 * 32}
    assert {buffer.size for buffer in as_dtype.plan.buffers} == {2 * 32}


def test_arena_ceiling():
    graph = example("gpt2_block")
    arena = compile(graph, CUDA, GPT2).arena_bytes
    assert compile(graph, CUDA.derive("cuda-exact", arena_ceiling=arena), GPT2).arena_bytes == arena
    with pytest.raises(ArenaTooLarge) as info:
        compile(graph, CUDA.derive("cuda-small", arena_ceiling=arena - 1), GPT2)
    assert (info.value.target, info.value.arena_bytes, info.value.ceiling) == ("cuda-small", arena, arena - 1)


def test_side_buffers():
    derived = CUDA.derive("cuda-own-side", side_buffers=(("scratch", 12345),), shadow_f16_fraction=0.25)
    result = compile(example("gpt2_block"), derived, GPT2)
    assert result.side_buffers == {"scratch": 12345, "f16_shadow": result.arena_bytes // 4}
    assert compile(example("gpt2_block"), CUDA, GPT2).side_buffers == {"blas_workspace": 4 << 20,
                                                                        "dnn_workspace": 32 << 20}
