"""ONNX op -> core ops: FlexAttention (``ai.onnx.preview``, version 1).

``Y = prob_mod(softmax(score_mod(Q K^T * scale))) V`` over [B, H, S, D] inputs, grouped-query
as in `rlxir.importers.onnx_attention` (query head h reads key head h // (Hq / Hkv)). The
scores, the softmax and the product with V are in the softmax precision (``softmax_precision``,
else f32 for f16 / bf16 inputs and the input's type otherwise); Y is cast back to V's type.

``score_mod`` and ``prob_mod`` are subgraphs of one [B, Hq, L, S] input and one output of
its shape and type: their nodes are converted in place, their input bound to the scores or
probabilities (the shape arithmetic a mask builds from ``Shape(scores)`` is evaluated while
importing). Without them, and with the softmax in the input's type, it is the core
``attention`` op.
"""

from __future__ import annotations

from collections import Counter

from onnx import numpy_helper

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_attention import grouped, query_groups, scaled_qk, shape_text, ungrouped
from rlxir.importers.onnx_context import onnx_dtype, op_key
from rlxir.importers.onnx_norm import cast_to
from rlxir.importers.onnx_ops import hint, operand
from rlxir.importers.onnx_registry import CONVERTERS, register


def convert_flex_attention(ctx, node, attrs):
    builder, name = ctx.builder, hint(node)
    q = ctx.value(node.input[0])
    dtype = builder.type(q).dtype
    k, v = operand(ctx, node.input[1], dtype), operand(ctx, node.input[2], dtype)
    if any(builder.type(value).rank != 4 for value in (q, k, v)):
        raise UnsupportedModel("FlexAttention of inputs that are not rank 4", expected="Q, K, V of [B, H, S, D]")
    wide = _softmax_dtype(attrs, dtype)
    groups = query_groups(ctx, q, k, v)
    q, k = scaled_qk(ctx, attrs.get("scale"), q, k, name)
    grouped_q, grouped_k = grouped(ctx, q, groups, name, queries=True), grouped(ctx, k, groups, name)
    grouped_v = grouped(ctx, v, groups, name)
    mods = attrs.get("score_mod"), attrs.get("prob_mod")
    if mods == (None, None) and wide is dtype:
        y = builder.op("attention", [grouped_q, grouped_k, grouped_v], {"causal": False, "scale": 1.0},
                       hint=f"{name}.attended" if groups else name)
        return [ungrouped(ctx, y, groups, name)]
    scores = builder.op("matmul", [grouped_q, grouped_k], {"transpose_b": True}, hint=f"{name}.qk")
    batch, heads, queries, _ = builder.type(q).shape
    keys = builder.type(k).shape[2]
    scores = builder.op("reshape", [scores], {"shape": (batch, heads, queries, keys)}, hint=f"{name}.scores")
    scores = cast_to(ctx, scores, wide, f"{name}.scores_{wide.value}")
    if mods[0] is not None:
        scores = _modified(ctx, mods[0], scores, "score_mod")
    probabilities = builder.op("softmax", [scores], {"axis": -1}, hint=f"{name}.probabilities")
    if mods[1] is not None:
        probabilities = _modified(ctx, mods[1], probabilities, "prob_mod")
    wide_v = cast_to(ctx, grouped_v, wide, f"{name}.v_{wide.value}")
    y = builder.op("matmul", [grouped(ctx, probabilities, groups, name, queries=True), wide_v],
                   hint=f"{name}.attended")
    return [cast_to(ctx, ungrouped(ctx, y, groups, f"{name}.heads"), dtype, name)]


def _softmax_dtype(attrs, dtype: DType) -> DType:
    if "softmax_precision" in attrs:
        wide = onnx_dtype(int(attrs["softmax_precision"]), "softmax_precision")
        if not wide.is_float:
            raise UnsupportedModel(f"softmax_precision {wide.value}", expected="a float element type")
        return wide
    return DType.f32 if dtype in (DType.f16, DType.bf16) else dtype


def _modified(ctx, graph, value: str, what: str) -> str:
    """`value` through the subgraph `graph` (one input, one output of the same type), its
    nodes converted in place."""
    if len(graph.input) != 1 or len(graph.output) != 1:
        raise UnsupportedModel(f"a {what} of {len(graph.input)} inputs and {len(graph.output)} outputs",
                               expected="one input and one output")
    missing = Counter(op_key(inner) for inner in graph.node if op_key(inner) not in CONVERTERS)
    if missing:
        listed = ", ".join(f"{op} x{count}" for op, count in sorted(missing.items()))
        raise UnsupportedModel(f"its {what} has ops with no rlx mapping: {listed}")
    for tensor in graph.initializer:
        ctx.define_static(tensor.name, numpy_helper.to_array(tensor))
    ctx.define(graph.input[0].name, value)
    for inner in graph.node:
        ctx.convert(inner, CONVERTERS)
    result = ctx.value(graph.output[0].name)
    want, got = ctx.builder.type(value), ctx.builder.type(result)
    if got != want:
        raise UnsupportedModel(f"a {what} that turns {want} into {got}",
                               expected=f"an output of its input's type {shape_text(want.shape)}")
    return result


register({"ai.onnx.preview.FlexAttention": convert_flex_attention})
