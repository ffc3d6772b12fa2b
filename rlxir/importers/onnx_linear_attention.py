"""ONNX op -> core ops: LinearAttention (opset 27), in f32 as ONNX specifies.

The recurrence runs in chunks of ``chunk_size`` positions, each at once from the state it
starts with (`_chunk`): the linear and gated rules as masked, decay-weighted products of
queries and keys; the delta rules' corrections inside a chunk as a unit lower triangular
system solved by blocked inversion (`_unit_lower_inverse`). Nothing unrolls per position.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_attention import causal_keep, positions, shape_text, split_heads
from rlxir.importers.onnx_norm import cast_to
from rlxir.importers.onnx_ops import hint, optional_input
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_decoder import slice_axis
from rlxir.types import TensorType

RULES = {"linear": (False, False), "gated": (True, False), "delta": (False, True), "gated_delta": (True, True)}
"""update_rule -> (decays the state, corrects by the delta rule)."""


def convert_linear_attention(ctx, node, attrs):
    """The recurrence on the state S [B, Hkv, dk, dv] (f32), position t after position t-1:

    - gated: ``S <- exp(g_t) S`` (g per key feature or per head, over S's rows);
    - delta: ``v_t <- beta_t (v_t - k_t S)`` (S decayed first under gated_delta);
    - always: ``S <- S + k_t^T v_t``, then ``o_t = scale * q_t S`` (query head h reading the
      state of key head h // (Hq / Hkv)).

    It runs in chunks of ``chunk_size`` positions, each at once from the state it starts with
    (`_chunk`), so the sequence length must be static. The output is [B, T, Hq*dv] in the
    query's type; the present state is S in the past state's type (the query's when there is
    none).
    """
    builder, name = ctx.builder, hint(node)
    rule = attrs.get("update_rule", "gated_delta")
    rule = rule.decode() if isinstance(rule, bytes) else rule
    if rule not in RULES:
        raise UnsupportedModel(f"update_rule {rule!r}", expected="linear, gated, delta or gated_delta")
    gated, delta = RULES[rule]
    q_heads, kv_heads = _linear_heads(attrs)
    size = int(attrs.get("chunk_size", 64))
    if size < 1:
        raise UnsupportedModel(f"chunk_size {size}", expected="a positive chunk size")
    query = ctx.value(node.input[0])
    out_dtype = builder.type(query).dtype
    batch, steps, _ = builder.type(query).shape
    if not isinstance(steps, int):
        raise UnsupportedModel(f"LinearAttention over {steps} positions", expected="a static sequence length")
    q = split_heads(ctx, _f32(ctx, query, f"{name}.q32"), q_heads, f"{name}.q")
    k = split_heads(ctx, _f32(ctx, ctx.value(node.input[1]), f"{name}.k32"), kv_heads, f"{name}.k")
    v = split_heads(ctx, _f32(ctx, ctx.value(node.input[2]), f"{name}.v32"), kv_heads, f"{name}.v")
    key_size, value_size = builder.type(k).shape[3], builder.type(v).shape[3]
    if builder.type(q).shape[3] != key_size:
        raise UnsupportedModel(f"query heads of {builder.type(q).shape[3]} features but key heads of {key_size}",
                               expected="one head size for queries and keys")
    decay = _per_step_input(ctx, node, 4, gated, "decay", rule, (kv_heads, kv_heads * key_size), kv_heads, name)
    beta = _per_step_input(ctx, node, 5, delta, "beta", rule, (kv_heads, 1), kv_heads, name)
    state, state_dtype = _initial_state(ctx, node, batch, kv_heads, key_size, value_size, out_dtype, name)
    scale = float(attrs.get("scale", 0.0)) or 1 / math.sqrt(key_size)
    inputs = _Sequences(q, k, v, decay, beta, q_heads // kv_heads)
    outputs = []
    for start in range(0, steps, size):
        state, read = _chunk(ctx, inputs, state, start, min(size, steps - start), f"{name}.t{start}")
        outputs.append(read)
    read = outputs[0] if len(outputs) == 1 else builder.op("concat", outputs, {"axis": 2}, hint=f"{name}.read")
    read = builder.op("mul", [read, builder.scalar(scale, DType.f32)], hint=f"{name}.scaled")
    moved = builder.op("transpose", [read], {"perm": (0, 2, 1, 3)}, hint=f"{name}.seq_first")
    flat = builder.op("reshape", [moved], {"shape": (batch, steps, q_heads * value_size)}, hint=f"{name}.flat")
    return [cast_to(ctx, flat, out_dtype, name), cast_to(ctx, state, state_dtype, f"{name}.present_state")]


class _Sequences(NamedTuple):
    """LinearAttention's per-position inputs, f32 with heads split: q [B, Hq, T, dk], k
    [B, Hkv, T, dk], v [B, Hkv, T, dv], decay [B, Hkv, T, w] and beta [B, h, T, 1] (or None);
    `groups` query heads per key head."""

    q: str
    k: str
    v: str
    decay: str | None
    beta: str | None
    groups: int


def _linear_heads(attrs) -> tuple[int, int]:
    if "q_num_heads" not in attrs or "kv_num_heads" not in attrs:
        raise UnsupportedModel("LinearAttention without q_num_heads and kv_num_heads", expected="both head counts")
    q_heads, kv_heads = int(attrs["q_num_heads"]), int(attrs["kv_num_heads"])
    if q_heads < 1 or kv_heads < 1 or q_heads % kv_heads:
        raise UnsupportedModel(f"{q_heads} query heads over {kv_heads} key heads",
                               expected="q_num_heads a positive multiple of kv_num_heads")
    return q_heads, kv_heads


def _f32(ctx, value: str, name: str) -> str:
    return cast_to(ctx, value, DType.f32, name)


def _per_step_input(ctx, node, index: int, wanted: bool, what: str, rule: str, widths: tuple, kv_heads: int,
                    name: str) -> str | None:
    """decay or beta [B, T, W] as f32 [B, h, T, w]: W = Hkv gives one per head (h = Hkv,
    w = 1), W = Hkv*dk one per key feature (decay), W = 1 one for all heads (beta)."""
    onnx_name = optional_input(node, index)
    if (onnx_name is not None) != wanted:
        raise UnsupportedModel(f"update_rule {rule!r} {'without' if wanted else 'with'} a {what} input",
                               expected=f"a {what} input exactly for the rules that use it")
    if onnx_name is None:
        return None
    builder = ctx.builder
    value = _f32(ctx, ctx.value(onnx_name), f"{name}.{what}32")
    shape = builder.type(value).shape
    if len(shape) != 3 or shape[-1] not in widths:
        raise UnsupportedModel(f"a {what} of shape {shape_text(shape)}", expected=f"[B, T, W] with W in {list(widths)}")
    batch, steps, width = shape
    if width == widths[0] or width == 1:
        columns = builder.op("reshape", [value], {"shape": (batch, steps, width, 1)}, hint=f"{name}.{what}_heads")
        return builder.op("transpose", [columns], {"perm": (0, 2, 1, 3)}, hint=f"{name}.{what}")
    return split_heads(ctx, value, kv_heads, f"{name}.{what}")


def _initial_state(ctx, node, batch, kv_heads: int, key_size: int, value_size: int, out_dtype: DType, name: str):
    """(the f32 state [B, Hkv, dk, dv], the present state's dtype)."""
    builder = ctx.builder
    past = optional_input(node, 3)
    if past is None:
        zeros = builder.splat(f"{name}.no_past", 0, TensorType(DType.f32, (batch, kv_heads, key_size, value_size)))
        return zeros, out_dtype
    value = ctx.value(past)
    return _f32(ctx, value, f"{name}.past32"), builder.type(value).dtype


def _chunk(ctx, inputs: _Sequences, state: str, start: int, length: int, name: str) -> tuple[str, str]:
    """(the state after positions [start, start + length), their reads [B, Hq, c, dv] before
    scaling), all positions of the chunk at once.

    With G the running sum of the log decays inside the chunk (0 without decay), the state
    after position t is ``e^G_t S + sum_{s <= t} e^(G_t - G_s) k_s^T u_s``, so
    ``o_t = (q_t e^G_t) S + sum_{s <= t} A[t, s] u_s`` with ``A[t, s] = sum_d q_t[d] k_s[d]
    e^(G_t[d] - G_s[d])``, and the chunk leaves ``e^G_c S + sum_s (k_s e^(G_c - G_s))^T u_s``.
    u is v, or under the delta rules the corrected values (`_delta_values`). The exponents
    are differences of sums taken inside the chunk (masked to -inf above the diagonal before
    ``exp``), so nothing overflows that the recurrence keeps finite.
    """
    builder = ctx.builder
    keys, values, queries = (slice_axis(ctx, value, 2, start, length, f"{name}.{part}")
                             for value, part in ((inputs.k, "k"), (inputs.v, "v"), (inputs.q, "q")))
    batch, kv_heads, _, key_size = builder.type(keys).shape
    value_size, groups = builder.type(values).shape[3], inputs.groups
    sums = None
    if inputs.decay is not None:
        sums = builder.op("cumsum", [slice_axis(ctx, inputs.decay, 2, start, length, f"{name}.g")], {"axis": 2},
                          hint=f"{name}.g_sum")  # [B, Hkv, c, w]
    if inputs.beta is not None:
        beta = slice_axis(ctx, inputs.beta, 2, start, length, f"{name}.beta")
        values = _delta_values(ctx, keys, values, sums, beta, state, name)
    grouped_q = builder.op("reshape", [queries], {"shape": (batch, kv_heads, groups, length, key_size)},
                           hint=f"{name}.q_grouped")
    grouped_k, grouped_v = (builder.op("reshape", [value], {"shape": (batch, kv_heads, 1, length, size)},
                                       hint=f"{name}.{part}_grouped")
                            for value, size, part in ((keys, key_size, "k"), (values, value_size, "v")))
    grouped_state = builder.op("reshape", [state], {"shape": (batch, kv_heads, 1, key_size, value_size)},
                               hint=f"{name}.state_grouped")
    weights = _weights(ctx, grouped_q, grouped_k, sums, causal_keep(ctx, length, length, f"{name}.keep"), name)
    reader, keys_in = grouped_q, keys
    if sums is not None:
        width = builder.type(sums).shape[3]
        grown = builder.op("exp", [builder.op("reshape", [sums], {"shape": (batch, kv_heads, 1, length, width)},
                                              hint=f"{name}.g_grouped")], hint=f"{name}.growth")
        reader = builder.op("mul", [grouped_q, grown], hint=f"{name}.q_decayed")
        last = slice_axis(ctx, sums, 2, length - 1, 1, f"{name}.g_last")  # [B, Hkv, 1, w]
        remaining = builder.op("exp", [builder.op("sub", [last, sums], hint=f"{name}.g_rest")], hint=f"{name}.rest")
        keys_in = builder.op("mul", [keys, remaining], hint=f"{name}.k_decayed")
        chunk_decay = builder.op("reshape", [builder.op("exp", [last], hint=f"{name}.chunk_decay")],
                                 {"shape": (batch, kv_heads, width, 1)}, hint=f"{name}.chunk_decay_rows")
    inter = builder.op("matmul", [reader, grouped_state], hint=f"{name}.from_state")
    intra = builder.op("matmul", [weights, grouped_v], hint=f"{name}.from_chunk")
    read = builder.op("add", [inter, intra], hint=f"{name}.read_grouped")
    read = builder.op("reshape", [read], {"shape": (batch, kv_heads * groups, length, value_size)}, hint=f"{name}.o")
    if sums is not None:
        state = builder.op("mul", [state, chunk_decay], hint=f"{name}.decayed")
    written = builder.op("matmul", [keys_in, values], {"transpose_a": True}, hint=f"{name}.written")
    return builder.op("add", [state, written], hint=f"{name}.state"), read


def _delta_values(ctx, keys: str, values: str, sums: str | None, beta: str, state: str, name: str) -> str:
    """The delta rule's values u [B, Hkv, c, dv] of one chunk. Position t writes
    ``u_t = beta_t (v_t - (k_t e^G_t) S - sum_{s < t} M[t, s] u_s)`` with ``M[t, s] = sum_d
    k_t[d] k_s[d] e^(G_t[d] - G_s[d])``: the triangular system ``(I + beta M) u = beta (v -
    (k e^G) S)``, solved by inverting its unit lower triangular matrix (`_unit_lower_inverse`)."""
    builder = ctx.builder
    batch, kv_heads, length, key_size = builder.type(keys).shape
    grown = keys
    if sums is not None:
        grown = builder.op("mul", [keys, builder.op("exp", [sums], hint=f"{name}.k_growth")], hint=f"{name}.k_grown")
    predicted = builder.op("matmul", [grown, state], hint=f"{name}.predicted")
    target = builder.op("mul", [beta, builder.op("sub", [values, predicted], hint=f"{name}.surprise")],
                        hint=f"{name}.delta_target")
    grouped_k = builder.op("reshape", [keys], {"shape": (batch, kv_heads, 1, length, key_size)},
                           hint=f"{name}.kk_grouped")
    before = causal_keep(ctx, length, length, f"{name}.before", strict=True)
    overlaps = _weights(ctx, grouped_k, grouped_k, sums, before, f"{name}.kk")
    overlaps = builder.op("reshape", [overlaps], {"shape": (batch, kv_heads, length, length)}, hint=f"{name}.kk_overlap")
    lower = builder.op("mul", [beta, overlaps], hint=f"{name}.kk_lower")
    return builder.op("matmul", [_unit_lower_inverse(ctx, lower, name), target], hint=f"{name}.u")


def _unit_lower_inverse(ctx, lower: str, name: str) -> str:
    """``(I + L)^-1`` for strictly lower triangular L [..., c, c], by doubling the inverted
    diagonal blocks: with the blocks of size b inverted, each block of size 2b
    ``[[A, 0], [X, D]]`` has the inverse ``[[A^-1, 0], [-D^-1 X A^-1, D^-1]]`` (the blocked
    triangular inversion; L is padded with zeros to a power of two, which leaves the top-left
    inverse unchanged)."""
    builder = ctx.builder
    shape = builder.type(lower).shape
    outer, length = tuple(shape[:-2]), shape[-1]
    padded = 1 << (length - 1).bit_length()
    square = _zero_padded(ctx, lower, padded, name)
    inverse = builder.splat(f"{name}.unit_blocks", 1, TensorType(DType.f32, (*outer, padded, 1, 1)))
    size = 1
    while size < padded:
        count = padded // (2 * size)
        blocks = _diagonal_blocks(ctx, square, 2 * size, f"{name}.b{size}")  # [..., count, 2b, 2b]
        corner = slice_axis(ctx, slice_axis(ctx, blocks, -2, size, size, f"{name}.b{size}.rows"), -1, 0, size,
                        f"{name}.b{size}.corner")
        pairs = builder.op("reshape", [inverse], {"shape": (*outer, count, 2, size, size)}, hint=f"{name}.b{size}.pairs")
        first, second = (builder.op("reshape", [slice_axis(ctx, pairs, -3, index, 1, f"{name}.b{size}.half{index}")],
                                    {"shape": (*outer, count, size, size)}, hint=f"{name}.b{size}.inv{index}")
                         for index in (0, 1))
        mixed = builder.op("matmul", [second, builder.op("matmul", [corner, first], hint=f"{name}.b{size}.xa")],
                           hint=f"{name}.b{size}.dxa")
        below = builder.op("neg", [mixed], hint=f"{name}.b{size}.below")
        zeros = builder.splat(f"{name}.b{size}.zeros", 0, TensorType(DType.f32, (*outer, count, size, size)))
        top = builder.op("concat", [first, zeros], {"axis": -1}, hint=f"{name}.b{size}.top")
        bottom = builder.op("concat", [below, second], {"axis": -1}, hint=f"{name}.b{size}.bottom")
        inverse = builder.op("concat", [top, bottom], {"axis": -2}, hint=f"{name}.b{size}.inverse")
        size *= 2
    inverse = builder.op("reshape", [inverse], {"shape": (*outer, padded, padded)}, hint=f"{name}.inverse_padded")
    if padded == length:
        return inverse
    return slice_axis(ctx, slice_axis(ctx, inverse, -2, 0, length, f"{name}.inverse_rows"), -1, 0, length, f"{name}.inverse")


def _zero_padded(ctx, square: str, size: int, name: str) -> str:
    """[..., c, c] padded with zeros to [..., size, size]."""
    builder = ctx.builder
    shape = builder.type(square).shape
    length = shape[-1]
    if length == size:
        return square
    outer = tuple(shape[:-2])
    right = builder.splat(f"{name}.pad_columns", 0, TensorType(DType.f32, (*outer, length, size - length)))
    wide = builder.op("concat", [square, right], {"axis": -1}, hint=f"{name}.wide")
    below = builder.splat(f"{name}.pad_rows", 0, TensorType(DType.f32, (*outer, size - length, size)))
    return builder.op("concat", [wide, below], {"axis": -2}, hint=f"{name}.padded")


def _diagonal_blocks(ctx, square: str, size: int, name: str) -> str:
    """The diagonal [size, size] blocks of [..., n*size, n*size] as [..., n, size, size]: the
    block grid masked to its diagonal and summed over the block columns."""
    builder = ctx.builder
    shape = builder.type(square).shape
    outer, count = tuple(shape[:-2]), shape[-1] // size
    if count == 1:
        return builder.op("reshape", [square], {"shape": (*outer, 1, size, size)}, hint=name)
    grid = builder.op("reshape", [square], {"shape": (*outer, count, size, count, size)}, hint=f"{name}.grid")
    rows = positions(ctx, count, (count, 1, 1, 1), f"{name}.block_rows")
    columns = positions(ctx, count, (1, 1, count, 1), f"{name}.block_columns")
    diagonal = builder.op("eq", [rows, columns], hint=f"{name}.diagonal")
    kept = builder.op("where", [diagonal, grid, builder.scalar(0, DType.f32)], hint=f"{name}.kept")
    return builder.op("reduce_sum", [kept], {"axes": (-2,), "keepdims": False}, hint=name)


def _weights(ctx, grouped_q, grouped_k, sums, keep, name: str) -> str:
    """A [B, Hkv, groups, c, c]: ``q_t . k_s`` where `keep`, 0 elsewhere, each term weighted
    by ``e^(G_t - G_s)`` when decayed (`_decayed_weights`)."""
    builder = ctx.builder
    scores = builder.op("matmul", [grouped_q, grouped_k], {"transpose_b": True}, hint=f"{name}.qk")
    if sums is None:
        return builder.op("where", [keep, scores, builder.scalar(0, DType.f32)], hint=f"{name}.weights")
    return _decayed_weights(ctx, grouped_q, grouped_k, scores, sums, keep, name)


def _decayed_weights(ctx, grouped_q, grouped_k, scores, sums, keep, name: str) -> str:
    """A [B, Hkv, groups, c, c]: the masked scores times e^(G_t - G_s) (per head), or the sum
    over key features of q_t[d] k_s[d] e^(G_t[d] - G_s[d]) (per key feature)."""
    builder = ctx.builder
    batch, kv_heads, length, width = builder.type(sums).shape
    minus_infinity = builder.scalar(-math.inf, DType.f32)
    if width == 1:
        rows = builder.op("reshape", [sums], {"shape": (batch, kv_heads, 1, length, 1)}, hint=f"{name}.g_rows")
        columns = builder.op("reshape", [sums], {"shape": (batch, kv_heads, 1, 1, length)}, hint=f"{name}.g_columns")
        gaps = builder.op("sub", [rows, columns], hint=f"{name}.g_gaps")
        decays = builder.op("exp", [builder.op("where", [keep, gaps, minus_infinity], hint=f"{name}.g_causal")],
                            hint=f"{name}.decays")
        return builder.op("mul", [scores, decays], hint=f"{name}.weights")
    groups, key_size = builder.type(grouped_q).shape[2], builder.type(grouped_q).shape[4]
    rows = builder.op("reshape", [sums], {"shape": (batch, kv_heads, 1, length, 1, width)}, hint=f"{name}.g_rows")
    columns = builder.op("reshape", [sums], {"shape": (batch, kv_heads, 1, 1, length, width)},
                         hint=f"{name}.g_columns")
    gaps = builder.op("sub", [rows, columns], hint=f"{name}.g_gaps")
    keep = builder.op("reshape", [keep], {"shape": (length, length, 1)}, hint=f"{name}.keep_features")
    decays = builder.op("exp", [builder.op("where", [keep, gaps, minus_infinity], hint=f"{name}.g_causal")],
                        hint=f"{name}.decays")
    queries = builder.op("reshape", [grouped_q], {"shape": (batch, kv_heads, groups, length, 1, key_size)},
                         hint=f"{name}.q_rows")
    keys = builder.op("reshape", [grouped_k], {"shape": (batch, kv_heads, 1, 1, length, key_size)},
                      hint=f"{name}.k_columns")
    products = builder.op("mul", [builder.op("mul", [queries, keys], hint=f"{name}.qk_features"), decays],
                          hint=f"{name}.qk_decayed")
    return builder.op("reduce_sum", [products], {"axes": (-1,), "keepdims": False}, hint=f"{name}.weights")


register({"LinearAttention": convert_linear_attention})
