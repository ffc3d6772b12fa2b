"""ONNX op -> core ops: Attention (opsets 23-25).

Attention reads Q, K, V as [B, H, S, D] (or [B, S, H*D] with ``q_num_heads`` and
``kv_num_heads``, split into heads and merged back). Past key and value are concatenated in
front of K and V along the sequence (``present_key``, ``present_value``). Every masking rule
becomes one additive bias of 0 / -inf broadcasting to [B, Hq, Sq, Skv]: the ``attn_mask``
(bool as 0 / -inf, float added as it is; a mask shorter than Skv is padded with -inf), the
causal frontier ``j <= i + offset`` (offset = the past length, or ``nonpad_kv_seqlen - Sq``
per batch), the sliding window (``left_window_size``, ``right_window_size``, opset 25) and the
``nonpad_kv_seqlen`` padding. A query row whose bias is -inf everywhere gives a zero row (the
softmax alone would give NaN), as ONNX specifies.

Two forms:

- the core ``attention`` op on Q and K each scaled by sqrt(scale) (as ONNX scales them, so
  f16 results round alike) with ``scale=1``, ``causal=true`` when the only rule is the
  plain causal frontier, else the bias as its mask operand, when no softcap, no ``qk_matmul_output``
  and no other ``softmax_precision`` is asked for;
- otherwise the decomposition: scaled matmul, softcap ``c * tanh(s / c)``, bias, softmax
  in ``softmax_precision``, matmul with V; ``qk_matmul_output`` is taken at the step its
  mode names (0 the scaled QK, 1 after softcap, 2 plus the bias, 3 the probabilities).

Grouped-query attention (Hq a multiple of Hkv) runs without repeating K and V: queries are
[B, Hkv, Hq/Hkv, Sq, D] against keys [B, Hkv, 1, Skv, D], so query head h reads key head
``h // (Hq/Hkv)``, ONNX's interleaved repeat.
"""

from __future__ import annotations

import math

import numpy as np

from rlxir.dtypes import DType
from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_context import onnx_dtype
from rlxir.importers.onnx_ops import hint, operand, optional_input, unused
from rlxir.importers.onnx_registry import register
from rlxir.symbolic import format_dim
from rlxir.types import TensorType


def convert_attention(ctx, node, attrs):
    builder, name = ctx.builder, hint(node)
    q = ctx.value(node.input[0])
    dtype, rank = builder.type(q).dtype, builder.type(q).rank
    if rank not in (3, 4):
        raise UnsupportedModel(f"Attention over rank-{rank} inputs", expected="Q, K, V of rank 3 or 4")
    k, v = operand(ctx, node.input[1], dtype), operand(ctx, node.input[2], dtype)
    if rank == 3:
        q_heads, kv_heads = _declared_heads(attrs)
        q, k, v = (split_heads(ctx, value, heads, f"{name}.{part}")
                   for value, heads, part in ((q, q_heads, "q"), (k, kv_heads, "k"), (v, kv_heads, "v")))
    else:
        _check_declared_heads(ctx, attrs, q, k)
    k, v, past_length = _with_past(ctx, node, k, v, dtype, name)
    q_len, kv_len = builder.type(q).shape[2], builder.type(k).shape[2]
    bias, plain_causal = _bias(ctx, node, attrs, dtype, q_len, kv_len, past_length, name)
    y, qk = (_decomposed if _needs_decomposition(ctx, node, attrs, dtype) else _fused)(
        ctx, attrs, q, k, v, bias, plain_causal, name)
    if rank == 3:
        y = _merge_heads(ctx, y, name)
    return [y, k, v, qk]


# --- heads -----------------------------------------------------------------------------
def _declared_heads(attrs) -> tuple[int, int]:
    if "q_num_heads" not in attrs or "kv_num_heads" not in attrs:
        raise UnsupportedModel("3-D Attention inputs without q_num_heads and kv_num_heads",
                               expected="both head counts, which split [B, S, H*D] into heads")
    return int(attrs["q_num_heads"]), int(attrs["kv_num_heads"])


def _check_declared_heads(ctx, attrs, q: str, k: str) -> None:
    """4-D inputs carry their head counts; declared ones must agree with them."""
    for key, value in (("q_num_heads", q), ("kv_num_heads", k)):
        heads = ctx.builder.type(value).shape[1]
        if key in attrs and int(attrs[key]) != heads:
            raise UnsupportedModel(f"{key}={attrs[key]} for 4-D inputs with {heads} heads",
                                   expected=f"{key} absent or equal to the input's head axis")


def split_heads(ctx, value: str, heads: int, name: str) -> str:
    """[B, S, H*D] -> [B, H, S, D] (also LinearAttention's unpacking)."""
    batch, length, hidden = ctx.builder.type(value).shape
    if not isinstance(hidden, int) or heads < 1 or hidden % heads:
        raise UnsupportedModel(f"a hidden size of {hidden} split into {heads} heads",
                               expected="a static hidden size that is a multiple of the head count")
    split = ctx.builder.op("reshape", [value], {"shape": (batch, length, heads, hidden // heads)}, hint=f"{name}.split")
    return ctx.builder.op("transpose", [split], {"perm": (0, 2, 1, 3)}, hint=f"{name}.heads")


def _merge_heads(ctx, value: str, name: str) -> str:
    """[B, H, S, D] -> [B, S, H*D]."""
    batch, heads, length, size = ctx.builder.type(value).shape
    moved = ctx.builder.op("transpose", [value], {"perm": (0, 2, 1, 3)}, hint=f"{name}.seq_first")
    return ctx.builder.op("reshape", [moved], {"shape": (batch, length, heads * size)}, hint=name)


def _with_past(ctx, node, k: str, v: str, dtype: DType, name: str) -> tuple:
    """(present key, present value, past length, a dim): the cache concatenated in front."""
    past_key, past_value = optional_input(node, 4), optional_input(node, 5)
    if past_key is None and past_value is None:
        return k, v, 0
    if past_key is None or past_value is None:
        raise UnsupportedModel("Attention with only one of past_key and past_value", expected="both or neither")
    if optional_input(node, 6) is not None:
        raise UnsupportedModel("Attention with both a past cache and nonpad_kv_seqlen",
                               expected="one cache form (ONNX forbids combining them)")
    past_k, past_v = operand(ctx, past_key, dtype), operand(ctx, past_value, dtype)
    past_length = ctx.builder.type(past_k).shape[2]
    present_k = ctx.builder.op("concat", [past_k, k], {"axis": 2}, hint=f"{name}.present_key")
    present_v = ctx.builder.op("concat", [past_v, v], {"axis": 2}, hint=f"{name}.present_value")
    return present_k, present_v, past_length


# --- the bias --------------------------------------------------------------------------
def _bias(ctx, node, attrs, dtype: DType, q_len, kv_len, past_length, name: str) -> tuple[str | None, bool]:
    """(the additive 0 / -inf bias, or None; whether the only rule is the plain causal
    frontier ``j <= i``, which the core op applies itself)."""
    causal = bool(attrs.get("is_causal", 0))
    left, right = int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))
    mask_name, nonpad_name = optional_input(node, 3), optional_input(node, 6)
    windowed = left >= 0 or right >= 0
    no_past = isinstance(past_length, int) and past_length == 0
    if causal and mask_name is None and nonpad_name is None and not windowed and no_past:
        return None, True
    keep = _allowed(ctx, causal, left, right, nonpad_name, q_len, kv_len, past_length, name)
    builder = ctx.builder
    zero, minus_infinity = builder.scalar(0, dtype), builder.scalar(-math.inf, dtype)
    bias = None if keep is None else builder.op("where", [keep, zero, minus_infinity], hint=f"{name}.frontier")
    if mask_name is None:
        return bias, False
    mask = _mask_bias(ctx, mask_name, dtype, kv_len, name)
    return (mask if bias is None else builder.op("add", [mask, bias], hint=f"{name}.bias")), False


def _mask_bias(ctx, mask_name: str, dtype: DType, kv_len, name: str) -> str:
    """attn_mask as an additive bias over all Skv keys (a shorter mask padded with -inf)."""
    builder = ctx.builder
    mask = ctx.value(mask_name)
    if builder.type(mask).dtype is DType.bool:
        zero, minus_infinity = builder.scalar(0, dtype), builder.scalar(-math.inf, dtype)
        mask = builder.op("where", [mask, zero, minus_infinity], hint=f"{name}.mask_bias")
    else:
        mask = operand(ctx, mask_name, dtype)
    shape = builder.type(mask).shape
    if shape and shape[-1] == kv_len:
        return mask
    if not shape or not isinstance(shape[-1], int) or not isinstance(kv_len, int) or shape[-1] > kv_len:
        raise UnsupportedModel(f"an attn_mask of shape {shape_text(shape)} for {kv_len} keys",
                               expected=f"a mask whose last axis is static and at most {kv_len} (padded with -inf)")
    filler = builder.splat(f"{name}.mask_pad", -math.inf, TensorType(dtype, (*shape[:-1], kv_len - shape[-1])))
    return builder.op("concat", [mask, filler], {"axis": -1}, hint=f"{name}.mask_padded")


def _allowed(ctx, causal: bool, left: int, right: int, nonpad_name, q_len, kv_len, past_length,
             name: str) -> str | None:
    """The bool [Sq, Skv] (or [B, 1, Sq, Skv] with nonpad_kv_seqlen) of keys each query may
    read under the causal, window and padding rules, or None when no rule applies."""
    builder = ctx.builder
    rules = []
    columns = positions(ctx, kv_len, (1, kv_len), f"{name}.key_pos")
    lengths = None
    if nonpad_name is not None:
        lengths = ctx.value(nonpad_name)
        if builder.type(lengths).dtype is not DType.i64:
            lengths = builder.op("cast", [lengths], {"to": DType.i64}, hint=f"{name}.nonpad")
        batch = builder.type(lengths).shape[0]
        lengths = builder.op("reshape", [lengths], {"shape": (batch, 1, 1, 1)}, hint=f"{name}.nonpad_b")
        rules.append(builder.op("lt", [columns, lengths], hint=f"{name}.unpadded"))
    if causal or left >= 0 or right >= 0:
        position = _querypositions(ctx, q_len, past_length, lengths, name)
        if causal:
            rules.append(builder.op("le", [columns, position], hint=f"{name}.causal"))
        if right >= 0:
            last = builder.op("add", [position, builder.scalar(right, DType.i64)], hint=f"{name}.right_edge")
            rules.append(builder.op("le", [columns, last], hint=f"{name}.right_window"))
        if left >= 0:
            first = builder.op("sub", [position, builder.scalar(left, DType.i64)], hint=f"{name}.left_edge")
            rules.append(builder.op("ge", [columns, first], hint=f"{name}.left_window"))
    keep = rules[0] if rules else None
    for rule in rules[1:]:
        keep = builder.op("minimum", [keep, rule], hint=f"{name}.allowed")  # logical and
    return keep


def _querypositions(ctx, q_len, past_length, lengths: str | None, name: str) -> str:
    """Each query's absolute position ``i + offset`` as [Sq, 1] (or [B, 1, Sq, 1]): offset is
    the past length (a dim), or ``nonpad_kv_seqlen - Sq`` per batch."""
    builder = ctx.builder
    rows = positions(ctx, q_len, (q_len, 1), f"{name}.query_pos")
    if lengths is not None:
        offset = builder.op("sub", [lengths, _dim_value(ctx, q_len, f"{name}.q_len")], hint=f"{name}.offset")
        return builder.op("add", [rows, offset], hint=f"{name}.query_abs")
    if isinstance(past_length, int) and past_length == 0:
        return rows
    return builder.op("add", [rows, _dim_value(ctx, past_length, f"{name}.past_len")], hint=f"{name}.query_abs")


def _dim_value(ctx, dim, name: str) -> str:
    """A dim as a rank-0 i64 value: a literal when static, else the sum of a splat of ones
    that long (a symbolic dim's size is known only when the graph runs)."""
    if isinstance(dim, int):
        return ctx.builder.scalar(dim, DType.i64)
    ones = ctx.builder.splat(f"{name}.ones", 1, TensorType(DType.i64, (dim,)))
    return ctx.builder.op("reduce_sum", [ones], {"axes": (0,), "keepdims": False}, hint=name)


def positions(ctx, length, shape: tuple, name: str) -> str:
    """0, 1, ..., length - 1 (i64) in `shape`, which holds `length` and ones."""
    builder = ctx.builder
    if isinstance(length, int):
        return builder.tensor(name, np.arange(length, dtype=np.int64).reshape(shape))
    ones = builder.splat(f"{name}.ones", 1, TensorType(DType.i64, (length,)))
    count = builder.op("cumsum", [ones], {"axis": 0, "exclusive": True}, hint=f"{name}.count")
    return builder.op("reshape", [count], {"shape": shape}, hint=name)


def _fully_masked(ctx, bias: str, name: str) -> str:
    """bool [..., Sq, 1]: the rows whose bias is -inf for every key."""
    builder = ctx.builder
    dtype = builder.type(bias).dtype
    best = builder.op("reduce_max", [bias], {"axes": (-1,), "keepdims": True}, hint=f"{name}.bias_max")
    return builder.op("eq", [best, builder.scalar(-math.inf, dtype)], hint=f"{name}.fully_masked")


# --- the two forms ---------------------------------------------------------------------
def _needs_decomposition(ctx, node, attrs, dtype: DType) -> bool:
    """Softcap, a read qk_matmul_output or a softmax in another precision: the core op has
    none of these."""
    if float(attrs.get("softcap", 0.0)) > 0 or not unused(ctx, node, 3):
        return True
    precision = attrs.get("softmax_precision")
    return precision is not None and onnx_dtype(int(precision), "softmax_precision") is not dtype


def _fused(ctx, attrs, q, k, v, bias, plain_causal, name):
    """The core ``attention`` op, grouped for GQA; fully masked rows zeroed after it."""
    builder = ctx.builder
    groups = query_groups(ctx, q, k, v)
    q, k = scaled_qk(ctx, attrs.get("scale"), q, k, name)
    grouped_q = grouped(ctx, q, groups, name, queries=True)
    grouped_k, grouped_v = grouped(ctx, k, groups, name), grouped(ctx, v, groups, name)
    attributes = {"causal": plain_causal, "scale": 1.0}
    operands = [grouped_q, grouped_k, grouped_v]
    if bias is not None:
        operands.append(_grouped_bias(ctx, bias, groups, builder.type(q).shape[1], name))
    y = builder.op("attention", operands, attributes, hint=f"{name}.attended" if bias or groups else name)
    if bias is not None:
        zero = builder.scalar(0, builder.type(y).dtype)
        y = builder.op("where", [_fully_masked(ctx, operands[3], name), zero, y],
                       hint=f"{name}.guarded" if groups else name)
    return ungrouped(ctx, y, groups, name), None


def _decomposed(ctx, attrs, q, k, v, bias, plain_causal, name):
    """Scaled QK, softcap, bias, softmax (in softmax_precision), fully-masked-row guard, V."""
    builder = ctx.builder
    mode = int(attrs.get("qk_matmul_output_mode", 0))
    if mode not in range(4):
        raise UnsupportedModel(f"qk_matmul_output_mode={mode}", expected="0, 1, 2 or 3")
    dtype = builder.type(q).dtype
    groups = query_groups(ctx, q, k, v)
    scaled_q, scaled_k = scaled_qk(ctx, attrs.get("scale"), q, k, name)
    grouped_q, grouped_k = grouped(ctx, scaled_q, groups, name, queries=True), grouped(ctx, scaled_k, groups, name)
    scores = builder.op("matmul", [grouped_q, grouped_k], {"transpose_b": True}, hint=f"{name}.qk")
    if groups:
        scores = builder.op("reshape", [scores], {"shape": _score_shape(ctx, q, k)}, hint=f"{name}.qk_heads")
    if plain_causal:
        bias = _causal_bias(ctx, dtype, _score_shape(ctx, q, k)[2:], name)
    steps = [scores]
    softcap = float(attrs.get("softcap", 0.0))
    if softcap > 0:
        cap = builder.scalar(softcap, dtype)
        squashed = builder.op("tanh", [builder.op("div", [scores, cap], hint=f"{name}.qk_over_cap")],
                              hint=f"{name}.qk_tanh")
        scores = builder.op("mul", [squashed, cap], hint=f"{name}.qk_capped")
    steps.append(scores)
    if bias is not None:
        scores = builder.op("add", [scores, bias], hint=f"{name}.qk_biased")
    steps.append(scores)
    probabilities = _softmax(ctx, attrs, scores, bias, dtype, name)
    steps.append(probabilities)
    grouped_p = grouped(ctx, probabilities, groups, name, queries=True)
    y = builder.op("matmul", [grouped_p, grouped(ctx, v, groups, name)], hint=f"{name}.attended" if groups else name)
    return ungrouped(ctx, y, groups, name), steps[mode]


def scaled_qk(ctx, scale: float | None, q: str, k: str, name: str) -> tuple[str, str]:
    """Q and K each times sqrt(scale) (scale defaults to 1/sqrt(D)), as ONNX computes the
    scores: in f16 the product's rounding then matches ONNX's to the last bit."""
    builder = ctx.builder
    scale = 1 / math.sqrt(builder.type(q).shape[-1]) if scale is None else float(scale)
    if scale < 0:
        raise UnsupportedModel(f"an attention scale of {scale}", expected="a non-negative scale (Q and K are each "
                                                                           "scaled by its square root)")
    root = builder.scalar(math.sqrt(scale), builder.type(q).dtype)
    return (builder.op("mul", [q, root], hint=f"{name}.q_scaled"),
            builder.op("mul", [k, root], hint=f"{name}.k_scaled"))


def _softmax(ctx, attrs, scores: str, bias: str | None, dtype: DType, name: str) -> str:
    """softmax over the keys in softmax_precision, fully masked rows zeroed, back in `dtype`."""
    builder = ctx.builder
    precision = attrs.get("softmax_precision")
    wide = dtype if precision is None else onnx_dtype(int(precision), "softmax_precision")
    if not wide.is_float:
        raise UnsupportedModel(f"softmax_precision {wide.value}", expected="a float element type")
    if wide is not dtype:
        scores = builder.op("cast", [scores], {"to": wide}, hint=f"{name}.qk_wide")
    probabilities = builder.op("softmax", [scores], {"axis": -1}, hint=f"{name}.probabilities")
    if bias is not None:
        zero = builder.scalar(0, wide)
        probabilities = builder.op("where", [_fully_masked(ctx, bias, name), zero, probabilities],
                                   hint=f"{name}.probabilities_guarded")
    if wide is not dtype:
        probabilities = builder.op("cast", [probabilities], {"to": dtype}, hint=f"{name}.probabilities_narrow")
    return probabilities


def causal_keep(ctx, queries, keys, name: str, strict: bool = False) -> str:
    """bool [queries, keys]: true where ``j <= i`` (the plain causal frontier), or ``j < i``
    when `strict`."""
    if not strict:
        return _allowed(ctx, True, -1, -1, None, queries, keys, 0, name)
    rows = positions(ctx, queries, (queries, 1), f"{name}.rows")
    columns = positions(ctx, keys, (1, keys), f"{name}.columns")
    return ctx.builder.op("lt", [columns, rows], hint=name)


def _causal_bias(ctx, dtype: DType, lengths: tuple, name: str) -> str:
    """0 where ``j <= i``, -inf elsewhere, [Sq, Skv] (the plain causal frontier)."""
    builder = ctx.builder
    keep = causal_keep(ctx, lengths[0], lengths[1], name)
    return builder.op("where", [keep, builder.scalar(0, dtype), builder.scalar(-math.inf, dtype)],
                      hint=f"{name}.frontier")


# --- grouped-query attention -----------------------------------------------------------
def query_groups(ctx, q: str, k: str, v: str) -> int:
    """Query heads per key head when they must be grouped (0 when plain broadcasting does:
    equal head counts, or a single key head)."""
    q_heads, k_heads, v_heads = (ctx.builder.type(value).shape[1] for value in (q, k, v))
    if k_heads != v_heads:
        raise UnsupportedModel(f"{k_heads} key heads but {v_heads} value heads", expected="equal key and value heads")
    if q_heads == k_heads or k_heads == 1:
        return 0
    if not isinstance(q_heads, int) or not isinstance(k_heads, int) or q_heads % k_heads:
        raise UnsupportedModel(f"{q_heads} query heads over {k_heads} key heads",
                               expected="a query head count that is a multiple of the key head count")
    return q_heads // k_heads


def grouped(ctx, value: str, groups: int, name: str, queries: bool = False) -> str:
    """[B, Hq, S, D] -> [B, Hkv, groups, S, D] for `queries` (and the probabilities), [B, Hkv,
    S, D] -> [B, Hkv, 1, S, D] for keys and values; itself when not grouping."""
    if not groups:
        return value
    batch, heads, length, size = ctx.builder.type(value).shape
    shape = (batch, heads // groups, groups, length, size) if queries else (batch, heads, 1, length, size)
    return ctx.builder.op("reshape", [value], {"shape": shape}, hint=f"{name}.grouped")


def _grouped_bias(ctx, bias: str, groups: int, q_heads: int, name: str) -> str:
    """The bias (broadcasting to [B, Hq, Sq, Skv]) in the grouped rank 5."""
    if not groups:
        return bias
    shape = ctx.builder.type(bias).shape
    shape = (1,) * (4 - len(shape)) + tuple(shape)
    if shape[1] == 1:
        target = (shape[0], 1, 1, *shape[2:])
    elif shape[1] == q_heads:
        target = (shape[0], q_heads // groups, groups, *shape[2:])
    else:
        raise UnsupportedModel(f"an attention mask of {shape[1]} heads for {q_heads} query heads",
                               expected="a mask with 1 or q_num_heads heads")
    return ctx.builder.op("reshape", [bias], {"shape": target}, hint=f"{name}.bias_grouped")


def ungrouped(ctx, value: str, groups: int, name: str) -> str:
    if not groups:
        return value
    batch, kv_heads, per_group, length, size = ctx.builder.type(value).shape
    return ctx.builder.op("reshape", [value], {"shape": (batch, kv_heads * per_group, length, size)}, hint=name)


def _score_shape(ctx, q: str, k: str) -> tuple:
    q_shape, k_shape = ctx.builder.type(q).shape, ctx.builder.type(k).shape
    return q_shape[0], q_shape[1], q_shape[2], k_shape[2]


def shape_text(shape) -> str:
    """A shape as the IR writes it: ``[B, 4, S + 3]``."""
    return "[" + ", ".join(format_dim(dim) for dim in shape) + "]"


register({"Attention": convert_attention})
